"""The GC's stack-scan requests: suspendG, preemptPark and resumeG, as markroot's stack jobs make them.

Mirrors runtime/preempt.go (suspendG's _Grunning case with its preemptM rate limit, resumeG),
proc.go (preemptPark, ready) and the markroot stack jobs of mgcmark.go that call them. A GC cycle
sets preemptStop on every running goroutine and signals it; the goroutine parks in preemptPark
(_Gpreempted), is "scanned" and made runnable again on the GC worker's P. A collaborator
of sched.Scheduler (its `suspender`) with the cycles' own state, working on the scheduler's goroutines and Ms
and sending through its sysmon.

Left out: the mark phase and the scan itself (preemu's scan is gcscan's, for a World), the
_Gscan bit's races, gcDrain and the mark workers' own scheduling.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import gostructs as gs
from ..core.structref import read_field, write_field
from .gmp import request_preempt, signal_m

if TYPE_CHECKING:
    from .schedrecords import G, M, P

SUSPEND_RESEND_NS = 5_000            # preempt.go:115,232: suspendG's preemptM at most every yieldDelay/2


class GcSuspend:
    """The Scheduler's GC cycle: suspend every running G at its next safe point, scan it, resume it."""

    def __init__(self, s) -> None:
        self.s = s                               # the Scheduler whose Ps, Ms and Gs this works on
        self.every_ns = 0                            # a cycle every so many ns (0: none)
        self.next_ns = 0                             # when the next cycle starts
        self.cycles = 0                              # cycles started
        self.waits: list[int] = []                   # suspendG: request -> goroutine parked (ns)
        self.suspending: dict[G, float] = {}         # G -> when suspendG asked it to stop
        self.sent: dict[G, tuple] = {}               # suspendG's (asyncM, asyncGen, nextPreemptM)
        self.worker_p: dict[G, P] = {}               # the P whose GC worker suspends the G

    def cycle(self, t: float) -> None:
        """markroot's stack jobs: suspendG every live goroutine, scan it, resumeG."""
        self.cycles += 1
        self.s._ev("gc", t, "sysmon", cycle=self.cycles)
        for g in self.s.gs:
            if g.status == "dead" or g in self.suspending:
                continue
            if g.status != "running":                        # _Grunnable/_Gwaiting: claim with the scan bit
                self.waits.append(0)
                continue
            mm, G_ = self.s.machine, gs.G_FIELDS
            write_field(mm, g.addr, G_, "preemptStop", 1)
            request_preempt(g.ref)
            self.suspending[g] = t
            # the mark worker running suspendG spins on a P other than the G's (the only P with
            # GOMAXPROCS=1, once the G has parked)
            own = next(m.p for m in self.s.ms if m.curg is g)
            self.worker_p[g] = next((p for p in self.s.ps if p is not own), own)
            self.s._ev("suspendG", t, "sysmon", g=g.name)
            self.resend(g, t)

    def resend(self, g: G, t: float) -> None:
        """suspendG's _Grunning case (preempt.go:193-235): it requests a synchronous preemption but
        does not set pp.preempt, and calls preemptM only when the G's M or that M's preemptGen changed
        since it last looked (an acknowledgement), at most every yieldDelay/2 = 5 us.

        suspendG spins, so it sees a new (M, preemptGen) the moment doSigPreempt acknowledges, and it
        takes that pair as seen whether or not the rate limit lets it send (preempt.go:211-215 assign
        asyncM/asyncGen before :227-232 test nextPreemptM): a signal acknowledged within 5 us of the
        last send is never sent again for that pair. The G then waits for sysmon's preemptone or a
        prologue. Rounds are coarser than 5 us, so the acknowledgement's own time decides."""
        if not self.s.async_preemption or g.status != "running":
            return
        m = next(m for m in self.s.ms if m.curg is g)
        gen = read_field(self.s.machine, m.addr, gs.M_FIELDS, "preemptGen")
        last_m, last_gen, next_ns = self.sent.get(g, (None, None, 0))
        if (m.addr, gen) == (last_m, last_gen):
            return
        seen = m.acked_at if m.addr == last_m and m.acked_at >= 0 else t
        if seen < next_ns:                                   # rate-limited: the pair is consumed unsent
            self.sent[g] = (m.addr, gen, next_ns)
            self.s._ev("suspendG-skip", t, "sysmon", g=g.name, acked=seen, not_before=next_ns)
            return
        self.sent[g] = (m.addr, gen, seen + SUSPEND_RESEND_NS)   # nextPreemptM = now + yieldDelay/2
        if signal_m(m.ref, self.s.rules):
            self.s.sysmon.signal_sent(m, g, t, why="suspendG", seen=seen)   # Go sends at `seen`; the round starts at t

    def preempt_park(self, m: M, g: G, t: float) -> None:
        """preemptPark: _Gpreempted until suspendG claims it; the scan runs; resumeG readies it."""
        mm, G_ = self.s.machine, gs.G_FIELDS
        write_field(mm, g.addr, G_, "atomicstatus", gs.G_PREEMPTED)
        self.s._drop(m, t, "preemptPark")
        since = self.suspending.pop(g, t)
        self.waits.append(int(t - since))
        write_field(mm, g.addr, G_, "preemptStop", 0)         # suspendG claims it (_Gpreempted -> _Gwaiting)
        write_field(mm, g.addr, G_, "atomicstatus", gs.G_RUNNABLE)   # scanned; resumeG -> ready
        self.s._ev("scanned", t, f"M{m.idx}", g=g.name, waited_ms=(t - since) / 1e6)
        g.status, g.runnable_since = "runnable", t
        self.sent.pop(g, None)
        # resumeG -> ready(gp, 0, true) (preempt.go:280, proc.go:1150): runnext of the P that runs
        # the GC worker, not of the P the G was preempted on
        self.s._runqput(self.worker_p.pop(g, m.p), g, True)
