"""Benchmark (not a test): what each --cpu level costs. Run with `.venv/bin/python bench/bench_avx.py`.

Issue #38: at v3/v4 every AVX instruction runs in preemu's vector unit (emu/engine/avx.py: an INT3 site, a
Python call per instruction), the rest at Unicorn's speed; v1 has no vector unit and must cost what it did.
Rows: tests/data/go/avx (large memmove and memclr, bytealg's IndexByte/Count/Equal/Compare/Index on 64 KiB,
FMA: AVX-heavy) built for each level and run at it; bench/go/sort (1M ints: almost no AVX) at v1, v3 and v4.
Reported: instructions, AVX instructions preemu executed, CPU seconds, M instructions per CPU-second, and
the cost per AVX instruction (the CPU time above the v1 row's rate, divided by the AVX instructions).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobuild  # noqa: E402
from emu.linux import elfimage, process  # noqa: E402
from emu.goruntime.goprocess import GoProcess  # noqa: E402


def run(src: Path, build_level: str, cpu: str, args=()) -> tuple:
    image = elfimage.load(str(gobuild.build(src, goamd64=build_level).binary))
    c0 = time.process_time()
    p = GoProcess(image, process.Options(argv=[src.name, *args], cpu=cpu)).run()
    cpu_s = time.process_time() - c0
    assert p.exit_code == 0, p.error
    return p.insns, p.avx.executed if p.avx else 0, cpu_s


def best(*a) -> tuple:
    return min((run(*a) for _ in range(3)), key=lambda r: r[2])


def main() -> None:
    print(f"{'program':34s} {'cpu':4s} {'insns':>10s} {'AVX by preemu':>14s} {'CPU s':>7s} {'M insn/CPU-s':>13s} "
          f"{'us/AVX insn':>12s}")
    for label, src in (("avx (memmove/bytealg, 64 KiB)", ROOT / "tests" / "data" / "go" / "avx"),
                       ("sort 1M ints", ROOT / "bench" / "go" / "sort")):
        base = None
        for level in ("v1", "v3", "v4"):
            insns, avx, cpu_s = best(src, level if "avx" in label else "v1", level)
            rate = insns / cpu_s
            base = base or rate
            per = (cpu_s - insns / base) / avx * 1e6 if avx else 0.0
            print(f"{label:34s} {level:4s} {insns:10,d} {avx:14,d} {cpu_s:7.2f} {rate / 1e6:13.1f} {per:12.1f}")


if __name__ == "__main__":
    main()
