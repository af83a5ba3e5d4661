"""`preemu sweep GO --func F --schedules N [--depth D]` and `--schedule SEED`: a sweep's first chain again under
PCT schedules (emu/linux/schedule.py), so that a program failure that needs another thread stopped at the
right moment while G sits at one of its points is found, with the seed that replays it.

Which runs, and why. The sweep's process is steered (gsweep.py: one CPU, the threads in turn, G's thread held
and run next as the points need); in that turn order the other goroutines' slices end only every quantum, so
a window of a few instructions in another goroutine is almost never split while F is preempted. Here, after
the sweep (whose own runs, verdicts and output are unchanged), the first chain (the first shard's points: the
sweep's own injection points for G, counted in G's instructions by the GoroutineClock, so they are the same
whatever the schedule) runs again from F's call's snapshot N times, every thread of the process under PCT
schedule 1, 2, ..., N at depth D (one run per seed; the schedule also orders G's thread, whose points still
come at the same boundaries of G). k is the steps of a calibration run of that chain (schedule 0, depth 1),
counted from the snapshot on. A run whose program ends in a failure (exit status not 0, `--- FAIL`, a panic
or fatal error) that the uninterrupted reference did not show is a `schedule` violation: the sweep fails
(exit 1) and names the seed, the change points, and the command that replays it (`--schedule SEED`, which runs
the sweep and then that one schedule). The uninterrupted run (no injection) then runs under the same schedule
once, and the violation says whether it fails too (a race among the other threads that F's preemption only
made room for, or not even that) or only with G's injections.

With --gc (issue #47 item 3) the chain is the --gc sweep's first one: the runtime's own cycle made due at
every step-th boundary of G (realgc.py, grequest.py), G's thread held until the runtime stops it and scanned,
then running on during mark. Under a schedule the GC's mark workers, the background sweeper, forcegchelper and
sysmon are threads like the others: their priorities and the change points (at the program's own steps, so
at G's and its peers') decide how far the workers get while G runs, for example G moving a pointer after its
own stack was scanned and before the workers reach the object. What is judged is the program's ending (the
runtime's own "found bad pointer in Go heap" or a checkmark failure, a test's FAIL, a panic); the realgc
watch's use-after-free reports of the schedule runs are not collected (the sweep's own runs report them), and
the quarantine (quarantine.py) is off in them, so a freed slot is reused as natively and the runtime's own
checks can fire.
Measured: tests/data/go/gcnowb's moveNoWB (an assembly move without a write barrier) fails under schedule 1
(the runtime finds the freed node: "found bad pointer in Go heap"; with a Go 1.24 build too), its moveWB twin
passes 10 of 10, tests/data/go/gccorrect's maps and chans 5 of 5, its pooled and finals and gcverdicts'
explicitGC, weakPtrs, finalOrder and appendMap 3 of 3 (--max-points 100).

Left out: the other chains (shards) and the to-exit runs under schedules, F's results and the globals under a
schedule (compared only in the sweep's own runs: a schedule legitimately changes what other goroutines wrote),
the --gc watch's findings in the schedule runs, --each-pc sweeps, schedules in parallel, and shrinking a
failing schedule. Change points never fall inside the mark workers' own code (runtime code has no steps): a
worker is stopped part-way through the heap only by the priorities and the fairness bound, never by a change
point.
"""
from __future__ import annotations

import contextlib

import time
from dataclasses import dataclass, field

from ..check.verify import Violation
from ..linux.schedule import _NEVER, PctSchedule, hook_steps, step_pcs
from . import schedules as X
from .runrecords import Ending, ReferenceEnded

#: the calibration run's schedule (as exec's: drive/schedules.py)
CALIBRATION_SEED = X.CALIBRATION_SEED


@dataclass
class SchedRun:
    seed: int
    why: str | None
    ending: Ending
    decisions: list
    steps: int
    change_points: list
    reached: int = 0                     # the chain's points G reached (the uninterrupted run: 0)

    def to_json(self) -> dict:
        return {"seed": self.seed, "ok": self.why is None, "why": self.why, "exit_code": self.ending.exit_code,
                "steps": self.steps, "points_reached": self.reached}


@dataclass
class SweepSchedules:
    """What the schedules found (RealSweepResult.schedules)."""
    depth: int
    seeds: list
    k: int
    points: int                          # the chain's points
    runs: list = field(default_factory=list)
    failing: SchedRun | None = None
    uninterrupted_fails: bool | None = None   # the failing schedule without injections: fails too?
    replay: str | None = None
    cpu_s: float = 0.0

    def to_json(self) -> dict:
        f = self.failing
        return {"depth": self.depth, "first_seed": self.seeds[0], "requested": len(self.seeds), "ran": len(self.runs),
                "k": self.k, "chain_points": self.points, "cpu_s": round(self.cpu_s, 3), "passed": f is None,
                "runs": [r.to_json() for r in self.runs],
                "failing": None if f is None else {**f.to_json(), "change_points": f.change_points,
                                                   "decisions": f.decisions,
                                                   "stdout": f.ending.stdout.decode(errors="replace"),
                                                   "uninterrupted_fails": self.uninterrupted_fails,
                                                   "replay": self.replay}}

    def lines(self) -> list[str]:
        s = "s" if len(self.seeds) > 1 else ""
        seeds = f"seeds {self.seeds[0]}..{self.seeds[-1]}" if len(self.seeds) > 1 else f"seed {self.seeds[0]}"
        head = (f"  schedules          {len(self.runs):>9,}   of {len(self.seeds)} PCT schedule{s} of depth {self.depth} "
                f"({seeds}; k = {self.k} steps): the first chain's {self.points:,} points again, every thread under the "
                "schedule")
        if self.failing is None:
            return [head, "                                 the program ended as uninterrupted every time"]
        return [head, f"                                 schedule {self.failing.seed} FAILED: {self.failing.why}"]


def ending_failure(e: Ending, ref: Ending) -> str | None:
    """Why a schedule's ending is a failure the reference's is not (schedules.failure's marks), or None."""
    out = e.stdout.decode(errors="replace")
    err = e.stderr.decode(errors="replace")
    first = X._first_line(out + "\n" + err, ("--- FAIL", "panic:", "fatal error:"))
    if e.exit_code is None:
        return f"did not finish: {e.reason}"
    if e.exit_code != 0 and e.exit_code != ref.exit_code:
        return f"exit status {e.exit_code}" + (f": {first}" if first else "")
    ref_out = ref.stdout.decode(errors="replace")
    if "--- FAIL" in out and "--- FAIL" not in ref_out:
        return f"a test failed: {first}"
    return None


def _hooked(sw, pcs: list[int]) -> None:
    """The step hooks on the sweep's process (added after it ran to F's call: each step PC's translation is
    dropped so that the hook reaches it); again on a process the sweep built anew (gsweep._arm)."""
    p = sw.p
    if getattr(p, "step_hooks", None) is None or getattr(p, "_sched_pcs", None) is not pcs:
        hook_steps(p, pcs)
        for pc in pcs:
            p.uc.ctl_remove_cache(pc, pc + 1)
        p._sched_pcs = pcs


def _run(sw, pcs, seed: int, depth: int, k: int, points, budget: int, uninterrupted: bool = False):
    """One run from the snapshot under schedule (seed, depth, k): the chain at `points`, or the uninterrupted
    reference; (schedule, ending, points reached)."""
    _hooked(sw, pcs)
    s = PctSchedule(seed, depth, k)
    s.attach(sw.p)
    reached = 0
    try:
        if uninterrupted:
            try:
                sw.reference(budget)
                ending = Ending.of(sw.p)
            except ReferenceEnded as e:
                ending = e.ending
        else:
            _, reached, ending = sw.chain(points, {})
    finally:
        sw.p.schedule = None                        # the sweep's own runs never see a schedule; the steps
        sw.p.step_hooks.state.next = _NEVER         # counted stay for s.steps (attach resets them)
    return s, ending, reached


def explore(sw, ref, points, seeds: list[int], depth: int, budget: int, replay) -> SweepSchedules:
    """The first chain at `points` under each schedule of `seeds` (module docstring); `replay(seed)` is the
    command that replays one."""
    c0 = time.process_time()
    with sw.gc.quarantine_off() if sw.gc is not None else contextlib.nullcontext():
        return _explore(sw, ref, points, seeds, depth, budget, replay, c0)


def _explore(sw, ref, points, seeds: list[int], depth: int, budget: int, replay, c0: float) -> SweepSchedules:
    pcs = step_pcs(sw.image, sw.package or "main")
    cal, _, cal_reached = _run(sw, pcs, CALIBRATION_SEED, 1, 1, points, budget)
    # a --gc chain's points are every step-th boundary until F returns (realsweep.py: an open range): count the
    # ones G reached in the calibration run
    out = SweepSchedules(depth, list(seeds), cal.steps, len(points) if sw.gc is None else cal_reached)
    for seed in seeds:
        s, ending, reached = _run(sw, pcs, seed, depth, out.k, points, budget)
        why = ending_failure(ending, ref.ending)
        run = SchedRun(seed, why, ending, [_decision(sw, d) for d in s.decisions], s.steps, sorted(s.change),
                       reached)
        out.runs.append(run)
        if why is not None:
            out.failing, out.replay = run, replay(seed)
            _, plain, _ = _run(sw, pcs, seed, depth, out.k, points, budget, uninterrupted=True)
            out.uninterrupted_fails = ending_failure(plain, ref.ending) is not None
            break
    out.cpu_s = time.process_time() - c0
    return out


def _decision(sw, d) -> dict:
    j = d.to_json()
    j["where"] = X.where(sw.image.path, d)
    return j


def violation(sw, out: SweepSchedules, ref_exit) -> Violation:
    """The failing schedule as a sweep violation (kind `schedule`)."""
    f = out.failing
    cps = [d for d in f.decisions if d["kind"] == "change-point"]
    stopped = "; ".join(f"step {d['step']}: {d['thread']}({d['tid']}) stopped before {d['where']}" for d in cps)
    alone = ("the uninterrupted run fails under this schedule too: a race among the program's threads"
             if out.uninterrupted_fails else
             f"the uninterrupted run passes under this schedule: the failure needs {sw.func}'s injections")
    return Violation("pct-schedule", f"the program under PCT schedule {f.seed} (depth {out.depth})",
                     f"the uninterrupted run's ending (exit status {ref_exit})",
                     f.why, 0, sw.entry, "", sw.func,
                     f"the first chain again with every thread under schedule {f.seed}; change points: "
                     f"{stopped or 'none'}; {alone}; replay: {out.replay}")
