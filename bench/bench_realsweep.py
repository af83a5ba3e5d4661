"""Speed of the real-program sweep (issue #19 item 8), CPU time, with the .s sweep measured in the same run.

  .venv/bin/python bench/bench_realsweep.py [--boundaries N]

Prints the CPU per verified point of the chained run alone (best of --repeat runs: this machine's
timings vary by 20 % from run to run) (a call-free loop in F: main.spin of
tests/data/go/kinds, entered with --reg RAX), the whole sweep's CPU (program start, reference run,
to-exit runs included) for that F, and the .s sweep's CPU per point on sum_loop, and their ratio.
Targets: <= 300 us per point on the loop, <= 60 s for a 40k-boundary F on one core.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobuild
from emu.drive import loader  # noqa: E402
from emu.drive import sweeper as S  # noqa: E402
from emu.linux import elfimage, process
from emu.drive import gsweep  # noqa: E402


def real(n_iter: int, repeat: int) -> tuple[float, float, int]:
    res = gobuild.build(ROOT / "tests/data/go/kinds")
    img = elfimage.load(str(res.binary))
    c0 = time.process_time()
    sw = gsweep.RealSweep(img, process.Options(argv=["prog"]), "spin", regs={"RAX": n_iter},
                          source_path=res.source_path)
    n = sw.reference(10**9).boundaries
    best = None
    for i in range(repeat):                     # each chain starts from the snapshot: the same run again
        c1 = time.process_time()
        listener, reached, _ = sw.chain(list(range(n)), {})
        chain = time.process_time() - c1
        assert reached == n and not listener.violations
        best = chain if best is None else min(best, chain)
        if i == 0:
            total = time.process_time() - c0
    return best / n * 1e6, total, n


def asm(points: int = 20_000) -> float:
    prog = loader.load_program(ROOT / "asm/sum_loop.s")
    world = loader.build_world(prog, "sum_loop", "go1.14", None, 1, {"RCX": points // 9})
    c0 = time.process_time()
    r = S.sweep(world, "sum_loop", max_points=points)
    return (time.process_time() - c0) / r.points * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boundaries", type=int, default=40_000, help="about this many boundaries of F")
    ap.add_argument("--repeat", type=int, default=3, help="chain runs; the best one's CPU per point is printed")
    a = ap.parse_args()
    per, total, n = real(max(1, (a.boundaries - 7) // 10), a.repeat)
    s = asm()
    print(f"real-program sweep, call-free loop: {n:,} boundaries, chain {per:,.0f} us/point (best of {a.repeat}), "
          f"whole sweep {total:.1f} s CPU (target <= 300 us/point, <= 60 s for 40k boundaries)")
    print(f".s sweep (sum_loop, go1.14): {s:.1f} us/point; ratio {per / s:.0f}x")


if __name__ == "__main__":
    main()
