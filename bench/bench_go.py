"""Benchmark (not a test): a real Go program from source to a verified sweep, cold and warm.

Issue #9's targets: a first, cold build and sweep of one small program under 30 s, a second under
3 s. "Cold" uses an empty preemu cache (the Go toolchain then compiles the runtime and standard
library once into it); "warm" is the same command again. Each runs as a separate `preemu` process,
as a user would; CPU time (user + sys of the child) is reported beside wall time, since the wall
time depends on what else the machine runs. Run: `.venv/bin/python bench/bench_go.py`.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREEMU = Path(sys.executable).with_name("preemu")
CMD = [str(PREEMU), "sweep", "tests/go/corpus", "--func", "honestList", "--reg", "RAX=10"]


def run(env) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(CMD, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PREEMU_CACHE=cache)
        print(f"go program: {' '.join(CMD[1:])}")
        for label, target in (("cold (empty cache)", 30.0), ("warm (cached build)", 3.0)):
            wall, cpu = run(env)
            print(f"  {label:<20} wall {wall:6.2f} s   cpu {cpu:6.2f} s   (target < {target:.0f} s)")


if __name__ == "__main__":
    main()
