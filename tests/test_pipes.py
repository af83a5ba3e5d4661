"""Pipes and /tmp as Go programs use them (emu/linux/fds.py, kernel.py; fs/pipe.c): end of file once every write end is
closed, a blocking read that waits for a writer, EPOLLIN/EPOLLHUP for the netpoller. Before this, a read of an
empty pipe always answered EAGAIN, so `go test` binaries with an Example hung at `=== RUN Example...`
(testing reads the example's stdout from an os.Pipe to end of file)."""
import io
import json
import subprocess

from conftest import ROOT

from emu import cli
from emu.front import gobuild

DATA = ROOT / "tests" / "data" / "go"


def exec_json(target, *args):
    out = io.StringIO()
    code = cli.main(["exec", str(target), "--json", "--max-virtual-ms", "2000", *(["--", *args] if args else [])], out)
    return code, json.loads(out.getvalue())


def test_a_pipe_reads_to_end_of_file_and_a_raw_read_waits_for_its_writer():
    binary = gobuild.build(DATA / "pipes").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    code, j = exec_json(binary)
    assert code == 0 and j["exit_code"] == 0 and j["stdout"] == native
    assert native.splitlines() == ['"line 0\\nline 1\\nline 2\\n" <nil>', '"late" <nil> 0 <nil>']


def test_a_pipe_holds_64_kib_as_natively():
    """#50: a pipe had no limit, so a write never waited: os's TestClosedPipeRaceWrite (a write larger than the
    pipe, its end closed meanwhile) succeeded and the test binary panicked. tests/data/go/pipepages: 16 page
    buffers, partial non-blocking writes and EAGAIN, PIPE_BUF whole or not at all, a blocking child writer."""
    binary = gobuild.build(DATA / "pipepages").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, env={}).stdout
    code, j = exec_json(binary)
    assert code == 0 and j["exit_code"] == 0 and j["stdout"] == native
    assert "non-blocking write of 100000: 65536 <nil>" in native and "cuts short: true" in native
    assert "300000 <nil>" in native and "PIPE_BUF fits whole: 4096 <nil>" in native


def test_writev_and_readv_as_natively():
    """#50: net's test binary ended at writev (net.Buffers). tests/data/go/writev: a TCP writev, a pipe's, readv,
    EINVAL past UIO_MAXIOV."""
    binary = gobuild.build(DATA / "writev").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, env={}).stdout
    code, j = exec_json(binary)
    assert code == 0 and j["exit_code"] == 0 and j["stdout"] == native
    assert 'server read "alpha beta gamma"' in native and "1025 iovecs: invalid argument" in native


def test_a_go_test_binary_with_an_example_passes(tmp_path):
    out = tmp_path / "hello.test"
    r = subprocess.run([str(gobuild.goroot() / "bin" / "go"), "test", "-c", "-o", str(out), "."],
                       cwd=DATA / "exampletest", env=gobuild.go_env(gobuild.cache_dir(), False),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    code, j = exec_json(out, "-test.v")
    assert code == 0 and j["exit_code"] == 0, j["stop_reason"]
    assert "--- PASS: ExampleGreeting" in j["stdout"] and j["stdout"].rstrip().endswith("PASS")
    assert "--- PASS: TestTempDir" in j["stdout"]          # a writable /tmp (emu/linux/tmpfs.py)


def test_tmp_answers_as_linux_does():
    from emu.linux import tmpfs
    fs = tmpfs.TmpFs()
    assert fs.mkdir("/tmp/d", 0o700, 0) == 0 and fs.mkdir("/tmp/d", 0o700, 0) == -tmpfs.EEXIST
    assert fs.mkdir("/tmp/x/y", 0o700, 0) == -tmpfs.ENOENT                       # no parent
    f = fs.open("/tmp/d/f", tmpfs.O_CREAT | 1, 0o600, 0)
    assert isinstance(f, tmpfs.TmpFile)
    assert fs.open("/tmp/d/f", tmpfs.O_CREAT | tmpfs.O_EXCL | 1, 0o600, 0) == -tmpfs.EEXIST
    assert fs.unlink("/tmp/d", 0) == -tmpfs.EISDIR                                # unlinkat without AT_REMOVEDIR
    assert fs.unlink("/tmp/d", tmpfs.AT_REMOVEDIR) == -tmpfs.ENOTEMPTY
    assert fs.rename("/tmp/d", "/tmp/e") == 0 and "/tmp/e/f" in fs.nodes and "/tmp/d/f" not in fs.nodes
    assert fs.rename("/tmp/e", "/tmp/e/sub") == -tmpfs.EINVAL                     # into itself
    assert fs.mkdir("/tmp/full", 0o700, 0) == 0 and fs.open("/tmp/full/x", tmpfs.O_CREAT | 1, 0o600, 0)
    assert fs.rename("/tmp/e", "/tmp/full") == -tmpfs.ENOTEMPTY                   # onto a non-empty directory
    assert fs.rename("/tmp/e/f", "/tmp/full") == -tmpfs.EISDIR                    # a file onto a directory
    assert fs.rename("/tmp/full", "/tmp/e/f") == -tmpfs.ENOTDIR                   # a directory onto a file
    assert fs.rename("/tmp/full/x", "/tmp/e/f") == 0 and "/tmp/full/x" not in fs.nodes     # replaces the file
    assert fs.unlink("/tmp/e/f", 0) == 0 and fs.unlink("/tmp/e", tmpfs.AT_REMOVEDIR) == 0


def test_duplicated_descriptors_share_one_open_file_as_natively():
    """dup, dup3 (EINVAL onto itself), fcntl(F_DUPFD): the copies write into one pipe, whose reader sees
    end of file only when the last copy is closed; a file's offset is shared by its copies."""
    binary = gobuild.build(DATA / "dups").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    code, j = exec_json(binary)
    assert code == 0 and j["stdout"] == native
    assert 'read "orig dup dup3 fdup" <nil>' in native and 'shared offset: "34"' in native


def test_a_fifo_in_tmp_as_natively():
    """#50 item 3: mknodat ended `os`'s FIFO tests. A FIFO in /tmp (emu/linux/fifo.py, fs/pipe.c fifo_open): a
    reader's and a writer's open each wait for the other, data then EOF, ENXIO for a non-blocking writer with
    no reader, the node's stat and directory entry say FIFO: tests/data/go/fifo as natively."""
    import io
    import json
    import subprocess
    from conftest import DATA
    from emu import cli
    from emu.front import gobuild
    binary = gobuild.build(DATA / "go" / "fifo").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    out = io.StringIO()
    assert cli.main(["exec", str(binary), "--json"], out) == 0
    assert json.loads(out.getvalue())["stdout"] == native
    assert 'reader got: "through the fifo" <nil>' in native and "no reader: true" in native


def test_a_pipe_holds_what_linux_holds_and_its_writer_waits_as_natively():
    """A pipe nobody reads could take the host's memory (issue #51): now its 16 page slots bound it as fs/pipe.c's
    do. The program fills one with non-blocking writes, writes into the last page and past it, resizes it,
    blocks a writer until the reader comes, carries 1 MiB through os.Pipe's netpoller, fills a socket pair and a
    loopback TCP connection and carries 4 MiB over it: its output equals the native run's line for line."""
    binary = gobuild.build(DATA / "pipefull").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    code, j = exec_json(binary)
    assert code == 0 and j["stdout"] == native, j["stdout"]
    assert "filled with 4096-byte writes 65536" in native and "a blocking write of 300000 waits" in native
    assert "a TCP writer meets a bound: true" in native and "a socket pair's writer meets a bound: true" in native
