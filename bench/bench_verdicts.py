"""False failures on correct library code (issue #35): every function of bench/data/libcorpus swept in its
real program, each verdict against a native run of the same binary.

  .venv/bin/python bench/bench_verdicts.py [--max-points N] [--one-reference]

For each function: the sweep's verdict (every function is correct code, so any FAIL is a false failure),
whether the reference run's output equals the native run's, what was found nondeterministic, and the CPU.
--one-reference compares against the primary reference alone (the rule before references.py), to show what
the extra references take away. Printed as a table, and a line of totals.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import cli  # noqa: E402
from emu.drive import references  # noqa: E402
from emu.front import gobuild  # noqa: E402

CORPUS = ROOT / "bench/data/libcorpus"


def functions() -> list[str]:
    src = (CORPUS / "main.go").read_text()
    return re.findall(r"//go:noinline\nfunc (\w+)\(", src)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-points", type=int, default=400)
    ap.add_argument("--one-reference", action="store_true")
    ap.add_argument("funcs", nargs="*")
    a = ap.parse_args()
    if a.one_reference:
        references.REFERENCES, references.CONFIRM = 1, 0
    native = subprocess.run([str(gobuild.build(CORPUS).binary)], capture_output=True, text=True, check=True).stdout
    rows, fails, same = [], 0, 0
    for f in a.funcs or functions():
        c0 = time.process_time()
        out = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()):
            code = cli.main(["sweep", str(CORPUS), "--func", f, "--max-points", str(a.max_points), "--json"], out)
        cpu = time.process_time() - c0
        if code == 2:
            rows.append((f, "ERROR", "-", "-", "-", out.getvalue()[:80]))
            continue
        j = json.loads(out.getvalue())
        nd = j["nondeterministic"]
        unstable = nd["results"] + nd["globals"] + [f"{w}:{ix}" for w, ix in nd["output"].items()]
        eq = j["reference"]["stdout"] == native
        same += eq
        fails += not j["ok"]
        what = "; ".join(sorted({v["what"] for v in j["violations"]}))[:60]
        rows.append((f, "OK" if j["ok"] else f"FAIL {j['violation_count']}", f"{j['injected']}/{j['points_tried']}",
                     "yes" if eq else "NO", f"{cpu:.1f}", (", ".join(unstable) or "-")[:60] + (f"  [{what}]" if what else "")))
    print(f"{'function':<14} {'verdict':<8} {'inj/tried':>10} {'=native':>7} {'cpu s':>6}  nondeterministic [violations]")
    for r in rows:
        print(f"{r[0]:<14} {r[1]:<8} {r[2]:>10} {r[3]:>7} {r[4]:>6}  {r[5]}")
    print(f"\n{len(rows)} functions: {fails} false failure(s); reference output equal to native in {same}; "
          f"rule: {'primary reference only' if a.one_reference else f'{references.REFERENCES} references'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
