"""The Go heap as the runtime's own metadata describes it, read from a live process: every span (mheap_.allspans,
spanOf through the arenas), its slots, which are allocated (mspan.isFree) and which the last mark reached
(gcmarkBits, Green Tea's inline marks), at the offsets the binary's DWARF gives (FIELDS). realgc.py asks it what a
cycle freed and whether an address is still free; quarantine.py finds the slots it holds with it.

Mirrors runtime/mheap.go (spanOf, mSpanState), mbitmap.go (isFree, isFreeOrNewlyAllocated), mgcsweep.go's
sweepgen states and mgcmark_greenteagc.go's inline mark bits, for Go 1.21-1.27 on linux/amd64. Left out: user
arena chunks; the heap bitmap's pointer bits (the type of an object is read from its malloc header or largeType).
"""
from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass

from unicorn import UcError

from ..core.errors import EmuError
M_SPAN_DEAD, M_SPAN_IN_USE, M_SPAN_MANUAL = 0, 1, 2    # runtime/mheap.go:387
PAGE_SHIFT = 13                          # _PageShift
PAGES_PER_ARENA = 8192                   # heapArenaBytes (64 MiB) / pageSize
ARENA_SHIFT = 26                         # logHeapArenaBytes on linux/amd64
ARENA_BASE_OFFSET = 0xffff800000000000   # arenaBaseOffset (malloc.go:314)
MALLOC_HEADER_MIN = 512                 # minSizeForMallocHeader (malloc.go): larger scan objects start with *_type
INLINE_MARK_MAX = 512                    # gcUsesSpanInlineMarkBits: heapBitsInSpan(size) && size >= 16

#: (struct, field path) preemu reads, as the binary's DWARF lays them out
FIELDS = {
    "span": ("runtime.mspan", ("startAddr", "npages", "freeindex", "nelems", "allocBits", "sweepgen",
                               "spanclass", "state", "elemsize", "largeType", "freeIndexForScan", "gcmarkBits",
                               "specials")),
    "special": ("runtime.special", ("next", "offset")),
    "mheap": ("runtime.mheap", ("allspans", "arenas", "sweepgen")),
    "arena": ("runtime.heapArena", ("spans",)),
    "mstats": ("runtime.mstats", ("numgc", "last_gc_nanotime")),
    "frame": ("runtime.stkframe", ("pc", "sp", "varp")),
    "scan": ("runtime.stackScanState", ("conservative",)),
    "g": ("runtime.g", ("atomicstatus", "asyncSafePoint", "preemptStop")),
    "sched": ("runtime.schedt", ("npidle", "gcwaiting")),
    "forcegc": ("runtime.forcegcstate", ("idle",)),
}
#: read when the binary has them (Green Tea GC, Go 1.25+ with the experiment, 1.26+ by default): a small-object
#: span's mark bits at the end of its first page (mgcmark_greenteagc.go spanInlineMarkBits)
OPTIONAL = {"inline": ("runtime.spanInlineMarkBits", ("marks",))}


def layout(binary_path: str, raw: bytes) -> dict[str, dict[str, tuple[int, int]]]:
    """{kind: {field: (offset, size)}} for FIELDS, from the binary's DWARF (cached like golayout.struct_tables)."""
    from ..front import gobuild, godwarf
    digest = hashlib.sha256(raw + repr((FIELDS, OPTIONAL)).encode()).hexdigest()
    cache = gobuild.cache_dir() / "layout" / f"heap-{digest}.json"
    if cache.exists():
        return {k: {n: tuple(v) for n, v in d.items()} for k, d in json.loads(cache.read_text()).items()}
    try:
        dw = godwarf.GoDwarf.open(binary_path)
    except godwarf.DwarfError as e:
        raise EmuError(f"--gc reads the heap's spans at the binary's own offsets: {e}") from None
    out: dict = {}
    with dw:
        for kind, (type_name, names) in FIELDS.items():
            out[kind] = {}
            for n in names:
                m = dw.field(type_name, n)
                out[kind][n] = (m.offset, m.size)
        for kind, (type_name, names) in OPTIONAL.items():
            try:
                st = dw.struct(type_name)
                out[kind] = {n: (dw.field(type_name, n).offset, dw.field(type_name, n).size) for n in names}
                out[kind]["__size__"] = (st.size, 0)
            except godwarf.DwarfError:
                out[kind] = {}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(out))
    return out


@dataclass
class Freed:
    """An object the cycle at an injection freed."""
    addr: int
    size: int
    boundary: int                 # the injection point whose cycle freed it
    type: str = ""


def allocated_slots(alloc_bits: int, freeindex: int, nelems: int) -> int:
    """Bit i set: slot i of a span is allocated, as mspan.isFree answers (mbitmap.go:1174): i < freeindex,
    or its allocBits bit (allocations since the last sweep advance freeindex, not allocBits)."""
    return (alloc_bits | ((1 << freeindex) - 1)) & ((1 << nelems) - 1)


class HeapSpans:
    """The heap of process p: its spans, slots and their bits (see the module docstring). `concurrent`: a span
    not swept since the last cycle frees its unmarked slots (the lazy sweep of the concurrent mode)."""

    def __init__(self, p, concurrent: bool) -> None:
        self.p, self.concurrent = p, concurrent
        im = p.image
        self.L = layout(im.path, open(im.path, "rb").read())
        self.mheap = im.symbol("runtime.mheap_")
        self.greentea = "runtime.(*spanInlineMarkBits).init" in im.symbols and bool(self.L.get("inline"))
        self._binary = None
        fields = sorted(self.L["span"].items(), key=lambda kv: kv[1][0])       # one unpack of an mspan
        fmt, pos = "<", 0
        for _, (off, size) in fields:
            fmt += f"{off - pos}x" + {1: "B", 2: "H", 4: "I", 8: "Q"}[size]
            pos = off + size
        self._span_fmt = (tuple(n for n, _ in fields), struct.Struct(fmt), pos)
        self._span_keys = tuple(self._span_fmt[0].index(n) for n in ("elemsize", "startAddr", "nelems", "allocBits",
                                                                       "freeindex", "spanclass", "largeType"))
        self._state_at, size = self.L["span"]["state"]  # mSpanStateBox's uint8 (mheap.go), tested before the unpack
        assert size == 1, f"runtime.mspan.state is {size} bytes in this binary's DWARF, not 1"

    def f(self, kind: str, name: str) -> int:
        """The offset of a FIELDS field in this binary."""
        return self.L[kind][name][0]

    def span_fields(self, sp: int) -> dict:
        names, st, size = self._span_fmt
        return dict(zip(names, st.unpack(self.p.read(sp, size))))

    @staticmethod
    def slot_index(s: dict, addr: int) -> int | None:
        """The slot of span s (span_fields) that addr lies in, or None outside its slots."""
        i = (addr - s["startAddr"]) // s["elemsize"] if s["elemsize"] else -1
        return i if 0 <= i < s["nelems"] else None

    def allocated(self, s: dict) -> int:
        """Bit i set: slot i of span s is allocated (heap computes the same for every span at once)."""
        n = s["nelems"]
        bits = int.from_bytes(self.p.read(s["allocBits"], (n + 7) // 8), "little") if n else 0
        return allocated_slots(bits, s["freeindex"], n)

    def _windowed(self, windows: dict, addr: int, n: int, extra: int) -> tuple[bytes, int]:
        """(buf, base): buf holds [addr, addr + n) at offset addr - base. Read as addr's page plus `extra`
        bytes, once per page (kept in `windows`), when n <= extra; alone when it is larger, or when the
        page's window cannot be read (the next page is not mapped)."""
        page = addr & ~0xFFF
        buf = windows.get(page)
        if buf is None and n <= extra:
            try:
                buf = windows[page] = self.p.read(page, 0x1000 + extra)
            except UcError:
                pass
        if buf is None or n > extra:
            return self.p.read(addr, n), addr
        return buf, page

    def heap(self) -> dict[int, tuple]:
        """Every in-use span: start address -> (elemsize, nelems, allocated slots, span, spanclass, largeType).

        Read twice at every --gc point, over every span the heap ever had, through page windows: the mspans
        come from one fixalloc (runtime/mheap.go spanalloc), so they lie a few dozen to a page, and the
        gcBits arenas hold many spans' allocBits to a page."""
        off, _ = self.L["mheap"]["allspans"]
        arr, n = struct.unpack("<QQ", self.p.read(self.mheap + off, 16))
        _, st, size = self._span_fmt
        i_elemsize, i_start, i_nelems, i_bits, i_free, i_class, i_large = self._span_keys
        state_at = self._state_at
        out = {}
        spans: dict[int, bytes] = {}
        bitmaps: dict[int, bytes] = {}
        for sp in struct.unpack(f"<{n}Q", self.p.read(arr, 8 * n)) if n else ():
            buf, base = self._windowed(spans, sp, size, size)
            if buf[sp - base + state_at] != M_SPAN_IN_USE:
                continue                      # most spans: free, or the runtime's own (manual)
            v = st.unpack_from(buf, sp - base)
            es = v[i_elemsize]
            if not es:
                continue
            ne, ab = v[i_nelems], v[i_bits]
            nb = (ne + 7) // 8
            buf, base = self._windowed(bitmaps, ab, nb, 128)    # 128 bytes: 1,024 slots, a small-object span's most
            bits = int.from_bytes(buf[ab - base:ab - base + nb], "little")
            out[v[i_start]] = (es, ne, allocated_slots(bits, v[i_free], ne), sp, v[i_class], v[i_large])
        return out

    def span_of(self, addr: int) -> int:
        """runtime.spanOf (mheap.go:687): the span covering addr, or 0."""
        ri = ((addr - ARENA_BASE_OFFSET) & (1 << 64) - 1) >> ARENA_SHIFT
        l2 = self.p.read_u64(self.mheap + self.f("mheap", "arenas"))
        if not l2 or ri >= 1 << 22:
            return 0
        ha = self.p.read_u64(l2 + 8 * ri)
        if not ha:
            return 0
        return self.p.read_u64(ha + self.f("arena", "spans") + 8 * ((addr >> PAGE_SHIFT) % PAGES_PER_ARENA))

    def still_free(self, addr: int) -> bool:
        """Whether the runtime would answer that addr lies in free memory (no span in use, or a free slot of one);
        an address of a span in use outside its slots is the runtime's own (span metadata), never free."""
        sp = self.span_of(addr)
        if not sp:
            return True
        s = self.span_fields(sp)
        if s["state"] == M_SPAN_MANUAL:
            return False                    # the runtime's own memory now (stacks, workbufs)
        if s["state"] != M_SPAN_IN_USE:
            return True
        i = self.slot_index(s, addr)
        if i is None:
            return False                    # no slot of the span: its own metadata (Green Tea's inline mark bits
            #                                 at a small-object span's end, mgcmark_greenteagc.go:139-141)
        if self.concurrent:           # the lazy sweep: a span not swept since the last cycle frees its unmarked slots
            hsg = int.from_bytes(self.p.read(self.mheap + self.f("mheap", "sweepgen"), 4), "little")
            d = (s["sweepgen"] - hsg) & 0xFFFFFFFF
            if d in (0xFFFFFFFE, 1):                  # sweepgen == h-2 (needs sweeping) or h+1 (cached, needs it)
                return not (self.marks(s) >> i) & 1
            if d == 0xFFFFFFFF:                       # h-1: being swept
                return not ((self.allocated(s) | self.marks(s)) >> i) & 1
        return not (self.allocated(s) >> i) & 1

    def type_of(self, addr: int, span: tuple) -> str:
        elemsize, _, _, _, spanclass, large = span
        noscan = spanclass & 1
        try:
            if large:
                tp = large
            elif not noscan and elemsize > MALLOC_HEADER_MIN:
                tp = self.p.read_u64(addr)
            else:
                return ""
            if self._binary is None:           # the oracle's, already open; else read the binary once
                o = self.p.watch.oracle
                if o is not None:
                    self._binary = o.prog.binary
                else:
                    from ..front.gobinary import GoBinary
                    self._binary = GoBinary.open(self.p.image.path)
            return self._binary.go_type(tp).name
        except Exception:                   # a header that no longer names a type: say nothing
            return ""

    def _inline_marks(self, start: int, elemsize: int, nbytes: int, windows: dict | None = None) -> int:
        """Green Tea's inline mark bits of a small-object span (mgcmark_greenteagc.go:180, :258), or 0."""
        if not self.greentea or not 16 <= elemsize <= INLINE_MARK_MAX:
            return 0
        inl = self.L["inline"]
        at = start + (1 << PAGE_SHIFT) - inl["__size__"][0] + inl["marks"][0]
        if windows is None:
            return int.from_bytes(self.p.read(at, nbytes), "little")
        buf, base = self._windowed(windows, at, nbytes, 128)
        return int.from_bytes(buf[at - base:at - base + nbytes], "little")

    def marks(self, s: dict) -> int:
        n = s["nelems"]
        nb = (n + 7) // 8
        bits = int.from_bytes(self.p.read(s["gcmarkBits"], nb), "little") if n and s["gcmarkBits"] else 0
        return bits | self._inline_marks(s["startAddr"], s["elemsize"], nb)

    def freed_by_marks(self, boundary: int) -> list[Freed]:
        """Objects this cycle frees, with marking complete (at gcSweep): in every in-use span, a slot that is
        neither free nor newly allocated (isFreeOrNewlyAllocated, mbitmap.go:1195: below freeIndexForScan, or
        its allocBits bit) and is not marked (gcmarkBits, or Green Tea's inline marks)."""
        off, _ = self.L["mheap"]["allspans"]
        arr, n = struct.unpack("<QQ", self.p.read(self.mheap + off, 16))
        names, st, size = self._span_fmt
        ix = {k: names.index(k) for k in ("elemsize", "startAddr", "nelems", "allocBits", "freeIndexForScan",
                                           "gcmarkBits", "spanclass", "largeType")}
        out: list[Freed] = []
        spans: dict[int, bytes] = {}
        bitmaps: dict[int, bytes] = {}
        inline: dict[int, bytes] = {}
        for sp in struct.unpack(f"<{n}Q", self.p.read(arr, 8 * n)) if n else ():
            buf, base = self._windowed(spans, sp, size, size)
            if buf[sp - base + self._state_at] != M_SPAN_IN_USE:
                continue
            v = st.unpack_from(buf, sp - base)
            es, ne = v[ix["elemsize"]], v[ix["nelems"]]
            if not es or not ne:
                continue
            nb = (ne + 7) // 8
            buf, base = self._windowed(bitmaps, v[ix["allocBits"]], nb, 128)
            ab = v[ix["allocBits"]] - base
            alloc = allocated_slots(int.from_bytes(buf[ab:ab + nb], "little"), v[ix["freeIndexForScan"]], ne)
            if not alloc:
                continue
            marks = 0
            if v[ix["gcmarkBits"]]:
                buf, base = self._windowed(bitmaps, v[ix["gcmarkBits"]], nb, 128)
                mb = v[ix["gcmarkBits"]] - base
                marks = int.from_bytes(buf[mb:mb + nb], "little")
            start = v[ix["startAddr"]]
            gone = alloc & ~(marks | self._inline_marks(start, es, nb, inline))
            span = (es, ne, alloc, sp, v[ix["spanclass"]], v[ix["largeType"]])
            i = 0
            while gone:
                if gone & 1:
                    a = start + i * es
                    out.append(Freed(a, es, boundary, self.type_of(a, span)))
                gone >>= 1
                i += 1
        return out

    def object_at(self, addr: int) -> int | None:
        """The allocated heap object addr points into (its base), as findObject would answer, or None."""
        sp = self.span_of(addr)
        if not sp or self.p.read(sp + self._state_at, 1)[0] != M_SPAN_IN_USE:
            return None
        s = self.span_fields(sp)
        i = self.slot_index(s, addr)
        if i is None:
            return None
        return s["startAddr"] + i * s["elemsize"] if (self.allocated(s) >> i) & 1 else None
