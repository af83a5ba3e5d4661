"""The unwinder: from asyncPreempt2's frame out to the goroutine's entry, by return addresses.

Mirrors runtime/traceback.go's unwinder as the stack scan uses it (FACTS.md §5.1): each frame's size
comes from the function's SP delta (pcsp) at the frame's PC -- exactly at the interrupted PC for the
frame that was preempted (correct mid-prologue), at the call instruction for every caller. The frame
above an injected asyncPreempt is the interrupted one (unwindTrap: its PC is used as is, not PC-1).
"""
from __future__ import annotations

import bisect
from typing import NamedTuple

from . import memmap
from .program import Program


class Frame(NamedTuple):            # a tuple: built at every GC's unwinding, several per frame walk
    func: str                # function name
    pc: int                  # the frame's PC (the interrupted PC, or a return address)
    sp: int                  # SP inside the frame
    size: int                # SP delta at pc: locals + saved BP; the return address is at sp + size
    kind: str                # "asyncPreempt2" | "asyncPreempt" | "interrupted" | "caller"
    call_pc: int | None      # for callers: the CALL instruction the frame is stopped at

    @property
    def ret_slot(self) -> int:
        return self.sp + self.size


class UnwindError(Exception):
    pass


def unwind(prog: Program, read_u64, sp: int, pc: int, stub_name: str = "asyncPreempt") -> list[Frame]:
    """Walk from (pc, sp) -- a PC inside asyncPreempt2 -- to goexit; return the frames innermost first."""
    frames: list[Frame] = []
    kind = "asyncPreempt2"
    for _ in range(10_000):
        f = prog.func_for(pc)
        if f is None:
            raise UnwindError(f"pc {pc:#x} is in no known function (at frame {len(frames)})")
        call_pc = None
        if kind in ("asyncPreempt2", "interrupted"):
            insn = prog.insn_at(pc) if kind == "interrupted" else f.insns[0]
            size = insn.sp_delta if kind == "interrupted" else _delta_at(f, pc)
        else:                                        # stopped at a call: the CALL just before pc
            call = _call_before(f, pc)
            if call is None:
                raise UnwindError(f"return address {pc:#x} does not follow a CALL in {f.name}")
            size, call_pc = call.sp_delta, call.addr
        frames.append(Frame(f.name, pc, sp, size, kind, call_pc))
        ret = read_u64(sp + size)
        sp = sp + size + 8
        pc = ret
        if pc == memmap.GOEXIT:
            return frames
        if kind == "asyncPreempt2":
            caller = prog.func_for(pc)
            kind = "asyncPreempt" if caller is not None and caller.name == stub_name else "caller"
        elif kind == "asyncPreempt":
            kind = "interrupted"
        else:
            kind = "caller"
    raise UnwindError("more than 10000 frames")


def _delta_at(f, pc: int) -> int:
    """SP delta at pc inside f (pc may sit just after an INT3 sentinel: use the last insn <= pc)."""
    i = bisect.bisect_right(f.insns, pc, key=_addr) - 1
    best = f.insns[max(i, 0)]
    return best.sp_delta if best.addr == pc else _after(best)


def _addr(insn) -> int:
    return insn.addr


def _after(insn) -> int:
    m = insn.mnemonic
    if m in ("push", "pushfq"):
        return insn.sp_delta + 8
    if m in ("pop", "popfq"):
        return insn.sp_delta - 8
    return insn.sp_delta


def _call_before(f, ret: int):
    """The CALL instruction of f that ends at the return address `ret`, or None."""
    i = bisect.bisect_left(f.insns, ret, key=_addr) - 1
    if i >= 0:
        insn = f.insns[i]
        if insn.addr + insn.size == ret and insn.mnemonic.startswith("call"):
            return insn
    return None
