"""Benchmark (not a test): the CPU of one point of the real-program sweep (issue #39 item 1), this checkout
against an older one (default `main`) in the same run.

  .venv/bin/python bench/bench_point.py [--old REV] [--rounds N] [--points N] [--funcs spin,mixed,...]

Each function of tests/data/go/kinds is swept by one chain over its first --points boundaries (all of them
when it has fewer), in a child process per tree and round; the child's own CPU (time.process_time) of the
chain alone is divided by the points it reached. The program's start, the snapshot and the reference run are
not counted: they are the same work in both trees and are measured by bench_startup.py and
bench_realsweep.py. The trees take turns, `--rounds` times (default 3); the best of each is printed with the
ratio new/old. Both trees must reach the same points with the same verdicts (injected, declined and the
oracle's reasons, per PC) and the same violations: a speed-up may change nothing a user sees.

The functions: `spin` (a call-free loop, entered with RAX=1000: every point injected), `mixed` (fmt,
interfaces and allocation: most points declined), `digest` (sha256 and hex) and `spawn` (a goroutine and
a channel), of tests/data/go/kinds, and the library-heavy `ledger` of tests/data/go/ledger (maps, fmt, errors,
a channel, sha256; bench_eachpc.py's function, here with its default argument).

An old tree that has the compiled module's sources (emu/engine/_native*.c) gets it built by its own setup.py
(bench_startup.old_tree), so that both trees run as installed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_startup import old_tree, tree_env  # noqa: E402

WHOLE = r"""
import json, os, sys, time
import emu
func = sys.argv[1]
c = time.process_time()
t0 = os.times()
r = emu.sweep(sys.argv[3], func)
t1 = os.times()
cpu = (t1.user - t0.user) + (t1.system - t0.system)
res = r.result
print(json.dumps({"us": cpu / max(1, res.points) * 1e6, "reached": res.points,
                  "stats": sorted((pc, sorted(c.items())) for pc, c in res.per_pc.items()),
                  "violations": sorted(f"{v.kind}@{v.boundary}" for v in r.violations), "exit": r.ok}))
"""

CHILD = r"""
import json, sys, time
from collections import Counter
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.drive import gsweep
func, most = sys.argv[1], int(sys.argv[2])
res = gobuild.build(sys.argv[3])
img = elfimage.load(str(res.binary))
regs = {"RAX": 1000} if func == "spin" else None
sw = gsweep.RealSweep(img, process.Options(argv=["prog"]), func, regs=regs, source_path=res.source_path)
n = min(sw.reference(10**9).boundaries, most)
stats = {}
c = time.process_time()
listener, reached, ending = sw.chain(list(range(n)), stats)
cpu = time.process_time() - c
print(json.dumps({"us": cpu / max(1, reached) * 1e6, "reached": reached,
                  "stats": sorted((pc, sorted(c.items())) for pc, c in stats.items()),
                  "violations": sorted(f"{v.kind}@{v.boundary}" for v in listener.violations),
                  "exit": ending.exit_code}))
"""


#: the package each function is in (default: tests/data/go/kinds)
PACKAGES = {"ledger": "tests/data/go/ledger"}


def run(py: str, tree: Path, func: str, points: int, cwd: Path, whole: bool = False) -> dict:
    package = str(ROOT / PACKAGES.get(func, "tests/data/go/kinds"))
    r = subprocess.run([py, "-c", WHOLE if whole else CHILD, func, str(points), package],
                       env=tree_env(tree), cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{tree}: {func}: exit status {r.returncode}\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="main", help="the git revision to compare with (default: main)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--points", type=int, default=4000, help="boundaries swept per function (default 4000)")
    ap.add_argument("--funcs", default="spin,mixed,digest,spawn,ledger")
    ap.add_argument("--whole", action="store_true",
                    help="whole sweeps instead (emu.sweep of each function: every boundary, start-up, references "
                         "and to-exit runs included, user + system CPU of the child per point)")
    a = ap.parse_args()
    py = sys.executable
    funcs = a.funcs.split(",")
    with tempfile.TemporaryDirectory(prefix="preemu-old-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        (Path(tmp) / "old").mkdir()
        trees = {"old": old_tree(a.old, Path(tmp) / "old"), "new": ROOT}
        for tree in trees.values():
            subprocess.run([py, "-m", "compileall", "-q", str(tree / "emu")], check=True)
        best: dict[tuple[str, str], float] = {}
        seen: dict[tuple[str, str], dict] = {}
        for _ in range(a.rounds):
            for f in funcs:
                for name, tree in trees.items():
                    got = run(py, tree, f, a.points, run_dir, a.whole)
                    best[name, f] = min(best.get((name, f), got["us"]), got["us"])
                    seen[name, f] = got
    what = "a whole sweep (all boundaries, everything included)" if a.whole else \
        f"one chain (first {a.points:,} boundaries)"
    print(f"CPU per point of {what}, tests/data/go/kinds (ledger: tests/data/go/ledger), best of {a.rounds} "
          f"rounds, old = {a.old}:")
    same = True
    for f in funcs:
        o, n = seen["old", f], seen["new", f]
        agree = all(o[k] == n[k] for k in ("reached", "stats", "violations", "exit"))
        same &= agree
        print(f"  main.{f:8s} {o['reached']:>6,} points   old {best['old', f]:6.0f} us   new {best['new', f]:6.0f} us"
              f"   new/old {best['new', f] / best['old', f]:.2f}   verdicts {'the same' if agree else 'DIFFER'}")
    print("every verdict the same" if same else "VERDICTS DIFFER")


if __name__ == "__main__":
    main()
