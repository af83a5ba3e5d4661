"""The Go runtime's own GC, one full cycle at each injection of a real-program sweep, and exact
use-after-free against the real heap.

How the cycle comes (everything that decides, marks and sweeps is the binary's code; preemu writes two
words, as a debugger would, and chooses when G's thread is given the CPU, as an OS scheduler may):
- the program runs with GODEBUG=gcstoptheworld=2 (runtime/extern.go:110): each cycle runs in
  gcForceBlockMode (mgc.go:784-786), user goroutines are not scheduled from gcStart to the end of mark
  termination (schedEnableUser, mgc.go:872 and :1147), and gcSweep sweeps every span eagerly with the world
  stopped (mgc.go:2083-2095);
- when G reaches a boundary k preemu's oracle calls safe (gsweep.py gives the others preemptone's request,
  withdrawn when declined), preemu makes the cycle due the way sysmon finds one due when none ran for
  forcegcperiod (proc.go:6654-6661, gcTrigger.test at mgc.go:714-719): memstats.last_gc_nanotime is made
  old and forcegcperiod short (1 ms) until the cycle ends. G's thread is then held off the CPU (the other
  threads run: sysmon wakes runtime.forcegchelper, proc.go:378-395, whose gcStart stops the world) until
  the runtime itself has sent that thread SIGURG to stop G: stopTheWorldWithSema's preemptall (sched.gcwaiting
  set), or, when no P is idle for forcegchelper, sysmon's retake once forcegchelper is queued;
- the signal lands at boundary k: the runtime's handler decides. If it injects, asyncPreempt2 ->
  gopreempt_m parks G runnable; the world stops, and the GC's markroot -> scanstack -> suspendG finds G
  _Grunnable with asyncSafePoint set and scans its stack (asyncPreempt's frame and the frame it
  interrupted conservatively, the rest precisely: mgcmark.go scanframeworker). G runs again only after mark
  termination and the sweep. If the handler declines, the runtime asks again (every 100 us) and the next
  boundary is tried with the same cycle.
preemu hooks runtime.scanstack and runtime.scanframeworker to show the scan of G and how each frame was
scanned.

What the cycle freed comes from the runtime's own metadata (the binary's DWARF gives the offsets): for
every in-use span in mheap_.allspans, slot i is allocated iff i < freeindex or allocBits[i] is set
(mspan.isFree, mbitmap.go:1174). Slots allocated when G reached k and free once the cycle has swept
(at startTheWorldWithSema, after gcSweep and numgc++: mgc.go:1400-1530), and slots of spans the cycle
released, were freed by it. From then on preemu watches them (memory hooks over the spans' freed ranges):
an access to one that is still free (spanOf -> state, freeindex, allocBits, as the runtime would answer)
is a use of freed memory; one that has been reallocated stops being watched. The watch is off while a
cycle runs (the collector reads only marked objects; free slots are skipped by isFreeOrNewlyAllocated).

Left out: objects allocated between boundary k and gcStart's stop-the-world (not tracked: a missed
report, never a false one); clobberfree poisoning; user arena chunks; GOGC=off (no cycle can start: a
clear error). With one P, forcegchelper needs G's P to park again after a cycle, so a cycle comes at about
every other injection (the report counts both).
"""
from __future__ import annotations

import bisect
import hashlib
import json
import struct
from dataclasses import dataclass, field

from unicorn import UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE, UcError
from unicorn import unicorn_const as UCC
from unicorn import x86_const as X

from ..core.errors import EmuError
from .regbatch import read_reg

GODEBUG = "gcstoptheworld=2"
SIGURG = 23                              # _SIGURG on linux/amd64 (gostructs.SIG_PREEMPT)
WAIT_FORCEGCPERIOD_NS = 1_000_000        # forcegcperiod while a cycle is awaited (sysmon then sleeps <= 0.5 ms)
M_SPAN_DEAD, M_SPAN_IN_USE, M_SPAN_MANUAL = 0, 1, 2    # runtime/mheap.go:387
PAGE_SHIFT = 13                          # _PageShift
PAGES_PER_ARENA = 8192                   # heapArenaBytes (64 MiB) / pageSize
ARENA_SHIFT = 26                         # logHeapArenaBytes on linux/amd64
ARENA_BASE_OFFSET = 0xffff800000000000   # arenaBaseOffset (malloc.go:314)
MALLOC_HEADER_MIN = 512                  # minSizeForMallocHeader: larger scan objects start with *_type
G_STATUS = {1: "_Grunnable", 2: "_Grunning", 3: "_Gsyscall", 4: "_Gwaiting", 9: "_Gpreempted"}

#: (struct, field path) preemu reads, as the binary's DWARF lays them out
FIELDS = {
    "span": ("runtime.mspan", ("startAddr", "npages", "freeindex", "nelems", "allocBits", "sweepgen",
                               "spanclass", "state", "elemsize", "largeType")),
    "mheap": ("runtime.mheap", ("allspans", "arenas")),
    "arena": ("runtime.heapArena", ("spans",)),
    "mstats": ("runtime.mstats", ("numgc", "last_gc_nanotime")),
    "frame": ("runtime.stkframe", ("pc",)),
    "scan": ("runtime.stackScanState", ("conservative",)),
    "g": ("runtime.g", ("atomicstatus", "asyncSafePoint")),
    "sched": ("runtime.schedt", ("npidle", "gcwaiting")),
    "forcegc": ("runtime.forcegcstate", ("idle",)),
}


def layout(binary_path: str, raw: bytes) -> dict[str, dict[str, tuple[int, int]]]:
    """{kind: {field: (offset, size)}} for FIELDS, from the binary's DWARF (cached like gofront.struct_tables)."""
    from ..front import gobuild, godwarf
    digest = hashlib.sha256(raw + repr(FIELDS).encode()).hexdigest()
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


@dataclass
class Scan:
    """One scanstack of G during a cycle preemu started."""
    boundary: int
    status: str                   # G's status when the GC came for it (_Gpreempted: parked at the injection)
    async_safe_point: bool        # asyncPreempt2 set it: the innermost frames are scanned conservatively
    frames: list = field(default_factory=list)    # [(function, "conservative" | "precise")]


@dataclass
class UseAfterFree:
    pc: int
    tid: int
    access: str                   # "read" or "write"
    addr: int
    obj: Freed


@dataclass
class _Cycle:
    boundary: int
    numgc: int
    before: dict
    forcegcperiod: bytes
    forcegc_parked: bool = False      # forcegchelper was seen parked since the cycle was made due


def allocated_slots(alloc_bits: int, freeindex: int, nelems: int) -> int:
    """Bit i set: slot i of a span is allocated, as mspan.isFree answers (mbitmap.go:1174): i < freeindex,
    or its allocBits bit (allocations since the last sweep advance freeindex, not allocBits)."""
    return (alloc_bits | ((1 << freeindex) - 1)) & ((1 << nelems) - 1)


class RealGC:
    """Runs the binary's GC at injections of goroutine `g` and watches what it freed (see the module doc)."""

    def __init__(self, p, g: int) -> None:
        self.p, self.g = p, g
        im = p.image
        self.L = layout(im.path, open(im.path, "rb").read())
        self.mheap = im.symbol("runtime.mheap_")
        self.memstats = im.symbol("runtime.memstats")
        self.forcegcperiod = im.symbol("runtime.forcegcperiod")
        self.sched = im.symbol("runtime.sched")
        self.forcegc = im.symbol("runtime.forcegc")
        self._watch_hooks: list = []
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
        self.cycle: _Cycle | None = None
        self.waiting = None                       # G's thread while it is held for the runtime's stop request
        self.cycles = 0                           # cycles preemu started that ended (numgc read back)
        self.freed: dict[int, Freed] = {}         # address -> object, watched
        self._starts: list[int] = []
        self.uaf: list[UseAfterFree] = []
        self.scans: list[Scan] = []
        self.freed_total = 0
        self._scan: Scan | None = None
        uc = p.uc
        for name, fn in (("runtime.startTheWorldWithSema", self._on_start_the_world),
                         ("runtime.scanstack", self._on_scanstack),
                         ("runtime.scanframeworker", self._on_scanframe)):
            a = im.symbol(name)
            uc.hook_add(UC_HOOK_CODE, fn, None, a, a)
            uc.ctl_remove_cache(a, a + 1)

    def reset(self) -> None:
        """A run from the snapshot begins: nothing freed or watched yet."""
        self._unwatch()
        self.cycle, self._scan = None, None
        self.freed, self._starts = {}, []
        self.uaf, self.scans = [], []
        self.cycles = self.freed_total = 0

    # --- reading the runtime's state --------------------------------------------------------------------
    def _f(self, kind: str, name: str) -> int:
        return self.L[kind][name][0]

    def _numgc(self) -> int:
        return int.from_bytes(self.p.read(self.memstats + self._f("mstats", "numgc"), 4), "little")

    def _span(self, sp: int) -> dict:
        names, st, size = self._span_fmt
        return dict(zip(names, st.unpack(self.p.read(sp, size))))

    def _allocated(self, s: dict) -> int:
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
        l2 = self.p.read_u64(self.mheap + self._f("mheap", "arenas"))
        if not l2 or ri >= 1 << 22:
            return 0
        ha = self.p.read_u64(l2 + 8 * ri)
        if not ha:
            return 0
        return self.p.read_u64(ha + self._f("arena", "spans") + 8 * ((addr >> PAGE_SHIFT) % PAGES_PER_ARENA))

    def still_free(self, addr: int) -> bool:
        """Whether the runtime would answer that addr lies in free memory (no span in use, or a free slot)."""
        sp = self.span_of(addr)
        if not sp:
            return True
        s = self._span(sp)
        if s["state"] == M_SPAN_MANUAL:
            return False                    # the runtime's own memory now (stacks, workbufs)
        if s["state"] != M_SPAN_IN_USE:
            return True
        i = (addr - s["startAddr"]) // s["elemsize"]
        return not (self._allocated(s) >> i) & 1

    def _type_of(self, addr: int, span: tuple) -> str:
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

    # --- the cycle ------------------------------------------------------------------------------------
    def stop_requested(self) -> bool:
        """The runtime is stopping G for this cycle: the world is being stopped, or sysmon has woken
        forcegchelper (it was parked since the cycle was made due) with no idle P to run it, so that sysmon's
        retake is what frees G's P. Called before every slice while G's thread is held."""
        if self.p.read(self.sched + self._f("sched", "gcwaiting"), 1)[0]:
            return True
        idle = self.p.read(self.forcegc + self._f("forcegc", "idle"), 1)[0]
        c = self.cycle
        if idle:
            c.forcegc_parked = True
            return False
        npidle = int.from_bytes(self.p.read(self.sched + self._f("sched", "npidle"), 4), "little")
        if npidle:
            return False
        # No P is idle: forcegchelper, woken, waits for G's. Or it has not parked since the last cycle (it waits
        # for G's P to do so): then sysmon's retake is let through, and the cycle comes at a later boundary.
        return c.forcegc_parked or self._sigurg_pending()

    def _sigurg_pending(self) -> bool:
        return self.waiting is not None and SIGURG in self.waiting.pending

    def injected(self, boundary: int) -> None:
        """G was injected at `boundary` while this cycle was coming: the cycle is that injection's."""
        if self.cycle is not None:
            self.cycle.boundary = boundary

    def begin(self, boundary: int) -> None:
        """G has reached `boundary`: make a cycle due (see the module docstring)."""
        self._unwatch()
        now = self.p.clock
        ms = self.memstats + self._f("mstats", "last_gc_nanotime")
        period = self.p.read(self.forcegcperiod, 8)
        self.cycle = _Cycle(boundary, self._numgc(), self.heap(), period)
        self.p.write(self.forcegcperiod, WAIT_FORCEGCPERIOD_NS.to_bytes(8, "little"))
        self.p.write(ms, ((now - 2 * WAIT_FORCEGCPERIOD_NS) & (1 << 64) - 1 or 1).to_bytes(8, "little"))

    def _on_start_the_world(self, uc, addr, size, _) -> None:
        c = self.cycle
        if c is None or self.p.counter.stopping(addr) or self._numgc() == c.numgc:
            return                          # gcStart restarting the world for the mark phase
        self.p.counter.stop_here(False)     # the slice ends before the world restarts: the watch is set up
        self.p.on_slice = self._ended       # between slices (hooks change only outside the engine)

    def _ended(self, p) -> None:
        """The cycle has swept (numgc moved on) and the world is about to restart: what did it free?"""
        p.on_slice = None
        c = self.cycle
        self.p.write(self.forcegcperiod, c.forcegcperiod)
        after = self.heap()
        for base, span in c.before.items():
            es, n, was, *_ = span
            now = after.get(base)
            gone = was if now is None or now[0] != es else was & ~now[2]
            i = 0
            while gone:
                if gone & 1:
                    a = base + i * es
                    self.freed[a] = Freed(a, es, c.boundary, self._type_of(a, span))
                    self.freed_total += 1
                gone >>= 1
                i += 1
        self.cycles += 1
        self.cycle = None
        self._scan = None
        self._watch()

    def _on_scanstack(self, uc, addr, size, _) -> None:
        self._scan = None
        if self.cycle is None or self.p.counter.stopping(addr) or read_reg(uc, X.UC_X86_REG_RAX) != self.g:
            return
        g = self.g
        st = int.from_bytes(self.p.read(g + self._f("g", "atomicstatus"), 4), "little") & ~0x1000   # _Gscan
        asp = self.p.read(g + self._f("g", "asyncSafePoint"), 1)[0]
        self._scan = Scan(self.cycle.boundary, G_STATUS.get(st, str(st)), bool(asp))
        self.scans.append(self._scan)

    def _on_scanframe(self, uc, addr, size, _) -> None:
        if self._scan is None or self.p.counter.stopping(addr):
            return
        frame, state = read_reg(uc, X.UC_X86_REG_RAX), read_reg(uc, X.UC_X86_REG_RBX)
        pc = self.p.read_u64(frame + self._f("frame", "pc"))
        cons = self.p.read(state + self._f("scan", "conservative"), 1)[0]
        name = (self.p.image.func_at(pc) or ("?", 0))[0].removesuffix(".abi0")
        self._scan.frames.append((name, "conservative" if cons or name == "runtime.asyncPreempt" else "precise"))

    # --- the watch -----------------------------------------------------------------------------------
    def _unwatch(self) -> None:
        for h in self._watch_hooks:
            self.p.uc.hook_del(h)
        self._watch_hooks = []

    def _watch(self) -> None:
        """One memory hook per span with watched objects, over their extent."""
        self._unwatch()
        self._starts = sorted(self.freed)
        spans: dict[int, list[int]] = {}
        for a in self._starts:
            o = self.freed[a]
            spans.setdefault(a >> PAGE_SHIFT, [a, a + o.size])[1] = a + o.size
        ranges = sorted(spans.values())
        merged: list[list[int]] = []
        for lo, hi in ranges:                   # neighbouring pages' ranges share a hook
            if merged and lo - merged[-1][1] < 1 << PAGE_SHIFT:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        while len(merged) > 32:                 # many hooks slow every access: join the closest ranges
            k = min(range(len(merged) - 1), key=lambda j: merged[j + 1][0] - merged[j][1])
            merged[k:k + 2] = [[merged[k][0], merged[k + 1][1]]]
        uc = self.p.uc
        for lo, hi in merged:
            self._watch_hooks.append(uc.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, self._on_access, None, lo,
                                                 hi - 1))
        if merged:       # a TLB entry filled while no hook covered its page would let accesses bypass the hook
            uc.ctl(UCC.UC_CTL_TLB_FLUSH, UCC.UC_CTL_IO_WRITE)

    def _on_access(self, uc, access, addr, size, value, _) -> None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return
        start = self._starts[i]
        obj = self.freed.get(start)
        if obj is None or addr >= start + obj.size:
            return
        if self.cycle is not None:
            return
        del self.freed[start]
        del self._starts[i]
        if not self.still_free(start):
            return                              # reallocated: a new object lives there
        t = self.p.cur
        self.uaf.append(UseAfterFree(read_reg(uc, X.UC_X86_REG_RIP), t.tid if t else 0,
                                     "write" if access == UC_MEM_WRITE else "read", addr, obj))

    def close(self) -> None:
        self._unwatch()
