"""What exploring schedules buys (issue #47 item 6): for each schedule-dependent bug of the verdict corpus
(bench/verdicts/corpus.py's "schedule" bugs with a test), tests/go/pctlock's try-lock and tests/data/go/gcnowb's
write-barrier omission (EXTRA_BUGS), the schedules and the CPU seconds `preemu exec ... --schedules N` takes to
its first failing schedule, against the same binary run natively in a loop for the same CPU time (how many
runs fail). Then the correct twins (the corpus's concurrent correct programs, the try-lock under sync.Mutex,
the move with its write barriers), which no schedule may fail.

  .venv/bin/python bench/bench_schedules.py [--schedules N] [--depth D] [--docs]

Prints two Markdown tables; --docs also writes them between the bench-schedules markers of
docs/how-to/schedules.md (DOC), where the docs show them.
Measured on 3a7c6f5 (2 cores shared with other jobs: native figures move with the load, the emulated ones
never) with `--schedules 200`: the table in docs/how-to/schedules.md. Every correct twin passed its 50 schedules: mutexcount.add, concur.workerPool, onceInit, atomics, cancelled,
rwStore, pipeline, wakeup, pctlock under sync.Mutex, gcnowb.moveWB (stresswb 5). How each bug was confirmed
natively: bench/verdicts/corpus.py (its `native`), EXTRA_BUGS' comments, tests/test_schedules.py (pctlock) and
tests/test_schedule_corpus.py (the lost wakeup, the write-barrier omission). The native column is a loop of the
test binary (or program) with its default size; the rare bugs show natively only at larger sizes (TestWakeup
with ROUNDS=20000: 3 of 20 runs; gcnowb `stress 1000`: 16 and 33 of 100).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "how-to" / "schedules.md"
MARKERS = ("<!-- bench-schedules -->", "<!-- /bench-schedules -->")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench/verdicts"))

import corpus  # noqa: E402
from emu import cli  # noqa: E402
from emu.front import gobuild  # noqa: E402


@dataclass(frozen=True)
class Case:
    """A program run by `preemu exec`: a package's test, or a program with args; env for both."""
    src: str
    name: str
    test: str | None = None
    args: tuple = ()
    env: tuple = ()                # KEY=VALUE


#: bugs that are not the verdict corpus's sweep entries: they need exec's options (args, an environment)
EXTRA_BUGS = [
    # a lost wakeup: natively TestWakeup (the waiter still asleep 100 ms after its post) fails 1 of 1,000 runs of
    # 10 rounds, and 3 of 20 runs with ROUNDS=20000. Not in the sweep corpus: a sweep of awaitPost (default mode,
    # 150 points) says OK, its one turn order never splits the check from the wait
    Case("bench/verdicts/bugs", "bugs.awaitPost", test="TestWakeup"),
    Case("tests/go/pctlock/lock", "pctlock.tryLock", test="TestRacyLock"),
    # the runtime confirms the omission itself: gccheckmark re-marks the heap after each cycle (natively
    # `prog stress 1000` with GODEBUG=gccheckmark=1: 16 and 33 of 100 runs fatal; stresswb 0 of 100). 5 rounds:
    # the uninterrupted `preemu exec` passes (at 20 it fails without a schedule)
    Case("tests/data/go/gcnowb", "gcnowb.moveNoWB (write barrier omitted)", args=("stress", "5"),
         env=("GODEBUG=gccheckmark=1",)),
]
EXTRA_TWINS = [
    Case("bench/verdicts/concur", "concur.wakeup", test="TestWakeup"),
    Case("tests/go/pctlock/lock", "pctlock (sync.Mutex)", test="TestMutexLock"),
    Case("tests/data/go/gcnowb", "gcnowb.moveWB (write barriers)", args=("stresswb", "5"),
         env=("GODEBUG=gccheckmark=1",)),
]


def explore(c: Case, n: int, depth: int) -> dict:
    out = io.StringIO()
    argv = ["exec", str(ROOT / c.src)] + (["--test", c.test] if c.test else [])
    for kv in c.env:
        argv += ["--env", kv]
    argv += ["--schedules", str(n), "--depth", str(depth), "--json"]
    if c.args:
        argv += ["--", *c.args]
    with contextlib.redirect_stderr(io.StringIO()):
        cli.main(argv, out)
    j = json.loads(out.getvalue())
    s = j["schedules"]
    return {"ran": s["ran"], "failed": not s["passed"], "cpu": s["cpu_s"] + s.get("calibration_cpu_s", 0.0),
            "seed": (j.get("failing") or {}).get("seed")}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def native(c: Case, cpu_budget: float) -> tuple[int, int]:
    """(failing runs, runs) of the binary run natively until it has used cpu_budget seconds of CPU."""
    binary = gobuild.build(str(ROOT / c.src), test=bool(c.test)).binary
    argv = [str(binary), f"-test.run=^{c.test}$", "-test.count=1"] if c.test else [str(binary), *c.args]
    env = {**os.environ, **dict(kv.split("=", 1) for kv in c.env)}
    start, runs, fails = children_cpu(), 0, 0
    while children_cpu() - start < cpu_budget or runs == 0:
        p = subprocess.run(argv, cwd=ROOT / c.src, capture_output=True, timeout=60, env=env)
        runs += 1
        fails += p.returncode != 0
    return fails, runs


def _what(c: Case) -> str:
    return c.test or " ".join((*c.env, *c.args))


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

    bugs = [Case(e.src, e.name, test=e.test) for e in corpus.BUGS if e.bug == "schedule" and e.test] + EXTRA_BUGS
    twins = [Case(e.src, e.name, test=e.test) for e in corpus.CORRECT if e.test] + EXTRA_TWINS
    emit(f"| bug | first failing schedule (of {a.schedules}, depth {a.depth}) | preemu CPU s | native runs failing "
         "in the same CPU |")
    emit("|---|---|---|---|")
    for c in bugs:
        r = explore(c, a.schedules, a.depth)
        fails, runs = native(c, max(r["cpu"], 0.5))
        first = f"{r['ran']} (seed {r['seed']})" if r["failed"] else f"none in {r['ran']}"
        emit(f"| {c.name} ({_what(c)}) | {first} | {r['cpu']:.2f} | {fails} of {runs} |")
    emit(f"\n| correct twin | schedules passed (of {a.schedules // 4}) |\n|---|---|")
    for c in twins:
        r = explore(c, a.schedules // 4, a.depth)
        emit(f"| {c.name} ({_what(c)}) | {'FAILED at seed ' + str(r['seed']) if r['failed'] else str(r['ran']) + ' all'} |")
    if a.docs:
        text = DOC.read_text()
        begin, end = MARKERS
        DOC.write_text(text[:text.index(begin) + len(begin)] + "\n" + "\n".join(lines) + "\n" + text[text.index(end):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
