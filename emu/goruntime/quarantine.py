"""The quarantine of freed objects under `--gc` (issue #46 item 2), as AddressSanitizer keeps freed memory out of
reuse: a slot the runtime's cycle frees stays out of the allocator's reach for the rest of the run, so a stale
pointer read after the slot "would have been reused" still lands in freed memory and the watch
(realgc.RealGC._on_access) reports it, where without it the new owner's object would answer and nothing could
tell.

Mirrors the runtime's sweep (runtime/mgcsweep.go:520-700, sweepLocked.sweep): at gcSweep (mgc.go:2065, the world
stopped, marking complete, no span swept yet) every span's gcmarkBits become its allocBits when it is swept, so
setting a freed object's mark bit there keeps its slot allocated; Green Tea's inline marks are ORed into the same
bits (mgcmark_greenteagc.go:193 moveInlineMarks), and the zombie check (mgcsweep.go:659) only objects to a
marked slot that was not allocated, which a freed object was. Each later cycle frees it again (nothing reaches
it) and is met the same way.

What it changes, and what it leaves out:
- A quarantined object of a span with pointers has its words cleared (its malloc header kept, malloc.go:1180):
  a conservatively scanned stale word may still reach it, and the runtime would then scan what it held and
  fail on a pointer into a span since freed ("found bad pointer in Go heap"); cleared, it holds none.
- An object with a special record (a finalizer, a weak handle, a cleanup, a profile record: mheap.go:1965) is
  not quarantined: the sweep acts on those when the object dies (mgcsweep.go:545-600), and keeping it would
  keep a weak pointer alive that natively reads nil.
- The quarantine holds at most LIMIT bytes (ASan's default quarantine is 256 MiB; a run here is short); objects
  freed past it are watched as before, until reallocated. The heap grows by what it holds, so the pacer runs
  cycles later than it would: legitimate timing, which the GC references already vary.
- Only the concurrent mode: under `--gc=scan` (gcstoptheworld=2) the cycle has swept by the time preemu reads
  what it freed.
"""
from __future__ import annotations

import struct

from .heapspans import MALLOC_HEADER_MIN

LIMIT = 16 << 20                        # bytes held at most


class Quarantine:
    """The objects kept out of reuse, by address, and the bytes they hold."""

    def __init__(self, heap, limit: int = LIMIT) -> None:
        self.heap = heap                # the heap whose spans hold what this holds (heapspans.HeapSpans)
        self.limit = limit
        self.held: dict[int, object] = {}   # address -> the Freed record of the cycle that first freed it
        self.bytes = 0
        self.refused = 0                # freed objects not held: a special record, or past the limit

    def __contains__(self, addr: int) -> bool:
        return addr in self.held

    def hold(self, freed: list) -> list:
        """At gcSweep of a cycle preemu started, after keep(): keep each object it freed out of the coming sweep.
        Returns `freed` (an object not held is still watched, until reallocated)."""
        spans: dict[int, tuple[dict, set[int]]] = {}
        for o in freed:
            slot = self._slot(o.addr, spans)
            if slot is None:
                continue
            s, i, specials = slot
            off = o.addr - s["startAddr"]
            if any(off <= x < off + s["elemsize"] for x in specials) or self.bytes + o.size > self.limit:
                self.refused += 1
                continue
            self.held[o.addr] = o
            self.bytes += o.size
            self._clear(o.addr, o.size, s)
            self._mark(s, i)
        return freed

    def keep(self) -> None:
        """At every cycle's gcSweep: mark each held object again (nothing reaches it, so every cycle would free it)."""
        spans: dict[int, tuple[dict, set[int]]] = {}
        for addr in self.held:
            slot = self._slot(addr, spans, specials=False)
            if slot is not None:
                self._mark(slot[0], slot[1])

    def _slot(self, addr: int, spans: dict, specials: bool = True) -> tuple[dict, int, set[int]] | None:
        """(span fields, slot index, its special offsets) of the object at addr, or None outside any span's slots."""
        sp = self.heap.span_of(addr)
        if not sp:
            return None
        if sp not in spans:
            s = self.heap.span_fields(sp)
            spans[sp] = (s, self._special_offsets(s) if specials else set())
        s, offs = spans[sp]
        i = self.heap.slot_index(s, addr)
        return (s, i, offs) if i is not None and s["gcmarkBits"] else None

    def _mark(self, s: dict, i: int) -> None:
        at = s["gcmarkBits"] + i // 8
        b = self.heap.p.read(at, 1)[0]
        self.heap.p.write(at, bytes([b | 1 << (i % 8)]))

    def _clear(self, addr: int, size: int, s: dict) -> None:
        if s["spanclass"] & 1:          # noscan: nothing the collector would follow
            return
        skip = 8 if s["elemsize"] > MALLOC_HEADER_MIN and not s["largeType"] else 0
        self.heap.p.write(addr + skip, bytes(size - skip))

    def _special_offsets(self, s: dict) -> set[int]:
        """The span offsets its special records name (mheap.go:1965 special: next, offset, kind)."""
        out: set[int] = set()
        at, lay = s.get("specials", 0), self.heap.L["special"]
        seen = 0
        while at and seen < 100_000:
            out.add(struct.unpack("<Q", self.heap.p.read(at + lay["offset"][0], 8))[0])
            at = struct.unpack("<Q", self.heap.p.read(at + lay["next"][0], 8))[0]
            seen += 1
        return out
