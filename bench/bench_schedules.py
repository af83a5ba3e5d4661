"""What exploring schedules buys (issue #47 item 6): for each schedule-dependent bug of the verdict corpus
(bench/verdicts/corpus.py's "schedule" bugs with a test, and tests/go/pctlock's try-lock), the schedules and the
CPU seconds `preemu exec --test NAME --schedules N` takes to its first failing schedule, against the package's
test binary run natively in a loop for the same CPU time (how many runs fail). Then the correct twins (the
corpus's concurrent correct programs and the try-lock under sync.Mutex), which no schedule may fail.

  .venv/bin/python bench/bench_schedules.py [--schedules N] [--depth D] [--docs]

Prints two Markdown tables; --docs also writes them between the bench-schedules markers of
docs/how-to/schedules.md (DOC), where the docs show them.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the page whose tables --docs rewrites, between these markers (tests/test_docs.py checks they are there)
DOC = ROOT / "docs" / "how-to" / "schedules.md"
MARKERS = ("<!-- bench-schedules -->", "<!-- /bench-schedules -->")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench/verdicts"))

import corpus  # noqa: E402
from emu import cli  # noqa: E402
from emu.front import gobuild  # noqa: E402


def explore(src: str, test: str, n: int, depth: int) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):
        cli.main(["exec", str(ROOT / src), "--test", test, "--schedules", str(n), "--depth", str(depth), "--json"], out)
    j = json.loads(out.getvalue())
    s = j["schedules"]
    return {"ran": s["ran"], "failed": not s["passed"], "cpu": s["cpu_s"] + s.get("calibration_cpu_s", 0.0),
            "seed": (j.get("failing") or {}).get("seed")}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def native(src: str, test: str, cpu_budget: float) -> tuple[int, int]:
    """(failing runs, runs) of the test binary run natively until it has used cpu_budget seconds of CPU."""
    binary = gobuild.build(str(ROOT / src), test=True).binary
    start, runs, fails = children_cpu(), 0, 0
    while children_cpu() - start < cpu_budget or runs == 0:
        p = subprocess.run([str(binary), f"-test.run=^{test}$", "-test.count=1"], cwd=ROOT / src, capture_output=True,
                           timeout=60)
        runs += 1
        fails += p.returncode != 0
    return fails, runs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedules", type=int, default=400)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--docs", action="store_true", help="write the tables into docs/how-to/schedules.md")
    a = ap.parse_args()
    lines: list[str] = []

    def emit(text: str) -> None:
        print(text, flush=True)
        lines.extend(text.split("\n"))

    bugs = [(e.src, e.test, e.name) for e in corpus.BUGS if e.bug == "schedule" and e.test]
    bugs.append(("tests/go/pctlock/lock", "TestRacyLock", "pctlock.tryLock"))
    twins = [(e.src, e.test, e.name) for e in corpus.CORRECT if e.test]
    twins.append(("tests/go/pctlock/lock", "TestMutexLock", "pctlock (sync.Mutex)"))
    emit(f"| bug | first failing schedule (of {a.schedules}, depth {a.depth}) | preemu CPU s | native runs failing "
         "in the same CPU |")
    emit("|---|---|---|---|")
    for src, test, name in bugs:
        t0 = time.process_time()
        r = explore(src, test, a.schedules, a.depth)
        fails, runs = native(src, test, max(r["cpu"], 0.5))
        first = f"{r['ran']} (seed {r['seed']})" if r["failed"] else f"none in {r['ran']}"
        emit(f"| {name} ({test}) | {first} | {r['cpu']:.2f} | {fails} of {runs} |")
    emit(f"\n| correct twin | schedules passed (of {a.schedules}) |\n|---|---|")
    for src, test, name in twins:
        r = explore(src, test, a.schedules // 4, a.depth)
        emit(f"| {name} ({test}) | {'FAILED at seed ' + str(r['seed']) if r['failed'] else str(r['ran']) + ' all'} |")
    if a.docs:
        text = DOC.read_text()
        begin, end = MARKERS
        DOC.write_text(text[:text.index(begin) + len(begin)] + "\n" + "\n".join(lines) + "\n" + text[text.index(end):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
