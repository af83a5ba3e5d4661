"""Benchmark (not a test): assembly time against file size, to show it grows linearly.

Run with `make bench` or `.venv/bin/python bench/bench_asm.py [LINES ...]`. Target (issue #13): a
100,000-instruction function (labels, branches, a frame with LEAVE) assembles in a few seconds.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import asmfront
from emu.core import memmap  # noqa: E402


def big_function(insns: int) -> str:
    """One function of about `insns` instructions: a frame, then blocks of labels, compare and branch."""
    out = ["big:", "    push rbp", "    mov rbp, rsp", "    xor eax, eax"]
    i = 0
    while 4 * i + 5 < insns:
        out += [f".l{i}:", "    add rax, 1", "    cmp rax, rcx", f"    jae .l{i}x", "    inc rdx", f".l{i}x:"]
        i += 1
    out += ["    leave", "    ret"]
    return "\n".join(out) + "\n"


def main(sizes: list[int]) -> None:
    print("assembly time (Keystone + Capstone + SP deltas along control flow)")
    for n in sizes:
        text = big_function(n)
        t0 = time.perf_counter()
        prog = asmfront.assemble_text(text, f"<{n} instructions>", memmap.TEXT_BASE)
        dt = time.perf_counter() - t0
        insns = sum(len(f.insns) for f in prog.funcs)
        print(f"  {insns:>7,} instructions  {text.count(chr(10)):>7,} lines  {dt:6.2f} s  "
              f"({insns / dt:,.0f} instructions/s)")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 30_000, 100_000])
