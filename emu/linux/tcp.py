"""A loopback TCP connection's ends after the handshake: FIN, RST, shutdown and the errors they leave, as
Linux's net/ipv4 gives them. sys_socket.py owns the sockets; this module is what differs between a TCP
stream and an AF_UNIX one (which stays fds.PipeState's pipe semantics).

Mirrored (net/ipv4/tcp.c, tcp_input.c, net/core/stream.c, af_inet.c):
- close (tcp_close): with unread data, or SO_LINGER on with a zero timeout, the connection is reset (the
  peer gets RST); else a FIN is sent (unless writing was shut already) and the socket lives on as an orphan.
  Data that then reaches the orphan is answered with RST (tcp_rcv_state_process, "TCP_MIB_ABORTONDATA"):
  so the peer's first write after the close succeeds and the RST comes back at once over loopback;
- RST received (tcp_reset): sk_err = EPIPE in CLOSE_WAIT (the peer's FIN came first), else ECONNRESET;
  the socket is closed for both directions (tcp_done: SHUTDOWN_MASK);
- read (tcp_recvmsg_locked): queued data first; then 0 once the peer's FIN arrived (SOCK_DONE), else the
  pending error once (sock_error clears it), then 0 once reading is shut; else wait (or EAGAIN);
- write (tcp_sendmsg_locked, sk_stream_error): with an error pending, that error (cleared); with writing
  shut, EPIPE and SIGPIPE unless MSG_NOSIGNAL; else queued at the peer, as much as its receive queue has room
  for (fds.SOCK_STREAM_BUF bytes: Linux's loopback autotunes its buffers to megabytes), the rest waiting for room
  or, O_NONBLOCK, EAGAIN;
- shutdown (inet_shutdown, tcp_shutdown): SHUT_WR sends FIN; SHUT_RD only marks reading shut (the peer's
  writes still succeed, queued data can still be read); on a closed (reset) socket ENOTCONN;
- poll (tcp_poll): EPOLLHUP when both directions are shut or the socket is closed; EPOLLIN|EPOLLRDHUP once
  reading is shut; EPOLLIN with data; EPOLLOUT while the peer's queue has room (also with writing shut, as
  tcp_poll says); EPOLLERR while an error is pending;
- a listener closed with connections never accepted resets each (inet_csk_listen_stop -> tcp_disconnect).
Left out: the state machine's timers (TIME_WAIT, FIN_WAIT2 timeout, keepalive probes, retransmission),
windows (the bound is one fixed size), urgent data, a full accept queue dropping SYNs (the backlog is unbounded).
"""
from __future__ import annotations

import struct

from . import fds as F
from .sockopt import SO_LINGER, SOL_SOCKET
from .sysabi import ECONNRESET, ENOTCONN, EPIPE


def readiness(s) -> int:
    """tcp_poll for a connected socket."""
    mask = F.EPOLLOUT if s.snd_shut or s.reset or s.peer.rx.writable() else 0
    if (s.rcv_shut and s.snd_shut) or s.reset:
        mask |= F.EPOLLHUP
    if s.rcv_shut:
        mask |= F.EPOLLIN | F.EPOLLRDHUP
    if s.rx.buf:
        mask |= F.EPOLLIN
    if s.error:
        mask |= F.EPOLLERR
    return mask


def read_now(p, s, buf: int, n: int) -> int | None:
    """What a read of s returns now (bytes read, 0, -errno), or None when it would wait."""
    data = take_now(s, n)
    if not isinstance(data, bytes):
        return data
    if data:
        p.write(buf, data)
    return len(data)


def take_now(s, n: int) -> bytes | int | None:
    """What a read of up to n bytes of s takes now: bytes (b"" once the FIN came or reading is shut), the
    pending error (-errno, cleared), or None when it would wait (a read and tcp_splice_read alike)."""
    if s.rx.buf:
        return s.rx.take(n)
    if s.fin:
        return b""
    if s.error:
        e, s.error = s.error, 0
        return -e
    if s.rcv_shut:
        return b""
    return None


def send(p, s, data: bytes, sigpipe: bool, nonblock: bool = False) -> int:
    """write/send on a connected socket: as much as the peer's receive queue has room for (fds.SOCK_STREAM_BUF),
    the rest waiting for room (sk_stream_wait_memory; a write already begun returns its count when the connection
    breaks), or with `nonblock` what went in, EAGAIN if nothing did."""
    e = _broken(p, p.cur, s, sigpipe)
    if e is not None:
        return e
    peer = s.peer
    if peer.orphan:                   # the data reaches a closed socket: it answers RST, which ends the write once
        receive_rst(s)                # the first segments went (tcp_sendmsg_locked: copied, then sk_err): at most
        peer.reset = True             # a receive queue's worth, so a 1 GB writev returns short and the next fails
        p.wake_pipe_readers()
        p.wake_pollers()
        return min(len(data), F.SOCK_STREAM_BUF)
    return F.queue_write(p, peer.rx, data, sigpipe, nonblock, lambda t: _broken(p, t, s, sigpipe))


def _broken(p, t, s, sigpipe: bool) -> int | None:
    """sk_stream_error for a write of s by thread t: the pending error (cleared), or EPIPE (and SIGPIPE unless
    MSG_NOSIGNAL) once writing is shut or the connection reset; None while it can be written."""
    if not (s.error or s.snd_shut):
        return None
    e = s.error or EPIPE
    s.error = 0
    if e == EPIPE and sigpipe:
        from .sigframe import SI_USER
        p.send_signal(t, t.tid, F.SIGPIPE, SI_USER)
    return -e


def receive_rst(s) -> None:
    """tcp_reset on s."""
    if s.reset:
        return
    s.error = EPIPE if s.fin and not s.snd_shut else ECONNRESET
    s.reset = s.rcv_shut = s.snd_shut = True
    s.bump()                          # sk_error_report, sk_state_change: every waiter wakes, whatever its key


def receive_fin(s) -> None:
    """tcp_fin on s: the peer sends no more (SOCK_DONE, RCV_SHUTDOWN)."""
    if s.reset or s.fin:
        return
    s.fin = s.rcv_shut = True
    s.bump()


def _linger_zero(s) -> bool:
    raw = s.opts.get((SOL_SOCKET, SO_LINGER), b"")
    if len(raw) < 8:
        return False
    onoff, linger = struct.unpack("<ii", raw[:8])
    return onoff != 0 and linger == 0


def close(s) -> None:
    """The last descriptor of a connected socket closed (tcp_close); the caller wakes the waiters."""
    s.orphan = True
    if s.reset:
        return
    if s.rx.buf or _linger_zero(s):
        s.reset = True
        receive_rst(s.peer)
        return
    if not s.snd_shut:
        s.snd_shut = True
        receive_fin(s.peer)
    s.rcv_shut = True


def forget(child) -> None:
    """A connection a closing listener never accepted (inet_child_forget -> tcp_disconnect): reset."""
    child.orphan = child.reset = True
    receive_rst(child.peer)


def shutdown(p, s, how: int) -> int:
    """inet_shutdown: how is SHUT_RD (0), SHUT_WR (1) or SHUT_RDWR (2)."""
    if how in (1, 2) and not s.snd_shut and not s.reset:
        s.snd_shut = True
        receive_fin(s.peer)
    if how in (0, 2):
        s.rcv_shut = True
    s.bump()
    p.wake_pipe_readers()
    p.wake_pollers()
    return -ENOTCONN if s.reset else 0
