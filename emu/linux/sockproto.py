"""Which protocol a new socket is, or the errno socket(2) answers: the checks of net/socket.c __sock_create and of
each family's create function, for the families preemu models (sys_socket.py makes the socket).

- AF_INET (net/ipv4/af_inet.c inet_create): a protocol from IPPROTO_MAX (263) on, or negative, is EINVAL; else
  inetsw's entry for the type: SOCK_STREAM takes TCP (0 means it) and MPTCP (mptcp.py), SOCK_DGRAM UDP (0 means
  it), SOCK_RAW any protocol but 0 (rawip.check: EPROTONOSUPPORT, EPERM without CAP_NET_RAW); anything else
  EPROTONOSUPPORT (UDP-Lite, SCTP and SOCK_SEQPACKET: a kernel without them);
- AF_UNIX (net/unix/af_unix.c unix_create): protocol 0 or PF_UNIX, SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET
  (SOCK_RAW, which Linux takes as SOCK_DGRAM, is EPROTONOSUPPORT here);
- AF_NETLINK: netlink.check; every other family, AF_INET6 among them, EAFNOSUPPORT (Go then uses IPv4 only).
"""
from __future__ import annotations

from . import mptcp, netlink, rawip
from .sockopt import IPPROTO_TCP, IPPROTO_UDP
from .sysabi import EAFNOSUPPORT, EINVAL, EPROTONOSUPPORT

AF_UNIX, AF_INET, AF_NETLINK = 1, 2, netlink.AF_NETLINK
SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 2, 5
#: socket type -> (the protocol 0 means, the protocols socket(AF_INET, type, proto) accepts): inetsw's entries
INET_PROTOCOLS = {SOCK_STREAM: (IPPROTO_TCP, {IPPROTO_TCP, mptcp.IPPROTO_MPTCP}), SOCK_DGRAM: (IPPROTO_UDP, {IPPROTO_UDP})}


def protocol(family: int, kind: int, proto: int, privileged: bool) -> int:
    """The new socket's protocol (SO_PROTOCOL), or a negative errno. proto is the register's int, unsigned."""
    proto &= 0xFFFFFFFF                                  # a negative int is out of range too
    if family == AF_NETLINK:
        return netlink.check(kind, proto) or proto
    if family == AF_UNIX:
        return proto if proto in (0, AF_UNIX) and kind in (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET) \
            else -EPROTONOSUPPORT
    if family != AF_INET:
        return -EAFNOSUPPORT
    if kind == rawip.SOCK_RAW:
        return rawip.check(proto, privileged) or proto
    default, allowed = INET_PROTOCOLS.get(kind, (0, ()))
    proto = proto or default
    return -EINVAL if proto >= rawip.IPPROTO_MAX else proto if proto in allowed else -EPROTONOSUPPORT

