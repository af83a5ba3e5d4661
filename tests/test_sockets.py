"""Sockets inside the process (emu/linux/sys_socket.py) and edge-triggered epoll (emu/linux/fds.py): a Go
program's loopback TCP echo, UDP round trip, AF_UNIX stream, socketpair and httptest server print what
they print natively, and netpoll is woken once per event, not on every poll."""
import json
import subprocess

from conftest import DATA

from emu import cli
from emu.front import gobuild
from emu.linux import fds as F


def _exec_json(prog):
    import io
    out = io.StringIO()
    code = cli.main(["exec", str(gobuild.build(prog).binary), "--json"], out)
    return code, json.loads(out.getvalue())


def test_a_program_using_sockets_prints_what_it_prints_natively():
    prog = DATA / "go" / "sockets"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["exit_code"] == 0 and j["violations"] == []
    assert j["stdout"] == native
    assert "tcp hello 2" in native and "http 200" in native and "closed listener refuses: true" in native
    for line in ("the address is free again: true", "wildcard listener, loopback dial: any",
                 "read after CloseRead: 0 EOF"):      # bind after close, 0.0.0.0 listeners, SHUT_RD
        assert line in native.splitlines()
    assert {"socket", "bind", "listen", "accept4", "connect", "socketpair", "sendto", "recvfrom"} <= set(j["syscalls"])


def test_edge_triggered_epoll_reports_an_object_once_per_wakeup():
    """fs/eventpoll.c: with EPOLLET an entry is reported when its object is woken (data in, room freed,
    a close), not again while nothing happens; a level-triggered entry is reported while it is ready."""
    table = F.FdTable()
    st = F.PipeState()
    r, w = table.install(F.Pipe(st, False)), table.install(F.Pipe(st, True, F.O_WRONLY))
    ep = F.Epoll()
    ep.interest[r] = (F.EPOLLIN | F.EPOLLET, 1)
    ep.interest[w] = (F.EPOLLOUT | F.EPOLLET, 2)
    assert ep.ready(table, consume=True) == [(F.EPOLLOUT, 2)]      # the write end: ready at insert
    assert ep.ready(table, consume=True) == []                     # nothing happened since
    table.get(w).state.put(b"x")
    assert [d for _, d in ep.ready(table, consume=True)] == [1]     # data arrived: the read end, once
    assert ep.ready(table) == []
    ep.interest[w] = (F.EPOLLOUT, 2)                                # level-triggered: every time
    assert ep.ready(table) == ep.ready(table) == [(F.EPOLLOUT, 2)]
    table.close(w)
    assert (F.EPOLLIN | F.EPOLLHUP, 1) in ep.ready(table, consume=True)   # the writer went away: EOF


def test_netpoll_sleeps_between_pipe_events():
    """Go registers pipes with EPOLLET; reported level-triggered, an always-writable write end woke netpoll
    at every poll: tests/data/go/pipes made 3,237 epoll_pwait calls and 5.4 M instructions, now 17 and 0.44 M."""
    code, j = _exec_json(DATA / "go" / "pipes")
    assert code == 0 and j["syscalls"]["epoll_pwait"] < 100 and j["instructions"] < 2_000_000


def test_tcp_close_reset_shutdown_and_the_empty_host_as_natively():
    """emu/linux/tcp.py: every dial to an accept-and-close server connects (net's TestDialerKeepAlive hung:
    EPOLLOUT was lost once the peer closed); after the peer's FIN the first write succeeds and the RST it
    draws makes the next fail with EPIPE (net/smtp); unread data at close resets (ECONNRESET, then EOF); a
    half close; SHUT_RD leaves the peer's writes alone; a listener closed before accept resets; and
    Dial(":PORT") / "0.0.0.0:PORT" reach the local host."""
    prog = DATA / "go" / "tcpclose"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["exit_code"] == 0
    assert j["stdout"] == native
    for line in ("dials to an accept-and-close server: 6 of 6", "writes after the peer closed: ok EPIPE EPIPE then read: 0 EOF",
                 "after a reset: 0 ECONNRESET 0 EOF write: EPIPE", "dial :port: hi remote is loopback: true"):
        assert line in native.splitlines()


def test_a_pipe_at_end_of_file_polls_as_epollhup_alone():
    """fs/pipe.c pipe_poll: EPOLLIN only while data is queued, EPOLLHUP once every writer closed, never
    EPOLLRDHUP (measured natively with Python's select.epoll: 0x10 at end of file, 0x11 with a byte left)."""
    table = F.FdTable()
    st = F.PipeState()
    r, w = table.install(F.Pipe(st, False)), table.install(F.Pipe(st, True, F.O_WRONLY))
    ep = F.Epoll()
    ep.interest[r] = (F.EPOLLIN | F.EPOLLRDHUP, 1)
    st.put(b"x")
    table.close(w)
    assert ep.ready(table) == [(F.EPOLLIN | F.EPOLLHUP, 1)]
    st.take(1)
    assert ep.ready(table) == [(F.EPOLLHUP, 1)]


def test_unix_seqpacket_keeps_records_as_natively():
    """AF_UNIX SOCK_SEQPACKET (net's "unixpacket"; was EPROTONOSUPPORT): a listener, records read whole, a
    short read takes one record and drops its rest, EOF after the peer's close; a socketpair; SO_TYPE 5."""
    prog = DATA / "go" / "seqpacket"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["stdout"] == native
    assert 'read 5: "third" <nil>' in native and 'pair read: "ab"' in native


def test_unix_socket_files_in_tmp_as_natively():
    """#50: bind of an AF_UNIX path made no file, so log/syslog's TestFlap could not remove it (ENOENT) and rebind.
    tests/data/go/unixfile: the socket file's type and mode, ENXIO, EADDRINUSE, ECONNREFUSED after close and
    for a regular file, ENOENT after unlink and for sendto, a rename that keeps the socket reachable."""
    prog = DATA / "go" / "unixfile"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["stdout"] == native
    for line in ("lstat: <nil> true -rwxr-xr-x", "dial after remove: dial unix DIR/sock: connect: no such file or "
                 "directory", "datagram through the renamed file: hi <nil>", "sendto a path with no file: no such "
                 "file or directory"):
        assert line in native.splitlines()


def test_socket_addresses_and_option_defaults_are_linuxs():
    """Autobind (a bind with only the family: "@" and five hex digits), a datagram from a sender with no address
    arriving with none, a path that exists being EADDRINUSE, a connect or send to a name no socket has refused or
    ENOENT as unix_find_other says, getsockopt's defaults and its errno for another
    protocol's level, and a large write to a TCP peer that closed returning short then failing: as natively (the
    cases of Go's TestUnixgramAutobind, TestReadUnixgramWithUnnamedSocket, TestProtocolListenError,
    TestTCPConnKeepAliveConfig and TestWritevError)."""
    prog = DATA / "go" / "sockaddrs"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["stdout"] == native
    for line in ("autobind unixgram: 6 bytes, starts with @: true", "autobind unix listener: 6 <nil>",
                 'from an unbound sender: "hi" from <nil> (nil true), err <nil>', "listen unix //: EADDRINUSE true",
                 "default TCP_KEEPIDLE: 7200 <nil>", "default IP_TTL: 64 <nil>",
                 "default TCP_KEEPIDLE on UDP: 0 operation not supported",
                 "64 MiB to a closed peer: all written false, error true",
                 "dial unixgram //: ECONNREFUSED true ENOENT false", "dial unix /nonexistent/sock: ECONNREFUSED false ENOENT true",
                 "sendto an abstract name no one has: connection refused"):
        assert line in native.splitlines()


def test_datagram_queues_nobody_reads_are_bounded_as_linux_bounds_them():
    """dgram.py: an AF_UNIX receiver takes max_dgram_qlen + 1 datagrams, then a connected non-blocking sender gets
    EAGAIN (Go's write deadline ends it) and is woken by the read that makes room, a blocking sender waits in sendto
    until then; UDP drops what is past the receiver's buffer. As natively (before: every send succeeded, so the
    program's write loop never ended and the host held every datagram)."""
    prog = DATA / "go" / "dgramfull"
    native = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True, check=True,
                            timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["stdout"] == native
    for line in ("unixgram: 11 datagrams queued, then timeout true", "after one read, a write: <nil>",
                 "blocking sendto to a full queue waits", "after a read it went on: <nil>",
                 "udp: 1000 sends succeeded; some arrived true, some were dropped true"):
        assert line in native.splitlines()
