"""The Go runtime's own GC at injections of a real-program sweep, and exact use-after-free against the real
heap. Two modes: "scan" (--gc, --gc=scan), a full cycle at every safe injection with G parked through it,
and "concurrent" (--gc=concurrent), the runtime's default cycle with G scanned at the point and running on
during mark (its steps are grequest.py's _await_concurrent; what differs here is said at the end).

How the cycle comes in the scan mode (everything that decides, marks and sweeps is the binary's code;
preemu writes two words, as a debugger would, and chooses when G's thread is given the CPU, as an OS
scheduler may):
- the program runs with GODEBUG=gcstoptheworld=2 (runtime/extern.go:110): each cycle runs in
  gcForceBlockMode (mgc.go:783-788), user goroutines are not scheduled from sweep termination to the end of
  mark termination (schedEnableUser, mgc.go:871-873 and :1147) while mark itself runs with the world started
  on dedicated workers (startTheWorldWithSema, mgc.go:930), and gcSweep sweeps every span eagerly with the
  world stopped (mgc.go:2083-2095);
- when G reaches a boundary k preemu's oracle calls safe (gsweep.py gives the others preemptone's request,
  withdrawn when declined), preemu makes the cycle due the way sysmon finds one due when none ran for
  forcegcperiod (proc.go:6654-6661, gcTrigger.test at mgc.go:714-719): memstats.last_gc_nanotime is made
  old and forcegcperiod short (1 ms) until the cycle ends. G's thread is then held off the CPU (the other
  threads run: sysmon wakes runtime.forcegchelper, proc.go:378-395, whose gcStart stops the world) until
  the runtime itself has sent that thread SIGURG to stop G: stopTheWorldWithSema's preemptall (sched.gcwaiting
  set), or, when no P is idle for forcegchelper, sysmon's retake once forcegchelper is queued;
- the signal lands at boundary k: the runtime's handler decides. If it injects, asyncPreempt2 ->
  gopreempt_m parks G runnable; the world stops for sweep termination and restarts for mark, and a mark
  worker's markroot -> suspendG -> scanstack finds G _Grunnable with asyncSafePoint set and scans its stack (asyncPreempt's frame and the frame it
  interrupted conservatively, the rest precisely: mgcmark.go scanframeworker). G runs again only after mark
  termination and the sweep. If the handler declines, the runtime asks again (every 100 us) and the next
  boundary is tried with the same cycle.
preemu hooks runtime.scanstack and runtime.scanframeworker to show the scan of G and how each frame was
scanned.

What the cycle freed comes from the runtime's own metadata (heapspans.py; the binary's DWARF gives the offsets): for
every in-use span in mheap_.allspans, slot i is allocated iff i < freeindex or allocBits[i] is set
(mspan.isFree, mbitmap.go:1174). Slots allocated when G reached k and free once the cycle has swept
(at startTheWorldWithSema, after gcSweep and numgc++: mgc.go:1400-1530), and slots of spans the cycle
released, were freed by it. From then on preemu watches them (memory hooks over the spans' freed ranges):
an access to one that is still free (spanOf -> state, freeindex, allocBits, as the runtime would answer)
is a use of freed memory; one that has been reallocated stops being watched (in the concurrent mode freed
objects are quarantined instead, kept out of reuse: quarantine.py). Which access is a use is freeduse.py's
(not: the runtime setting up a reused span, a vector load that only runs into the object from a live neighbour,
the collector scanning a quarantined object). At --cpu v3/v4 the same hooks
are on the accesses of the AVX instructions preemu executes itself (engine/avxmem.py). The watch is off while a
cycle runs (the collector reads only marked objects; free slots are skipped by isFreeOrNewlyAllocated).

The concurrent mode runs with the default GODEBUG. The cycle is made due the same way; the stop-the-world's
SIGURG lands at k (gopreempt_m), G runs again back at k in _GCmark, and its thread is held there until a mark
worker's suspendG asks to stop G (gp.preemptStop and SIGURG: stop_asked); that signal lands at k: preemptPark
-> _Gpreempted -> scanned -> resumeG, and G runs on during mark (its write barriers, bulk barriers and mark
assists are counted by hooks on gcWriteBarrier1-8, bulkBarrierPreWrite and gcAssistAlloc). What the cycle
frees is read at gcSweep from the mark bits (HeapSpans.freed_by_marks: isFreeOrNewlyAllocated's allocated
slots that are not marked in gcmarkBits or Green Tea's inline marks), and the watch stays on through the lazy
sweep and later cycles (HeapSpans.still_free: a span not swept since the cycle frees its unmarked slots). The
translation cache is flushed when the watch is set (blocks G keeps running through would read without the memory hook).

Left out: objects allocated between boundary k and gcStart's stop-the-world (not tracked: a missed
report, never a false one); clobberfree poisoning; user arena chunks; GOGC=off (no cycle can start: a
clear error). With one P, forcegchelper needs G's P to park again after a cycle, so a cycle comes at about
every other injection (the report counts both).
"""
from __future__ import annotations

import bisect
import contextlib
import struct
from dataclasses import dataclass, field

from unicorn import UC_HOOK_CODE, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MEM_WRITE
from unicorn import unicorn_const as UCC
from unicorn import x86_const as X

from ..core.errors import EmuError
from ..linux.regbatch import read_reg
from .freeduse import USE, WATCHED, FreedUse
from .heapspans import PAGE_SHIFT, Freed, HeapSpans
from .quarantine import Quarantine

GODEBUG = "gcstoptheworld=2"           # --gc=scan's setting (the concurrent mode runs with the default GODEBUG)
MODES = ("scan", "concurrent")
DEFAULT_MODE = "concurrent"              # what --gc alone runs on Go input
SIGURG = 23                              # _SIGURG on linux/amd64 (gostructs.SIG_PREEMPT)
WAIT_FORCEGCPERIOD_NS = 1_000_000        # forcegcperiod while a cycle is awaited (sysmon then sleeps <= 0.5 ms)
G_STATUS = {1: "_Grunnable", 2: "_Grunning", 3: "_Gsyscall", 4: "_Gwaiting", 9: "_Gpreempted"}
GC_OFF, GC_MARK, GC_MARKTERMINATION = 0, 1, 2            # runtime/mgc.go gcphase


def mode_of(gc) -> str | None:
    """--gc's mode: None (off), "scan" or "concurrent" (True: "concurrent", the mode --gc alone names: the
    runtime's default cycle)."""
    if not gc:
        return None
    if gc is True:
        return DEFAULT_MODE
    if gc not in MODES:
        raise EmuError(f"--gc={gc}: the modes are {', '.join(MODES)}")
    return gc


def godebug(mode: str | None) -> str | None:
    """The GODEBUG setting a mode runs the program with (the reference run has it too)."""
    return GODEBUG if mode == "scan" else None


@dataclass
class Scan:
    """One scanstack of G during a cycle preemu started."""
    boundary: int
    status: str                   # G's status when scanstack met it (_Grunnable: gopreempt_m parked it; _Gwaiting:
    #                               suspendG claimed it from _Gpreempted, where preemptPark left it)
    async_safe_point: bool        # asyncPreempt2 set it: the innermost frames are scanned conservatively
    frames: list = field(default_factory=list)    # [(function, "conservative" | "precise")]
    path: str = ""                # what descheduled G at the injection: "preemptPark" or "gopreempt_m" ("" if none)
    phase: int = GC_MARK          # gcphase during the scan
    kind: str = "async"           # the kind of point whose cycle scanned G (_Cycle.kind)


@dataclass
class Survivor:
    """An object a conservatively scanned word pointed to when a cycle at an injection kept it, and a later
    cycle freed (item 3 of issue #36: where the bug did not fire, a stale word is why)."""
    obj: Freed                    # as the later cycle freed it
    kept_at: int                  # the injection boundary whose cycle's scan met the word
    word: str                     # "R15 saved by asyncPreempt" or "main.f's frame at SP+0x18"


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
    freed: list = field(default_factory=list)     # concurrent: Freed objects, from the mark bits at gcSweep
    mark_from: int | None = None      # G's instruction count when the world restarted for mark
    kind: str = "async"               # the point's kind: "async" (an injection), "call" or "allocation"


def _word_name(func: str, off: int) -> str:
    """A conservatively scanned word, named: asyncPreempt's frame holds the GPRs mkpreempt.go saves, at the
    same offsets in every layout preemu knows (core/layout.py); another frame's word by its offset."""
    if func == "runtime.asyncPreempt":
        from ..core import layout
        for slot in layout.LAYOUTS["go1.27"].stack_slots:
            if slot.offset == off:
                return f"{slot.reg.name} saved by asyncPreempt"
        return f"asyncPreempt's frame at SP+{off:#x}"
    return f"{func}'s frame at SP+{off:#x}"


class RealGC:
    """Runs the binary's GC at injections of goroutine `g` and watches what it freed (see the module doc)."""

    def __init__(self, p, g: int, mode: str = "scan") -> None:
        self.p, self.g, self.mode = p, g, mode_of(mode)
        self.concurrent = self.mode == "concurrent"
        im = p.image
        self.spans = HeapSpans(p, self.concurrent)      # the heap as the runtime's metadata says (heapspans.py)
        self.rules = FreedUse(p, self.spans.still_free)  # which access to a freed object is a use (freeduse.py)
        self.memstats = im.symbol("runtime.memstats")
        self.forcegcperiod = im.symbol("runtime.forcegcperiod")
        self.sched = im.symbol("runtime.sched")
        self.forcegc = im.symbol("runtime.forcegc")
        self.gcphase = im.symbol("runtime.gcphase")
        self._watch_hooks: list = []
        self._avx_watch_hooks: list = []        # the same hooks on the vector unit's accesses (engine/avxmem.py)
        self.cycle: _Cycle | None = None
        self.quarantine = Quarantine(self.spans) if self.concurrent else None     # freed slots kept out of reuse
        self.waiting = None                       # G's thread while it is held for the runtime's stop request
        self.cycles = 0                           # cycles preemu started that ended (numgc read back)
        self.cycle_kinds: dict[str, int] = {}     # those cycles by the kind of point ("async", "call", "allocation")
        self.kept: dict[int, tuple[int, str]] = {}  # object -> (boundary, word) of a conservative word's last hit
        self.survivors: list[Survivor] = []       # objects kept so, then freed by a later cycle
        self.freed: dict[int, Freed] = {}         # address -> object, watched
        self._starts: list[int] = []
        self.uaf: list[UseAfterFree] = []
        self.scans: list[Scan] = []
        self.freed_total = 0
        self._scan: Scan | None = None
        self.returned_at = lambda: None           # G's count when F returned (set by the sweep), or None
        self._zero_counts()
        uc = p.uc
        hooks = [("runtime.startTheWorldWithSema", self._on_start_the_world, None),
                 ("runtime.scanstack", self._on_scanstack, None),
                 ("runtime.scanframeworker", self._on_scanframe, None),
                 ("runtime.gcSweep", self._on_gc_sweep, None)]
        # G's own code during mark: the write barrier's entries (mbarrier.go: the compiler's calls of
        # gcWriteBarrier1-8, and bulkBarrierPreWrite of typedmemmove and friends) and mark assists
        # (mgcmark.go gcAssistAlloc, from mallocgc while gcBlackenEnabled). Counted on G only.
        hooks += [(f"runtime.gcWriteBarrier{i}", self._on_barrier, "wb") for i in range(1, 9)]
        hooks += [("runtime.bulkBarrierPreWrite", self._on_barrier, "bulk"),
                  ("runtime.gcAssistAlloc", self._on_barrier, "assist")]
        for name, fn, data in hooks:
            if name not in im.symbols:
                continue
            a = im.symbol(name)
            uc.hook_add(UC_HOOK_CODE, fn, data, a, a)
            uc.ctl_remove_cache(a, a + 1)

    def _zero_counts(self) -> None:
        self.barriers = {"wb": 0, "bulk": 0, "assist": 0}    # G's, while the write barrier was on
        self.mark_insns = 0                       # G's instructions while gcphase was _GCmark (cycles that ended)
        self.scanned_gc = -1                      # memstats.numgc during G's last scan (its cycle's number - 1)
        self._mark_from = None                    # G's count when the world restarted for the current mark

    def reset(self) -> None:
        """A run from the snapshot begins: nothing freed or watched yet."""
        self._unwatch()
        self.cycle, self._scan = None, None
        self.freed, self._starts = {}, []
        if self.quarantine is not None:           # the snapshot's heap never had those slots held
            self.quarantine = Quarantine(self.spans, self.quarantine.limit)
        self.uaf, self.scans = [], []
        self.cycles = self.freed_total = 0
        self.cycle_kinds = {}
        self.kept, self.survivors = {}, []
        self.unasked = 0                          # points whose cycle never asked to stop G (grequest.py)
        self._zero_counts()

    @contextlib.contextmanager
    def quarantine_off(self):
        """Freed slots reused as natively for the runs inside (schedule runs: what they judge is the runtime's own
        ending, and its checks, "found bad pointer in Go heap", must be able to fire)."""
        held, self.quarantine = self.quarantine, None
        try:
            yield
        finally:
            self.quarantine = held

    # --- reading the runtime's state --------------------------------------------------------------------
    def _numgc(self) -> int:
        return int.from_bytes(self.p.read(self.memstats + self.spans.f("mstats", "numgc"), 4), "little")

    # --- the cycle ------------------------------------------------------------------------------------
    def stop_requested(self) -> bool:
        """The runtime is stopping G for this cycle: the world is being stopped, or sysmon has woken
        forcegchelper (it was parked since the cycle was made due) with no idle P to run it, so that sysmon's
        retake is what frees G's P. Called before every slice while G's thread is held."""
        if self.p.read(self.sched + self.spans.f("sched", "gcwaiting"), 1)[0]:
            return True
        idle = self.p.read(self.forcegc + self.spans.f("forcegc", "idle"), 1)[0]
        c = self.cycle
        if idle:
            c.forcegc_parked = True
            return False
        npidle = int.from_bytes(self.p.read(self.sched + self.spans.f("sched", "npidle"), 4), "little")
        if npidle:
            return False
        # No P is idle: forcegchelper, woken, waits for G's. Or it has not parked since the last cycle (it waits
        # for G's P to do so): then sysmon's retake is let through, and the cycle comes at a later boundary.
        return c.forcegc_parked or self._sigurg_pending()

    def _sigurg_pending(self) -> bool:
        return self.waiting is not None and SIGURG in self.waiting.pending

    def phase(self) -> int:
        """runtime.gcphase: GC_OFF, GC_MARK or GC_MARKTERMINATION."""
        return int.from_bytes(self.p.read(self.gcphase, 4), "little")

    def scanned_this_cycle(self) -> bool:
        """A cycle is in mark and G's stack has been scanned in it (it is not scanned again in this cycle)."""
        return self.phase() != GC_OFF and self.scanned_gc == self._numgc()

    def stop_asked(self, t) -> bool:
        """The concurrent cycle's mark worker asks to stop G (suspendG, preempt.go:193-206): gp.preemptStop set
        and SIGURG pending for G's thread t."""
        return bool(self.p.read(self.g + self.spans.f("g", "preemptStop"), 1)[0]) and SIGURG in t.pending

    def injected(self, boundary: int) -> None:
        """G was injected at `boundary` while this cycle was coming: the cycle is that injection's (the
        concurrent mode's cycle is the scan's boundary's, set when made due)."""
        if self.cycle is not None and not self.concurrent:
            self.cycle.boundary = boundary

    def begin(self, boundary: int) -> None:
        """G has reached `boundary`: make a cycle due (see the module docstring)."""
        if not self.concurrent:
            self._unwatch()
        now = self.p.clock
        ms = self.memstats + self.spans.f("mstats", "last_gc_nanotime")
        period = self.p.read(self.forcegcperiod, 8)
        self.cycle = _Cycle(boundary, self._numgc(), None if self.concurrent else self.spans.heap(), period)
        self.p.write(self.forcegcperiod, WAIT_FORCEGCPERIOD_NS.to_bytes(8, "little"))
        self.p.write(ms, ((now - 2 * WAIT_FORCEGCPERIOD_NS) & (1 << 64) - 1 or 1).to_bytes(8, "little"))

    def adopt(self, boundary: int) -> None:
        """Concurrent mode: a cycle the runtime started on its own is in mark and has not scanned G yet: the
        scan at `boundary` is this cycle's (nothing made due)."""
        self.cycle = _Cycle(boundary, self._numgc(), None, self.p.read(self.forcegcperiod, 8))

    def _g_count(self) -> int | None:
        """G's instructions so far (the sweep's GoroutineClock; read while G is not running)."""
        clock = self.p.probe
        return clock.count if getattr(clock, "g", None) == self.g else None

    def _on_start_the_world(self, uc, addr, size, _) -> None:
        if self.p.counter.stopping(addr):
            return
        if self.phase() == GC_MARK:             # gcStart restarting the world for the mark phase
            self._mark_from = self._g_count()
        c = self.cycle
        if c is None or self._numgc() == c.numgc:
            return
        self.p.counter.stop_here(False)     # the slice ends before the world restarts: the watch is set up
        self.p.on_slice = self._ended       # between slices (hooks change only outside the engine)

    def _on_gc_sweep(self, uc, addr, size, _) -> None:
        """gcSweep (mgc.go:2065), from gcMarkTermination with the world stopped: marking is complete. The
        concurrent mode reads what this cycle frees from the mark bits here, before any span is swept."""
        if self.p.counter.stopping(addr):
            return
        n = self._g_count()
        if self._mark_from is not None and n is not None:     # F's own instructions only
            end = self.returned_at()
            self.mark_insns += max(0, (n if end is None else min(n, end)) - self._mark_from)
        self._mark_from = None
        if self.quarantine is not None:
            self.quarantine.keep()          # every cycle's sweep, preemu's or the runtime's own
        if self.concurrent and self.cycle is not None:
            freed = self.spans.freed_by_marks(self.cycle.boundary)
            self.cycle.freed = freed if self.quarantine is None else self.quarantine.hold(freed)

    def _on_barrier(self, uc, addr, size, kind) -> None:
        if self.p.counter.stopping(addr):
            return
        if self.p.read_u64(read_reg(uc, X.UC_X86_REG_FS_BASE) - 8) == self.g and self.returned_at() is None:
            self.barriers[kind] += 1

    def _ended(self, p) -> None:
        """The cycle has ended (numgc moved on) and the world is about to restart: what did it free?"""
        p.on_slice = None
        c = self.cycle
        self.p.write(self.forcegcperiod, c.forcegcperiod)
        if self.concurrent:
            for o in c.freed:
                self.freed[o.addr] = o
                self._survived(o)
            self.freed_total += len(c.freed)
        else:
            after = self.spans.heap()
            for base, span in c.before.items():
                es, n, was, *_ = span
                now = after.get(base)
                gone = was if now is None or now[0] != es else was & ~now[2]
                i = 0
                while gone:
                    if gone & 1:
                        a = base + i * es
                        self.freed[a] = Freed(a, es, c.boundary, self.spans.type_of(a, span))
                        self._survived(self.freed[a])
                        self.freed_total += 1
                    gone >>= 1
                    i += 1
        self.cycles += 1
        self.cycle_kinds[c.kind] = self.cycle_kinds.get(c.kind, 0) + 1
        self.cycle = None
        self._scan = None
        self._watch()

    # --- the concurrent mode: what a cycle frees, from its mark bits ------------------------------------
    def _on_scanstack(self, uc, addr, size, _) -> None:
        self._scan = None
        if self.p.counter.stopping(addr) or read_reg(uc, X.UC_X86_REG_RAX) != self.g:
            return
        self.scanned_gc = self._numgc()
        if self.cycle is None:
            return
        g = self.g
        st = int.from_bytes(self.p.read(g + self.spans.f("g", "atomicstatus"), 4), "little") & ~0x1000   # _Gscan
        asp = self.p.read(g + self.spans.f("g", "asyncSafePoint"), 1)[0]
        rec = self.p.watch._awaiting.get(g) if asp else None
        path = (rec.descheduled or "").removeprefix("runtime.") if rec is not None else ""
        status, kind = G_STATUS.get(st, str(st)), self.cycle.kind
        if kind != "async" and not asp:     # parked by newstack at the synchronous point (gsync.py)
            path = {"_Grunnable": "gopreempt_m", "_Gwaiting": "preemptPark"}.get(status, "")
        self._scan = Scan(self.cycle.boundary, status, bool(asp), path={"goschedImpl": "gopreempt_m"}.get(path, path),
                          phase=self.phase(), kind=kind)
        self.scans.append(self._scan)

    def _on_scanframe(self, uc, addr, size, _) -> None:
        if self._scan is None or self.p.counter.stopping(addr):
            return
        frame, state = read_reg(uc, X.UC_X86_REG_RAX), read_reg(uc, X.UC_X86_REG_RBX)
        pc = self.p.read_u64(frame + self.spans.f("frame", "pc"))
        cons = self.p.read(state + self.spans.f("scan", "conservative"), 1)[0]
        name = self.p.image.func_name(pc) or "?"
        cons = bool(cons) or name == "runtime.asyncPreempt"
        self._scan.frames.append((name, "conservative" if cons else "precise"))
        if cons and self._scan.async_safe_point:
            self._conservative_words(frame, name)

    def _conservative_words(self, frame: int, name: str) -> None:
        """The words scanConservative reads in a frame (mgcmark.go scanframeworker: [sp, varp)) that point into
        an allocated heap object: kept[object] = (this scan's boundary, which word)."""
        sp = self.p.read_u64(frame + self.spans.f("frame", "sp"))
        varp = self.p.read_u64(frame + self.spans.f("frame", "varp"))
        if not 0 < varp - sp <= 1 << 16:
            return
        raw = self.p.read(sp, varp - sp)
        for i, v in enumerate(struct.unpack(f"<{len(raw) // 8}Q", raw[:len(raw) // 8 * 8])):
            if v < 0x1000:
                continue
            base = self.spans.object_at(v)
            if base is not None:
                self.kept[base] = (self._scan.boundary, _word_name(name, 8 * i))

    def _survived(self, o: Freed) -> None:
        hit = self.kept.pop(o.addr, None)
        if hit is not None and hit[0] != o.boundary:
            self.survivors.append(Survivor(o, hit[0], hit[1]))

    # --- the watch -----------------------------------------------------------------------------------
    def _unwatch(self) -> None:
        for h in self._watch_hooks:
            self.p.uc.hook_del(h)
        for h in self._avx_watch_hooks:
            self.p.avx.mem.hook_del(h)
        self._watch_hooks, self._avx_watch_hooks = [], []

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
            if self.p.avx is not None:      # --cpu v3/v4: the accesses of the AVX instructions preemu runs too
                self._avx_watch_hooks.append(self.p.avx.mem.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
                                                                     self._on_access, None, lo, hi - 1))
        if merged:       # a TLB entry filled while no hook covered its page would let accesses bypass the hook
            uc.ctl(UCC.UC_CTL_TLB_FLUSH, UCC.UC_CTL_IO_WRITE)
            if self.concurrent:
                # and a block translated before the hook existed reads without it: G runs on through the cycle
                # in this mode, in blocks the engine keeps (measured: hidden's loop read freed memory unseen)
                uc.ctl_flush_tb()

    def _on_access(self, uc, access, addr, size, value, _) -> None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return
        start = self._starts[i]
        obj = self.freed.get(start)
        if obj is None or addr >= start + obj.size:
            return
        if self.cycle is not None and not self.concurrent:
            return
        held = self.quarantine is not None and start in self.quarantine
        verdict = self.rules.judge(uc, access, start, obj.size, held)
        if verdict == WATCHED:
            return
        del self.freed[start]
        del self._starts[i]
        if verdict == USE:
            t = self.p.cur
            self.uaf.append(UseAfterFree(read_reg(uc, X.UC_X86_REG_RIP), t.tid if t else 0,
                                         "write" if access == UC_MEM_WRITE else "read", addr, obj))

    def close(self) -> None:
        self._unwatch()
