"""The N CPUs of `--cpus N`: one virtual clock per CPU, which CPU runs next, where a woken thread runs.

Linux runs up to N threads at once, and a thread it wakes runs promptly: on an idle CPU at once
(kernel/sched/fair.c select_task_rq_fair -> select_idle_sibling), else by preempting the running thread
when the wakee's vruntime is more than the wakeup granularity below the runner's (check_preempt_wakeup ->
wakeup_preempt_entity), a sleeper's vruntime first raised to at least min_vruntime minus half the
scheduler latency (place_entity with GENTLE_FAIR_SLEEPERS). A new thread is placed the same way
(wake_up_new_task -> check_preempt_curr), starting from its parent's vruntime (task_fork_fair). These are
CFS's rules as of Linux 6.5 (EEVDF, 6.6+, replaced the test but keeps "a sleeper preempts a runner that
has had its share"); the figures are CFS's defaults for N CPUs: sched_latency 6 ms and wakeup granularity
1 ms, both x (1 + log2 min(N, 8)) (get_update_sysctl_factor, SCHED_TUNABLESCALING_LOG).

One Unicorn runs one thread at a time, so the CPUs take turns, deterministically:
- each CPU has its own clock (virtual ns: its instructions x ns-per-insn, plus the time it sat idle);
- the next slice runs on the CPU whose clock is furthest behind, and it runs the thread at the head of the
  run queue from max(that clock, the time the thread became runnable): the queue is ordered by that time
  (FIFO among equal times), so a thread never runs before it was woken and a CPU takes the thread that has
  waited longest;
- a slice is at most one quantum (`--quantum`), so the CPUs interleave at that granularity: a thread may
  see another CPU's stores up to one quantum early or late, never more; a sleeper's deadline is processed
  only once no CPU can still run anything before it (a futex wake from a CPU that is behind still beats
  the timeout);
- a wakeup with an idle CPU ends the waker's slice at the wake, so the wakee starts at the same virtual
  instant and the two go on in turns (this is "in parallel" at the quantum's granularity); a wakee that
  preempts (above) goes to the head of the queue and also ends the waker's slice;
- how `--seed` varies the interleaving: while another thread waits for a CPU, each slice that runs to its
  quantum is shortened by a seeded draw of up to an eighth of the quantum (JITTER), so the slice ends, and
  with them which stores each CPU sees first, move with the seed; a thread alone runs unbroken, as before.
  CPUs whose clocks tie are taken in a seeded order (they are otherwise alike: any CPU takes the queue's
  head). With one CPU and nothing else runnable, a run is the same for every seed.

A steered process (the real-program sweeps, which decide themselves which thread runs next: gsweep.py holds
G's thread, puts it at the head of the queue) keeps the one-CPU turn order those sweeps were built on: every
thread takes turns on one clock, a woken thread queues at the back, no preemption, no jitter (sched_getaffinity
still reports N CPUs, so the program's GOMAXPROCS is the same). Their cycle-per-injection protocol (realgc.py)
relies on it: with two CPUs, another P may pick G up again before the stop-the-world it was preempted for.

Left out: per-CPU run queues, load balancing and migration costs (one queue serves every CPU, which is what
balancing approximates), nice levels and weights, affinity masks (sched_setaffinity is not modelled; the
mask sched_getaffinity reports is all N CPUs), CPU numbers visible to the program (getcpu), EEVDF's lag.
"""
from __future__ import annotations

import random

NS_PER_MS = 1_000_000
#: CFS's defaults for one CPU (kernel/sched/fair.c): sysctl_sched_latency, sysctl_sched_wakeup_granularity
SCHED_LATENCY_NS = 6 * NS_PER_MS
WAKEUP_GRANULARITY_NS = 1 * NS_PER_MS
#: a slice that runs to its quantum while another thread waits is shortened by up to quantum // JITTER
JITTER = 8


def tunable_factor(ncpu: int) -> int:
    """CFS's scaling of its latency figures with the CPU count: 1 + ilog2(min(ncpu, 8))
    (kernel/sched/fair.c get_update_sysctl_factor, SCHED_TUNABLESCALING_LOG)."""
    return 1 + (min(ncpu, 8).bit_length() - 1)


class Cpus:
    """The CPUs' clocks and the placement rules; the run queue itself is the process's (runq)."""

    def __init__(self, ncpu: int, boot_ns: int, seed: int, steered: bool = False) -> None:
        self.steered = steered                       # one clock, woken threads at the back (module docstring)
        self.clocks = [boot_ns] * (1 if steered else ncpu)
        self.rng = random.Random(f"cpus:{seed}")     # its own stream: getrandom's bytes do not move
        factor = tunable_factor(ncpu)
        self.sleeper_credit = SCHED_LATENCY_NS * factor // 2
        self.wakeup_granularity = WAKEUP_GRANULARITY_NS * factor
        self.min_vruntime = 0
        self.running = 0                             # the CPU of the slice in progress (or last run)

    # --- which CPU runs next, from when -----------------------------------------------------------
    def pick(self) -> int:
        """The CPU furthest behind (ties in a seeded order)."""
        clocks = self.clocks
        low = min(clocks)
        if len(clocks) == 1:
            return 0
        tied = [i for i, c in enumerate(clocks) if c == low]
        return tied[0] if len(tied) == 1 else self.rng.choice(tied)

    def start_of(self, cpu: int, t) -> int:
        return max(self.clocks[cpu], t.ready_ns)

    def quantum(self, quantum: int, contended: bool) -> int:
        """A slice's length when it runs to its quantum: shortened by a seeded jitter while others wait."""
        if not contended or quantum < JITTER or self.steered:
            return quantum
        return quantum - self.rng.randrange(quantum // JITTER)

    def frontier(self, runq, also=None) -> int | None:
        """The earliest virtual time at which any CPU can run anything next (None: nothing is runnable).
        `also`: a thread about to queue again, runnable from its ready time."""
        ready = [x.ready_ns for x in (runq[0] if runq else None, also) if x is not None]
        return max(min(self.clocks), min(ready)) if ready else None

    # --- where a woken (or new) thread runs -------------------------------------------------------
    def place(self, runq, t, now: int, curr, curr_vruntime: int) -> bool:
        """Queue runnable thread t, woken (or created) at virtual time `now`; True when the thread running
        (curr, with curr_vruntime so far; None between slices) should give up its CPU now: t has an idle
        CPU (it runs from `now` in turn with curr), or t preempts curr (t goes to the head of the queue)."""
        t.ready_ns = now
        if self.steered:
            runq.append(t)
            return False
        self._update_min_vruntime(runq, curr, curr_vruntime)
        t.vruntime = max(t.vruntime, self.min_vruntime - self.sleeper_credit)
        if self._idle_cpu_at(runq, now, busy=self.running if curr is not None else None):
            enqueue(runq, t)
            return curr is not None
        if curr is not None and curr_vruntime - t.vruntime > self.wakeup_granularity:
            runq.appendleft(t)
            return True
        enqueue(runq, t)
        return False

    def _idle_cpu_at(self, runq, now: int, busy: int | None) -> bool:
        """Some CPU other than `busy` is free at `now`: more CPUs have nothing to run by then than threads
        are waiting for one by then."""
        free = sum(1 for i, c in enumerate(self.clocks) if c <= now and i != busy)
        if not free:
            return False
        waiting = sum(1 for x in runq if x.ready_ns <= now)
        return free > waiting

    def _update_min_vruntime(self, runq, curr, curr_vruntime: int) -> None:
        """CFS's monotonic min_vruntime over the runnable threads (update_min_vruntime)."""
        vrs = [x.vruntime for x in runq]
        if curr is not None:
            vrs.append(curr_vruntime)
        if vrs:
            self.min_vruntime = max(self.min_vruntime, min(vrs))

    def requeue(self, runq, t) -> None:
        """t's slice ended and it can go on: queue it by its ready time (steered: at the back)."""
        if self.steered:
            runq.append(t)
        else:
            enqueue(runq, t)

    def catch_up(self, now: int) -> None:
        """Other processes ran on one shared clock up to `now` (proctable.py: a slice at a time, every process):
        no CPU of this one is behind it when its own loop goes on."""
        self.clocks = [max(c, now) for c in self.clocks]

    def account_idle(self, cpu: int, start: int) -> int:
        """CPU `cpu` starts a slice at `start`: the idle time before it (its clock moves there)."""
        idle = start - self.clocks[cpu]
        self.clocks[cpu] = start
        self.running = cpu
        return idle


def enqueue(runq, t) -> None:
    """Put t in the run queue by the time it became runnable, behind every thread runnable no later."""
    i = len(runq)
    while i and runq[i - 1].ready_ns > t.ready_ns:
        i -= 1
    if i == len(runq):
        runq.append(t)
    else:
        runq.insert(i, t)
