"""Benchmark (not a test): the CPU of `preemu exec` of a trivial program (scenarios/go/hello), the whole command
(interpreter start, imports, loading the binary, the process's set-up, the program's 0.3 M instructions, the
report), this checkout against an older one in the same run. Run with `.venv/bin/python bench/bench_startup.py
[--old REV] [--rounds N]`.

Target (issue #39 item 3): <= 0.2 s of CPU. The older code is `git archive REV emu` (default `main`) unpacked
into a temporary directory; both trees get their bytecode written first (python -m compileall: this machine
sets PYTHONDONTWRITEBYTECODE, and compiling ~120 modules would be counted otherwise), then the two commands
run in turn, `--rounds` times each (default 5), and the best and the median CPU (user + system, from
getrusage of the children) of each are printed. The two reports must be the same: start-up work may be
made lazy or cached, never different.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobuild  # noqa: E402


def child_cpu(argv: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    """CPU seconds (user + system) of one child run, and its stderr (preemu's report). `cwd`: a directory with
    no `emu` in it (`python -m` puts the working directory first on sys.path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit status {r.returncode}\n{r.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), r.stderr


def tree_env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    return env


def old_tree(rev: str, into: Path) -> Path:
    """`emu/` as it was at `rev`, unpacked under `into`, with its compiled module (emu/engine/_native*.c, issue
    #49) built by that revision's setup.py when it has one: the old tree runs as an install of it would."""
    archive = subprocess.run(["git", "archive", rev, "emu"], cwd=ROOT, capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    if (into / "emu" / "engine" / "_native.c").exists():
        setup = subprocess.run(["git", "show", f"{rev}:setup.py"], cwd=ROOT, capture_output=True, check=True).stdout
        (into / "setup.py").write_bytes(setup)
        built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=into, capture_output=True,
                               text=True, check=False)
        if built.returncode != 0:
            raise SystemExit(f"{rev}: building its compiled module failed:\n{built.stderr[-2000:]}")
    return into


def wall_free(report: str) -> str:
    """The report without its wall-clock figure (the one line that may differ between two runs)."""
    return "\n".join(line for line in report.splitlines() if " s wall" not in line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="main", help="the git revision to compare with (default: main)")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    hello = str(gobuild.build(ROOT / "scenarios" / "go" / "hello").binary)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="preemu-old-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        (Path(tmp) / "old").mkdir()
        trees = {"old (" + a.old + ")": old_tree(a.old, Path(tmp) / "old"), "new (this checkout)": ROOT}
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        reports = {}
        for name, tree in trees.items():
            subprocess.run([py, "-m", "compileall", "-q", str(tree / "emu")], check=True)
            where = subprocess.run([py, "-c", "import emu; print(emu.__file__)"], env=tree_env(tree),
                                   capture_output=True, text=True, cwd=run_dir, check=True).stdout.strip()
            assert where.startswith(str(tree)), f"{name}: imported {where}, not {tree}"
            child_cpu([py, "-m", "emu", "exec", hello], tree_env(tree), run_dir)          # warm the OS's file cache
        for _ in range(a.rounds):
            for name, tree in trees.items():
                t, reports[name] = child_cpu([py, "-m", "emu", "exec", hello], tree_env(tree), run_dir)
                cpu[name].append(t)
        base = min(child_cpu([py, "-c", "pass"], tree_env(ROOT), run_dir)[0] for _ in range(a.rounds))
    print(f"`preemu exec` of scenarios/go/hello, CPU of the whole command (user + system), {a.rounds} rounds "
          f"(python alone: {base * 1e3:.0f} ms):")
    for name, ts in cpu.items():
        print(f"  {name:28s} best {min(ts):.3f} s   median {statistics.median(ts):.3f} s   "
              f"(all: {', '.join(f'{t:.3f}' for t in ts)})")
    old, new = (wall_free(r) for r in reports.values())
    print("reports: the same" if old == new else f"reports DIFFER:\n--- old\n{old}\n--- new\n{new}")
    print(f"target <= 0.200 s: {'met' if min(cpu['new (this checkout)']) <= 0.2 else 'NOT met'} (best)")


if __name__ == "__main__":
    main()
