"""Socket options: their numbers (include/uapi/asm-generic/socket.h, linux/in.h, linux/tcp.h), what getsockopt
answers for an option never set, and its errno for one preemu has no value for.

setsockopt keeps what it is given (sys_socket.Socket.opts) and getsockopt answers it back; an option never set
answers Linux's initial value (`default`): sock_init_data (SO_SNDBUF/SO_RCVBUF from wmem/rmem_default, 212,992; a
TCP socket's from tcp_wmem/tcp_rmem, 16,384 and 131,072, tcp_init_sock), inet_create (IP_TTL from ip_default_ttl,
64; IP_MULTICAST_TTL 1, IP_MULTICAST_LOOP 1) and tcp_init_sock with the sysctls' defaults (TCP_KEEPIDLE 7,200 s,
TCP_KEEPINTVL 75 s, TCP_KEEPCNT 9). An option without a value here is ENOPROTOOPT at a level the socket's protocol
has (sock_getsockopt, ip_getsockopt, do_tcp_getsockopt, udp_lib_getsockopt) and EOPNOTSUPP at any other
(ip_getsockopt for a level not SOL_IP; AF_UNIX's sock_no_getsockopt) (`unknown_errno`).
A set SO_RCVBUF or SO_SNDBUF is kept as Linux stores it, capped at rmem_max/wmem_max and doubled (`kept`); dgram.py
drops UDP past that. Left out: validation of other set values (ranges, boolean normalisation), SO_RCVBUFFORCE, and
options whose value follows the connection (TCP_MAXSEG, TCP_INFO, SO_PEERCRED).
"""
from __future__ import annotations

import struct

from .fds import SOCK_STREAM_BUF
from .sysabi import ENOPROTOOPT, EOPNOTSUPP

SOL_SOCKET, IPPROTO_IP, IPPROTO_TCP, IPPROTO_UDP = 1, 0, 6, 17
SO_REUSEADDR, SO_TYPE, SO_ERROR, SO_DONTROUTE, SO_BROADCAST, SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE = 2, 3, 4, 5, 6, 7, 8, 9
SO_OOBINLINE, SO_PRIORITY, SO_LINGER, SO_REUSEPORT, SO_PASSCRED, SO_RCVLOWAT, SO_SNDLOWAT = 10, 12, 13, 15, 16, 18, 19
SO_ACCEPTCONN, SO_PROTOCOL, SO_DOMAIN = 30, 38, 39
IP_TOS, IP_TTL, IP_MULTICAST_TTL, IP_MULTICAST_LOOP = 1, 2, 33, 34
TCP_NODELAY, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT = 1, 4, 5, 6, 18

#: (level, name) -> the initial value, for every socket
_SOCKET = {(SOL_SOCKET, n): v for n, v in ((SO_REUSEADDR, 0), (SO_DONTROUTE, 0), (SO_BROADCAST, 0), (SO_KEEPALIVE, 0),
                                           (SO_OOBINLINE, 0), (SO_PRIORITY, 0), (SO_LINGER, bytes(8)),
                                           (SO_REUSEPORT, 0), (SO_PASSCRED, 0), (SO_RCVLOWAT, 1), (SO_SNDLOWAT, 1))}
#: ... for AF_INET sockets
_INET = {(IPPROTO_IP, IP_TOS): 0, (IPPROTO_IP, IP_TTL): 64, (IPPROTO_IP, IP_MULTICAST_TTL): 1,
         (IPPROTO_IP, IP_MULTICAST_LOOP): 1}
#: ... for TCP sockets
_TCP = {(IPPROTO_TCP, TCP_NODELAY): 0, (IPPROTO_TCP, TCP_KEEPIDLE): 7200, (IPPROTO_TCP, TCP_KEEPINTVL): 75,
        (IPPROTO_TCP, TCP_KEEPCNT): 9, (IPPROTO_TCP, TCP_USER_TIMEOUT): 0}
TCP_SNDBUF, TCP_RCVBUF = 16_384, 131_072


#: net.core.rmem_max and wmem_max's defaults (a set SO_RCVBUF/SO_SNDBUF is capped there, then doubled); the least
#: each may be: SOCK_MIN_RCVBUF = TCP_SKB_MIN_TRUESIZE = 2048 + SKB_DATA_ALIGN(sizeof(struct sk_buff)), and
#: SOCK_MIN_SNDBUF twice that (include/net/sock.h)
BUFFER_MAX = SOCK_STREAM_BUF
BUFFER_MIN = {SO_RCVBUF: 2048 + 256, SO_SNDBUF: 2 * (2048 + 256)}


def kept(level: int, name: int, raw: bytes) -> bytes:
    """What setsockopt keeps of `raw`: SO_RCVBUF/SO_SNDBUF as sock_setsockopt stores them (capped at the max,
    doubled for the kernel's bookkeeping, at least the minimum: getsockopt answers that), anything else as given."""
    if level == SOL_SOCKET and name in (SO_RCVBUF, SO_SNDBUF) and len(raw) >= 4:
        v = min(struct.unpack("<I", raw[:4])[0], BUFFER_MAX)
        return struct.pack("<i", max(2 * v, BUFFER_MIN[name]))
    return raw


def default(level: int, name: int, inet: bool, tcp: bool) -> bytes | None:
    """The value getsockopt gives for an option never set on an AF_INET (`inet`), TCP (`tcp`) or other socket;
    None for one preemu has no value for."""
    if level == SOL_SOCKET and name in (SO_SNDBUF, SO_RCVBUF):
        v = (TCP_SNDBUF if name == SO_SNDBUF else TCP_RCVBUF) if tcp else SOCK_STREAM_BUF     # wmem/rmem_default
    else:
        v = _SOCKET.get((level, name))
        if v is None and inet:
            v = _INET.get((level, name))
        if v is None and tcp:
            v = _TCP.get((level, name))
    return None if v is None else v if isinstance(v, bytes) else struct.pack("<i", v)


def answer(s, level: int, name: int, inet: bool, tcp: bool) -> bytes | int:
    """getsockopt's value for socket s (sys_socket.Socket) as bytes, or a negative errno: what the socket itself
    says (SO_ERROR, cleared once read; SO_TYPE, SO_DOMAIN, SO_ACCEPTCONN, SO_PROTOCOL), what was set, the default."""
    if level == SOL_SOCKET and name in (SO_ERROR, SO_TYPE, SO_DOMAIN, SO_ACCEPTCONN, SO_PROTOCOL):
        v = {SO_ERROR: s.error, SO_TYPE: s.type, SO_DOMAIN: s.family, SO_ACCEPTCONN: int(s.listening),
             SO_PROTOCOL: s.proto}[name]
        if name == SO_ERROR:
            s.error = 0
        return struct.pack("<i", v)
    if (level, name) in s.opts:
        return s.opts[(level, name)]
    v = default(level, name, inet, tcp)
    return v if v is not None else -unknown_errno(level, inet, tcp)


def copy_out(p, raw: bytes, val: int, vlen_p: int) -> int:
    """An option's value to the caller's buffer, at most *vlen_p bytes, and the length written: 0."""
    room = struct.unpack("<I", p.read(vlen_p, 4))[0]
    p.write(val, raw[:room])
    p.write(vlen_p, struct.pack("<I", min(room, len(raw))))
    return 0


def unknown_errno(level: int, inet: bool, tcp: bool) -> int:
    """getsockopt's errno for an option without a value: ENOPROTOOPT at a level the socket's protocol has, else
    EOPNOTSUPP."""
    own = {SOL_SOCKET} | ({IPPROTO_IP, IPPROTO_TCP if tcp else IPPROTO_UDP} if inet else set())
    return ENOPROTOOPT if level in own else EOPNOTSUPP
