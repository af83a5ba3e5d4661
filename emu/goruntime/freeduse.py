"""Which access to a freed object is the program's use of it: the rules RealGC's watch (realgc.py) applies to
every access its memory hooks see in memory a cycle freed. Not uses:
- a vector load that only runs into the object from a live neighbour (over_read: memhash_amd64.s:34-44 aes0to15
  loads 16 bytes around a 2-byte string; indexbyte, memeqbody likewise): the object stays watched;
- the collector scanning a quarantined object it reached through a stale conservative word (GC_SCAN,
  mgcmark.go scanobject/scanblock/scanConservative): the object stays watched;
- the runtime setting up a reused span or slot (SPAN_SETUP, directly or through memclrNoHeapPointers, whose
  caller's return address is at [rsp]: memclr_amd64.s has no frame), and an access after the slot was
  reallocated (the heap's answer, heapspans.HeapSpans.still_free): the object is no longer watched.
Everything else is a use. Mirrors no Go source but the runtime's functions named above; left out: a key shorter
than a vector block that itself lies in freed memory, read only by such a routine, is not reported (the object
stays watched: its next access within bounds is).
"""
from __future__ import annotations

from unicorn import UC_MEM_WRITE, UcError
from unicorn import x86_const as X

from ..engine.faultaddr import accesses, insn_at_rip
from ..linux.regbatch import read_reg

#: the runtime's functions that set up memory it hands to a new span (or takes back from one): their accesses to a
#: freed object's memory are the allocator's, not the program's (runtime/mheap.go:1215 allocSpan, :1430 initSpan;
#: mbitmap.go:505 initHeapBits; mgcmark_greenteagc.go:120-141 the inline mark bits; mgcsweep.go sweep)
SPAN_SETUP = frozenset({
    "runtime.(*mheap).allocSpan", "runtime.(*mheap).initSpan", "runtime.(*mheap).allocNeedsZero",
    "runtime.(*mheap).freeSpanLocked", "runtime.(*mspan).init", "runtime.(*mspan).initHeapBits",
    "runtime.(*mspan).initInlineMarkBits", "runtime.(*spanInlineMarkBits).init", "runtime.(*mspan).moveInlineMarks",
    "runtime.(*sweepLocked).sweep",
})
#: the collector's own reads of an object it reached (a quarantined one, through a stale conservative word):
#: marking, not the program's use (mgcmark.go scanobject/scanblock/scanConservative, mgcmark_greenteagc.go scanSpan)
GC_SCAN = frozenset({
    "runtime.scanobject", "runtime.scanObject", "runtime.scanblock", "runtime.scanConservative",
    "runtime.greyobject", "runtime.scanSpan", "runtime.scanObjectsSmall", "runtime.scanObjectSmall",
    "runtime.gcDrain", "runtime.gcDrainN", "runtime.findObject", "runtime.tryDeferToSpanScan",
})

WATCHED, REUSED, USE = "watched", "reused", "use"       # FreedUse.judge's verdicts


def over_read(uc, start: int, size: int) -> bool:
    """Whether the instruction reading [start, start + size) has an operand that only runs into it from outside:
    the runtime's vectorised routines load whole 16- or 32-byte blocks around a short key and mask off the rest,
    so a live object's last bytes drag its freed neighbour's first bytes into a register, unused. A Go-level
    access lies within one object; an operand inside the freed object is a use."""
    insn = insn_at_rip(uc)
    if insn is None:
        return False
    ends = [(a, a + n) for a, n in accesses(uc, insn) if a < start + size and start < a + n]
    return bool(ends) and all(a < start or b > start + size for a, b in ends)


class FreedUse:
    """The rules for process p's accesses, with `still_free(addr)` the heap's answer (heapspans.HeapSpans)."""

    def __init__(self, p, still_free) -> None:
        self.p, self.still_free = p, still_free

    def judge(self, uc, access: int, start: int, size: int, held: bool) -> str:
        """The access now running to the freed object [start, start + size) (`held`: in the quarantine): WATCHED
        (not a use; still watched), REUSED (not a use; the memory is no longer the freed object's) or USE."""
        if access != UC_MEM_WRITE and over_read(uc, start, size):
            return WATCHED
        pc = read_reg(uc, X.UC_X86_REG_RIP)
        if held and self.p.image.func_name(pc) in GC_SCAN:
            return WATCHED
        if not held and not self.still_free(start):
            return REUSED                       # reallocated: a new object lives there
        if self.span_setup(pc, read_reg(uc, X.UC_X86_REG_RSP)):
            return REUSED                       # the runtime reusing the memory for a new span, not the program
        return USE

    def span_setup(self, pc: int, rsp: int) -> bool:
        """Whether the access at pc is the runtime's own set-up of memory it is handing to a new span or slot
        (SPAN_SETUP), directly or through memclrNoHeapPointers called from one of them. Between such a write and
        the state that says so (allocBits, freeindex, the span's state) the memory reads as free, so still_free
        cannot tell."""
        im = self.p.image
        name = im.func_name(pc)
        if name == "runtime.memclrNoHeapPointers":
            try:
                name = im.func_name(self.p.read_u64(rsp))
            except UcError:
                return False
        return name in SPAN_SETUP
