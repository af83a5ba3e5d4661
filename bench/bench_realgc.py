"""Speed of `preemu sweep --gc` on Go input: the runtime's own GC cycle at every injection (issue #20 item 4).

  .venv/bin/python bench/bench_realgc.py [--points N]

Prints (CPU time):
- the CPU per point of a chain where every point injects and runs a full cycle: main.spin of
  tests/data/go/gcreal entered with --reg RAX=200 (a call-free loop; the program's heap holds a few dozen
  objects), and the instructions each cycle costs;
- where those instructions go, by the runtime function they run in, grouped as mark, sweep, scheduler
  and the rest (a block hook counts one cycle: slow, so it is measured apart);
- the wall time of a whole 1,000-point `preemu sweep --gc --jobs 2` (a --gc sweep is one chain: --jobs
  does not split it).
- --gc=concurrent (issue #36): the same program's main.spin entered with a long loop, a chain over every
  1,000th boundary: CPU per point and per cycle (a cycle is made due at each point where none runs; G's
  stack is scanned at that point through preemptPark, and G runs on during mark, so later points fall in the
  cycle and get preemptone's request), and the ratio of its CPU per cycle to --gc=scan's per point.
- whole `--max-points 500` sweeps of churn and hidden in both modes (both kinds of point: injections and the
  call sites' chain, references and to-exit runs included): CPU per point tried, and the concurrent mode's
  against the scan mode's.
Targets: <= 5 ms CPU per point on a small heap; the 1,000-point sweep under 4 minutes; a concurrent point
<= 3x a scan point.
"""
from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobuild  # noqa: E402
from emu.linux import elfimage, process
from emu.goruntime import realgc
from emu.drive import gsweep  # noqa: E402

GROUPS = {
    "mark": ("scan", "mark", "grey", "findObject", "gcDrain", "gcw", "wbBuf", "typePointers", "spanSet",
             "tryDeferToSpanScan", "heapBits", "spanOfHeap", "gcFlushBgCredit", "buildGCMask", "gcMark",
             "moveInlineMarks", "getempty", "putfull", "trygetfull", "handoff", "pageIndexOf"),
    "sweep": ("sweep", "Sweep", "releaseAll", "freeSomeWbufs", "prepareFreeWorkbufs", "freeDeadSpanSPMCs",
              "nextSpanForSweep", "mProf_", "uncacheSpan", "freeSpan", "refillAllocCache", "nextFreeIndex"),
    "scheduler": ("schedule", "findRunnable", "futex", "stopm", "startm", "sysmon", "TheWorld", "gcstopm",
                  "notes", "notetsleep", "notewakeup", "mPark", "lock", "unlock", "execute", "gogo", "mcall",
                  "runqget", "globrunq", "injectglist", "wakep", "park_m", "goschedImpl", "casgstatus",
                  "usleep", "nanotime", "semacquire", "semrelease", "forEachP", "preempt", "retake", "osyield"),
}


def build(points: int, mode: str = "scan"):
    res = gobuild.build(ROOT / "tests/data/go/gcreal")
    img = elfimage.load(str(res.binary))
    env = [f"GODEBUG={realgc.GODEBUG}"] if mode == "scan" else []
    sw = gsweep.RealSweep(img, process.Options(argv=["prog"], env=env), "spin",
                          regs={"RAX": points}, gc=mode, source_path=res.source_path)
    sw.reference(10**9)
    return sw


def concurrent(points: int, step: int = 1000) -> tuple[float, float, int, int]:
    """(ms CPU per point, ms CPU per cycle, cycles, scans at a point) of a --gc=concurrent chain over every
    step-th boundary of main.spin."""
    sw = build(points * step // 15 + 1000, "concurrent")          # spin: about 15 instructions an iteration
    c0 = time.process_time()
    listener, reached, _ = sw.chain(range(0, points * step, step), {})
    cpu = time.process_time() - c0
    assert not listener.violations and reached == points, (listener.violations[:2], reached)
    g = sw.gc
    scans = sum(1 for sc in g.scans if sc.path == "preemptPark")
    return cpu / points * 1e3, cpu / max(1, g.cycles) * 1e3, g.cycles, scans


def per_point(sw, points: int) -> tuple[float, float, int]:
    c0, i0 = time.process_time(), sw.p.insns
    listener, reached, _ = sw.chain(range(0, points), {})
    cpu = time.process_time() - c0
    assert not listener.violations and sw.gc.cycles == reached == points
    return cpu / points * 1e3, (sw.p.insns - i0) / points, sw.gc.cycles


def where(sw) -> collections.Counter:
    """Instructions of one cycle by group (a Python block hook: counts only)."""
    import capstone
    from unicorn import UC_HOOK_BLOCK
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    sizes: dict = {}
    by_func: collections.Counter = collections.Counter()

    def blk(uc, addr, size, _):
        n = sizes.get((addr, size))
        if n is None:
            n = sizes[(addr, size)] = sum(1 for _ in md.disasm_lite(bytes(uc.mem_read(addr, size)), addr))
        f = sw.image.func_at(addr)
        by_func[f[0] if f else "(vdso / outside symbols)"] += n
    from emu.linux import snapshot
    if not snapshot.restorable(sw.p, sw.snap):
        sw._boot()                         # as the chain would: the hook must be on the process that runs
    h = sw.p.uc.hook_add(UC_HOOK_BLOCK, blk)
    sw.p.uc.ctl_flush_tb()                 # blocks translated before the hook would not call it
    sw.chain(range(0, 1), {})
    sw.p.uc.hook_del(h)
    groups: collections.Counter = collections.Counter()
    for name, n in by_func.items():
        g = next((g for g, keys in GROUPS.items() if any(k in name for k in keys)), "other")
        groups[g] += n
    return groups, by_func


def modes(max_points: int) -> dict:
    """Issue #36 item 6: whole sweeps of the same functions in both modes, both kinds of point (`preemu sweep --gc`
    as a user runs it: references, chains, to-exit runs): {(func, mode): (CPU s, points tried, cycles by kind)}."""
    import emu
    out = {}
    for func, args in (("churn", ["200"]), ("hidden", [])):
        for mode in ("scan", "concurrent"):
            c0 = time.process_time()
            rep = emu.sweep(str(ROOT / "tests/data/go/gcreal"), func, gc=mode, max_points=max_points, args=args)
            out[(func, mode)] = (time.process_time() - c0, rep.result.points, rep.result.gc["cycles_by_kind"])
    return out


def sweep_wall(points: int) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "emu", "sweep", "tests/data/go/gcreal", "--func", "churn", "--gc",
                        "--max-points", str(points), "--jobs", "2", "--", "200"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=200, help="points of the chain (each runs a cycle)")
    a = ap.parse_args()
    sw = build(a.points)
    ms, insns, cycles = per_point(sw, a.points)
    print(f"--gc chain, call-free loop: {a.points} points, {cycles} cycles, {ms:.1f} ms CPU per point, "
          f"{insns:,.0f} instructions per point (target <= 5 ms)")
    groups, by_func = where(sw)
    total = sum(groups.values())
    print("one cycle's instructions: " + ", ".join(f"{g} {n * 100 / total:.0f}%" for g, n in groups.most_common())
          + f" of {total:,}")
    print("  top functions: " + ", ".join(f"{f} {n * 100 / total:.0f}%" for f, n in by_func.most_common(6)))
    cms, ccy, ccycles, cscans = concurrent(a.points * 3)
    print(f"--gc=concurrent chain, every 1,000th boundary of the same loop: {a.points * 3} points, {ccycles} cycles "
          f"({cscans} scans of G through preemptPark at a point), {cms:.2f} ms CPU per point, {ccy:.1f} ms CPU per "
          f"cycle = {ccy / ms:.2f}x a --gc=scan point (target <= 3x)")
    print(f"1,000-point `preemu sweep --gc --jobs 2` (churn): {sweep_wall(1000):.1f} s wall (target < 240 s)")
    m = modes(500)
    for func in ("churn", "hidden"):
        (sc, sp, sk), (cc, cp, ck) = m[(func, "scan")], m[(func, "concurrent")]
        print(f"whole --max-points 500 sweep of {func}: --gc=scan {sc:.1f} s CPU, {sp:,} points, cycles {sk}, "
              f"{sc / sp * 1e3:.1f} ms a point; --gc (concurrent) {cc:.1f} s CPU, {cp:,} points, cycles {ck}, "
              f"{cc / cp * 1e3:.1f} ms a point = {cc / cp / (sc / sp):.2f}x scan's (target <= 3x)")


if __name__ == "__main__":
    main()
