"""The preemption request of the real-program sweep: what preemu does at boundary k of G, and undoes.

Mirrors runtime/proc.go's preemptone (proc.go:6931-6942: gp.preempt, gp.stackguard0 = stackPreempt,
pp.preempt) and preemptM's m.signalPending (signal_unix.go:376), then makes SIGURG pending for the thread G
sits on, taken before that thread runs again. When the runtime declines, the request is withdrawn (each
point is an independent signal; the ack, preemptGen and signalPending, is the runtime's). With --gc, at
the points preemu's oracle calls safe the request is the runtime's own: a GC cycle is made due and G's
thread is held off the CPU until the runtime asks it to stop G (realgc.py).

Mixed into gsweep.RealSweep, whose process (p), goroutine (g), field readers (_g) and --gc cycle (gc) it
uses. Left out: preemptone's early returns (no M, or G is its M's g0): the sweep requests at G's own
boundaries, whatever M it is on.
"""
from __future__ import annotations

from dataclasses import dataclass

from unicorn import x86_const as X

from ..core import gostructs as gs
from ..core.errors import EmuError
from ..goruntime import realgc
from ..goruntime.gclock import GoroutineClock
from ..linux.regbatch import context_reg, field_spec, mem_write, read_fields, read_u64

SIGURG = gs.SIG_PREEMPT
GC_WAIT_NS = 5_000_000_000          # virtual time G's thread is held waiting for the runtime's stop request


class ProgramEnded(Exception):
    """The program exited while G waited at a point for a GC cycle (the runtime crashed, or another goroutine
    ended it): no point there; the run's ending says what happened."""


class NoCycle(EmuError):
    """The runtime never asked to stop G for the cycle made due at a point (GOGC=off, or the program holds its
    cycles up): an error in a chain, where every point needs its cycle; the end of a --gc reference's cycles."""


@dataclass
class Point:
    boundary: int
    tid: int
    pc: int
    event: object = None              # the watch's SignalEvent
    saved: tuple = ()                 # g.preempt, g.stackguard0, p.preempt, m.signalPending before the request
    stack: tuple | None = None        # (sp, bytes at and above it) at the injection
    stw: object = None                # --gc=concurrent: the sweep-termination stop-the-world's SignalEvent at k
    kind: str = "async"               # --gc: "async" (an injection), "call" or "allocation" (gsync.py)
    callee: str = ""                  # a synchronous point's callee, in whose prologue G stopped


class _RequestOffsets:
    """The fields preemptone writes, as this binary lays them out (runtime2.go's g, m and p)."""

    def __init__(self, structs) -> None:
        g, m, p = structs.g, structs.m, structs.p
        self.g_preempt, self.g_stackguard0 = g["preempt"].offset, g["stackguard0"].offset
        self.m_p, self.m_signal_pending, self.p_preempt = m["p"].offset, m["signalPending"].offset, p["preempt"].offset
        self.sig_size, self.p_size = m["signalPending"].size, p["preempt"].size
        self.g_preempt_size, self.sg_size = g["preempt"].size, g["stackguard0"].size
        self.g_one, self.p_one, self.sig_one = ((1).to_bytes(f.size, "little") for f in (g["preempt"], p["preempt"],
                                                                                         m["signalPending"]))
        self.stack_preempt = gs.STACK_PREEMPT.to_bytes(g["stackguard0"].size, "little")
        #: read_fields' specs: G's stackguard0, m and preempt (_g_request's order); p.preempt; m.signalPending
        self.g_spec = field_spec((g[n].offset, g[n].size) for n in ("stackguard0", "m", "preempt"))
        self.p_preempt_spec = field_spec([(p["preempt"].offset, p["preempt"].size)])
        self.m_signal_spec = field_spec([(m["signalPending"].offset, m["signalPending"].size)])


class RequestMixin:
    """RealSweep's request at a boundary: preemptone's (or, with --gc, the runtime's own) and its withdrawal."""

    _offsets: _RequestOffsets | None = None

    def _request_offsets(self) -> _RequestOffsets:
        if self._offsets is None:
            self._offsets = _RequestOffsets(self.p.structs)
        return self._offsets

    def _g_request(self) -> tuple[int, int, int]:
        """G's stackguard0, m and preempt, in one read (regbatch.read_fields)."""
        return read_fields(self.p.uc, self.g, self._request_offsets().g_spec)

    def _m_and_p(self) -> tuple[int, int]:
        """G's M and that M's P (0 when G has none)."""
        m = self._g_request()[1]
        return m, read_u64(self.p.uc, m + self._request_offsets().m_p) if m else 0

    def _deliver(self, clock: GoroutineClock, k: int) -> Point:
        """The request at boundary k, as preemptone makes it, and SIGURG pending for G's thread (with --gc:
        the runtime's own request for the cycle, _await_gc)."""
        if self.gc is not None and self._predict(clock.ready) == "safe":
            pt = self._await_concurrent(clock, k) if self.gc.concurrent else self._await_gc(clock, k)
            if pt is not None:
                return pt
        p = self.p
        t = p.threads[clock.ready]
        pc = context_reg(t.ctx, X.UC_X86_REG_RIP)
        o = self._request_offsets()
        uc = p.uc
        sg, m, gpre = self._g_request()
        pp = read_u64(uc, m + o.m_p) if m else 0
        saved = (gpre, sg, read_fields(uc, pp, o.p_preempt_spec)[0] if pp else None,
                 read_fields(uc, m, o.m_signal_spec)[0] if m else None)
        mem_write(uc, self.g + o.g_preempt, o.g_one)
        mem_write(uc, self.g + o.g_stackguard0, o.stack_preempt)
        if pp:
            mem_write(uc, pp + o.p_preempt, o.p_one)
        if m:
            mem_write(uc, m + o.m_signal_pending, o.sig_one)
        ev = p.watch.sent(SIGURG, 0, t.tid)
        if SIGURG in t.pending:
            ev.outcome = "merged"
        else:
            t.pending[SIGURG] = ev
            t.signal_countdown = 0
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        clock.ready = None
        return Point(k, t.tid, pc, ev, saved)

    def _deliver_sync(self, clock: GoroutineClock, stop) -> Point:
        """--gc at a synchronous point (gsync.py): G stands in runtime.morestack, entered from the prologue of
        stop.callee with stackguard0 == stackPreempt. A cycle is made due and G's thread held until the runtime
        asks to stop G, as at an asynchronous point; its SIGURG lands in morestack and is declined, and newstack
        parks G (gopreempt_m; preemptPark when a concurrent cycle's suspendG asked), every frame precise. In the
        concurrent mode with a cycle already in mark that has not scanned G, that cycle's suspendG is awaited
        instead (the scan is then this point's)."""
        gc, k = self.gc, stop.boundary
        cycles = gc.cycles
        if gc.concurrent and gc.cycle is None and gc.phase() == realgc.GC_MARK and not gc.scanned_this_cycle():
            pt = self._await_concurrent(clock, k, sync=True)
        else:
            pt = self._await_gc(clock, k)
        if gc.cycle is not None:
            gc.cycle.boundary, gc.cycle.kind = k, stop.kind
        pt.kind, pt.callee = stop.kind, stop.callee
        if gc.concurrent:                   # G kept from its work until the cycle ends: what the cycle freed is
            self._wait_out_cycle(clock, cycles)            # freed before G uses it again
        return pt

    def _predict(self, tid: int) -> str:
        """preemu's oracle on G at its thread's PC, as if preemption were requested: "safe" or why not (with
        --gc, only the points it calls safe get the runtime's own request for a cycle; the others get
        preemptone's, withdrawn when declined, so G's path stays that of the uninterrupted run)."""
        o = self.p.watch.oracle
        if o is None:
            return "safe"
        ctx = self.p.threads[tid].ctx
        return o.safe_point(o.sched_state(self.g), ctx.reg_read(X.UC_X86_REG_RIP), ctx.reg_read(X.UC_X86_REG_RSP))

    def _await_gc(self, clock: GoroutineClock, k: int) -> Point:
        """Make a cycle due and hold G's thread off the CPU until the runtime asks it to stop G
        (realgc.py); the signal then lands at boundary k."""
        p, gc = self.p, self.gc
        t = p.threads[clock.ready]
        pc = t.ctx.reg_read(X.UC_X86_REG_RIP)
        clock.ready = None
        if gc.cycle is None:
            gc.begin(k)
        gc.waiting = t
        if not (gc.stop_requested() and SIGURG in t.pending):
            try:
                self._run_held(t, lambda: gc.stop_requested() and SIGURG in t.pending)
            finally:
                gc.waiting = None
            self._stopped_or_raise(k, "waited")
            if SIGURG not in t.pending:
                raise NoCycle(f"no GC cycle came for {self.func}'s goroutine at boundary {k} within "
                               f"{GC_WAIT_NS / 1e9:g} s of virtual time: the runtime never stopped it "
                               "(GOGC=off, or debug.SetGCPercent(-1)?)")
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        t.signal_countdown = 0
        return Point(k, t.tid, pc, t.pending[SIGURG], ())

    def _await_concurrent(self, clock: GoroutineClock, k: int, sync: bool = False) -> Point | None:
        """--gc=concurrent at boundary k: (1) with no cycle running, make one due and hold G's thread until the
        sweep-termination stop-the-world asks to stop G; that SIGURG lands at k (gopreempt_m: G runnable) and
        the world restarts in _GCmark; G runs again, back at k. (2) Hold G's thread there, running, until a
        mark worker's markroot asks to stop G for its stack scan (suspendG: gp.preemptStop and SIGURG,
        preempt.go:193-206); that SIGURG lands at k: asyncPreempt2 -> preemptPark -> _Gpreempted -> scanned ->
        resumeG -> ready, and G goes on in mark. None when a cycle is running that has already scanned G
        (preemptone's request then, as at the other points). `sync`: a synchronous point in a cycle already in
        mark (_deliver_sync): only (2)."""
        p, gc = self.p, self.gc
        phase = gc.phase()
        first = None
        if gc.cycle is None and phase == realgc.GC_OFF and not sync:
            first = self._await_gc(clock, k)               # (1): the stop-the-world's request, at k
            lst = p.watch.listener
            if lst is not None:
                lst.point = first                          # its injection is checked as this point's
            clock.stop_at = k                              # G's next instruction is k's again once it resumes
            give_up = p.clock + GC_WAIT_NS
            p.run_until(lambda: self.returned is not None or clock.ready is not None or p.clock > give_up)
            self._stopped_or_raise(k, "back at the boundary after the stop-the-world")
            if clock.ready is None and self.returned is not None:
                return first        # G went on to F's return (this run's path is shorter): the STW's signal was k's
            if clock.ready is None:
                raise EmuError(f"{self.func}'s goroutine did not run again within {GC_WAIT_NS / 1e9:g} s of virtual "
                               f"time after the GC's stop-the-world preempted it at boundary {k}")
        elif phase != realgc.GC_MARK or gc.scanned_this_cycle():
            return None
        else:
            gc.adopt(k)                                    # the runtime's own cycle, in mark: its scan of G is k's
        if gc.scanned_this_cycle():
            # the mark worker scanned G while it was still runnable from (1): G goes on from k in mark
            clock.ready = None
            return first
        t = p.threads[clock.ready]
        pc = t.ctx.reg_read(X.UC_X86_REG_RIP)
        clock.ready = None
        gc.waiting = t
        try:
            self._run_held(t, lambda: gc.stop_asked(t) or gc.scanned_this_cycle())
        finally:
            gc.waiting = None
        self._stopped_or_raise(k, "waited at the boundary for the mark worker")
        if not gc.stop_asked(t):
            if not gc.scanned_this_cycle():
                # G itself holds up the cycle where it stands (it called runtime.GC and waits on mark, or holds
                # what the mark needs): no scan of G at this point, which gets preemptone's request instead,
                # counted and reported (unasked), never an error of a correct program
                gc.unasked += 1
            return first
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        t.signal_countdown = 0
        return Point(k, t.tid, pc, t.pending[SIGURG], (), stw=first.event if first is not None else None)

    def _wait_out_cycle(self, clock: GoroutineClock, cycles: int) -> None:
        """The concurrent mode's schedule after a synchronous point, and a --gc reference's after its point
        (gsweep.gc_reference): G does not get on with its work until the cycle has ended (self.gc.cycles >
        cycles), as a goroutine its thread's OS keeps off the CPU would not: G's thread is held, and let run
        one of G's instructions only when the runtime asks to stop G (the stop-the-world's preemptall,
        suspendG, forEachP's ragged barrier: SIGURG pending for it). The request lands there; if the handler
        declines it, G runs that one instruction and is held again. What the cycle frees is then freed before
        G uses it again."""
        p, gc = self.p, self.gc
        give_up = p.clock + GC_WAIT_NS
        while gc.cycles == cycles and p.clock <= give_up:
            clock.stop_at, clock.ready = clock.count + 1, None
            p.run_until(lambda: self.returned is not None or clock.ready is not None or gc.cycles != cycles
                        or p.clock > give_up)
            self._stopped_or_raise(clock.count, "waited for the cycle's end")
            if clock.ready is None:
                return                          # the cycle ended while G was off the CPU (or F returned)
            t = p.threads[clock.ready]
            clock.ready = None
            self._run_held(t, lambda: SIGURG in t.pending or gc.cycles != cycles, give_up)
            t.signal_countdown = 0
        clock.stop_at = None

    def _run_held(self, t, until, give_up: int | None = None) -> None:
        """Keep thread t off the CPU while the others run, until `until()`, virtual time passes `give_up` (default
        GC_WAIT_NS from now) or only held threads could run (an OS may deschedule any thread)."""
        p = self.p
        give_up = p.clock + GC_WAIT_NS if give_up is None else give_up
        p.hold(t)
        try:
            p.run_until(lambda: until() or p.clock > give_up or not p.runnable_besides_held())
        finally:
            p.unhold(t)

    def _stopped_or_raise(self, k: int, doing: str) -> None:
        """Raise when the program stopped while G waited on a cycle: ProgramEnded when it exited (the runtime's
        crash, e.g. `fatal error: found pointer to free object`: the program's failure, which the run's ending
        reports), EmuError when preemu failed."""
        p = self.p
        if p.exit_code is not None and p.error is None:
            raise ProgramEnded(k)
        if p.exit_code is not None or p.error is not None:
            raise EmuError(f"while {self.func}'s goroutine {doing} at boundary {k} for the GC cycle, the program "
                           f"stopped: {p.error or p.stop_reason}")

    def withdraw(self, pt: Point) -> None:
        """The runtime declined: undo the request (the ack, preemptGen and signalPending, is the runtime's)."""
        gpre, sg, ppre, _ = pt.saved
        uc, o = self.p.uc, self._request_offsets()
        mem_write(uc, self.g + o.g_preempt, gpre.to_bytes(o.g_preempt_size, "little"))
        now_sg, m, _ = self._g_request()
        if now_sg == gs.STACK_PREEMPT:
            mem_write(uc, self.g + o.g_stackguard0, sg.to_bytes(o.sg_size, "little"))
        pp = read_u64(uc, m + o.m_p) if m else 0
        if pp and ppre is not None:
            mem_write(uc, pp + o.p_preempt, ppre.to_bytes(o.p_size, "little"))
