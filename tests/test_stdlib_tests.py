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


def test_testprog_environments_are_read_from_runtimes_tests(tmp_path):
    """#50 item 6: bench_gotest --testprog runs each entry with the environment runtime's own tests give it,
    read from their source (bench/testprog_env.py): from the toolchain's runtime, and from a made-up one with
    each way of starting an entry, a non-literal name (dropped, counted) and a file for another GOOS."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import testprog_env as T
    real = T.read(gobuild.goroot() / "src" / "runtime")
    assert ("GOMAXPROCS=1",) in real.envs["LockOSThreadAvoidsStatePropagation"]
    assert ("GOTRACEBACK=crash", "GOGC=off", "GODEBUG=asyncpreemptoff=1") in real.envs["CrashDumpsAllThreads"]
    assert list(real.envs["MemProf"]) == [()]          # its function sets PPROF_TMPDIR on another command
    (tmp_path / "a_test.go").write_text(
        'func TestA(t *testing.T) {\n\trunTestProg(t, "testprog", "A", "X=1", // comment, "Y=2"\n\t\t"Z=3")\n}\n'
        'func TestB(t *testing.T) {\n\texe, err := buildTestProg(t, "testprog")\n'
        '\tcmd := testenv.Command(t, exe, "B")\n\tcmd = testenv.CleanCmdEnv(cmd)\n'
        '\tcmd.Env = append(cmd.Env, "GOGC=off")\n\trunBuiltTestProg(t, exe, name, "W=1")\n'
        '\trunBuiltTestProg(t, exe, "C", fmt.Sprintf("V=%d", n))\n}\n'
        'func TestD(t *testing.T) {\n\trunBuiltTestProg(t, exe, "D")\n\trunTestProg(t, "testprogcgo", "E")\n}\n')
    (tmp_path / "b_windows_test.go").write_text('func TestW(t *testing.T) { runTestProg(t, "testprog", "W") }\n')
    got = T.read(tmp_path)
    assert got.envs == {"A": {("X=1", "Z=3"): "a_test.go:2"}, "B": {("GOGC=off",): "a_test.go:7"},
                        "C": {(): "a_test.go:11"}}
    assert got.dropped == ["a_test.go:10: entry name is not a literal",
                           'a_test.go:11: C\'s ENV argument fmt.Sprintf("V=%d", n) is not a literal']
    assert T.runs(["B", "Q"], got)[:2] == [("B", T.BASE_ENV + ("GOGC=off",), "a_test.go:7"),
                                           ("Q", T.BASE_ENV, "no literal call")]
