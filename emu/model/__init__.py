"""model: the model world, the engine `.s` input runs in (and preemu's own GC and scheduler).

machine owns one Unicorn and the runtime sentinels (rtcode), with hostmem (its address space), hooks
(INT3 sentinels, the stub's RET) and faults (how an engine error becomes a Fault); gmp lays g/m/p out in emulated memory
and is the one-goroutine World a sweep uses; stack is copystack; goslice the slice runtime; heap,
unwind, gcscan and gcworld are preemu's model of the collector (conservative inner frames, precise
outer ones, use-after-free); sched is the G/M/P scheduler with virtual time, with sysmon (sysmon, retake, the
SIGURG handler), steal (findRunnable's stealing), schedtrap (what a G's trap asks of it) and gcsuspend
(suspendG, preemptPark, resumeG).

May import: core, front, check, engine (layer 4). Not emu.linux, the other engine, which sits beside it.
"""
