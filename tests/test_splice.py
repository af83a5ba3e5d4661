"""splice(2) and sendfile(2) (emu/linux/sys_splice.py; fs/splice.c, fs/read_write.c do_sendfile). #50: net's test
binary failed TestSendfile* and TestSplice/*: both answered EINVAL, so internal/poll reported "not handled".
tests/data/go/splice runs both natively and under preemu exec and prints what each call answers."""
import io
import json
import subprocess

from conftest import ROOT

from emu import cli
from emu.front import gobuild

DATA = ROOT / "tests" / "data" / "go"


def test_splice_and_sendfile_as_natively():
    binary = gobuild.build(DATA / "splice").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, env={}).stdout
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json", "--max-virtual-ms", "20000"], out)
    j = json.loads(out.getvalue())
    assert code == 0 and j["exit_code"] == 0, j["stderr"][-2000:]
    assert j["stdout"] == native
    # what the program must show, natively and here: the transfers whole, the refusals Linux gives
    assert "sendfile file->tcp: 300000 <nil> offset now 300000 received true" in native
    assert "sendfile with *offset: 5000 <nil> *offset 6000 file offset 300000 bytes true" in native
    assert "sendfile from a pipe: invalid argument" in native
    assert "sendfile into a full non-blocking socket: resource temporarily unavailable offset kept true" in native
    assert "splice socket->pipe: 10000 <nil> pipe->socket: 10000 <nil> received true" in native
    assert "splice pipe->pipe: 5000 <nil>" in native and "signal: broken pipe" in native
    assert "blocking tcp splice: 4 <nil> late" in native and "bad *off_in pointer: bad address" in native
    assert "unconnected TCP socket: transport endpoint is not connected" in native
    assert f"io.Copy tcp->tcp: {3 << 20} <nil> {3 << 20} true" in native
