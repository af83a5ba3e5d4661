"""Which protocol a new socket is, or the errno socket(2) answers: the checks of net/socket.c __sock_create and of
each family's create function, for the families preemu models (sys_socket.py makes the socket).

- AF_INET (net/ipv4/af_inet.c inet_create): a protocol from IPPROTO_MAX (263) on, or negative, is EINVAL; else
  inetsw's entries for the type: SOCK_STREAM takes TCP (0 means it) and MPTCP (mptcp.py), SOCK_DGRAM UDP (0 means
  it), SOCK_RAW any protocol but 0 (rawip.check: EPROTONOSUPPORT, EPERM without CAP_NET_RAW); another protocol
  is EPROTONOSUPPORT (SCTP and UDP-Lite too: a kernel without them; the host has UDP-Lite), a type with no entry
  (SOCK_SEQPACKET, SOCK_RDM) ESOCKTNOSUPPORT;
- AF_UNIX (net/unix/af_unix.c unix_create): protocol 0 or PF_UNIX, else EPROTONOSUPPORT; SOCK_STREAM, SOCK_DGRAM,
  SOCK_SEQPACKET, and SOCK_RAW made a SOCK_DGRAM; another type ESOCKTNOSUPPORT;
- AF_NETLINK: netlink.check; every other family, AF_INET6 among them, EAFNOSUPPORT (Go then uses IPv4 only).
"""
from __future__ import annotations

from . import mptcp, netlink, rawip
from .sockopt import IPPROTO_TCP, IPPROTO_UDP
from .sysabi import EAFNOSUPPORT, EINVAL, EPROTONOSUPPORT, ESOCKTNOSUPPORT

AF_UNIX, AF_INET, AF_NETLINK = 1, 2, netlink.AF_NETLINK
SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET = 1, 2, 5
#: socket type -> (the protocol 0 means, the protocols socket(AF_INET, type, proto) accepts): inetsw's entries
INET_PROTOCOLS = {SOCK_STREAM: (IPPROTO_TCP, {IPPROTO_TCP, mptcp.IPPROTO_MPTCP}),
                  SOCK_DGRAM: (IPPROTO_UDP, {IPPROTO_UDP})}


def protocol(family: int, kind: int, proto: int, privileged: bool) -> tuple[int, int] | int:
    """The new socket's type and protocol (SO_TYPE, SO_PROTOCOL), or a negative errno. proto is the register's
    int, taken unsigned."""
    proto &= 0xFFFFFFFF                                  # a negative int is out of range too
    if family == AF_NETLINK:
        return netlink.check(kind, proto) or (kind, proto)
    if family == AF_UNIX:
        if kind not in (SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, rawip.SOCK_RAW):
            return -ESOCKTNOSUPPORT
        return (SOCK_DGRAM if kind == rawip.SOCK_RAW else kind, proto) if proto in (0, AF_UNIX) else -EPROTONOSUPPORT
    if family != AF_INET:
        return -EAFNOSUPPORT
    if proto >= rawip.IPPROTO_MAX:
        return -EINVAL
    if kind == rawip.SOCK_RAW:
        return rawip.check(proto, privileged) or (kind, proto)
    if kind not in INET_PROTOCOLS:
        return -ESOCKTNOSUPPORT
    default, allowed = INET_PROTOCOLS[kind]
    proto = proto or default
    return (kind, proto) if proto in allowed else -EPROTONOSUPPORT
