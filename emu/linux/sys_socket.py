"""Sockets inside the process: socketpair, AF_UNIX streams and loopback TCP and UDP over AF_INET.
Nothing leaves the emulated process: an address is a key in the process's own namespace (Net).

Semantics from socket(2), bind(2), listen(2), accept(2), connect(2), getsockname(2), getsockopt(2),
shutdown(2), socketpair(2), recvfrom(2)/sendto(2) and unix(7)/tcp(7)/udp(7):
- a stream connection is two byte queues, one each way, read and written as a pipe's (fds.PipeState:
  a read waits for data, or answers EAGAIN with O_NONBLOCK; EOF once the peer closed or shut down its
  writing side; an AF_UNIX write with no reader left is EPIPE); a TCP connection's FIN, RST, orphans and
  shutdown are tcp.py's (the first write after the peer closed succeeds, the RST it draws fails the next);
- a destination 0.0.0.0 is the local host (to_local_host); an AF_UNIX socketpair may be of datagrams;
- AF_UNIX SOCK_SEQPACKET is a stream whose PipeState keeps each write's length: a read takes one record,
  cut to the buffer (unix_seqpacket_recvmsg; the MSG_TRUNC flag is not reported);
- connect to a listening address queues the server's end on the listener's backlog at once (loopback:
  the handshake needs no time); a non-blocking TCP connect answers EINPROGRESS as Linux does and is
  writable at once with SO_ERROR 0, an AF_UNIX one succeeds; no listener is ECONNREFUSED;
- accept4 takes the oldest queued connection (EAGAIN when none and O_NONBLOCK, else it waits);
- a datagram goes whole to the socket bound at its destination (dropped if none, as UDP does), with
  the sender's address, which an unbound sender gets from the ephemeral range (32768 upwards, in order);
- readiness for epoll: EPOLLIN with data, a queued connection or a closed peer; EPOLLOUT once connected;
  EPOLLRDHUP/EPOLLHUP as tcp_poll gives them.
Options are accepted and kept (SO_ERROR, SO_TYPE, SO_DOMAIN, SO_PROTOCOL and SO_ACCEPTCONN answer from the
socket; one never set, Linux's initial value: sockopt.py). A new socket's protocol is sockproto.py's; MPTCP
is mptcp.py's, SOCK_RAW rawip.py's, AF_NETLINK netlink.py's.
splice, sendfile and copy_file_range are sys_splice.py's; sendmsg/recvmsg
sys_msg.py's. An AF_UNIX path in /tmp is a socket file there (unixfile.py); elsewhere the path is a key of
the namespace, gone when the socket closes. A stream's bytes in flight are bounded (fds.SOCK_STREAM_BUF each way:
a writer waits, or gets EAGAIN).
A datagram receiver's queue is bounded as Linux bounds it (dgram.py: UDP drops past the receive buffer, an AF_UNIX
sender waits). Left out: AF_INET6 (EAFNOSUPPORT: Go then uses IPv4 only), out-of-band data and a bounded accept
queue.
"""
from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass, field

from . import fds as F
from . import dgram, mptcp, netlink, rawip, sockopt, sockproto, sys_cred, tcp, unixfile
from .sysabi import (
    BLOCK, EADDRINUSE, EADDRNOTAVAIL, EAFNOSUPPORT, EAGAIN, EBADF, ECONNREFUSED, EDESTADDRREQ, EINPROGRESS, EINVAL,
    EISCONN, ENOTCONN, ENOTSOCK, EOPNOTSUPP, EPROTONOSUPPORT, EPROTOTYPE)
from .threads import Wait

AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, netlink.AF_NETLINK
SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 2, rawip.SOCK_RAW, 5, 0xF
DATAGRAM = (SOCK_DGRAM, SOCK_RAW)       # messages kept whole, each with its sender (raw IP: rawip.py, netlink.py)
SOCK_NONBLOCK, SOCK_CLOEXEC = 0o4000, F.O_CLOEXEC
SHUT_RD, SHUT_WR, SHUT_RDWR = 0, 1, 2
EPHEMERAL_FIRST = 32768
ANY, LOOPBACK = bytes(4), netlink.LOOPBACK
UNNAMED = ("unix", "")                # an AF_UNIX socket without an address (a socketpair's ends)


@dataclass
class Net:
    """The process's socket namespace: bound addresses -> sockets, and the next ephemeral port."""

    bound: dict = field(default_factory=dict)       # ("inet", ip, port, type) | ("unix", path) -> Socket
    next_port: int = EPHEMERAL_FIRST
    next_autobind: int = 0                          # unix_autobind's ordernum (Linux starts it at random)

    def find(self, key: tuple):
        """The socket bound at key, or at the wildcard address 0.0.0.0 of its port (__inet_lookup_listener)."""
        s = self.bound.get(key)
        if s is None and key[0] == "inet":
            s = self.bound.get(("inet", ANY, key[2], key[3]))
        return s

    def autobind(self) -> tuple:
        """unix_autobind (net/unix/af_unix.c): the next free abstract name of five hex digits, "@%05x"."""
        while True:
            self.next_autobind = (self.next_autobind + 1) & 0xFFFFF
            key = ("unix", f"@{self.next_autobind:05x}")
            if key not in self.bound:
                return key

    def ephemeral(self, ip: bytes, typ: int) -> int:
        while ("inet", ip, self.next_port, typ) in self.bound:
            self.next_port += 1
        port, self.next_port = self.next_port, self.next_port + 1
        return port


@dataclass(eq=False)
class Socket:
    net: Net
    family: int
    type: int
    flags: int = F.O_RDWR
    proto: int = 0                    # SO_PROTOCOL: IPPROTO_TCP, _UDP, _MPTCP (mptcp.py), a raw socket's (rawip.py)
    mptcp_fallback: bool = False      # an MPTCP connection that fell back to TCP (mptcp.py)
    local: tuple | None = None        # namespace key once bound
    remote: tuple | None = None
    rx: F.PipeState | None = None      # stream, connected: bytes from the peer
    tx: F.PipeState | None = None      # stream, connected: the peer's rx
    listening: bool = False
    backlog: deque = field(default_factory=deque)
    dgrams: deque = field(default_factory=deque)   # datagram: (bytes, sender key)
    peer_waiters: list = field(default_factory=list)   # AF_UNIX datagram: connected senders EAGAIN'd (dgram.py)
    opts: dict = field(default_factory=dict)
    own_gen: int = 0
    error: int = 0                    # a pending error (SO_ERROR): ECONNREFUSED after a datagram found no one,
                                      # ECONNRESET/EPIPE after a TCP reset (tcp.py)
    peer: "Socket | None" = None       # a connected TCP socket's other end, and its state (tcp.py):
    fin: bool = False                 # the peer's FIN arrived (SOCK_DONE)
    rcv_shut: bool = False            # RCV_SHUTDOWN: the FIN, SHUT_RD, a reset or a close
    snd_shut: bool = False            # SEND_SHUTDOWN: SHUT_WR, a reset or a close
    reset: bool = False               # TCP_CLOSE after an RST, sent or received
    orphan: bool = False              # every descriptor closed: data reaching it is answered with RST
    other: "Socket | None" = None      # a connected stream's other end (AF_UNIX too)
    rights: deque = field(default_factory=deque)   # ancillary data received, not yet taken (sys_msg.py):
                                                   # (objects passed by SCM_RIGHTS, SCM_CREDENTIALS or None)
    node: object = None               # bound to a socket file in /tmp (unixfile.py): its tmpfs.Node

    @property
    def tcp(self) -> bool:
        """A connected TCP socket: tcp.py's semantics, not the pipe's an AF_UNIX stream has."""
        return self.peer is not None

    @property
    def state(self) -> F.PipeState:
        """What a stream socket reads, as fds.read_stream and Process.wake_pipe_readers see a pipe's end."""
        return self.rx

    def wakeups(self, events: int) -> int:
        """EPOLLET: wakeups keyed EPOLLIN (data, EOF, a connection, a datagram) and EPOLLOUT (room, the peer gone)."""
        if self.rx is None:
            return F.wakeups(events, self.own_gen, self.own_gen)
        return F.wakeups(events, self.own_gen + self.rx.in_gen, self.own_gen + self.tx.out_gen)

    def bump(self) -> None:
        self.own_gen += 1

    def readiness(self) -> int:
        if self.listening:
            return F.EPOLLIN if self.backlog else 0
        if self.type in DATAGRAM:
            full = self.family == AF_UNIX and self.other is not None and dgram.unix_full(self.other, self)
            return (F.EPOLLIN if self.dgrams else 0) | (0 if full else F.EPOLLOUT) | (F.EPOLLERR if self.error else 0)
        if self.rx is None:
            return F.EPOLLOUT | F.EPOLLHUP if self.remote is None and self.local is None else 0
        if self.tcp:
            return tcp.readiness(self)
        peer_done = not self.rx.writers or not self.rx.readers      # the peer is done, or we shut reading
        out = (F.EPOLLIN if self.rx.buf or peer_done else 0) | (F.EPOLLRDHUP if peer_done else 0)
        if self.tx.readers and self.tx.writers and self.tx.writable():
            out |= F.EPOLLOUT
        if peer_done and not self.tx.writers:
            out |= F.EPOLLHUP
        return out

    def read_now(self, p, buf: int, n: int) -> int | None:
        """What a read returns now, or None when it would wait (fds.read_stream, Process.wake_pipe_readers)."""
        return tcp.read_now(p, self, buf, n) if self.tcp else F.pipe_read_now(p, self.rx, buf, n)

    def on_close(self) -> None:
        if self.local is not None and self.net.bound.get(self.local) is self:
            del self.net.bound[self.local]                  # the address is free again
        unixfile.closed(self)                               # a socket file stays, refusing connections
        while self.backlog:                                 # connections never accepted are reset
            c = self.backlog.popleft()                      # (inet_csk_listen_stop, unix_release_sock)
            tcp.forget(c) if c.tcp else c.on_close()
        self.bump()
        if self.tcp:
            tcp.close(self)
        elif self.rx is not None:
            self.rx.readers = 0           # no one reads what the peer sends any more: its writes are EPIPE
            self.rx.out_gen += 1
            self.rx.in_gen += 1
            self.shutdown_write()

    def shutdown_write(self) -> None:
        if self.tx is not None and self.tx.writers:
            self.tx.writers -= 1          # the peer reads to EOF
            self.tx.in_gen += 1


def connect_pair(a: Socket, b: Socket) -> None:
    """Two stream sockets joined: each one's tx is the other's rx; a SOCK_SEQPACKET pair keeps each write's
    length, so a read takes one record (fds.PipeState.records)."""
    ab, ba = (F.PipeState(capacity=F.SOCK_STREAM_BUF, slots=None) for _ in range(2))
    if a.type == SOCK_SEQPACKET:
        ab.records, ba.records = deque(), deque()
    a.tx, b.rx = ab, ab
    b.tx, a.rx = ba, ba
    a.other, b.other = b, a


# --- addresses -------------------------------------------------------------------------------
def read_addr(p, s: Socket, addr: int, alen: int) -> tuple | int:
    """The namespace key of a sockaddr, or a negative errno."""
    if alen < 2:
        return -EINVAL
    if s.family == AF_NETLINK:
        return netlink.read_addr(p.read(addr, min(alen, netlink.SOCKADDR_NL_LEN)))
    fam = struct.unpack("<H", p.read(addr, 2))[0]
    if fam != s.family:
        return -EAFNOSUPPORT if s.family == AF_INET else -EINVAL
    if fam == AF_INET:
        if alen < 16:
            return -EINVAL
        port, ip = struct.unpack(">H4s", p.read(addr + 2, 6))
        return ("inet", ip, port, s.type)
    raw = p.read(addr + 2, min(alen - 2, 108))
    if raw[:1] == b"\0":                                    # an abstract name (unix(7)): every byte counts
        return ("unix", "@" + raw[1:].decode("utf-8", "replace"))
    return ("unix", raw.split(b"\0", 1)[0].decode("utf-8", "replace"))


def write_addr(p, key: tuple | None, family: int, addr: int, alen_p: int) -> None:
    """Store a sockaddr (and its length) where the caller asked for one: at most *alen_p bytes."""
    if not addr or not alen_p:
        return
    if family == AF_INET:
        _, ip, port, _t = key if key is not None else ("inet", bytes(4), 0, 0)
        raw = struct.pack("<H", AF_INET) + struct.pack(">H4s", port, ip) + bytes(8)
    elif family == AF_NETLINK:
        raw = netlink.sockaddr(key)
    else:
        path = key[1].encode() if key is not None else b""
        raw = struct.pack("<H", AF_UNIX) + path + (b"\0" if path else b"")
    room = struct.unpack("<I", p.read(alen_p, 4))[0]
    p.write(addr, raw[:room])
    p.write(alen_p, struct.pack("<I", len(raw)))


def write_sender(p, key: tuple | None, family: int, addr: int, alen_p: int) -> None:
    """recvfrom/recvmsg's source address: an AF_UNIX sender with no address (unbound, a socketpair's) gives none,
    msg_namelen 0 (unix_copy_addr), which Go reads as a nil address; anything else as write_addr."""
    if family == AF_UNIX and (key is None or key == UNNAMED):
        if addr and alen_p:
            p.write(alen_p, struct.pack("<I", 0))
        return
    write_addr(p, key, family, addr, alen_p)


def to_local_host(key: tuple) -> tuple:
    """A destination 0.0.0.0 is the local host: ip_route_output_key_hash_rcu routes an unspecified daddr to
    the loopback (so Go's Dial(":PORT") connects to a local listener)."""
    return ("inet", LOOPBACK) + key[2:] if key[0] == "inet" and key[1] == ANY else key


def _own(s: Socket):
    """The module a netlink or raw IP socket's bind, connect and send are (netlink.py, rawip.py), or None."""
    return netlink if s.family == AF_NETLINK else rawip if s.type == SOCK_RAW else None


def _sock(p, fd: int) -> Socket | int:
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    return obj if isinstance(obj, Socket) else -ENOTSOCK


def find(p, s: Socket, key: tuple):
    """The socket at a destination key: an AF_UNIX path in /tmp through its file (unixfile.lookup: -ENOENT,
    -ECONNREFUSED), else the namespace's (Net.find); None when no one is bound at an AF_INET key, and for an AF_UNIX
    one the errno unix_find_other gives (unixfile.missing: ENOENT, ECONNREFUSED)."""
    if key[0] == "unix" and not key[1].startswith("@"):
        found = unixfile.lookup(p, key[1])
        if found is not None:
            return found
    got = s.net.find(key)
    return -unixfile.missing(p, key[1]) if got is None and key[0] == "unix" else got


def _autobind(p, s: Socket) -> None:
    if s.local is None and s.family == AF_INET:
        s.local = ("inet", LOOPBACK, s.net.ephemeral(LOOPBACK, s.type), s.type)
        s.net.bound[s.local] = s


# --- the syscalls ----------------------------------------------------------------------------
def sys_socket(p, t, family, typ, proto, *_):
    r = sockproto.protocol(family, typ & SOCK_TYPE_MASK, proto, sys_cred.privileged(p))
    if isinstance(r, int):
        return r
    kind, proto = r
    s = Socket(p.net, family, kind, F.O_RDWR | (typ & SOCK_NONBLOCK), proto=proto)
    if family == AF_INET and kind == SOCK_RAW:
        s.local = rawip.unbound(proto)
    return p.fds.install(s, cloexec=bool(typ & SOCK_CLOEXEC))


def sys_socketpair(p, t, family, typ, proto, sv, *_):
    if family != AF_UNIX:
        return -EOPNOTSUPP
    kind = typ & SOCK_TYPE_MASK
    if kind not in (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET):
        return -EPROTONOSUPPORT
    flags = F.O_RDWR | (typ & SOCK_NONBLOCK)
    a, b = Socket(p.net, AF_UNIX, kind, flags), Socket(p.net, AF_UNIX, kind, flags)
    if kind != SOCK_DGRAM:
        connect_pair(a, b)
    else:
        a.other, b.other = b, a                     # each one's datagrams go to the other
    a.local = a.remote = b.local = b.remote = UNNAMED
    cloexec = bool(typ & SOCK_CLOEXEC)
    p.write(sv, struct.pack("<ii", p.fds.install(a, cloexec=cloexec), p.fds.install(b, cloexec=cloexec)))
    return 0


def _sock_and_addr(p, fd: int, addr: int, alen: int) -> tuple[Socket, tuple] | int:
    """The socket behind fd and the namespace key of the sockaddr the call names, or a negative errno."""
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    key = read_addr(p, s, addr, alen)
    return key if isinstance(key, int) else (s, key)


def sys_bind(p, t, fd, addr, alen, *_):
    r = _sock_and_addr(p, fd, addr, alen)
    if isinstance(r, int):
        return r
    s, key = r
    if (own := _own(s)) is not None:
        return own.bind(p, s, key)
    if s.local is not None:
        return -EINVAL
    if key == UNNAMED and alen == 2:                    # sizeof(sa_family_t) alone: unix_bind autobinds
        key = s.net.autobind()
    if key[0] == "unix" and not key[1].startswith("@"):
        made = unixfile.bind(p, s, key[1])          # a socket file in /tmp; None: elsewhere, a key only
        if made is not None:
            if made == 0:
                s.local = key
            return made
    if key[0] == "inet" and key[1] not in (ANY, LOOPBACK) and key[1][0] != 127:
        return -EADDRNOTAVAIL                           # the only interface is loopback
    if key[0] == "inet" and key[2] == 0:
        key = ("inet", key[1], s.net.ephemeral(key[1], s.type), s.type)
    if key in s.net.bound:
        return -EADDRINUSE
    s.local = key
    s.net.bound[key] = s
    return 0


def sys_listen(p, t, fd, backlog, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    if s.type not in (SOCK_STREAM, SOCK_SEQPACKET):
        return -EOPNOTSUPP
    _autobind(p, s)
    s.listening = True
    return 0


def sys_connect(p, t, fd, addr, alen, *_):
    r = _sock_and_addr(p, fd, addr, alen)
    if isinstance(r, int):
        return r
    s, key = r
    key = to_local_host(key)
    if (own := _own(s)) is not None:
        return own.connect(p, s, key)
    if s.type == SOCK_DGRAM:
        if s.family == AF_UNIX:                     # unix_dgram_connect: the peer must be there, of this type
            other = find(p, s, key)
            if isinstance(other, int):
                return other
            if other.type != s.type:
                return -EPROTOTYPE
            s.other = other                         # unix_peer(sk): where its datagrams go
        _autobind(p, s)
        s.remote = key
        return 0
    if s.rx is not None:
        return -EISCONN
    server = find(p, s, key)
    if isinstance(server, int):
        return server
    if server is None or not server.listening:
        return -ECONNREFUSED
    _autobind(p, s)
    if server.type != s.type:
        return -EPROTOTYPE                           # unix_find_other: a listener of another type
    peer = Socket(s.net, s.family, s.type, F.O_RDWR, local=server.local, remote=s.local, proto=server.proto)
    if s.family == AF_INET:
        peer.proto, s.mptcp_fallback = mptcp.accepted_proto(s, server), mptcp.fell_back(s, server)
    connect_pair(s, peer)
    if s.family == AF_INET:
        s.peer, peer.peer = peer, s
    s.remote = key
    server.backlog.append(peer)
    server.bump()
    p.wake_socket_waiters()
    p.wake_pollers()
    if s.family == AF_INET and s.flags & F.O_NONBLOCK:
        return -EINPROGRESS               # tcp_v4_connect: SYN sent; loopback answers at once
    return 0


def sys_accept4(p, t, fd, addr, alen_p, flags, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    if not s.listening:
        return -EINVAL
    if not s.backlog:
        if s.flags & F.O_NONBLOCK:
            return -EAGAIN
        p.block(t, Wait("accept", None, 0, restart=True, fd=fd, addr=addr, addrlen=alen_p, flags=flags))
        return BLOCK
    return finish_accept(p, s, addr, alen_p, flags)


def finish_accept(p, s: Socket, addr: int, alen_p: int, flags: int) -> int:
    c = s.backlog.popleft()
    s.bump()
    c.flags = F.O_RDWR | (flags & SOCK_NONBLOCK)
    write_addr(p, c.remote, s.family, addr, alen_p)
    return p.fds.install(c, cloexec=bool(flags & SOCK_CLOEXEC))


def sys_accept(p, t, fd, addr, alen_p, *_):
    return sys_accept4(p, t, fd, addr, alen_p, 0)


def sys_getsockname(p, t, fd, addr, alen_p, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    write_addr(p, s.local, s.family, addr, alen_p)
    return 0


def sys_getpeername(p, t, fd, addr, alen_p, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    if s.remote is None or (s.family == AF_INET and s.remote[2] == 0):
        return -ENOTCONN                  # inet_getname: no destination port (a raw socket's connect gives none)
    write_addr(p, s.remote, s.family, addr, alen_p)
    return 0


def sys_setsockopt(p, t, fd, level, name, val, vlen, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    s.opts[(level, name)] = sockopt.kept(level, name, bytes(p.read(val, vlen)) if val and vlen else b"")
    return 0


def _kinds(s: Socket) -> tuple[bool, bool]:
    """(AF_INET, TCP): what decides the options a socket has (sockopt.py)."""
    return s.family == AF_INET, s.family == AF_INET and s.type == SOCK_STREAM


def sys_getsockopt(p, t, fd, level, name, val, vlen_p, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    raw = mptcp.getsockopt(s, name) if level == mptcp.SOL_MPTCP else sockopt.answer(s, level, name, *_kinds(s))
    return raw if isinstance(raw, int) else sockopt.copy_out(p, raw, val, vlen_p)


def sys_shutdown(p, t, fd, how, *_):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    if s.rx is None:
        return -ENOTCONN
    if how not in (SHUT_RD, SHUT_WR, SHUT_RDWR):
        return -EINVAL
    if s.tcp:
        return tcp.shutdown(p, s, how)
    if how in (SHUT_WR, SHUT_RDWR):
        s.shutdown_write()
    if how in (SHUT_RD, SHUT_RDWR):
        s.rx.readers = 0                  # reads return 0 (RCV_SHUTDOWN); the peer's writes are EPIPE
        s.rx.out_gen += 1
        s.rx.in_gen += 1
    p.wake_pipe_readers()
    p.wake_pollers()
    return 0


MSG_TRUNC, MSG_DONTWAIT, MSG_NOSIGNAL = 0x20, 0x40, 0x4000


def send(p, s: Socket, data: bytes, dest: tuple | None, flags: int = 0) -> int:
    """write/sendto on a socket: a stream's bytes to the peer (EPIPE and SIGPIPE once it reads no more, no
    signal with MSG_NOSIGNAL), a datagram to its destination."""
    if (own := _own(s)) is not None:
        return own.send(p, s, data, dest)
    nonblock = bool(s.flags & F.O_NONBLOCK or flags & MSG_DONTWAIT)
    if s.type == SOCK_DGRAM:
        dest = dest or s.remote
        if dest is None:
            return -EDESTADDRREQ
        _autobind(p, s)
        target = s.other if s.other is not None and dest == s.remote else find(p, s, dest)
        if isinstance(target, int):
            return target                           # unix_dgram_sendmsg: ENOENT, ECONNREFUSED for the path
        if target is not None and target.type == SOCK_DGRAM:
            return dgram.deliver(p, s, target, data, s.family == AF_UNIX, nonblock)
        if target is None and s.family == AF_INET and dest == s.remote:
            # no one bound there: the loopback's ICMP port unreachable comes back at once, and a connected
            # socket's next receive fails with ECONNREFUSED (net/ipv4/udp.c __udp4_lib_err sets sk_err; an
            # unconnected one ignores it). A DNS lookup against a nameserver that is not there fails at once.
            s.error = ECONNREFUSED
            s.bump()
            p.wake_socket_waiters()
            p.wake_pollers()
        return len(data)
    if s.tcp:
        return tcp.send(p, s, data, not flags & MSG_NOSIGNAL, nonblock)
    if s.tx is None:
        return -ENOTCONN
    return F.write_stream(p, s.tx, data, not flags & MSG_NOSIGNAL, nonblock)


def recv(p, t, s: Socket, buf: int, n: int, addr: int = 0, alen_p: int = 0, flags: int = 0):
    """read/recvfrom on a socket: a stream as a pipe's read end; a datagram whole, truncated to n bytes and
    the rest discarded, its length n, or with MSG_TRUNC its real length (udp(7), unix(7))."""
    if s.type in DATAGRAM:
        if s.error:                       # sock_error: reported once, then cleared
            e, s.error = s.error, 0
            return -e
        if not s.dgrams:
            if s.flags & F.O_NONBLOCK:
                return -EAGAIN
            p.block(t, Wait("dgram", None, 0, restart=True, pipe=s, buf=buf, count=n, addr=addr, addrlen=alen_p,
                            flags=flags))
            return BLOCK
        r = finish_recv(p, s, buf, n, addr, alen_p, flags)
        if s.family == AF_UNIX:
            p.wake_socket_waiters()       # a sender waiting for room (dgram.py)
        return r
    if s.rx is None:
        return -ENOTCONN
    r = F.read_stream(p, t, s, buf, n)
    if r is not BLOCK and r > 0:
        if addr:
            write_sender(p, s.remote, s.family, addr, alen_p)
        p.wake_pollers()
    return r


def finish_recv(p, s: Socket, buf: int, n: int, addr: int, alen_p: int, flags: int = 0) -> int:
    data, sender = s.dgrams.popleft()
    s.bump()
    if s.peer_waiters:
        dgram.room_made(p, s)
    p.write(buf, data[:n])
    write_sender(p, sender, s.family, addr, alen_p)
    return len(data) if flags & MSG_TRUNC else min(n, len(data))


def sys_sendto(p, t, fd, buf, n, flags, addr, alen):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    dest = None
    if addr:
        dest = read_addr(p, s, addr, alen)
        if isinstance(dest, int):
            return dest
        dest = to_local_host(dest)
    return send(p, s, p.read(buf, n), dest, flags)


def sys_recvfrom(p, t, fd, buf, n, flags, addr, alen_p):
    s = _sock(p, fd)
    if isinstance(s, int):
        return s
    return recv(p, t, s, buf, n, addr, alen_p, flags)




#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    41: ("socket", sys_socket), 42: ("connect", sys_connect), 43: ("accept", sys_accept),
    44: ("sendto", sys_sendto), 45: ("recvfrom", sys_recvfrom), 48: ("shutdown", sys_shutdown),
    49: ("bind", sys_bind), 50: ("listen", sys_listen), 51: ("getsockname", sys_getsockname),
    52: ("getpeername", sys_getpeername), 53: ("socketpair", sys_socketpair), 54: ("setsockopt", sys_setsockopt),
    55: ("getsockopt", sys_getsockopt), 288: ("accept4", sys_accept4),
}
