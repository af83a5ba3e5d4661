"""preemu's safe-point oracle (emu/safepoint.py) asked about a real Go binary at a real signal.

At each SIGURG delivery this reads, from guest memory, the slice of g/m/p state that the runtime's
sighandler consults (runtime/signal_unix.go:691 `sig == sigPreempt && debug.asyncpreemptoff == 0`,
doSigPreempt at :342, wantAsyncPreempt and isAsyncSafePoint in runtime/preempt.go:369-390), and
the function metadata from the binary's pclntab (emu/gofront.py's lazy GoProgram over
emu/gobinary.py: findfunc, PCDATA_UnsafePoint, FuncFlagAsm / locals pointer map, the inline tree),
then asks emu/safepoint.py for its verdict. The watch compares the verdict with what the runtime
did. Struct offsets are the binary's own, from its DWARF (gofront.struct_tables; m.preemptoff is a
string: its length word counts);
asyncPreemptStack is read from the runtime's own variable. A binary whose runtime has another
layout runs without the oracle (verdicts None, the reason in the report).
"""
from __future__ import annotations

import struct

from unicorn import UcError

from .. import gmp, gobinary, gofront, safepoint
from .. import gostructs as gs
from ..errors import EmuError
from ..structref import StructRef

SIGURG = gs.SIG_PREEMPT


def sched_state(proc, g: int, tables: gs.StructTables | None = None) -> safepoint.SchedState:
    """The SchedState of goroutine g, its M and the M's P, read from guest memory by the same reader
    the emulated runtime uses (gmp.read_sched_state; `proc.read` stands in for the machine's), the
    structs laid out as `tables` (default: the typed Go 1.27.3 ones)."""
    t = tables or gs.typed_tables()
    gr = StructRef(proc, g, t.g)
    m = gr.get("m")
    mr = StructRef(proc, m, t.m)
    pp = mr.get("p") if m else 0
    return gmp.read_sched_state(gr, mr, StructRef(proc, pp, t.p) if pp else None)


class Oracle:
    """Callable (thread, delivered frame) -> reason code, as the Watch expects."""

    def __init__(self, proc, binary_path: str) -> None:
        self.proc = proc
        binary = gobinary.GoBinary.open(binary_path)
        self.structs = gofront.struct_tables(binary_path, binary.raw)   # g/m/p as this binary lays them out
        self.prog = gofront.GoProgram(binary, binary_path)               # lazy findfunc
        self.headroom_addr = proc.image.symbol("runtime.asyncPreemptStack")

    def __call__(self, t, frame, g: int | None = None) -> str | None:
        """The verdict for the signal delivered in `frame`, from the g/m/p state as it is now; `g` is the
        goroutine the handler passes to doSigPreempt (default: the thread's TLS g at delivery)."""
        if frame.sig != SIGURG:
            return None
        if not self.proc.async_preemption_on:
            return "asyncpreemptoff"
        if g is None:
            g = self.proc.read_u64(frame.fs_base - 8)
        if g == 0:
            return "not-curg"
        try:
            st = sched_state(self.proc, g, self.structs)
        except UcError:                         # a g/m/p pointer into unmapped memory: no verdict
            return None
        if not safepoint.want_async_preempt(st):
            return "no-request"
        headroom = struct.unpack("<Q", self.proc.read(self.headroom_addr, 8))[0]
        return safepoint.is_async_safe_point(self.prog, st, frame.regs["RIP"], frame.regs["RSP"], headroom).reason


def make(proc, binary_path: str):
    """The oracle for this process, or (None, why) when this binary's runtime does not fit the model."""
    try:
        return Oracle(proc, binary_path), ""
    except EmuError as e:
        return None, str(e)
