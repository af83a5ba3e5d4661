"""Work stealing: what findRunnable does when its own P has nothing to run.

Mirrors runtime/proc.go stealWork (stealTries rounds over the other Ps in a random order, timers and
runnext only in the last round), runqsteal/runqgrab (the older half of a victim's queue) and Go 1.14's
shouldStealTimers (RuntimeRules decides which of the two orders a layout gets). A collaborator of
sched.Scheduler (its `stealing`), working on the scheduler's Ps, rules, random source and run queues.

Left out: spinning Ms and their accounting, stealOrder's coprime walk (a seeded shuffle stands in),
runqgrab's usleep(3) before it takes a runnext, netpoll.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import gostructs as gs
from ..core.structref import read_field

if TYPE_CHECKING:
    from .schedrecords import G, P

STEAL_TRIES = 4                      # proc.go:3848 stealTries


class Stealing:
    """findRunnable's stealing half for the Scheduler: take timers or queued Gs from another P."""

    def __init__(self, s) -> None:
        self.s = s                               # the Scheduler whose Ps, Ms and Gs this works on

    def work(self, p: P, t: float) -> tuple[G | None, bool]:
        """stealWork (proc.go:3843-3905): stealTries = 4 rounds over the other Ps in a random order;
        only the last round checks their timers and may take their runnext. Go 1.14's findrunnable
        stole from the run queue first and took only the timers shouldStealTimers allowed (RuntimeRules)."""
        for i in range(STEAL_TRIES):
            last = i == STEAL_TRIES - 1

            def timers(q):
                return self._steal_timers(p, q, t) if last else None

            def runq(q):
                g = self._runqsteal(p, q, last)
                return (g, False) if g is not None else None
            others = [q for q in self.s.ps if q is not p]
            self.s.rnd.shuffle(others)                         # stealOrder.start(cheaprand())
            for q in others:
                for step in (timers, runq) if self.s.rules.steal_timers_first else (runq, timers):
                    found = step(q)
                    if found is not None:
                        return found
        return None, False

    def _steal_timers(self, p: P, q: P, t: float) -> tuple[G, bool] | None:
        """Run q's due timers from p; the Gs they ready go to p's queue: run one."""
        if not self.s.rules.steal_timers_of_running_gs and not self._should_steal_timers(q):
            return None
        if self.s._check_timers(q, p, t):
            g, inherit = self.s._runqget(p)
            if g is not None:
                return g, inherit
        return None

    def _should_steal_timers(self, q: P) -> bool:
        """Go 1.14's shouldStealTimers(p2): yes if p2 is not _Prunning; no if its M holds locks; otherwise
        only once its G has a preemption request (gp.preempt), that is when sysmon or a GC wants that P
        back. preemu has one M per P and every M without a G looks for work each round, its own P's timers
        first, so an M without a G stands for an idle P (Go's `p2.status != _Prunning`)."""
        g = q.m.curg
        if g is None:
            return True
        if read_field(self.s.machine, q.m.addr, gs.M_FIELDS, "locks") > 0:
            return False
        return bool(read_field(self.s.machine, g.addr, gs.G_FIELDS, "preempt"))

    def _runqsteal(self, p: P, q: P, steal_runnext: bool) -> G | None:
        """runqsteal/runqgrab (proc.go:7713-7797): grab the older half (n - n/2) from the head of q's
        queue, queue all but the last one taken on p and run that one. With an empty queue, take q's
        runnext on the last round only (runqgrab first sleeps usleep(3), which preemu does not charge)."""
        n = len(q.runq) - len(q.runq) // 2
        if n == 0:
            if steal_runnext and q.runnext is not None:
                g, q.runnext = q.runnext, None
                return g
            return None
        batch = [q.runq.popleft() for _ in range(n)]
        p.runq.extend(batch[:-1])
        return batch[-1]
