"""`preemu exec --schedules N` and `--schedule SEED`: run a whole program under PCT schedules (linux/schedule.py).

Exploration: one calibration run (schedule 0 at depth 1, program seed 0) counts the steps k the change points
are drawn among; then schedules seed, seed+1, ... run in turn, each a fresh process whose program seed
(AT_RANDOM, getrandom) is the schedule's seed too, until one fails or N have run. A run fails when it does not
exit 0 (a test's FAIL exits 1, a panic or fatal error 2), is killed by a signal, does not finish (the budget or
--max-virtual-ms: a livelock or a deadlock preemu found), preemu stops it (a deadlock of every thread, an
unsupported syscall), its output says `--- FAIL`, or preemu's watch finds a violation. A replay (`--schedule
SEED --depth D`) calibrates again (the same program and options give the same k) and runs that one schedule.
Left out: shrinking a failing schedule, exploring depths in turn, running schedules in parallel.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..linux import process
from ..linux.schedule import PctSchedule, step_pcs

#: the calibration run: schedule seed and program seed (fixed, so a replay computes the same k)
CALIBRATION_SEED = 0
#: --depth's default: most real concurrency bugs have depth 1-3 (PCT, section 2); a check-then-act race between
#: two goroutines that both enter is depth 3 (A checks, B checks and acts, A acts)
DEFAULT_DEPTH = 3


@dataclass
class Run:
    seed: int
    proc: object                # the process (linux/process.Process), run to its end
    schedule: PctSchedule
    why: str | None             # None: passed
    cpu_s: float

    def to_json(self) -> dict:
        p = self.proc
        return {"seed": self.seed, "ok": self.why is None, "why": self.why, "exit_code": p.exit_code,
                "instructions": p.insns, "virtual_ns": p.clock - p.boot_ns, "steps": self.schedule.steps,
                "cpu_s": round(self.cpu_s, 3)}


@dataclass
class Exploration:
    depth: int
    k: int
    requested: int
    pcs: int                    # step PCs hooked
    runs: list[Run] = field(default_factory=list)
    calibration_cpu_s: float = 0.0

    @property
    def failing(self) -> Run | None:
        return self.runs[-1] if self.runs and self.runs[-1].why is not None else None


def failure(p) -> str | None:
    """Why a finished run counts as failing (module docstring), or None."""
    out = bytes(p.fds.stdout.data).decode(errors="replace")
    err = bytes(p.fds.stderr.data).decode(errors="replace")
    if p.error is not None:
        return f"preemu stopped the run: {p.error}"
    if p.starved:
        return f"did not finish: {p.stop_reason}"
    if p.watch.violations:
        return f"{len(p.watch.violations)} violation(s) of preemption's rules"
    first = _first_line(out + "\n" + err, ("--- FAIL", "panic:", "fatal error:"))
    if p.killed_by:
        return f"killed by signal {p.killed_by}" + (f": {first}" if first else "")
    if p.exit_code:
        return f"exit status {p.exit_code}" + (f": {first}" if first else "")
    if "--- FAIL" in out:
        return f"a test failed: {first}"
    return None


def _first_line(text: str, marks: tuple[str, ...]) -> str:
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith(marks):
            more = lines[i + 1].strip() if i + 1 < len(lines) and ln.lstrip().startswith("--- FAIL") else ""
            return ln.strip() + (f" {more}" if more else "")
    return ""


def run_one(image, make_opts, pcs: list[int], seed: int, depth: int, k: int, ctrl=None) -> Run:
    """Run the program once under schedule (seed, depth, k); `ctrl(p)` runs it (default p.run())."""
    c0 = time.process_time()
    p = process.Process(image, make_opts(seed))
    sched = PctSchedule(seed, depth, k)
    sched.attach(p, pcs)
    (ctrl or process.Process.run)(p)
    return Run(seed, p, sched, failure(p), time.process_time() - c0)


def calibrate(image, make_opts, pcs: list[int], ctrl=None) -> tuple[int, float]:
    """(k, CPU seconds): the steps of schedule 0 at depth 1 with program seed 0."""
    r = run_one(image, make_opts, pcs, CALIBRATION_SEED, 1, 1, ctrl)
    return r.schedule.steps, r.cpu_s


def explore(image, make_opts, n: int, depth: int, first_seed: int, package: str | None = None, ctrl=None,
            interrupted=lambda: False) -> Exploration:
    """Schedules first_seed .. first_seed+n-1 at `depth`, stopping at the first failing one."""
    pcs = step_pcs(image, package)
    k, cal = calibrate(image, make_opts, pcs, ctrl)
    ex = Exploration(depth, k, n, len(pcs), calibration_cpu_s=cal)
    for i in range(n):
        if interrupted():
            break
        r = run_one(image, make_opts, pcs, first_seed + i, depth, k, ctrl)
        ex.runs.append(r)
        if r.why is not None:
            break
    return ex


def replay(image, make_opts, seed: int, depth: int, package: str | None = None, ctrl=None,
           run_opts=None) -> tuple[Run, int]:
    """(the run of schedule `seed`, k); `run_opts`: the Options of that run (default make_opts(seed))."""
    pcs = step_pcs(image, package)
    k, _ = calibrate(image, make_opts, pcs, ctrl)
    return run_one(image, (lambda s: run_opts) if run_opts is not None else make_opts, pcs, seed, depth, k, ctrl), k


def where(image_path: str, d) -> str:
    """A decision's place with the source line when the binary's line table has it."""
    try:
        from ..front.gobinary import GoBinary
        b = _binary(image_path)
        f = b.func_for(d.pc)
        if f is not None:
            file, line = b.file_line(f, d.pc)
            if line:
                return f"{d.where} ({file.rsplit('/', 1)[-1]}:{line})"
        del GoBinary
    except Exception:                          # a line is a nicety: the PC and FUNC+OFF are the decision
        pass
    return d.where


_BINARIES: dict = {}


def _binary(path: str):
    from ..front.gobinary import GoBinary
    if path not in _BINARIES:
        _BINARIES[path] = GoBinary.open(path)
    return _BINARIES[path]
