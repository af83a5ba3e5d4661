"""Benchmark (not a test): verified injection points per second, and deterministic run throughput
against raw Unicorn on the same loop. Run with `make bench` or `.venv/bin/python bench/bench_sweep.py`.

Targets (issue #2): >= 5,000 verified points/s on one core; deterministic run throughput >= 0.8x
Unicorn's own count= throughput.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import unicorn
import unicorn.x86_const as X

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import loader, memmap, sweep  # noqa: E402

ASM = ROOT / "asm" / "sum_loop.s"


def best_of(n, fn):
    best = None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    return best, out


def bench_sweep(layout: str, iterations: int) -> None:
    prog = loader.load_program(ASM)
    world = loader.build_world(prog, "sum_loop", layout, None, 1, {"RCX": iterations})
    res = sweep.sweep(world, "sum_loop", 1, 10**9)
    assert res.ok and res.injected == res.boundaries
    print(f"  sweep {layout}: {res.points:,} points verified in {res.elapsed:.2f} s "
          f"= {res.points_per_second:,.0f} verified points/s")


def raw_unicorn(prog, iterations: int, n_insns: int):
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(memmap.TEXT_BASE, memmap.TEXT_SIZE)
    for a, code in prog.code:
        uc.mem_write(a, code)
    f = prog.get_func("sum_loop")
    ret = f.insns[-1].addr

    def with_count():
        uc.reg_write(X.UC_X86_REG_RCX, iterations)
        uc.emu_start(f.start, 0, count=n_insns - 1)      # everything up to the RET
        assert uc.reg_read(X.UC_X86_REG_RIP) == ret

    def without_count():
        uc.reg_write(X.UC_X86_REG_RCX, iterations)
        uc.emu_start(f.start, ret)
        assert uc.reg_read(X.UC_X86_REG_RIP) == ret
    return with_count, without_count


def bench_throughput(iterations: int) -> None:
    prog = loader.load_program(ASM)
    world = loader.build_world(prog, "sum_loop", "go1.14", None, 1, {"RCX": iterations}, stub_ret_hooks=False)
    t_ref, ref = best_of(3, lambda: sweep.run_reference(world, budget=10**9))
    n = ref.boundaries
    with_count, without_count = raw_unicorn(prog, iterations, n)
    t_count, _ = best_of(3, with_count)
    t_raw, _ = best_of(3, without_count)
    mips = lambda t: n / t / 1e6  # noqa: E731
    print(f"  loop of {n:,} instructions (sum_loop, RCX={iterations:,})")
    print(f"  raw Unicorn, no count=      {mips(t_raw):8.1f} M insn/s")
    print(f"  raw Unicorn, count=N        {mips(t_count):8.1f} M insn/s")
    print(f"  preemu deterministic run    {mips(t_ref):8.1f} M insn/s  (exact boundary count, goexit sentinel)")
    print(f"  ratio to count=             {t_count / t_ref:8.2f}x   (target >= 0.8x)")
    print(f"  ratio to no count=          {t_raw / t_ref:8.2f}x")


def bench_starvation() -> None:
    """Issue #5: 100 ms of virtual time of scenarios/starvation.toml, and its instructions per second."""
    from emu import layout, sched
    prog = loader.load_program(ROOT / "asm" / "starvation.s")
    stub = loader.load_stub("go1.14")
    specs = [sched.GoSpec("spinner", "spin"), sched.GoSpec("sleeper", "sleeper", {"RCX": 10**6})]
    s = sched.Scheduler(prog, stub, layout.GO114, specs, 1, True, 1.0, 1)
    t0 = time.perf_counter()
    r = s.run(100_000_000)
    dt = time.perf_counter() - t0
    insns = sum(g.cpu_insns for g in r.goroutines)
    f = prog.get_func("spin")
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(memmap.TEXT_BASE, memmap.TEXT_SIZE)
    for a, code in prog.code:
        uc.mem_write(a, code)
    t1 = time.perf_counter()
    uc.emu_start(f.start, 0, count=insns)
    raw = time.perf_counter() - t1
    print(f"  starvation, 100 ms virtual (GOMAXPROCS=1, async on): {dt:.2f} s wall (target < 5 s), "
          f"{insns / dt / 1e6:.1f} M insn/s; raw Unicorn count= on the spin loop {insns / raw / 1e6:.1f} M insn/s "
          f"({raw / dt:.2f}x)")


if __name__ == "__main__":
    print("verified injection points per second (one core):")
    bench_sweep("go1.14", 2000)
    bench_sweep("go1.27", 2000)
    print("deterministic run throughput:")
    bench_throughput(5_000_000)
    print("scheduler:")
    bench_starvation()
