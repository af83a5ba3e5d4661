"""`--each-pc`: every distinct PC that F's goroutine executes, decided once, at its first occurrence, in one pass.

Most boundaries of real code are the same PCs again (a loop body, a runtime helper called hundreds of times).
One chain from the snapshot carries a code hook on every instruction: when G's next instruction is at a PC
no point has decided yet, the process stops there (G's GoroutineClock stops at that boundary, as it stops at
a chosen one) and the request is made as at any point; G then runs on, with the checks of a full sweep at
each injection (the runtime's decision against the oracle, the resume check) and at the end (F's results,
the program's ending). The PCs a chain's injections lead G to (the scheduler after a preemption, another
allocation path) are first occurrences too, and are decided in the same pass. `max_points` caps the PCs
decided, in the order G meets them.

What it costs: the chain's instructions up to F's return each call a Python callback (~1 us; the hook goes
before the run on to the program's exit), and one point per distinct PC instead of one per boundary.
What it leaves out: the second and later occurrences of a PC (other register values, other stack depths,
other callers), which a full sweep also checks, and PCs that only another chain's injections would lead to
(measured against full sweeps of tests/data/go/kinds: main.spin's 15 PCs all decided; main.spawn 94 % and
main.digest 66 % of the PCs the full sweep's many chains reach, most of the rest runtime paths a preemption
sends G down, such as another P's allocation refills).
"""
from __future__ import annotations

from collections import Counter

from unicorn import UC_HOOK_CODE

from .gsweep import _Listener


def chain(sw, max_points: int, stats: dict) -> tuple:
    """One chain of RealSweep `sw` deciding each PC of G at its first occurrence; returns (listener, points
    reached, ending, the PCs G executed up to F's return, the PCs decided)."""
    clock = sw._arm()
    p = sw.p
    listener = _Listener(sw, clock)
    p.watch.listener = listener
    seen: set[int] = set()
    decided: set[int] = set()
    stop = []
    rets = set(p.watch.ret_addrs)           # asyncPreempt's RET resumes G: its window ends there, no stop

    def on_code(uc, addr, size, _):
        counter = p.counter
        if sw.returned is not None or clock.tid is None or clock.tid != p.cur.tid or clock.held \
                or counter.stopping(addr):
            return                          # not G's instruction (or the engine stops before it, and it is seen next)
        if addr in rets:
            return                          # asyncPreempt's RET: the injection's window, not G's own code
        seen.add(addr)
        if addr in decided or len(decided) >= max_points or stop:
            return
        decided.add(addr)
        k = clock.count + counter.at(addr) - 1 - clock.mark
        stop.append(k)
        clock.stop_at = k                   # slice_end sees G's count at k: ready, as at a chosen boundary
        counter.stop_here(False)            # before the instruction runs

    h = p.uc.hook_add(UC_HOOK_CODE, on_code, None, 1, 0)
    p.uc.ctl_flush_tb()                     # blocks translated before the hook would not call it
    reached = 0
    try:
        while True:
            stop.clear()
            clock.stop_at = None
            p.run_until(lambda: sw.returned is not None or clock.ready is not None)
            if clock.ready is None:
                break                       # F returned (or the program ended)
            reached += 1
            listener.point = sw._deliver(clock, stop[0])
            listener.points.append(listener.point)
    finally:
        p.uc.hook_del(h)
        p.uc.ctl_flush_tb()                 # the run on to the exit at full speed again
    ending = sw._finish(clock)
    for pt in listener.points:
        ev = pt.event
        verdict = "injected" if ev.outcome == "injected" else (ev.oracle or ev.outcome)
        stats.setdefault(pt.pc, Counter())[verdict] += 1
    return listener, reached, ending, seen, decided
