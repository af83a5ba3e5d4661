"""The process preemu runs: an emulated Linux process (emu/linux/process.py) with the Go runtime inside it
watched. To the kernel's Process it adds what only a reader of the Go runtime knows: the safe-point oracle
built from the binary (oracle.py: preemu's isAsyncSafePoint on the binary's own g/m/p layout and pclntab), the
g/m/p tables as the binary's DWARF lays them out, and the watch (watch.py) the kernel's signal delivery reports
each signal to. It mirrors no Go or Linux source; it is the seam between the two packages (the kernel never
imports this one). Left out: nothing the kernel's Process did before the split; a fork's child and an execve's
image (proctable.py makes them with the parent's class) are watched without an oracle, as before.
"""
from __future__ import annotations

from ..core import gostructs as gs
from ..linux.elfimage import Image
from ..linux.process import Options, Process
from . import oracle as oracle_mod
from .watch import Watch


class GoProcess(Process):
    """A Process whose Go runtime is watched. `oracle`: "auto" builds preemu's oracle from the binary (a first
    process only), None asks none, or a callable (thread, frame, g=None) -> "safe" or the reason it is not."""

    def __init__(self, image: Image, opts: Options, oracle="auto", origin=None) -> None:
        super().__init__(image, opts, origin=origin)
        self.oracle_note = ""                   # why there is no oracle, when "auto" could not build one
        if oracle == "auto":
            oracle = None
            if origin is None:
                oracle, self.oracle_note = oracle_mod.make(self, image.path)
        #: g/m/p as this binary lays them out (the oracle's, from its DWARF), else the typed Go 1.27.3 ones
        self.structs: gs.StructTables = getattr(oracle, "structs", None) or self.structs
        self.watch = Watch(self, image.symbol("runtime.asyncPreempt.abi0"), oracle)
