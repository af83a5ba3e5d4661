"""Goroutine stack moves: copystack (runtime/stack.go), used by newstack's growth and by shrinkstack.

Adjusts RSP, RBP and the saved-BP chain; other words that point into the old stack would need the
stack maps Go's adjustpointers uses, and are left out. The old stack is unmapped, as Go frees it.
"""
from __future__ import annotations

from . import gostructs as gs
from . import memmap
from .errors import GuestFault
from .machine import Machine
from .structref import StructRef


def copystack(machine: Machine, g: StructRef, lo: int, hi: int, slot_base: int,
              new_size: int | None = None) -> tuple[int, int]:
    """copystack(gp, newsize): move the used stack to a new region (twice as large by default) below the old one.

    Adjusted: RSP, RBP and the frame-pointer chain (saved BPs), g.stack, stackguard0. Not adjusted
    (needs stack maps): other words that point into the old stack. The old stack is unmapped, as Go
    frees it, so a stale pointer faults instead of reading garbage. Returns the new (lo, hi).
    """
    m = machine
    size = new_size or 2 * (hi - lo)
    # below the old stack, a guard page apart, with lo page-aligned (a 2 KiB stack after a shrink too)
    new_lo = memmap.page_down(lo - memmap.STACK_GUARD_SIZE - size)
    new_hi = new_lo + size
    if new_lo - memmap.STACK_GUARD_SIZE < slot_base:
        raise GuestFault(m.pc, m.all.describe_pc(m.pc), f"stack overflow: a {size}-byte stack does not fit the "
                         f"goroutine's {memmap.STACK_SLOT // 1024} KiB slot")
    sp = m.reg("RSP")
    used = m.read(sp, hi - sp)
    m.map_stack(new_lo, new_hi)
    delta = new_hi - hi
    m.write(new_hi - len(used), used)
    m.set_reg("RSP", sp + delta)
    bp = m.reg("RBP")
    if lo <= bp < hi:
        m.set_reg("RBP", bp + delta)
        frame = bp + delta
        while True:                                  # walk the saved-BP chain
            saved = m.read_u64(frame)
            if not lo <= saved < hi:
                break
            m.write_u64(frame, saved + delta)
            frame = saved + delta
    m.unmap_stack(lo, hi)
    g.set("stack.lo", new_lo)
    g.set("stack.hi", new_hi)
    g.set("stackguard0", new_lo + gs.STACK_GUARD)
    return new_lo, new_hi
