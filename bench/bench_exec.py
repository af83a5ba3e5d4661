"""Benchmark (not a test): `preemu exec` on real Go programs. Run with `.venv/bin/python bench/bench_exec.py`.

Targets (issue #14): hello world to exit 0 in < 10 s wall; exact instruction counting at tens of
millions of instructions per second (the spinner under GODEBUG=asyncpreemptoff=1 is almost all
straight-line Go code). CPU seconds are reported next to wall seconds: the machine is shared.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import gobuild  # noqa: E402
from emu.linux import elfimage, process  # noqa: E402

GO = ROOT / "scenarios" / "go"


def run(prog: str, **kw):
    image = elfimage.load(str(gobuild.build(GO / prog).binary))
    w0, c0 = time.perf_counter(), time.process_time()
    p = process.Process(image, process.Options(argv=[prog], **kw)).run()
    return p, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    for label, prog, kw in [("hello world", "hello", {}),
                            ("starvation (async preemption on)", "starve", {}),
                            ("starvation, asyncpreemptoff=1, 200 ms", "starve",
                             {"env": ["GODEBUG=asyncpreemptoff=1"], "max_virtual_ms": 200}),
                            ("GC during spin", "gcspin", {})]:
        p, wall, cpu = run(prog, **kw)
        status = "starved" if p.starved else f"exit {p.exit_code}"
        print(f"{label:40s} {status:8s} {p.insns / 1e6:8.2f} M insns  {wall:6.2f} s wall  {cpu:6.2f} s CPU  "
              f"{p.insns / cpu / 1e6:6.1f} M insn/CPU-s  ({p.insns / (p.wall_s or 1) / 1e6:.1f} M/s in the run loop)")


if __name__ == "__main__":
    main()
