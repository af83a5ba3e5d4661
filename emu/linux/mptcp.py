"""Multipath TCP over loopback (socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)), as Go checks it
(net/mptcpsock_linux.go: SO_PROTOCOL, getsockopt(SOL_MPTCP, MPTCP_INFO) failing once the connection fell back).
An MPTCP socket is a TCP one (sys_socket.py, tcp.py) with what this module answers.

Mirrored from Linux (net/mptcp/protocol.c, subflow.c, sockopt.c):
- two MPTCP ends complete the MP_CAPABLE handshake: both stay MPTCP (SO_PROTOCOL 262, MPTCP_INFO answers);
- an MPTCP client of a plain TCP listener falls back (SO_PROTOCOL still 262; MPTCP_INFO then EOPNOTSUPP:
  mptcp_getsockopt hands the call to the subflow's tcp_getsockopt, and do_ip_getsockopt refuses SOL_MPTCP);
- a plain TCP client of an MPTCP listener is accepted as a plain TCP socket (mptcp_stream_accept hands it over
  to TCP: SO_PROTOCOL 6);
- any SOL_MPTCP option of a plain TCP socket is EOPNOTSUPP;
- MPTCP_INFO copies min(optlen, sizeof(struct mptcp_info)) bytes of the 6.1 layout (48 bytes, the release
  sys_proc.RELEASE reports): mptcpi_subflows_max is the path manager's default limit (2), mptcpi_flags has
  MPTCP_INFO_FLAG_REMOTE_KEY_RECEIVED once connected.
Left out: subflows (no second path on loopback), the token, sequence numbers and counters of mptcp_info
(zeros), the other SOL_MPTCP options (MPTCP_TCPINFO, MPTCP_SUBFLOW_ADDRS, MPTCP_FULL_INFO: EOPNOTSUPP) and
net.mptcp.enabled (always on).
"""
from __future__ import annotations

import struct

from .sockopt import IPPROTO_TCP
from .sysabi import EOPNOTSUPP

IPPROTO_MPTCP = 262
SOL_MPTCP, MPTCP_INFO = 284, 1
INFO_SIZE, SUBFLOWS_MAX, FLAG_REMOTE_KEY_RECEIVED = 48, 2, 0x2


def accepted_proto(client, listener) -> int:
    """The protocol of the socket accept returns: MPTCP only when both ends asked for it."""
    return IPPROTO_MPTCP if client.proto == listener.proto == IPPROTO_MPTCP else IPPROTO_TCP


def fell_back(client, listener) -> bool:
    """An MPTCP client whose listener is plain TCP: the connection is TCP (subflow_finish_connect)."""
    return client.proto == IPPROTO_MPTCP and listener.proto != IPPROTO_MPTCP


def getsockopt(s, name: int) -> bytes | int:
    """getsockopt(SOL_MPTCP, name): the option's bytes, or a negative errno."""
    if s.proto != IPPROTO_MPTCP or s.mptcp_fallback or name != MPTCP_INFO:
        return -EOPNOTSUPP
    flags = FLAG_REMOTE_KEY_RECEIVED if s.remote is not None else 0
    info = struct.pack("<6BxxI", 0, 0, 0, SUBFLOWS_MAX, 0, 0, flags)
    return info + bytes(INFO_SIZE - len(info))
