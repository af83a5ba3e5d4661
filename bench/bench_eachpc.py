"""`--each-pc` against the full sweep (issue #39 item 2), CPU time and coverage, old and new in one run.

  .venv/bin/python bench/bench_eachpc.py [--n 27] [--old REV] [--no-old]

Sweeps main.ledger of tests/data/go/ledger (maps, fmt, errors, a channel, sha256; `--n 27`: 98,456 boundaries)
at every boundary, then with --each-pc: this checkout's eachpc.py (a native gate on G's blocks), and, unless
--no-old, eachpc.py as committed at --old (default 1cebc99, the last with a Python hook on every instruction),
loaded from git in its place.
Prints each run's CPU (the sweep's own, RealSweepResult.cpu: reference runs, chains, checks), --each-pc's
CPU as a share of the full sweep's (target <= 15 %), the share of the PCs the full sweep reaches
(result.per_pc) that --each-pc decides, with the functions of those it misses, and what --each-pc promises:
every PC of the uninterrupted run's goroutine (its `reference` PCs) decided; the full sweep's PCs beyond
those (reached only after injections) are counted apart.
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import emu  # noqa: E402
from emu.drive import eachpc  # noqa: E402
from emu.front import gobuild  # noqa: E402
from emu.linux import elfimage  # noqa: E402

LEDGER = ROOT / "tests/data/go/ledger"


def old_eachpc(rev: str):
    """emu/drive/eachpc.py at git revision `rev` as a module of emu.drive (None when git cannot show it)."""
    r = subprocess.run(["git", "show", f"{rev}:emu/drive/eachpc.py"], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    spec = importlib.util.spec_from_loader("emu.drive._eachpc_old", loader=None)
    mod = importlib.util.module_from_spec(spec)
    exec(compile(r.stdout, f"{rev}:emu/drive/eachpc.py", "exec"), mod.__dict__)
    return mod


def reference_pcs(n: int) -> set[int]:
    """The PCs main.ledger's goroutine executes in the uninterrupted run (eachpc.reference_pcs)."""
    from emu.drive.gsweep import RealSweep
    from emu.linux import process
    res = gobuild.build(str(LEDGER))
    sw = RealSweep(elfimage.load(str(res.binary)), process.Options(argv=["prog", str(n)]), "ledger",
                   source_path=res.source_path)
    sw.reference(10**9)
    return eachpc.reference_pcs(sw)


def line(name: str, res, full, image) -> str:
    f, e = set(full.per_pc), set(res.per_pc)
    missed = Counter((image.func_at(pc) or ("?",))[0] for pc in f - e)
    top = ", ".join(f"{fn} {n}" for fn, n in missed.most_common(4))
    ep = res.each_pc or {}
    promise = (f"; the reference run's PCs: {ep['reference_decided']:,}/{ep['reference']:,} decided "
               f"({ep['rounds']} more pass(es)), {ep['beyond']:,} beyond them" if "reference" in ep else "")
    return (f"{name:<14} {res.cpu:7.2f} s CPU = {res.cpu / full.cpu:6.1%} of the full sweep's; {res.points:,} points, "
            f"covers {len(f & e):,}/{len(f):,} = {len(f & e) / len(f):.1%} of its PCs"
            + (f" (missed: {top})" if missed else "") + promise)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=27, help="ledger's argument (27: 98,456 boundaries)")
    ap.add_argument("--old", default="1cebc99", help="the revision whose eachpc.py is run beside this one")
    ap.add_argument("--no-old", action="store_true", help="leave out the older eachpc.py")
    a = ap.parse_args()
    args = [str(a.n)]
    image = elfimage.load(str(gobuild.build(str(LEDGER)).binary))
    full = emu.sweep(str(LEDGER), "ledger", to_exit=0, args=args).result
    print(f"main.ledger {a.n}: {full.boundaries:,} boundaries; full sweep {full.cpu:.2f} s CPU, {len(full.per_pc):,} PCs")
    ref = reference_pcs(a.n)
    beyond = set(full.per_pc) - ref
    print(f"the uninterrupted run's goroutine executes {len(ref):,} PCs; the full sweep reaches {len(beyond):,} beyond "
          f"them (only after injections), and misses {len(ref - set(full.per_pc)):,} of them")
    new = emu.sweep(str(LEDGER), "ledger", to_exit=0, args=args, each_pc=True).result
    print(line("--each-pc new", new, full, image))
    old = None if a.no_old else old_eachpc(a.old)
    if old is not None:
        chain = eachpc.chain
        eachpc.chain = old.chain
        try:
            res = emu.sweep(str(LEDGER), "ledger", to_exit=0, args=args, each_pc=True).result
        finally:
            eachpc.chain = chain
        print(line(f"--each-pc {a.old}", res, full, image))


if __name__ == "__main__":
    main()
