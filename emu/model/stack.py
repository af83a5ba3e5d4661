"""Goroutine stack moves: copystack (runtime/stack.go), used by newstack's growth and by shrinkstack.

Adjusts RSP, RBP and the saved-BP chain, RDX (adjustctxt: the closure context morestack saved), and
in a Go binary every word adjustframe adjusts (stack.go:657-713): each frame's live pointer slots from
its stack maps (the args map at entry for the function whose prologue called morestack) and the
pointer words of its stack objects at or above the frame's SP. Left out: .s programs' other words
that point into the stack (they have no stack maps), defers, panics and sudogs. The old stack is
unmapped, as Go frees it.
"""
from __future__ import annotations

from ..core import gostructs as gs
from ..core import memmap
from ..core.errors import EmuError, GuestFault
from .machine import Machine
from ..core.structref import StructRef


def pointer_slots(binary, read_u64, sp: int) -> list[int]:
    """The stack words adjustframe adjusts (stack.go:657-713), walking from a goroutine stopped at a
    prologue's CALL morestack (sp: RSP there, at the return address into that function) to goexit:
    each frame's live pointer slots (gofuncdata's live_pointer_slots; for the first frame, at its prologue,
    the entry args map) and its stack objects' pointer words. A frame without stack maps (assembly)
    contributes none; the walk ends at goexit or at a PC outside the binary."""
    out: list[int] = []
    sp += 8                                           # past morestack's return address: the function's SP
    for _ in range(10_000):
        pc = read_u64(sp - 8)
        if pc == memmap.GOEXIT:
            return out
        f = binary.func_for(pc)
        if f is None:
            return out
        try:
            out += binary.live_pointer_slots(f, pc, sp)
        except EmuError:
            pass
        fr = binary.frame(f, pc, sp)
        for base, ob in binary.allocated_stack_objects(f, fr):
            out += [base + 8 * w for w in ob.ptr_words]
        sp = fr.fp                                    # the caller's SP, just past this frame's return address
    return out


def copystack(machine: Machine, g: StructRef, lo: int, hi: int, slot_base: int,
              new_size: int | None = None, binary=None) -> tuple[int, int]:
    """copystack(gp, newsize): move the used stack to a new region (twice as large by default) below the old one.

    Adjusted: RSP, RBP and the frame-pointer chain (saved BPs), g.stack, stackguard0, and with a Go
    `binary` the pointer slots of every frame (pointer_slots). The old stack is unmapped, as Go frees
    it, so a stale pointer faults instead of reading garbage. Returns the new (lo, hi).
    """
    m = machine
    slots = pointer_slots(binary, m.read_u64, m.reg("RSP")) if binary is not None else []
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
    ctxt = m.reg("RDX")
    if lo <= ctxt < hi:                              # adjustctxt (stack.go:805): a closure's context
        m.set_reg("RDX", ctxt + delta)
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
    for a in set(slots):
        if lo <= a < hi:
            v = m.read_u64(a + delta)
            if lo <= v < hi:
                m.write_u64(a + delta, v + delta)
    m.unmap_stack(lo, hi)
    g.set("stack.lo", new_lo)
    g.set("stack.hi", new_hi)
    g.set("stackguard0", new_lo + gs.STACK_GUARD)
    return new_lo, new_hi
