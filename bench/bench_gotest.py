"""Standard-library `go test` binaries under `preemu exec`: which pass as they do natively (issue #21).

  .venv/bin/python bench/bench_gotest.py [PACKAGE ...]

Builds each package's test binary with the project's toolchain (`go test -c`, CGO_ENABLED=0), runs it natively
and under `preemu exec` with `-test.short`, both in the package's source directory as `go test` does (its
testdata is there; preemu shows it read-only) (60 s of virtual time at most), and prints one Markdown table row
per package: the native and emulated exit statuses, the last line of output, how the emulated run ended,
its virtual time and instructions, and the wall time it took (at most 10 G instructions each). Long: about
ten minutes for the default list.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu import cli
from emu.front import gobuild  # noqa: E402

PACKAGES = ("bufio bytes cmp container/heap container/list container/ring crypto/md5 crypto/sha256 encoding/base64 "
            "encoding/binary encoding/csv encoding/hex encoding/json errors fmt hash/crc32 hash/fnv html io maps "
            "math math/bits math/rand net/url path path/filepath regexp slices sort strconv strings sync "
            "sync/atomic text/tabwriter time unicode unicode/utf16 unicode/utf8").split()


#: what `go test` lets a test see besides its package directory, read-only at the same paths: the GOROOT
#: (time's tests load ../../lib/time/zoneinfo.zip, path/filepath's glob ../*) and the host's time zones
MOUNTS = [a for d in (str(gobuild.goroot()), "/usr/share/zoneinfo") if os.path.isdir(d)
          for a in ("--mount", f"{d}:{d}")]


def row(pkg: str, tmp: Path) -> str:
    env = gobuild.go_env(gobuild.cache_dir(), False)
    binary = tmp / (pkg.replace("/", "_") + ".test")
    r = subprocess.run([str(gobuild.goroot() / "bin" / "go"), "test", "-c", "-o", str(binary), pkg], env=env,
                       capture_output=True, text=True, cwd=tmp)
    if r.returncode:
        return f"| {pkg} | build failed | | | | | |"
    src = gobuild.goroot() / "src" / pkg          # where `go test` runs a package's tests: its testdata is there
    native = subprocess.run([str(binary), "-test.short"], capture_output=True, text=True, timeout=600, cwd=src)
    out = io.StringIO()
    t0 = time.perf_counter()
    here = os.getcwd()
    os.chdir(src)                                 # preemu shows the program its working directory (read-only)
    try:
        code = cli.main(["exec", str(binary), "--json", "--quiet", "--max-virtual-ms", "60000", "--budget",
                         "10000000000", *MOUNTS, "--", "-test.short"], out)
    finally:
        os.chdir(here)
    wall = time.perf_counter() - t0
    try:
        j = json.loads(out.getvalue())
    except ValueError:
        return f"| {pkg} | {native.returncode} | bad input (exit {code}) | | | | {wall:.1f} s |"
    last = (j["stdout"].strip().splitlines() or [""])[-1][:40].replace("|", "\\|")
    same = "yes" if j["exit_code"] == native.returncode else "**no**"
    how = (j.get("error") or j.get("stop_reason") or "")[:60].replace("|", "\\|")
    return (f"| {pkg} | {native.returncode} | {j['exit_code']} ({same}) | `{last}` | {how} | "
            f"{j['virtual_ns'] / 1e6:,.1f} ms, {j['instructions'] / 1e6:,.1f} M | {wall:.1f} s |")


def main() -> None:
    pkgs = sys.argv[1:] or PACKAGES
    print("| package | native exit | preemu exit (same?) | last line | how it ended | virtual time, instructions | wall |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for pkg in pkgs:
            print(row(pkg, Path(d)), flush=True)


if __name__ == "__main__":
    main()
