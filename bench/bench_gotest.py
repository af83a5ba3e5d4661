"""Standard-library `go test` binaries and Go's runtime/testdata/testprog under `preemu exec`: which end as they
do natively (issues #21, #37 item 7).

  .venv/bin/python bench/bench_gotest.py [--results FILE.jsonl] [--shard I/N] [--testprog] [--cpu v1,v3] [--wall S]
                                         [--virtual-ms MS] [--budget N] [NAME ...]

Packages (the default): builds each package's test binary with the project's toolchain (`go test -c`,
CGO_ENABLED=0), runs it natively and under `preemu exec` with `-test.short`, both in the package's source
directory as `go test` does (its testdata is there; preemu shows it and the GOROOT read-only), both with an
empty environment, under preemu with at most 60 s of virtual time and 10 G instructions (`--virtual-ms`,
`--budget` change them). A package ends *as natively* when the exit status and the last line of stdout
(`PASS`/`FAIL`) are the same.

`--testprog`: every entry that runtime/testdata/testprog registers (Go's runtime tests run it as
`testprog NAME`, runtime/crash_test.go runTestProg), natively (twice) and under preemu, both in
GOROOT/src/runtime as runtime's tests run it (20 s of virtual time, 3 G instructions at most), each with the
environment runtime's own tests start it with, read from their source (testprog_env.py: runTestProg,
runBuiltTestProg and cmd.Env of the runtime's *_test.go; RUNTIME_TEST_SHORT=1 as under -short): one row per
distinct environment, named by the entry and its variables (`LockOSThreadAvoidsStatePropagation
GOMAXPROCS=1`); an entry no test starts by a literal name runs with the base environment alone. Naming an
entry on the command line runs all its rows. An entry ends as natively when the exit status (or the killing
signal) and the first line of stdout and of stderr are the same; where the two native runs already differ on
a line (a temporary file's name, an address), that line is not compared.

`--cpu v1,v3` (packages only; default v1): one column per level. A level's row builds the test binary with
GOAMD64=that level (a plain `GOAMD64=v3 go test -c`, no GOEXPERIMENT, as a user builds it) and runs it
natively and under `preemu exec --cpu` that level; the v1 column is the default build at `--cpu v1`, as
before. Issue #48: the v3 column should end as natively at the v1 column's rate. Slow where a test hashes much:
every AVX instruction is a trap into preemu's vector unit run on the host (~7-13 us each), so crypto/sha512's
tests (573 M instructions, ~5 % AVX2) took 1,192 s of wall time at v3 against 2.8 s at v1 (two busy cores).

`--results FILE.jsonl` keeps one JSON line per finished row and a rerun skips what it holds (resume);
`--shard I/N` runs every N-th name from the I-th (two shards for two cores, one results file). The tables
are printed at the end from all rows the file holds.

Packages: every standard-library package that has tests (`go list std`: TestGoFiles or XTestGoFiles), not
internal, vendored or a command, less those that need cgo (EXCLUDED, with its reason: plugin); none needs
the network beyond loopback under -test.short (testenv.MustHaveExternalNetwork skips under -short). That is
169 with go1.27.3; `packages()` reads them from the toolchain, so the set is the toolchain's, not a list here.
The base environment is empty, as before (no PATH: syscall's and os's tests that run `cat`, `sleep` or `pwd`
fail natively too). `--wall S` kills a preemu run after S seconds of wall time and records it as
`not finished in S s`: a limit of the measurement on shared cores, not a verdict on preemu's semantics; a
run stopped by the 10 G-instruction or 60 s virtual budget is `starved` with that reason.
Long: the 169 packages with --wall 60 took about 50 min on two cores shared with four other agents (load 10);
the 139 testprog rows 4 min.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobuild  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import testprog_env  # noqa: E402

#: the packages the rule leaves out (module docstring), each with its reason
EXCLUDED = {"plugin": "needs cgo: its tests build and load -buildmode=plugin objects"}


@functools.lru_cache(maxsize=1)
def packages() -> list[str]:
    """Every standard-library package with tests (`go list std`: TestGoFiles or XTestGoFiles), not internal,
    vendored or a command, minus EXCLUDED, in `go list` order."""
    r = subprocess.run([str(gobuild.goroot() / "bin" / "go"), "list", "-f",
                        "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}", "std"],
                       env=gobuild.go_env(gobuild.cache_dir(), False), capture_output=True, text=True, check=True,
                       cwd=tempfile.gettempdir())
    return [x for x in r.stdout.split() if not ({"internal", "vendor"} & set(x.split("/"))) and x not in EXCLUDED]

TESTPROG = "runtime/testdata/testprog"

#: what `go test` lets a test see besides its package directory, read-only at the same paths: the GOROOT
#: (time's tests load ../../lib/time/zoneinfo.zip, path/filepath's glob ../*) and the host's time zones; and
#: (emulated) the test binary's own directory, where `go test` leaves it (net/http/cgi's handler runs the
#: binary as its CGI script from there)
MOUNTS = [a for d in (str(gobuild.goroot()), "/usr/share/zoneinfo") if os.path.isdir(d)
          for a in ("--mount", f"{d}:{d}")]


def testprog_entries() -> list[str]:
    """The names testprog registers (runtime/testdata/testprog/main.go:12 register, :18 registerInit), in file
    order."""
    import re
    src = gobuild.goroot() / "src" / TESTPROG
    return list(dict.fromkeys(m for f in sorted(src.glob("*.go"))
                              for m in re.findall(r'register(?:Init)?\("(\w+)"', f.read_text())))


@functools.lru_cache(maxsize=1)
def testprog_runs() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Row name -> (entry, environment): each entry once per environment runtime's own tests start it with,
    read from their source (testprog_env.py); the name is the entry followed by its variables beyond the base."""
    found = testprog_env.read(gobuild.goroot() / "src" / "runtime")
    return {" ".join((name, *env[len(testprog_env.BASE_ENV):])): (name, env)
            for name, env, _ in testprog_env.runs(testprog_entries(), found)}


def _status(code: int | None, signal: int = 0) -> str:
    if signal:
        return f"signal {signal}"
    return "none" if code is None else f"signal {-code}" if code < 0 else str(code)


def _line(text: str, last: bool) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()] or [""]
    return lines[-1 if last else 0][:60]


def native(binary: Path, args: list[str], cwd: Path, env: tuple[str, ...] = ()) -> dict:
    t0 = time.perf_counter()
    try:
        r = subprocess.run([str(binary), *args], capture_output=True, text=True, errors="replace", timeout=120,
                           cwd=cwd, env=dict(kv.split("=", 1) for kv in env))
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "stdout": "", "stderr": "", "wall": 120.0}
    return {"status": _status(r.returncode), "stdout": r.stdout, "stderr": r.stderr,
            "wall": round(time.perf_counter() - t0, 2)}


def emulated(binary: Path, args: list[str], cwd: Path, max_ms: int, budget: int, cpu: str = "v1",
             env: tuple[str, ...] = (), wall_s: float | None = None) -> dict:
    """One `preemu exec` in a process of its own (a leak or a crash of one run cannot touch the next); with
    `wall_s`, killed after that many seconds of wall time (status `not finished in N s`: a measurement's
    limit, not a verdict on preemu's semantics)."""
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "emu", "exec", str(binary), "--json", "--quiet", "--max-virtual-ms", str(max_ms),
           "--budget", str(budget), "--cpu", cpu, *MOUNTS, "--mount", f"{binary.parent}:{binary.parent}",
           *(a for kv in env for a in ("--env", kv)), "--", *args]
    pr = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        out, err = pr.communicate(timeout=wall_s)
    except subprocess.TimeoutExpired:
        os.killpg(pr.pid, signal.SIGKILL)
        pr.communicate()
        return {"status": f"not finished in {wall_s:g} s", "how": "wall-time limit of the measurement",
                "stdout": "", "stderr": "", "wall": wall_s, "virtual_ms": 0, "minsns": 0}
    r = subprocess.CompletedProcess(cmd, pr.returncode, out, err)
    wall = round(time.perf_counter() - t0, 1)
    try:
        j = json.loads(r.stdout)
    except ValueError:
        return {"status": "preemu failed", "how": (r.stderr.strip().splitlines() or [""])[-1][:200],
                "stdout": "", "stderr": "", "wall": wall, "virtual_ms": 0, "minsns": 0}
    sig = j["processes"][0].get("signal") if j.get("processes") else 0
    status = "error" if j.get("error") else "starved" if j.get("starved") else _status(j["exit_code"], sig or 0)
    return {"status": status, "how": (j.get("error") or j.get("stop_reason") or "")[:200],
            "stdout": j["stdout"], "stderr": j["stderr"], "wall": wall, "virtual_ms": j["virtual_ns"] / 1e6,
            "minsns": j["instructions"] / 1e6, "unmodelled": j.get("unmodelled", {})}


#: a package's run under preemu: at most this much virtual time (ms) and these many instructions (--virtual-ms, --budget)
PACKAGE_MS, PACKAGE_BUDGET = 60_000, 10_000_000_000


def package_row(pkg: str, tmp: Path, level: str = "v1", wall_s: float | None = None, max_ms: int = PACKAGE_MS,
                budget: int = PACKAGE_BUDGET) -> dict:
    """`pkg`'s test binary built at GOAMD64=`level` (no GOEXPERIMENT: a plain `GOAMD64=v3 go test -c`), run
    natively and under `preemu exec --cpu level`."""
    env = gobuild.go_env(gobuild.cache_dir(), False, goamd64=level, simd=False)
    binary = tmp / (pkg.replace("/", "_") + f"-{level}.test")
    r = subprocess.run([str(gobuild.goroot() / "bin" / "go"), "test", "-c", "-o", str(binary), pkg], env=env,
                       capture_output=True, text=True, cwd=tmp)
    if r.returncode:
        return {"kind": "package", "name": pkg, "level": level, "build": r.stderr.strip()[:300]}
    src = gobuild.goroot() / "src" / pkg          # where `go test` runs a package's tests: its testdata is there
    n = native(binary, ["-test.short"], src)
    e = emulated(binary, ["-test.short"], src, max_ms, budget, level, wall_s=wall_s)
    same = n["status"] == e["status"] and _line(n["stdout"], True) == _line(e["stdout"], True)
    binary.unlink()
    return {"kind": "package", "name": pkg, "level": level, "native": _short(n), "preemu": _short(e), "same": same}


def _short(run: dict) -> dict:
    """What the results file keeps of a run: the outputs' first and last lines and the first lines that
    show why it ended (a failing test's, a panic's)."""
    keep = {k: v for k, v in run.items() if k not in ("stdout", "stderr")}
    for what in ("stdout", "stderr"):
        lines = run[what].splitlines()
        keep[what] = lines[:3] + ["..."] + lines[-3:] if len(lines) > 6 else lines
        keep[what + "_fail"] = [ln for ln in lines if ln.startswith(("--- FAIL", "panic:", "fatal error:"))][:5]
    return keep


def testprog_row(name: str, binary: Path, wall_s: float | None = None) -> dict:
    """The row `name` of testprog_runs(): its entry run with its environment."""
    entry, env = testprog_runs()[name]
    cwd = gobuild.goroot() / "src" / "runtime"   # where runtime's tests run it (runtime/crash_test.go)
    n1, n2 = native(binary, [entry], cwd, env), native(binary, [entry], cwd, env)
    e = emulated(binary, [entry], cwd, 20_000, 3_000_000_000, env=env, wall_s=wall_s)
    same = n1["status"] == e["status"]
    for what in ("stdout", "stderr"):
        if _line(n1[what], False) == _line(n2[what], False):       # a line the native runs agree on
            same = same and _line(n1[what], False) == _line(e[what], False)
    return {"kind": "testprog", "name": name, "env": list(env), "native": _short(n1), "preemu": _short(e),
            "same": same}


def load(path: str | None) -> dict:
    rows = {}
    if path and os.path.exists(path):
        for line in Path(path).read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[(r["kind"], r["name"], r.get("level", "v1"))] = r
    return rows


def cell(s: str) -> str:
    return s.replace("|", "\\|").replace("`", "'")


def table(rows: list[dict]) -> str:
    out = ["| name | native | preemu | same? | last line (preemu) | how it ended | virtual time, instructions | wall |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "build" in r:
            out.append(f"| {r['name']} | build failed | | | | | | |")
            continue
        n, e = r["native"], r["preemu"]
        last = cell(_line("\n".join(e["stdout"] if r["kind"] == "package" else e["stderr"] or e["stdout"]),
                          r["kind"] == "package"))
        out.append(f"| {r['name']} | {n['status']} | {e['status']} | {'yes' if r['same'] else '**no**'} | `{last}` "
                   f"| {cell(e.get('how', ''))[:60]} | {e['virtual_ms']:,.1f} ms, {e['minsns']:,.1f} M | "
                   f"{e['wall']:.1f} s |")
    same = sum(r.get("same", False) for r in rows)
    out.append(f"\n{same} of {len(rows)} end as natively ({100 * same / max(len(rows), 1):.1f} %)")
    return "\n".join(out)


def level_table(rows: dict, names: list[str], levels: list[str]) -> str:
    """One line per package, a column per level: native status, preemu status, the same? (and preemu's
    how-it-ended where they differ); then each level's rate over the packages every level has a row for."""
    head = "| name | " + " | ".join(f"{lv}: native | {lv}: preemu | {lv}: same?" for lv in levels) + " |"
    out = [head, "|---|" + "---|---|---|" * len(levels)]
    both = [x for x in names if all(("package", x, lv) in rows for lv in levels)]
    for x in both:
        cells = []
        for lv in levels:
            r = rows[("package", x, lv)]
            if "build" in r:
                cells += ["build failed", "", ""]
                continue
            how = "" if r["same"] else f" ({cell(r['preemu'].get('how', '') or _line(chr(10).join(r['preemu']['stdout']), True))[:50]})"
            cells += [r["native"]["status"], r["preemu"]["status"], ("yes" if r["same"] else "**no**") + how]
        out.append(f"| {x} | " + " | ".join(cells) + " |")
    for lv in levels:
        same = sum(rows[("package", x, lv)].get("same", False) for x in both)
        out.append(f"\n{lv}: {same} of {len(both)} end as natively ({100 * same / max(len(both), 1):.1f} %)")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", help="JSON lines: one per finished row; a rerun skips those it holds")
    ap.add_argument("--shard", default="0/1", help="I/N: run every N-th name from the I-th")
    ap.add_argument("--testprog", action="store_true", help="runtime/testdata/testprog's entries, not packages")
    ap.add_argument("--cpu", default="v1", help="levels, comma-separated (packages only): a column each")
    ap.add_argument("--wall", type=float, help="seconds of wall time a preemu run may take (then: not finished)")
    ap.add_argument("--virtual-ms", type=int, default=PACKAGE_MS, help="packages: virtual time a run may take")
    ap.add_argument("--budget", type=float, default=PACKAGE_BUDGET, help="packages: instructions a run may take")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    kind = "testprog" if a.testprog else "package"
    names = a.names or (list(testprog_runs()) if a.testprog else packages())
    if a.testprog and a.names:                   # an entry's name picks its every environment's row
        names = [r for r, (entry, _) in testprog_runs().items() if entry in a.names or r in a.names]
        if not names:
            ap.exit(2, f"bench_gotest: no testprog entry named {' '.join(a.names)}\n")
    levels = ["v1"] if a.testprog else a.cpu.split(",")
    i, n = (int(x) for x in a.shard.split("/"))
    done = load(a.results)
    binary = gobuild.build_goroot_program(TESTPROG) if a.testprog else None
    with tempfile.TemporaryDirectory() as d:
        for name in names[i::n]:
            for lv in levels:
                if (kind, name, lv) in done:
                    continue
                r = (testprog_row(name, binary, a.wall) if a.testprog
                     else package_row(name, Path(d), lv, a.wall, a.virtual_ms, int(a.budget)))
                done[(kind, name, lv)] = r
                if a.results:
                    with open(a.results, "a") as f:
                        f.write(json.dumps(r) + "\n")
                print(f"{name} {lv}: {'as natively' if r.get('same') else 'DIFFERS'}", file=sys.stderr, flush=True)
    done = load(a.results) if a.results else done
    if levels == ["v1"]:
        print(table([done[(kind, x, "v1")] for x in names if (kind, x, "v1") in done]))
    else:
        print(level_table(done, names, levels))


if __name__ == "__main__":
    main()
