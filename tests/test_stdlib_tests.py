"""Standard-library `go test -c` binaries under `preemu exec` (issue 21): a handful of quick ones, run in
their package's source directory as `go test` runs them, print PASS as they do natively. bufio's tests
use an in-process socket; the full table is bench/bench_gotest.py's (README)."""
import io
import json
import subprocess

import pytest

from emu import cli
from emu.front import gobuild

PACKAGES = ["bufio", "container/list", "encoding/hex", "path", "text/tabwriter", "unicode/utf16"]


@pytest.mark.parametrize("pkg", PACKAGES)
def test_a_stdlib_test_binary_passes_as_natively(pkg, tmp_path, monkeypatch):
    binary = tmp_path / "pkg.test"
    r = subprocess.run([str(gobuild.goroot() / "bin" / "go"), "test", "-c", "-o", str(binary), pkg], cwd=tmp_path,
                       env=gobuild.go_env(gobuild.cache_dir(), False), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    src = gobuild.goroot() / "src" / pkg
    native = subprocess.run([str(binary), "-test.short"], cwd=src, capture_output=True, text=True, timeout=120)
    monkeypatch.chdir(src)
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json", "--quiet", "--", "-test.short"], out)
    j = json.loads(out.getvalue())
    assert native.returncode == 0 and native.stdout.rstrip().endswith("PASS")
    assert (code, j["exit_code"]) == (0, 0), j["stdout"][-2000:]
    assert j["stdout"].rstrip().endswith("PASS") and j["violations"] == []
