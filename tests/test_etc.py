"""What a program expects of /etc and the loopback (issue #37 item 5, emu/linux/mounts.py, sys_socket.py): a
minimal read-only /etc unless a mount gives one, --mount of a single file, ECONNREFUSED for UDP to a port
no one is bound to."""
import io
import json
import subprocess

from emu import cli
from emu.front import gobuild

PROG = "tests/data/go/etc"


def preemu(*args):
    out = io.StringIO()
    code = cli.main(["exec", PROG, "--json", "--quiet", *args], out)
    return code, json.loads(out.getvalue())


def test_localhost_resolves_the_user_is_known_and_a_closed_udp_port_refuses():
    code, j = preemu()
    lines = j["stdout"].splitlines()
    assert code == 0 and lines[0] == "localhost [127.0.0.1 ::1] <nil>" and lines[1] == "user found true"
    assert lines[2].endswith("read: connection refused")
    native = subprocess.run([str(gobuild.build(PROG).binary)], capture_output=True, text=True).stdout
    assert native.splitlines()[2].endswith("read: connection refused")      # the kernel's answer too
    assert j["virtual_ns"] < 50_000_000                                      # no resolver or read timeout


def test_a_hosts_file_mounted_over_etc_hosts_is_the_one_read(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("10.1.2.3\tbuild-server\n")
    code, j = preemu("--mount", f"{hosts}:/etc/hosts", "--", "build-server")
    lines = j["stdout"].splitlines()
    assert code == 0 and lines[1] == "build-server [10.1.2.3] <nil>"
    assert "connection refused" in lines[0]           # this hosts file has no localhost: DNS, refused at once


def test_a_mount_of_etc_replaces_preemus(tmp_path):
    (tmp_path / "hosts").write_text("127.0.0.5\tlocalhost\n")
    code, j = preemu("--mount", f"{tmp_path}:/etc")
    assert j["stdout"].splitlines()[0] == "localhost [127.0.0.5] <nil>"
    assert j["stdout"].splitlines()[1] == "user found false"                 # no passwd in that /etc
