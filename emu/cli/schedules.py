"""`--schedules N` / `--schedule SEED` of `exec` and `sweep`: the schedules' text and JSON, the command that
replays one, and exec's calibrate-explore-replay run.
"""
from __future__ import annotations

import json
import sys

from .. import __version__
from .common import _fit, _run_with_progress_and_ctrl_c


def _schedule_json(run, k: int, binary: str) -> dict:
    from ..drive import schedules
    j = run.schedule.summary()
    for d, dj in zip(run.schedule.decisions, j["decisions"]):
        dj["where"] = schedules.where(binary, d)
    j["k"], j["failed"], j["why"] = k, run.why is not None, run.why
    return j


def _schedule_text(run, k: int, binary: str, limit: int = 20) -> str:
    """The schedule's decisions (change points, fairness demotions), at most `limit` of them."""
    from ..drive import schedules
    s = run.schedule
    ds = s.decisions
    text = (f"schedule {s.seed} (depth {s.depth}, change points at steps "
            f"{', '.join(map(str, sorted(s.change))) or 'none'} of k = {k}): {s.steps} steps ran, "
            f"{len(ds)} decision(s){':' if ds else ''}\n")
    for d in ds[:limit]:
        d.where = schedules.where(binary, d)
        text += f"  {d.line()}\n"
    if len(ds) > limit:
        text += f"  ... {len(ds) - limit} more (--json lists them all)\n"
    return text


def _replay_command(a, seed: int, depth: int, drop=("--schedules", "--seed", "--depth"), default=None) -> str:
    """The command line that replays schedule `seed`: this one without --schedules/--seed/--depth/--json
    (`drop`: the options to leave out; a sweep keeps its --seed, which is not the schedule's)."""
    import shlex
    argv = list(getattr(a, "raw_argv", None) or default or ["exec", a.target])
    out, i = [], 0
    while i < len(argv):
        x = argv[i]
        name = x.split("=", 1)[0]
        if name in drop:
            i += 1 if "=" in x else 2
            continue
        if x != "--json":
            out.append(x)
        i += 1
    out += ["--schedule", str(seed), "--depth", str(depth)]
    rest = getattr(a, "raw_rest", None)
    if rest is not None:
        out += ["--", *rest]
    return "preemu " + shlex.join(out)


def _exec_schedules(a, out, image, opts, package) -> int:
    """`exec --schedules N`: explore (drive/schedules.py); exit 0 when all pass, 1 at the first failing one."""
    import time
    from ..drive import schedules
    c0 = time.process_time()
    last = []

    def ctrl(p) -> None:
        last[:] = [p]
        _run_with_progress_and_ctrl_c(p, a)

    ex = schedules.explore(image, opts, a.schedules, a.depth, a.seed, package, ctrl,
                           interrupted=lambda: bool(last) and last[0].interrupted)
    cpu = time.process_time() - c0
    if last and last[0].interrupted:
        print(f"preemu: interrupted (Ctrl-C) after {len(ex.runs)} of {a.schedules} schedules", file=sys.stderr)
        return 130
    bad = ex.failing
    seeds = f"seeds {a.seed}..{a.seed + a.schedules - 1}" if a.schedules > 1 else f"seed {a.seed}"
    ran = f"{len(ex.runs)}" if len(ex.runs) == a.schedules else f"{len(ex.runs)} of {a.schedules}"
    head = (f"{ran} schedule{'s' if a.schedules > 1 else ''} of depth {a.depth} ran ({seeds}; k = {ex.k} steps at "
            f"{ex.pcs} step PCs; {cpu:.2f} s CPU)")
    replay = _replay_command(a, bad.seed, a.depth) if bad else None
    if a.json:
        from .. import __version__
        from ..output.report import SCHEMAS
        j = {"tool": "preemu", "version": __version__, "schema": SCHEMAS["exec-schedules"], "command": "exec",
             "binary": a.target, "argv": opts.argv,
             "schedules": {"requested": a.schedules, "ran": len(ex.runs), "depth": a.depth, "first_seed": a.seed,
                           "k": ex.k, "step_pcs": ex.pcs, "cpu_s": round(cpu, 3),
                           "calibration_cpu_s": round(ex.calibration_cpu_s, 3),
                           "passed": bad is None, "runs": [r.to_json() for r in ex.runs]},
             "failing": None, "ok": bad is None}
        if bad is not None:
            j["failing"] = {**bad.to_json(), "depth": a.depth, "replay": replay,
                            "schedule": _schedule_json(bad, ex.k, image.path), "stdout": bad.stdout,
                            "stderr": bad.stderr}
        json.dump(j, out, indent=1)
        out.write("\n")
        return 0 if bad is None else 1
    if bad is None:
        print(f"preemu: {head}: all passed", file=sys.stderr)
        return 0
    out.write(bad.stdout)
    out.flush()
    sys.stderr.write(bad.stderr)
    lines = [f"{head}: schedule {bad.seed} FAILED ({len(ex.runs) - 1} passed before it): {bad.why}",
             f"this run: {bad.insns:,} instructions, {bad.virtual_ns / 1e6:.3f} ms virtual",
             *_schedule_text(bad, ex.k, image.path).splitlines(),
             f"replay: {replay}"]
    for line in _fit([f"preemu: {line}" for line in lines]):
        print(line, file=sys.stderr)
    return 1
