"""A datagram socket's receive queue when it is full, as Linux bounds it: how much a program can make preemu hold
through datagrams nobody reads.

- UDP over loopback (net/ipv4/udp.c __udp_enqueue_schedule_skb): a datagram that finds the receiver's queued
  memory over its receive buffer (sk_rmem_alloc > sk_rcvbuf; SO_RCVBUF, sockopt.py's default 212,992) is dropped,
  and its send succeeds. A queued datagram counts its payload plus what its sk_buff costs (`truesize`: the headers'
  room cache-aligned, struct sk_buff and skb_shared_info, 256 + 320 bytes on x86-64; Linux also rounds the data to
  its slab size, which is left out, so somewhat more small datagrams fit than natively).
- AF_UNIX (net/unix/af_unix.c unix_dgram_sendmsg, unix_recvq_full): a receiver holding more than MAX_DGRAM_QLEN
  datagrams (net.unix.max_dgram_qlen, 10), and not connected back to the sender, makes the sender wait until a
  read takes one (unix_wait_for_peer), or answers EAGAIN when the socket is non-blocking or MSG_DONTWAIT is given.
  A sender connected to that receiver then has no EPOLLOUT (unix_dgram_poll) and is woken by the read that makes
  room (unix_dgram_peer_wake_me); an unconnected one is not (its poll never looked at the receiver).
Left out: the sender's own sk_sndbuf wait (sock_alloc_send_pskb).
"""
from __future__ import annotations

import struct

from .sockopt import SO_RCVBUF, SOL_SOCKET, default
from .sysabi import BLOCK, EAGAIN
from .threads import Wait

MAX_DGRAM_QLEN = 10
#: SKB_DATA_ALIGN(sizeof(struct sk_buff)) + SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86-64
SKB_OVERHEAD = 256 + 320
HEADROOM = 64                          # Ethernet, IP and UDP headers and the skb's reserved headroom, aligned


def deliver(p, s, target, data: bytes, unix: bool, nonblock: bool) -> int:
    """s's datagram to `target`, a datagram socket of s's family (`unix`: AF_UNIX, else UDP): queued, dropped (UDP,
    the buffer full: the send succeeds), or, AF_UNIX with the queue full, EAGAIN (`nonblock`) or a wait for room."""
    if unix and unix_full(target, s):
        if nonblock:
            wait_for_room(target, s)
            return -EAGAIN
        p.block(p.cur, Wait("dgram-send", None, 0, restart=True, pipe=target,
                            retry=lambda: None if unix_full(target, s) else queue(s, target, data)))
        return BLOCK
    if not unix and udp_drops(target):
        return len(data)
    queue(s, target, data)
    p.wake_socket_waiters()
    p.wake_pollers()
    return len(data)


def queue(s, target, data: bytes) -> int:
    """s's datagram into target's receive queue: its length."""
    target.dgrams.append((data, s.local))
    target.bump()
    return len(data)


def truesize(n: int) -> int:
    """What a queued datagram of n bytes costs its receiver (skb->truesize, as above)."""
    return ((n + HEADROOM + 63) & ~63) + SKB_OVERHEAD


def udp_drops(receiver) -> bool:
    """A UDP datagram arriving now is dropped: the receiver's queued memory is over its receive buffer."""
    raw = receiver.opts.get((SOL_SOCKET, SO_RCVBUF)) or default(SOL_SOCKET, SO_RCVBUF, True, False)
    rcvbuf = struct.unpack("<i", raw[:4].ljust(4, b"\0"))[0]
    return sum(truesize(len(d)) for d, _src in receiver.dgrams) > rcvbuf


def unix_full(receiver, sender) -> bool:
    """An AF_UNIX datagram from `sender` must wait: the receiver's queue is full and it is not connected to sender."""
    return receiver is not sender and receiver.other is not sender and len(receiver.dgrams) > MAX_DGRAM_QLEN


def wait_for_room(receiver, sender) -> None:
    """A connected sender that got EAGAIN is woken (its EPOLLOUT edge) by the read that makes room."""
    if sender.other is receiver and sender not in receiver.peer_waiters:
        receiver.peer_waiters.append(sender)


def room_made(p, receiver) -> None:
    """A read took a datagram from an AF_UNIX receiver: once it has room, the connected senders that got EAGAIN see
    EPOLLOUT (an edge). Blocked senders are the scheduler's (wake_socket_waiters, after the reads)."""
    if len(receiver.dgrams) > MAX_DGRAM_QLEN:
        return
    for s in receiver.peer_waiters:
        s.bump()
    receiver.peer_waiters.clear()
    p.wake_pollers()
