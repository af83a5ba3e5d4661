"""The unwinder: from asyncPreempt2's frame out to the goroutine's entry, by return addresses.

Mirrors runtime/traceback.go's unwinder as the stack scan uses it (FACTS.md §5.1): each frame's size
comes from the function's SP delta (pcsp) at the frame's PC -- exactly at the interrupted PC for the
frame that was preempted (correct mid-prologue), at the call instruction for every caller. The frame
above an injected asyncPreempt is the interrupted one (unwindTrap: its PC is used as is, not PC-1).
"""
from __future__ import annotations

import bisect
from typing import NamedTuple

from ..core import memmap
from ..core.program import Program


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


#: Frame(...) runs NamedTuple's Python-level __new__; this is the same tuple built in C (5x faster)
_new_frame = tuple.__new__


class UnwindError(Exception):
    pass


def unwind(prog: Program, read_u64, sp: int, pc: int, stub_name: str = "asyncPreempt") -> list[Frame]:
    """Walk from (pc, sp) -- a PC inside asyncPreempt2 -- to goexit; return the frames innermost first."""
    frames: list[Frame] = []
    kind = "asyncPreempt2"
    steps = prog.unwind_cache
    for _ in range(10_000):
        key = (kind, pc, stub_name)
        step = steps.get(key)
        if step is None:
            step = steps[key] = _step(prog, kind, pc, len(frames), stub_name)
        name, size, call_pc, next_kind = step
        frames.append(_new_frame(Frame, (name, pc, sp, size, kind, call_pc)))
        sp += size
        pc = read_u64(sp)
        sp += 8
        if pc == memmap.GOEXIT:
            return frames
        kind = next_kind(pc) if callable(next_kind) else next_kind
    raise UnwindError("more than 10000 frames")


def _step(prog: Program, kind: str, pc: int, depth: int, stub_name: str):
    """What a frame of `kind` stopped at `pc` is, from the function tables alone (a pure function of
    its arguments, kept in prog.unwind_cache): (function name, SP delta, the CALL it stopped at or
    None, the next frame's kind or a function of the return address giving it)."""
    f = prog.func_for(pc)
    if f is None:
        raise UnwindError(f"pc {pc:#x} is in no known function (at frame {depth})")
    call_pc = None
    if kind in ("asyncPreempt2", "interrupted"):
        size = prog.insn_at(pc).sp_delta if kind == "interrupted" else _delta_at(f, pc)
    else:                                        # stopped at a call: the CALL just before pc
        call = _call_before(f, pc)
        if call is None:
            raise UnwindError(f"return address {pc:#x} does not follow a CALL in {f.name}")
        size, call_pc = call.sp_delta, call.addr
    if kind == "asyncPreempt2":
        def next_kind(ret: int) -> str:
            caller = prog.func_for(ret)
            return "asyncPreempt" if caller is not None and caller.name == stub_name else "caller"
    else:
        next_kind = "interrupted" if kind == "asyncPreempt" else "caller"
    return f.name, size, call_pc, next_kind


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
