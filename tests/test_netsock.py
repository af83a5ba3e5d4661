"""Sockets net's test binary needs beyond TCP, UDP and AF_UNIX (#50): NETLINK_ROUTE's interface dumps
(emu/linux/netlink.py), raw IPv4 sockets (emu/linux/rawip.py) and Multipath TCP (emu/linux/mptcp.py). Each Go
program prints what it prints natively on a host that behaves as the one modelled (root, a kernel with MPTCP and
rtnetlink's NLMSG_DONE in a datagram of its own, as this machine's 6.18); on a host that does not (another kernel,
a sandbox, no CAP_NET_RAW), its lines that say so differ, and then what preemu prints is held to the modelled
kernel's lines alone (_as_natively). The netlink parser is fed broken requests."""
import io
import json
import struct
import subprocess

from conftest import DATA

from emu import cli
from emu.front import gobuild
from emu.linux import netlink as N
from emu.linux import rawip
from emu.linux.sysabi import EINVAL, EOPNOTSUPP, EPERM, EPROTONOSUPPORT


def _native_and_emulated(name):
    binary = str(gobuild.build(DATA / "go" / name).binary)
    native = subprocess.run([binary], capture_output=True, text=True, timeout=60).stdout   # (a host unlike the
    # modelled one may fail it: _as_natively)
    out = io.StringIO()
    code = cli.main(["exec", binary, "--json"], out)
    return native, code, json.loads(out.getvalue())


def _as_natively(native: str, emulated: str, modelled: tuple[str, ...]) -> None:
    """preemu's output equals the native one where the host behaves as the modelled kernel (every `modelled` line in
    its output); either way preemu prints every `modelled` line."""
    missing = [ln for ln in modelled if ln not in emulated.splitlines()]
    assert not missing, (missing, emulated)
    if all(ln in native.splitlines() for ln in modelled):
        assert emulated == native


def test_interfaces_through_netlink_as_natively():
    """net.Interfaces failed with "netlinkrib: address family not supported by protocol" (net's TestInterfaces,
    TestInterfaceAddrs, TestInterfaceUnicastAddrs, TestInterfaceMulticastAddrs): lo, its flags, index, MTU and
    127.0.0.1/8; the raw dumps' headers; the port id; EADDRINUSE, EINVAL, EOPNOTSUPP, ESOCKTNOSUPPORT."""
    native, code, j = _native_and_emulated("netlink")
    assert code == 0 and j["exit_code"] == 0
    _as_natively(native, j["stdout"], (
        "lo: flags=up|loopback|running index=1 mtu=65536 hwaddr=\"\"", "lo addrs: [127.0.0.1/8] <nil>",
        "  link lo index 1 type 772 flags 0x10049 mtu 65536", "port id is the pid: true",
        "reply from port 0: type 2 seq 7 to us true error -95", "bind a taken port id: address already in use",
        "datagram with DONE: 1 message(s)"))


def test_raw_ip_sockets_as_natively():
    """ListenIP("ip4:icmp") and DialIP("ip:tcp") were EPROTONOSUPPORT (net's TestIPConnLocalName,
    TestIPConnRemoteName, TestIPConnSpecificMethods): names (the protocol as the local port, ENOTCONN for a peer
    of port 0), options, File, EDESTADDRREQ, EADDRNOTAVAIL, EMSGSIZE, and socket(2)'s EPROTONOSUPPORT/EINVAL."""
    native, code, j = _native_and_emulated("rawip")
    assert code == 0 and j["exit_code"] == 0
    _as_natively(native, j["stdout"], (
        "dial ip:tcp -> 127.0.0.1 127.0.0.1", "  names: local 127.0.0.1:1 peer: transport endpoint is not connected",
        "  write without a destination: destination address required", "raw socket protocol 263 : invalid argument"))


def test_multipath_tcp_as_natively():
    """An MPTCP connection answered MPTCP_INFO with ENOPROTOOPT, so Go saw it fall back (net's TestMultiPathTCP):
    both ends MPTCP stay MPTCP, one plain end makes the connection TCP, as this machine's kernel does."""
    native, code, j = _native_and_emulated("mptcp")
    assert code == 0 and j["exit_code"] == 0
    _as_natively(native, j["stdout"], ("  accepted: mptcp=true err=<nil> proto=262 info=<nil>",
                                       "  dialer:   mptcp=false err=<nil> proto=262 info=operation not supported"))


def _req(kind, flags, seq=1, body=b"\0\0\0\0"):
    return struct.pack("<IHHIi", 16 + len(body), kind, flags, seq, 0) + body


def _headers(grams):
    return [struct.unpack("<IHHIi", g[:16]) for g in grams]


def test_netlink_requests_answered_as_rtnetlink_does():
    dump = N.NLM_F_REQUEST | N.NLM_F_DUMP
    grams = N._answer(_req(N.RTM_GETADDR, dump), 77)
    assert [h[1:] for h in _headers(grams)] == [(N.RTM_NEWADDR, N.NLM_F_MULTI, 1, 77),   # lo's 127.0.0.1, then
                                                (N.NLMSG_DONE, N.NLM_F_MULTI, 1, 77)]   # DONE, its own datagram
    assert grams[1] == struct.pack("<IHHIii", 20, N.NLMSG_DONE, N.NLM_F_MULTI, 1, 77, 0)
    assert N._answer(_req(N.RTM_GETADDR, dump, body=bytes([10, 0, 0, 0])), 77) == grams[1:]   # AF_INET6: none
    # an unknown type: NLMSG_ERROR -EOPNOTSUPP with the request after it; a get without NLM_F_DUMP the same
    bad = _req(0x7fff, N.NLM_F_REQUEST)
    err = N._answer(bad, 5)[0]
    assert struct.unpack("<i", err[16:20])[0] == -EOPNOTSUPP and err[20:] == bad
    assert struct.unpack("<i", N._answer(_req(N.RTM_GETLINK, N.NLM_F_REQUEST), 5)[0][16:20])[0] == -EOPNOTSUPP
    # not a request, or a control type: nothing, unless NLM_F_ACK asks (then error 0, the header only)
    assert N._answer(_req(N.RTM_GETLINK, N.NLM_F_DUMP & ~N.NLM_F_REQUEST), 5) == []
    ack = N._answer(_req(1, N.NLM_F_REQUEST | N.NLM_F_ACK), 5)
    assert len(ack) == 1 and struct.unpack("<IHH", ack[0][:8])[2] == N.NLM_F_CAPPED and len(ack[0]) == 36


def test_a_netlink_dump_is_cut_into_datagrams_of_nlmsg_goodsize(monkeypatch):
    many = tuple(N.Interface(i, f"if{i}", 1, N.IFF_UP, 1500, 1000, bytes(6), ()) for i in range(1, 60))
    monkeypatch.setattr(N, "INTERFACES", many)
    grams = N._answer(_req(N.RTM_GETLINK, N.NLM_F_REQUEST | N.NLM_F_DUMP), 1)
    assert len(grams) > 1 and all(len(g) <= N.NLMSG_GOODSIZE for g in grams)
    kinds = []
    for g in grams:
        at = 0
        while at < len(g):
            length, kind = struct.unpack("<IH", g[at:at + 6])
            kinds.append(kind)
            at += (length + 3) & ~3
    assert kinds == [N.RTM_NEWLINK] * 59 + [N.NLMSG_DONE] and len(grams[-1]) == 20


def test_a_truncated_netlink_message_ends_the_request(monkeypatch):
    """netlink_rcv_skb stops at a header whose length is short or runs past the datagram."""
    class Sock:
        local = remote = None
        dgrams = []
        net = type("Net", (), {"bound": {}})()

        def bump(self):
            pass

    class Proc:
        pid = 42

        def wake_socket_waiters(self):
            pass

        wake_pollers = wake_socket_waiters

    s, p = Sock(), Proc()
    s.dgrams = []
    good = _req(N.RTM_GETLINK, N.NLM_F_REQUEST | N.NLM_F_DUMP)
    assert N.send(p, s, good[:-1] + b"", None) == len(good) - 1 and s.dgrams == []     # runs past the datagram
    assert N.send(p, s, struct.pack("<I", 8) + good[4:], None) == len(good) and s.dgrams == []   # shorter than a header
    assert s.local == ("netlink", 42)                                                   # sendto autobinds: the pid
    N.send(p, s, good, None)
    assert len(s.dgrams) == 2 and s.dgrams[0][1] == ("netlink", 0)                        # lo, then NLMSG_DONE


def test_socket_types_and_protocols_as_the_host_answers():
    """sockproto.protocol against what socket(2) answered on this machine's 6.18 (checked with Python's socket)."""
    from emu.linux.sockproto import protocol
    from emu.linux.sysabi import EAFNOSUPPORT, ESOCKTNOSUPPORT
    assert protocol(2, 1, 0, False) == (1, 6) and protocol(2, 1, 262, False) == (1, 262)
    assert protocol(2, 2, 0, False) == (2, 17)
    assert protocol(2, 5, 0, True) == -ESOCKTNOSUPPORT and protocol(2, 4, 0, True) == -ESOCKTNOSUPPORT
    assert protocol(2, 1, 132, True) == -EPROTONOSUPPORT and protocol(2, 2, 262, True) == -EPROTONOSUPPORT
    assert protocol(2, 1, 300, True) == -EINVAL and protocol(2, 1, -1, True) == -EINVAL
    assert protocol(2, 3, 1, True) == (3, 1) and protocol(2, 3, 1, False) == -EPERM
    assert protocol(1, 1, 1, False) == (1, 1) and protocol(1, 1, 2, False) == -EPROTONOSUPPORT
    assert protocol(1, 3, 0, False) == (2, 0) and protocol(1, 4, 0, False) == -ESOCKTNOSUPPORT
    assert protocol(10, 1, 0, False) == -EAFNOSUPPORT and protocol(16, 3, 0, False) == (3, 0)


def test_socket_errors_for_raw_and_netlink():
    assert rawip.check(0, True) == -EPROTONOSUPPORT
    assert rawip.check(rawip.IPPROTO_MAX, True) == -EINVAL and rawip.check(0xFFFFFFFF, True) == -EINVAL
    assert rawip.check(1, False) == -EPERM and rawip.check(1, True) == 0
    assert N.check(N.SOCK_RAW, 16) == -EPROTONOSUPPORT and N.check(N.SOCK_RAW, 0) == 0
    assert N.read_addr(b"\x10\0\0\0") == -EINVAL and N.read_addr(struct.pack("<HHiI", 1, 0, 0, 0)) == -EINVAL
