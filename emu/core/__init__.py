"""core: the tables everything else reads, and the program model the front ends fill.

Owns one table each (the design card's "one source of truth"): the register order (regs), the stub
frame derived from it (layout) and the stub generated from that (stubgen), g/m/p field offsets and
runtime constants (gostructs), every guest address (memmap), typed views of guest structs (structref),
register dumps (dump), the program model (program: functions, instructions, data, `;@type`
descriptors), preemu's errors (errors) and where shipped files live (paths).

May import: nothing in emu but core itself (layer 1 of the package map in emu/__init__.py).
"""
