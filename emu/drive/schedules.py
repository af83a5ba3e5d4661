"""`preemu exec --schedules N` and `--schedule SEED`: run a whole program under PCT schedules (linux/schedule.py).

Exploration: one calibration run (schedule 0 at depth 1) counts the steps k the change points are drawn among;
then schedules seed, seed+1, ... run in turn, until one fails or N have run. Every run starts from the same boot
(Runner): the program's own seed (AT_RANDOM, getrandom, the CPUs' tie order) is exec's default, 1, in every run,
so a schedule's seed and depth alone replay it. A run fails when it does not
exit 0 (a test's FAIL exits 1, a panic or fatal error 2), is killed by a signal, does not finish (the budget or
--max-virtual-ms: a livelock or a deadlock preemu found), preemu stops it (a deadlock of every thread, an
unsupported syscall), its output says `--- FAIL`, or preemu's watch finds a violation. A replay (`--schedule
SEED --depth D`) calibrates again (the same program and options give the same k) and runs that one schedule.
Left out: shrinking a failing schedule, exploring depths in turn, running schedules in parallel; what a run
wrote through a `:rw` mount stays on the host for the runs after it (the snapshot holds the process, not the
host's files).

Budgets, measured (linux/schedule.py's schedules, change points with partners, depth 3): the try-lock of
tests/go/pctlock (a check-then-act two instructions wide, k = 370) fails in 16 of schedules 1..1,500, the first
at 19 and no gap between two failing seeds longer than 297, so `--schedules 400` finds it from any first seed
up to 1,100 (about 10 ms of CPU a schedule); its sync.Mutex twin passes 300 of 300. Every other bug of
bench/bench_schedules.py's corpus fails within its first 7 schedules.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ..core.errors import EmuError
from ..linux import process
from ..goruntime.goprocess import GoProcess
from ..linux.schedule import PctSchedule, hook_steps, step_pcs

#: the calibration run's schedule seed (fixed, so a replay computes the same k)
CALIBRATION_SEED = 0
#: the program's own seed in every run (exec's default --seed)
PROGRAM_SEED = 1
#: --depth's default: most real concurrency bugs have depth 1-3 (PCT, section 2); a check-then-act race between
#: two goroutines that both enter is depth 3 (A checks, B checks and acts, A acts)
DEFAULT_DEPTH = 3


@dataclass
class Run:
    """One schedule's run, summarised as it ended (the Runner's process goes on to the next run: `proc` is that
    process, and describes this run only while it is the last)."""
    seed: int
    schedule: PctSchedule
    why: str | None             # None: passed
    cpu_s: float
    exit_code: int | None
    insns: int
    virtual_ns: int
    stdout: str
    stderr: str
    proc: object = None

    def to_json(self) -> dict:
        return {"seed": self.seed, "ok": self.why is None, "why": self.why, "exit_code": self.exit_code,
                "instructions": self.insns, "virtual_ns": self.virtual_ns, "steps": self.schedule.steps,
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
    if p.exit_code is None and not p.killed_by:
        return f"did not finish: {p.stop_reason or 'no thread could run'}"
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


class Runner:
    """The program booted once; every run starts from that boot's snapshot (snapshot.py: guest memory
    copy-on-write, the kernel's state deep-copied) on the same engine, whose translations stay: a run costs
    its own instructions rather than a fresh engine translating the runtime again (a test binary's run: 0.1 s
    fresh, about a third of it restored). A run that started another process (proctable.py), or whose mappings
    the snapshot cannot put back, boots the program again for the next run. The boot is the same whatever
    the schedule (nothing has run yet), so a run from the snapshot is the run a fresh process would make."""

    def __init__(self, image, opts, pcs: list[int]) -> None:
        self.image, self.opts, self.pcs = image, opts, pcs
        self.boots = 0
        self._boot()

    def _boot(self) -> None:
        from ..linux import snapshot
        self.p = GoProcess(self.image, replace(self.opts, passthrough=None))
        hook_steps(self.p, self.pcs)
        self.snap = snapshot.take(self.p)
        self.used = False
        self.boots += 1

    def run(self, seed: int, depth: int, k: int, ctrl=None, passthrough=None) -> Run:
        """Run the program once under schedule (seed, depth, k); `ctrl(p)` runs it (default p.run())."""
        from ..linux import snapshot
        c0 = time.process_time()
        if self.used:
            if self.p.kernel is not None or not snapshot.restorable(self.p, self.snap):
                self._boot()
            else:
                snapshot.restore(self.p, self.snap)
                self.p.killed_by = 0
        self.used = True
        p = self.p
        p.opts.passthrough = passthrough
        sched = PctSchedule(seed, depth, k)
        sched.attach(p)
        (ctrl or process.Process.run)(p)
        p.opts.passthrough = None
        return Run(seed, sched, failure(p), time.process_time() - c0, p.exit_code, p.insns, p.clock - p.boot_ns,
                   bytes(p.fds.stdout.data).decode(errors="replace"),
                   bytes(p.fds.stderr.data).decode(errors="replace"), p)


def calibrate(runner: Runner, ctrl=None) -> tuple[int, float]:
    """(k, CPU seconds): the steps of schedule 0 at depth 1."""
    r = runner.run(CALIBRATION_SEED, 1, 1, ctrl)
    return r.schedule.steps, r.cpu_s


def explore(image, opts, n: int, depth: int, first_seed: int, package: str | None = None, ctrl=None,
            interrupted=lambda: False) -> Exploration:
    """Schedules first_seed .. first_seed+n-1 at `depth`, stopping at the first failing one."""
    pcs = step_pcs(image, package)
    runner = Runner(image, opts, pcs)
    k, cal = calibrate(runner, ctrl)
    ex = Exploration(depth, k, n, len(pcs), calibration_cpu_s=cal)
    for i in range(n):
        if interrupted():
            break
        r = runner.run(first_seed + i, depth, k, ctrl)
        if interrupted():                # Ctrl-C ended this run early: it neither passed nor failed
            break
        ex.runs.append(r)
        if r.why is not None:
            break
    return ex


def replay(image, opts, seed: int, depth: int, package: str | None = None, ctrl=None) -> tuple[Run, int]:
    """(the run of schedule `seed`, with opts.passthrough's live output, and k)."""
    runner = Runner(image, opts, step_pcs(image, package))
    k, _ = calibrate(runner, ctrl)
    return runner.run(seed, depth, k, ctrl, passthrough=opts.passthrough), k


def where(image_path: str, d) -> str:
    """A decision's place, FUNC+OFF with the source file:line when the binary's line table has it."""
    try:
        b = _binary(image_path)
        f = b.func_for(d.pc)
        if f is not None:
            file, line = b.file_line(f, d.pc)
            if line:
                return f"{d.where} ({file.rsplit('/', 1)[-1]}:{line})"
    except (EmuError, IndexError, ValueError):  # a line is a nicety: the PC and FUNC+OFF are the decision
        pass
    return d.where


_BINARIES: dict = {}


def _binary(path: str):
    from ..front.gobinary import GoBinary
    if path not in _BINARIES:
        _BINARIES[path] = GoBinary.open(path)
    return _BINARIES[path]
