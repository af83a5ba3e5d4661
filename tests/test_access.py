"""access(2), faccessat(2), faccessat2(2) and getrusage(2) (issue #50 item 3: exec.LookPath of an existing file
ended the run with 'unsupported syscall faccessat2'): the program's output under preemu equals its native output."""
import subprocess

from conftest import cli_run

from emu.front import gobuild

SRC = "tests/data/go/access"


def test_lookpath_and_access_modes_as_natively(monkeypatch):
    binary = gobuild.build(SRC).binary
    native = subprocess.run([str(binary)], cwd=SRC, capture_output=True, text=True, check=True).stdout
    monkeypatch.chdir(SRC)
    code, out, err = cli_run("exec", ".", "--quiet")
    assert code == 0, err
    assert out == native
    assert "lookpath tool true <nil>" in out and "X main.go permission denied" in out
    assert "bad flag invalid argument AT_EACCESS <nil>" in out      # syscall's TestFaccessat (faccessat2's flags)


def test_getrusage_as_natively():
    """getrusage(2) (issue #50 item 3: runtime/pprof's test binary ended on it)."""
    src = "tests/data/go/rusage"
    native = subprocess.run([str(gobuild.build(src).binary)], capture_output=True, text=True, check=True).stdout
    code, out, err = cli_run("exec", src, "--quiet")
    assert code == 0 and out == native, err
