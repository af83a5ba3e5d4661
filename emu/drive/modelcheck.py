"""Go input followed in preemu's model world (`preempt`) is first checked against its real program.

The model world runs a Go function without package init and with the runtime's slice and allocation
calls replaced (gofront, goslice, rtcode), so it can compute what the real program never would. Before a
story is told, the function runs uninterrupted in both: in its real program (emu/drive/gsweep.py, entered
from main.main with the model world's entry registers for ABIInternal's integer arguments) and in the model
world (sweeper.run_reference). Its results are read the same way in both (geffects.Effects.results over the
binary's DWARF: integers exactly, pointers as nil or not nil, strings by their bytes); when they differ,
or the real program cannot run the call, the command refuses (exit 2) and says to use `preemu sweep`,
which runs Go input in its real program. Left out: results DWARF does not describe (none to compare).
"""
from __future__ import annotations

import os

from ..core.errors import EmuError


class _MachineView:
    """What Effects.results reads from a process (registers through `uc`, memory through `read`), over the
    model world's machine."""

    def __init__(self, machine):
        self.uc, self.read = machine.uc, machine.read

    def read_or_empty(self, addr: int, n: int) -> bytes:
        try:
            return self.read(addr, n)
        except Exception:
            return b""


def check(path: str, world, budget: int) -> None:
    """Raise EmuError unless the model world's uninterrupted run of world's goroutine returns what the real
    program's does (see the module docstring)."""
    from . import sweeper
    from ..goruntime import geffects
    from . import realsweep
    func = world.program.func_for(world.entry).name
    regs = tuple((n, world.start_regs[n]) for n in realsweep.ABI_INT_REGS if n in world.start_regs)
    spec = realsweep.RealSpec(os.path.abspath(path), func, 1, regs, None, tuple(realsweep.default_argv(path)))
    why = ("the model world (no package init, the runtime's allocation and slice calls replaced) is not the "
           f"real program; `preemu sweep {path} --func {func}` runs it in its real program")
    try:
        sw = spec.build()
        real = sw.reference(budget)
    except EmuError as e:
        raise EmuError(f"{func} cannot be told in preemu's model world: entered with the same registers, the real "
                       f"program fails ({e}); {why}") from None
    sweeper.run_reference(world, budget)
    eff = geffects.Effects.__new__(geffects.Effects)             # its results() over the model machine
    eff.p, eff.slots = _MachineView(world.machine), sw.effects.slots
    got = eff.results()
    world.reset()
    differ = {k: (real.results[k], got.get(k, "-")) for k in real.results if real.results[k] != got.get(k, "-")}
    if differ:
        k, (a, b) = next(iter(differ.items()))
        raise EmuError(f"{func} computes {k} = {b} in preemu's model world but {a} in its real program, entered "
                       f"with the same registers; {why}")
