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
from ..core.structref import StructRef
from ..linux.gclock import GoroutineClock

SIGURG = gs.SIG_PREEMPT
GC_WAIT_NS = 5_000_000_000          # virtual time G's thread is held waiting for the runtime's stop request


@dataclass
class Point:
    boundary: int
    tid: int
    pc: int
    event: object = None              # the watch's SignalEvent
    saved: tuple = ()                 # g.preempt, g.stackguard0, p.preempt, m.signalPending before the request
    stack: tuple | None = None        # (sp, bytes at and above it) at the injection


class RequestMixin:
    """RealSweep's request at a boundary: preemptone's (or, with --gc, the runtime's own) and its withdrawal."""

    def _set(self, base: int, table: dict, field: str, value: int) -> None:
        f = table[field]
        self.p.write(base + f.offset, value.to_bytes(f.size, "little"))

    def _g_request(self) -> tuple[int, int, int]:
        """G's stackguard0, m and preempt (_G_REQUEST's order), in one read."""
        if self._g_reader is None:
            self._g_reader = StructRef(self.p, self.g, self.p.structs.g).reader(self._G_REQUEST)
        return self._g_reader()

    _G_REQUEST = ("stackguard0", "m", "preempt")          # in offset order (runtime2.go's g)

    def _m_and_p(self) -> tuple[int, int]:
        """G's M and that M's P (0 when G has none)."""
        m = self._g("m")
        pp = int.from_bytes(self.p.read(m + self.p.structs.m["p"].offset, 8), "little") if m else 0
        return m, pp

    def _deliver(self, clock: GoroutineClock, k: int) -> Point:
        """The request at boundary k, as preemptone makes it, and SIGURG pending for G's thread (with --gc:
        the runtime's own request for the cycle, _await_gc)."""
        if self.gc is not None and self._predict(clock.ready) == "safe":
            return self._await_gc(clock, k)
        p = self.p
        t = p.threads[clock.ready]
        pc = t.ctx.reg_read(X.UC_X86_REG_RIP)
        gt, mt, pt = p.structs.g, p.structs.m, p.structs.p
        sg, m, gpre = self._g_request()
        pp = p.read_u64(m + mt["p"].offset) if m else 0
        saved = (gpre, sg, p.read(pp + pt["preempt"].offset, 1)[0] if pp else None,
                 int.from_bytes(p.read(m + mt["signalPending"].offset, 4), "little") if m else None)
        self._set(self.g, gt, "preempt", 1)
        self._set(self.g, gt, "stackguard0", gs.STACK_PREEMPT)
        if pp:
            self._set(pp, pt, "preempt", 1)
        if m:
            self._set(m, mt, "signalPending", 1)
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
            p.hold(t)
            give_up = p.clock + GC_WAIT_NS
            try:
                p.run_until(lambda: (gc.stop_requested() and SIGURG in t.pending) or p.clock > give_up
                            or not p.runnable_besides_held())
            finally:
                p.unhold(t)
                gc.waiting = None
            if p.exit_code is not None or p.error is not None:
                raise EmuError(f"while {self.func}'s goroutine waited at boundary {k} for the GC cycle, the "
                               f"program stopped: {p.error or p.stop_reason}")
            if SIGURG not in t.pending:
                raise EmuError(f"no GC cycle came for {self.func}'s goroutine at boundary {k} within "
                               f"{GC_WAIT_NS / 1e9:g} s of virtual time: the runtime never stopped it "
                               "(GOGC=off, or debug.SetGCPercent(-1)?)")
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        t.signal_countdown = 0
        return Point(k, t.tid, pc, t.pending[SIGURG], ())

    def withdraw(self, pt: Point) -> None:
        """The runtime declined: undo the request (the ack, preemptGen and signalPending, is the runtime's)."""
        gpre, sg, ppre, _ = pt.saved
        p = self.p
        self._set(self.g, p.structs.g, "preempt", gpre)
        if self._g("stackguard0") == gs.STACK_PREEMPT:
            self._set(self.g, p.structs.g, "stackguard0", sg)
        _, pp = self._m_and_p()
        if pp and ppre is not None:
            self._set(pp, p.structs.p, "preempt", ppre)
