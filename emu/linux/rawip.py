"""Raw IPv4 sockets (socket(AF_INET, SOCK_RAW, protocol), which root may open): what Go's ListenIP and DialIP
("ip4:icmp", "ip:tcp", "ip4:47") do with one. sys_socket.py owns the socket; this module answers where a raw
socket differs from a UDP one.

Mirrored from Linux (net/ipv4/af_inet.c inet_create, raw.c, datagram.c ip4_datagram_connect, inet_getname):
- socket: protocol 0 is EPROTONOSUPPORT (inetsw has no wildcard for SOCK_RAW), below 0 or from IPPROTO_MAX
  (263) on EINVAL, a user other than root EPERM (no CAP_NET_RAW); the socket's local port is the protocol
  (inet_sport = htons(inet_num)), so getsockname answers 0.0.0.0:PROTO before a bind;
- bind (raw_bind): 0.0.0.0, a loopback address (127/8, the host's only interface), multicast or broadcast, else
  EADDRNOTAVAIL; EINVAL once connected; no address is ever in use (raw sockets share them) and binding twice
  is allowed;
- connect (ip4_datagram_connect): records the destination, and the source the route picks (127.0.0.1) when
  the socket is bound to no address; getpeername then answers ENOTCONN while the destination port is 0, as
  inet_getname does for any socket (Go's DialIP passes port 0, so RemoteAddr is the address dialed);
- send (raw_sendmsg): no destination and not connected is EDESTADDRREQ; more than 65535 bytes with the
  header Linux adds (20; none for IPPROTO_RAW, which includes its own) is EMSGSIZE; else the whole count.
Left out: receiving. A packet sent goes nowhere: Linux would deliver a copy (IP header included) to every raw
socket of its protocol on the host and hand it to the protocol itself (an ICMP echo request is answered);
here no raw socket ever has anything to read, so a read waits (Go's read deadline ends it). IP_HDRINCL and the
IP-level options are accepted and kept as any option is (sys_socket.py), and change nothing.
"""
from __future__ import annotations

from .netlink import LOOPBACK
from .sysabi import EADDRNOTAVAIL, EDESTADDRREQ, EINVAL, EMSGSIZE, EPERM, EPROTONOSUPPORT

SOCK_RAW = 3
IPPROTO_RAW, IPPROTO_MAX = 255, 263
IP_MAXPACKET, IPV4_HEADER = 0xFFFF, 20
ANY = bytes(4)


def check(proto: int, privileged: bool) -> int:
    """inet_create for SOCK_RAW: 0, or the negative errno socket(2) answers (proto as an unsigned int; EPERM
    without CAP_NET_RAW, which here only an effective uid 0 has: sys_cred.privileged)."""
    if proto >= IPPROTO_MAX:
        return -EINVAL
    if proto == 0:
        return -EPROTONOSUPPORT
    return 0 if privileged else -EPERM


def unbound(proto: int) -> tuple:
    """The local key of a new raw socket: no address, the protocol as its port."""
    return ("inet", ANY, proto, SOCK_RAW)


def _local_ok(ip: bytes) -> bool:
    return ip == ANY or ip[0] == 127 or 224 <= ip[0] <= 239 or ip == b"\xff" * 4


def bind(p, s, key: tuple) -> int:
    if s.remote is not None:
        return -EINVAL
    if not _local_ok(key[1]):
        return -EADDRNOTAVAIL
    s.local = ("inet", key[1], s.proto, SOCK_RAW)
    return 0


def connect(p, s, key: tuple) -> int:
    s.remote = key
    if s.local[1] == ANY:
        s.local = ("inet", LOOPBACK, s.proto, SOCK_RAW)
    return 0


def send(p, s, data: bytes, dest: tuple | None) -> int:
    if dest is None and s.remote is None:
        return -EDESTADDRREQ
    if len(data) + (0 if s.proto == IPPROTO_RAW else IPV4_HEADER) > IP_MAXPACKET:
        return -EMSGSIZE
    return len(data)
