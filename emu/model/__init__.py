"""model: the model world, the engine `.s` input runs in (and preemu's own GC and scheduler).

machine owns one Unicorn and the runtime sentinels (rtcode); gmp lays g/m/p out in emulated memory
and is the one-goroutine World a sweep uses; stack is copystack; goslice the slice runtime; heap,
unwind, gcscan and gcworld are preemu's model of the collector (conservative inner frames, precise
outer ones, use-after-free); sched is the G/M/P scheduler with sysmon and virtual time.

May import: core, front, check (layer 4). Not emu.linux, the other engine, which sits beside it.
"""
