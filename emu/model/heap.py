"""The garbage-collected heap: an arena in emulated memory with objects and mark bits.

Models what the stack-scan issue needs of runtime/malloc.go and mgcsweep.go: runtime.newobject
returns zeroed memory; a mark phase sets mark bits; sweep frees every allocated, unmarked object and
poisons its memory (0xDE bytes) so a later access is a use-after-free. Objects are bump-allocated,
16-byte aligned, one after another, and never reused, so a run with GCs allocates exactly the
addresses of the uninterrupted run. Left out: size-class spans, the allocation-black rule
(isFreeOrNewlyAllocated), finalizers. Objects of a real Go binary carry their type's pointer words
(scanned precisely, mgcmark.go scanobject); so do objects of .s programs allocated with
`lea rax, [T]; call newobject` for a type declared `;@type T SIZE OFF...` (as Go's newobject takes a
*_type); an object allocated by size (`mov eax, SIZE`) carries none (scanned conservatively).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from ..core import memmap

ALIGN = 16
POISON = 0xDE


@dataclass
class Obj:
    base: int
    size: int
    freed_at: int | None = None        # the injection boundary of the GC that freed it
    # word offsets (in 8-byte words) the GC scans as pointers (the type's bitmap, mbitmap.go); None =
    # no type information: every word is scanned conservatively
    ptr_words: tuple[int, ...] | None = None


class Heap:
    def __init__(self, base: int = memmap.HEAP_BASE, size: int = memmap.HEAP_SIZE):
        self.base, self.limit = base, base + size
        self.next = base
        self.objs: list[Obj] = []
        self._bases: list[int] = []
        self.marked: set[int] = set()

    # --- state for snapshots ----------------------------------------------------------------
    def snapshot(self):
        return (self.next, [(o.base, o.size, o.freed_at, o.ptr_words) for o in self.objs])

    def restore(self, snap) -> None:
        self.next, objs = snap
        self.objs = [Obj(*o) for o in objs]
        self._bases = [o.base for o in self.objs]
        self.marked = set()

    @property
    def used(self) -> tuple[int, int]:
        return self.base, self.next - self.base

    # --- mallocgc ---------------------------------------------------------------------------
    def alloc(self, size: int, ptr_words: tuple[int, ...] | None = None) -> int:
        """runtime.newobject(size): the address of fresh zeroed memory (the arena starts zeroed).
        `ptr_words`: the object's pointer words from its type (precise scan), or None (conservative)."""
        size = max(ALIGN, (size + ALIGN - 1) // ALIGN * ALIGN)
        if self.next + size > self.limit:
            raise MemoryError(f"heap exhausted ({self.limit - self.base} bytes)")
        o = Obj(self.next, size, None, ptr_words)
        self.next += size
        self.objs.append(o)
        self._bases.append(o.base)
        return o.base

    def find(self, addr: int) -> Obj | None:
        """spanOfHeap + objIndex: the object containing addr (interior pointers included), or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i >= 0:
            o = self.objs[i]
            if o.base <= addr < o.base + o.size:
                return o
        return None

    def live(self) -> list[Obj]:
        return [o for o in self.objs if o.freed_at is None]
