"""sysmon's retake and the preemption signal: preemptone, preemptM and the SIGURG handler doSigPreempt.

Mirrors runtime/proc.go (sysmon's delay and idle count, retake of a P that ran one G for
forcePreemptNS, preemptone), signal_unix.go (preemptM: one signal in flight per M; doSigPreempt:
the handler that asks the oracle and injects the asyncPreempt call). A signal lands at a seeded
instruction of the next round. A collaborator of sched.Scheduler (its `sysmon`) with its own sleep state, working on the scheduler's
Ps, Ms, clock and trace.

Left out: syscall retakes and handoffp, sysmon's deep sleep (Go 1.14's idle reset is kept, see
RuntimeRules), netpoll, forcegc, scavenging.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..check import inject
from .gmp import ack_sigurg, preempt_m, read_sched_state, request_preempt

if TYPE_CHECKING:
    from .schedrecords import G, M, P

FORCE_PREEMPT_NS = 10_000_000        # proc.go forcePreemptNS
SYSMON_MIN_US, SYSMON_MAX_US = 20, 10_000


class Sysmon:
    """The Scheduler's sysmon and signals: retake long-running Ps, send SIGURG, run its handler."""

    def __init__(self, s) -> None:
        self.s = s                               # the Scheduler whose Ps, Ms and Gs this works on
        self.next_ns = SYSMON_MIN_US * 1000          # when sysmon next wakes: usleep(20) before its first retake
        self.delay_us = SYSMON_MIN_US                # its sleep (usleep(delay))
        self.idle = 0                                # iterations since it last found work (its idle count)

    def tick(self, t: float) -> None:
        """One sysmon iteration at time t (it just woke from usleep(delay)). Go 1.14 reset idle and
        delay whenever every P was idle (its deep-sleep branch; the sleep itself is left out)."""
        if self.s.rules.sysmon_idle_resets and self.all_idle():
            self.idle, self.delay_us = 0, SYSMON_MIN_US
        for p in self.s.ps:                                    # retake (proc.go:6681): every _Prunning P
            if p.sysmon_tick != p.schedtick:
                p.sysmon_tick, p.sysmon_when = p.schedtick, t
            elif p.sysmon_when + FORCE_PREEMPT_NS <= t:
                self.preemptone(p, t)
        self.idle += 1                                # Go 1.27: only syscall retakes reset idle
        if self.idle == 0:
            self.delay_us = SYSMON_MIN_US
        elif self.idle > 50:
            self.delay_us *= 2
        self.delay_us = min(max(self.delay_us, SYSMON_MIN_US), SYSMON_MAX_US)
        self.next_ns = t + self.delay_us * 1000

    def preemptone(self, p: P, t: float) -> None:
        m = p.m
        g = m.curg
        if g is None:
            return
        request_preempt(g.ref)
        self.s._ev("preemptone", t, "sysmon", p=p.idx, g=g.name)
        if self.s.async_preemption:
            self.preempt_m(m, g, t)

    def all_idle(self) -> bool:
        """Every P idle: no M runs a G and nothing is queued (sched.npidle == gomaxprocs)."""
        return all(m.curg is None for m in self.s.ms) and not self.s.global_q and \
            not any(p.runq or p.runnext for p in self.s.ps)

    def preempt_m(self, m: M, g: G, t: float, **why) -> None:
        """preemptone's pp.preempt and preemptM: if no signal is in flight to m, send one."""
        if preempt_m(m.ref, m.p.ref, self.s.rules):
            self.signal_sent(m, g, t, **why)

    def signal_sent(self, m: M, g: G, t: float, **why) -> None:
        """SIGURG to m: it lands at a seeded instruction of the next round (a pending one coalesces)."""
        self.s.signals_sent += 1
        if m.signal_at is None:
            m.signal_at = self.s.rnd.randrange(self.s.quantum_insns)
        self.s._ev("signal", t, "sysmon", m=m.idx, g=g.name, **why)

    def deliver(self, m: M, t: float) -> None:
        """The SIGURG handler on M: doSigPreempt."""
        mm = self.s.machine
        m.signal_at = None
        track = f"M{m.idx}"

        def ack() -> None:
            ack_sigurg(m.ref, self.s.rules)
            m.acked_at = t

        g = m.curg
        if g is None:
            # Landed on g0: the M is in the scheduler or idle. g0 stays _Gidle (proc.go malg/mcommoninit
            # never make it _Grunning), so wantAsyncPreempt (preempt.go:369-372) already says no.
            ack()
            self.s.refused["no-request"] += 1
            self.s._ev("refuse", t, track, reason="no-request")
            return
        st = read_sched_state(g.ref, m.ref, m.p.ref, self.s.rules)
        pc, sp = mm.pc, mm.reg("RSP")
        ctx = self.s.sigctx if self.s.observer is None else self.s.observer.deliver(m, g, t, st, self.s.sigctx)
        v = inject.do_sig_preempt(ctx, self.s.prog, st, pc, sp, self.s.headroom, self.s.stub_entry, ack)
        if self.s.observer is not None:
            self.s.observer.delivered(m, g, t, v)
        if v.ok:
            self.s.signals_injected += 1
            self.s._ev("inject", t, track, g=g.name, pc=f"{pc:#x}", where=self.s.prog.describe_pc(pc))
        else:
            self.s.refused[v.reason] += 1
            self.s._ev("refuse", t, track, g=g.name, reason=v.reason, pc=f"{pc:#x}", where=self.s.prog.describe_pc(pc))
