"""preemu's safe-point oracle (emu/safepoint.py) asked about a real Go binary at a real signal.

At each SIGURG delivery this reads, from guest memory, the slice of g/m/p state that the runtime's
sighandler consults (runtime/signal_unix.go:691 `sig == sigPreempt && debug.asyncpreemptoff == 0`,
doSigPreempt at :342, wantAsyncPreempt and isAsyncSafePoint in runtime/preempt.go:369-390), and
the function metadata from the binary's pclntab (emu/gobinary.py: findfunc, PCDATA_UnsafePoint,
FuncFlagAsm / locals pointer map, the inline tree), then asks emu/safepoint.py for its verdict.
The watch compares the verdict with what the runtime did. Struct offsets are the Go 1.27.3 table
in emu/gostructs.py (m.preemptoff is a string: its length is the word after the pointer);
asyncPreemptStack is read from the runtime's own variable. Without emu/gobinary.py (pclntab
reader) the oracle is unavailable and verdicts are reported as None.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from .. import gostructs as gs
from .. import safepoint

try:                                   # the pclntab reader (issue "real Go": emu/gobinary.py)
    from .. import gobinary
except ImportError:                    # pragma: no cover - depends on which branch is merged
    gobinary = None

SIGURG = gs.SIG_PREEMPT


@dataclass(frozen=True)
class _Func:
    goname: str
    asm: bool


@dataclass(frozen=True)
class _Insn:
    inline: str | None


class BinaryProgram:
    """The three questions safepoint.is_async_safe_point asks of a Program, answered from a pclntab."""

    def __init__(self, binary) -> None:
        self.bin = binary

    def func_for(self, pc: int) -> _Func | None:
        f = self.bin.func_for(pc)
        if f is None:
            return None
        no_locals_map = self.bin.funcdata_addr(f, gobinary.FUNCDATA_LocalsPointerMaps) is None
        return _Func(f.name, f.is_asm or no_locals_map)

    def unsafe_point(self, pc: int) -> int:
        f = self.bin.func_for(pc)
        return gs.UNSAFE_POINT_SAFE if f is None else self.bin.unsafe_point(f, pc)

    def insn_at(self, pc: int) -> _Insn | None:
        f = self.bin.func_for(pc)
        if f is None:
            return None
        frames = self.bin.inline_frames(f, pc)          # innermost first, ending with f itself
        return _Insn(frames[0] if len(frames) > 1 else None)


def _field(table: dict, name: str) -> int:
    return table[name].offset


def sched_state(proc, g: int) -> safepoint.SchedState:
    """Read the SchedState of goroutine g (and its M and P) from guest memory."""
    def u(addr: int, size: int) -> int:
        return int.from_bytes(proc.read(addr, size), "little")
    G, M, P = gs.G_FIELDS, gs.M_FIELDS, gs.P_FIELDS
    m = u(g + _field(G, "m"), 8)
    mp = u(m + _field(M, "p"), 8) if m else 0
    return safepoint.SchedState(
        gp=g, g_status=u(g + _field(G, "atomicstatus"), 4), g_preempt=bool(u(g + _field(G, "preempt"), 1)),
        stack_lo=u(g + _field(G, "stack.lo"), 8), stack_hi=u(g + _field(G, "stack.hi"), 8),
        m_curg=u(m + _field(M, "curg"), 8) if m else 0, m_p=mp,
        m_locks=u(m + _field(M, "locks"), 4) if m else 0, m_mallocing=u(m + _field(M, "mallocing"), 4) if m else 0,
        m_preemptoff=u(m + _field(M, "preemptoff") + gs.PTR_SIZE, 8) if m else 0,
        p_status=u(mp + _field(P, "status"), 4) if mp else 0,
        p_preempt=bool(u(mp + _field(P, "preempt"), 1)) if mp else False)


class Oracle:
    """Callable (thread, delivered frame) -> reason code, as the Watch expects."""

    def __init__(self, proc, binary_path: str) -> None:
        self.proc = proc
        self.prog = BinaryProgram(gobinary.GoBinary.open(binary_path))
        self.headroom_addr = proc.image.symbol("runtime.asyncPreemptStack")

    def __call__(self, t, frame) -> str | None:
        if frame.sig != SIGURG:
            return None
        if not self.proc.async_preemption_on:
            return "asyncpreemptoff"
        g = self.proc.read_u64(frame.fs_base - 8)
        if g == 0:
            return "not-curg"
        st = sched_state(self.proc, g)
        if not safepoint.want_async_preempt(st):
            return "no-request"
        headroom = struct.unpack("<Q", self.proc.read(self.headroom_addr, 8))[0]
        return safepoint.is_async_safe_point(self.prog, st, frame.regs["RIP"], frame.regs["RSP"], headroom).reason


def make(proc, binary_path: str):
    """The oracle for this process, or None when the pclntab reader is not available."""
    return Oracle(proc, binary_path) if gobinary is not None else None
