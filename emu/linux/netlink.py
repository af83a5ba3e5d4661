"""AF_NETLINK, NETLINK_ROUTE: the emulated host's interfaces and addresses as rtnetlink dumps them, which is
how Go lists interfaces (syscall/netlink_linux.go NetlinkRIB: socket, bind, sendto RTM_GETLINK or
RTM_GETADDR with NLM_F_DUMP, recvfrom to NLMSG_DONE; net/interface_linux.go reads the replies).
sys_socket.py owns the socket; this module answers what a netlink socket differs in.

The host (INTERFACES) has one interface, the loopback every preemu socket lives on: `lo`, index 1, ARPHRD_LOOPBACK,
IFF_UP|IFF_LOOPBACK|IFF_RUNNING|IFF_LOWER_UP, MTU 65536, 127.0.0.1/8, scope host. No ::1: AF_INET6 is not
modelled (socket(AF_INET6) is EAFNOSUPPORT, so Go's supportsIPv6 is false and net's tests expect no IPv6 route).

Mirrored from Linux:
- socket (net/netlink/af_netlink.c netlink_create): SOCK_RAW or SOCK_DGRAM, else ESOCKTNOSUPPORT; a protocol
  other than NETLINK_ROUTE is EPROTONOSUPPORT (a kernel without that family);
- bind (netlink_bind, netlink_insert): sockaddr_nl of 12 bytes (EINVAL shorter or of another family); nl_pid 0
  autobinds, a port id in use is EADDRINUSE, a bound socket binding another port id EINVAL;
  autobind (netlink_autobind) takes the process's tgid first, then negative ids (Linux picks a random one
  below -4096; here -4096, -4097, ... in order, to stay deterministic); sendto autobinds too;
- getsockname/recvfrom's source (netlink_getname): sockaddr_nl {AF_NETLINK, nl_pid}; the kernel is port 0;
- a request (netlink_rcv_skb, rtnetlink_rcv_msg): each nlmsghdr in the datagram in turn, stopping at a bad length;
  one without NLM_F_REQUEST, or of a control type (below RTM_BASE), is only acknowledged if NLM_F_ACK asks;
  RTM_GETLINK and RTM_GETADDR with NLM_F_DUMP are dumped (rtnl_dump_ifinfo/rtnl_fill_ifinfo,
  net/ipv4/devinet.c inet_dump_ifaddr/inet_fill_ifaddr): one RTM_NEWLINK/RTM_NEWADDR per interface/address,
  NLM_F_MULTI, the request's sequence number and the requester's port id, then NLMSG_DONE (an int 0); the
  rtgenmsg family filters addresses (AF_INET, AF_UNSPEC: all; other families have none here); a dump sends no
  acknowledgement; every other request is answered NLMSG_ERROR -EOPNOTSUPP (netlink_ack: struct nlmsgerr with
  the whole request copied after it; a success ack carries the header only, NLM_F_CAPPED);
- the dump is cut into datagrams of at most NLMSG_GOODSIZE bytes (one page less struct skb_shared_info's
  overhead), each a recvfrom, and NLMSG_DONE comes alone in the last (netlink_dump sends the skb the dump
  function filled, then calls it again and finds nothing more: measured on the host, 6.18, as on 6.1); a shorter
  buffer truncates the datagram as any datagram socket's read does;
- sendto another port id (netlink_unicast) queues the datagram at the socket bound there, ECONNREFUSED if none.
Left out: every other rtnetlink request (routes, neighbours, single-interface gets, changes: EOPNOTSUPP,
where Linux answers them), multicast groups (accepted in bind, nothing is ever sent to them), the link
statistics and most attributes (a link carries IFLA_IFNAME, TXQLEN, OPERSTATE, LINKMODE, MTU, GROUP, ADDRESS and
BROADCAST; an address IFA_ADDRESS, LOCAL, LABEL and FLAGS, not IFA_CACHEINFO), extended acks and strict checking,
socket options (SOL_NETLINK), getpeername before a connect (ENOTCONN, as for any socket here; Linux answers
port 0). /proc/net/igmp is not modelled either, so Interface.MulticastAddrs is empty (natively lo lists 224.0.0.1).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from .sysabi import EADDRINUSE, ECONNREFUSED, EINVAL, EOPNOTSUPP, EPROTONOSUPPORT, ESOCKTNOSUPPORT

AF_UNSPEC, AF_INET, AF_NETLINK = 0, 2, 16
SOCK_DGRAM, SOCK_RAW = 2, 3
NETLINK_ROUTE = 0
NLMSG_ERROR, NLMSG_DONE, NLMSG_MIN_TYPE = 2, 3, 0x10
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_CAPPED, NLM_F_DUMP = 0x1, 0x2, 0x4, 0x100, 0x300
RTM_NEWLINK, RTM_GETLINK, RTM_NEWADDR, RTM_GETADDR = 16, 18, 20, 22
IFLA_ADDRESS, IFLA_BROADCAST, IFLA_IFNAME, IFLA_MTU, IFLA_TXQLEN, IFLA_OPERSTATE, IFLA_LINKMODE, IFLA_GROUP = \
    1, 2, 3, 4, 13, 16, 17, 27
IFA_ADDRESS, IFA_LOCAL, IFA_LABEL, IFA_FLAGS = 1, 2, 3, 8
IFF_UP, IFF_LOOPBACK, IFF_RUNNING, IFF_LOWER_UP = 0x1, 0x8, 0x40, 0x10000
ARPHRD_LOOPBACK, IFA_F_PERMANENT, RT_SCOPE_HOST, IF_OPER_UNKNOWN = 772, 0x80, 254, 0
NLMSG_HDRLEN, SOCKADDR_NL_LEN = 16, 12
NLMSG_GOODSIZE = 4096 - 320          # SKB_WITH_OVERHEAD(PAGE_SIZE): a page less struct skb_shared_info
AUTOBIND_FIRST_NEGATIVE = -4096

LOOPBACK = bytes([127, 0, 0, 1])     # the host's one address (sys_socket.py binds and routes to it)


@dataclass(frozen=True)
class Interface:
    index: int
    name: str
    type: int
    flags: int
    mtu: int
    txqlen: int
    hwaddr: bytes
    addrs: tuple               # (family, address bytes, prefix length, scope)


INTERFACES = (
    Interface(1, "lo", ARPHRD_LOOPBACK, IFF_UP | IFF_LOOPBACK | IFF_RUNNING | IFF_LOWER_UP, 65536, 1000, bytes(6),
              ((AF_INET, LOOPBACK, 8, RT_SCOPE_HOST),)),
)


def check(kind: int, proto: int) -> int:
    """netlink_create: 0, or the negative errno socket(AF_NETLINK, kind, proto) answers."""
    if kind not in (SOCK_RAW, SOCK_DGRAM):
        return -ESOCKTNOSUPPORT
    return 0 if proto == NETLINK_ROUTE else -EPROTONOSUPPORT


def read_addr(raw: bytes) -> tuple | int:
    """A sockaddr_nl as a namespace key ("netlink", port id), or a negative errno."""
    if len(raw) < SOCKADDR_NL_LEN:
        return -EINVAL
    fam, _pad, pid, _groups = struct.unpack("<HHiI", raw[:SOCKADDR_NL_LEN])
    return ("netlink", pid) if fam == AF_NETLINK else -EINVAL


def sockaddr(key: tuple | None) -> bytes:
    """struct sockaddr_nl for a key (None: not bound yet, port id 0)."""
    return struct.pack("<HHiI", AF_NETLINK, 0, key[1] if key is not None else 0, 0)


def bind(p, s, key: tuple) -> int:
    """netlink_bind with the port id of key (0: autobind)."""
    if s.local is not None:
        return 0 if key[1] == s.local[1] else -EINVAL
    if key[1] == 0:
        autobind(p, s)
        return 0
    if key in s.net.bound:
        return -EADDRINUSE
    s.local = key
    s.net.bound[key] = s
    return 0


def connect(p, s, key: tuple) -> int:
    """netlink_connect: the default destination port id of a send that names none."""
    autobind(p, s)
    s.remote = key
    return 0


def autobind(p, s) -> None:
    if s.local is not None:
        return
    pid = p.pid
    if ("netlink", pid) in s.net.bound:
        pid = AUTOBIND_FIRST_NEGATIVE
        while ("netlink", pid) in s.net.bound:
            pid -= 1
    s.local = ("netlink", pid)
    s.net.bound[s.local] = s


def _align(n: int) -> int:
    return (n + 3) & ~3


def _attr(kind: int, value: bytes) -> bytes:
    """struct rtattr and its value, padded to RTA_ALIGNTO."""
    raw = struct.pack("<HH", 4 + len(value), kind) + value
    return raw + bytes(_align(len(raw)) - len(raw))


def _message(kind: int, flags: int, seq: int, pid: int, body: bytes) -> bytes:
    raw = struct.pack("<IHHIi", NLMSG_HDRLEN + len(body), kind, flags, seq, pid) + body
    return raw + bytes(_align(len(raw)) - len(raw))


def _links() -> list[bytes]:
    """rtnl_fill_ifinfo: struct ifinfomsg and the attributes, for each interface."""
    out = []
    for i in INTERFACES:
        head = struct.pack("<BxHiII", AF_UNSPEC, i.type, i.index, i.flags, 0)
        out.append(head + _attr(IFLA_IFNAME, i.name.encode() + b"\0") + _attr(IFLA_TXQLEN, struct.pack("<I", i.txqlen))
                   + _attr(IFLA_OPERSTATE, bytes([IF_OPER_UNKNOWN])) + _attr(IFLA_LINKMODE, b"\0")
                   + _attr(IFLA_MTU, struct.pack("<I", i.mtu)) + _attr(IFLA_GROUP, struct.pack("<I", 0))
                   + _attr(IFLA_ADDRESS, i.hwaddr) + _attr(IFLA_BROADCAST, bytes(len(i.hwaddr))))
    return out


def _addrs(family: int) -> list[bytes]:
    """inet_fill_ifaddr: struct ifaddrmsg and the attributes, for each address of family (AF_UNSPEC: all)."""
    out = []
    for i in INTERFACES:
        for fam, ip, plen, scope in i.addrs:
            if family not in (AF_UNSPEC, fam):
                continue
            head = struct.pack("<BBBBi", fam, plen, IFA_F_PERMANENT, scope, i.index)
            out.append(head + _attr(IFA_ADDRESS, ip) + _attr(IFA_LOCAL, ip) + _attr(IFA_LABEL, i.name.encode() + b"\0")
                       + _attr(IFA_FLAGS, struct.pack("<I", IFA_F_PERMANENT)))
    return out


DUMPS = {RTM_GETLINK: (RTM_NEWLINK, lambda family: _links()), RTM_GETADDR: (RTM_NEWADDR, _addrs)}


def _answer(req: bytes, pid: int) -> list[bytes]:
    """The datagrams one request message draws (rtnetlink_rcv_msg, netlink_dump, netlink_ack)."""
    length, kind, flags, seq, _ = struct.unpack("<IHHIi", req[:NLMSG_HDRLEN])
    err = 0
    if flags & NLM_F_REQUEST and kind >= NLMSG_MIN_TYPE:
        if kind in DUMPS and flags & NLM_F_DUMP == NLM_F_DUMP:
            reply, fill = DUMPS[kind]
            family = req[NLMSG_HDRLEN] if length > NLMSG_HDRLEN else AF_UNSPEC
            grams, cur = [], b""
            for m in (_message(reply, NLM_F_MULTI, seq, pid, body) for body in fill(family)):
                if cur and len(cur) + len(m) > NLMSG_GOODSIZE:
                    grams.append(cur)
                    cur = b""
                cur += m
            return grams + [cur] * bool(cur) + [_message(NLMSG_DONE, NLM_F_MULTI, seq, pid, struct.pack("<i", 0))]
        err = -EOPNOTSUPP
    if not (err or flags & NLM_F_ACK):
        return []
    echo = req[:NLMSG_HDRLEN] if err == 0 else req[:length]
    return [_message(NLMSG_ERROR, 0 if err else NLM_F_CAPPED, seq, pid, struct.pack("<i", err) + echo)]


def send(p, s, data: bytes, dest: tuple | None) -> int:
    """sendto/write on a NETLINK_ROUTE socket: to the kernel (port 0) a request whose answers queue on s, to
    another port id the datagram itself. Returns the count sent or a negative errno."""
    autobind(p, s)
    dest = dest if dest is not None else s.remote
    if dest is not None and dest[1] != 0:
        target = s.net.bound.get(dest)
        if target is None:
            return -ECONNREFUSED
        target.dgrams.append((data, s.local))
        target.bump()
    else:
        at = 0
        while len(data) - at >= NLMSG_HDRLEN:
            length = struct.unpack("<I", data[at:at + 4])[0]
            if length < NLMSG_HDRLEN or length > len(data) - at:
                break
            for gram in _answer(data[at:at + length], s.local[1]):
                s.dgrams.append((gram, ("netlink", 0)))
            at += _align(length)
        s.bump()
    p.wake_socket_waiters()
    p.wake_pollers()
    return len(data)
