"""drive: the drivers, which build a world, run an engine and collect results for one command.

loader builds a world from a program; sweeper injects at every boundary of a `.s` function and
verifies (shards cuts it into parallel chains); scenario runs TOML scenarios (exec_scenario the
whole-program ones); checkstub is `preemu check-stub`; episode follows one preemption request; disasm
lists a function with the oracle's verdicts; gsweep (with grequest, the preemption request at a
boundary) and realsweep sweep Go code inside its real program; modelcheck checks the model world against the real program before `preempt` uses it.

May import: core, front, check, model, linux, output (layer 6).
"""
