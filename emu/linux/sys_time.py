"""Time and waiting: clock_gettime, gettimeofday and time (the vDSO answers them without a syscall, vdso.py;
these are the syscalls, for a program that makes them or runs without it), nanosleep and futex
wait/wake on virtual time. Semantics from clock_gettime(2), nanosleep(2) (EINTR when a handler ran,
never restarted: signal(7)), futex(2) (FUTEX_WAIT's timeout is relative; EAGAIN when the word changed).
"""
from __future__ import annotations

import struct

from .sysabi import BLOCK, EAGAIN, EINVAL, ETIMEDOUT, timespec_ns
from .threads import Wait

FUTEX_WAIT, FUTEX_WAKE, FUTEX_CMD_MASK = 0, 1, 0x7F
REALTIME_EPOCH_NS = 1_767_225_600 * 10**9     # CLOCK_REALTIME at boot: 2026-01-01T00:00:00Z


def sys_clock_gettime(p, t, clk, ts, *_):
    now = p.now()
    if clk == 0:                       # CLOCK_REALTIME
        now = _realtime(p)
    p.write(ts, struct.pack("<qq", now // 10**9, now % 10**9))
    return 0


def _realtime(p) -> int:
    return p.now() + REALTIME_EPOCH_NS - p.boot_ns


def sys_gettimeofday(p, t, tv, tz, *_):
    """gettimeofday(2): CLOCK_REALTIME in microseconds; the timezone argument is obsolete (zeros)."""
    now = _realtime(p)
    if tv:
        p.write(tv, struct.pack("<qq", now // 10**9, now % 10**9 // 1000))
    if tz:
        p.write(tz, bytes(8))
    return 0


def sys_time(p, t, tloc, *_):
    """time(2): CLOCK_REALTIME in seconds, also stored at tloc if given."""
    sec = _realtime(p) // 10**9
    if tloc:
        p.write(tloc, struct.pack("<q", sec))
    return sec


def sys_nanosleep(p, t, req, rem, *_):
    d = timespec_ns(p, req)
    if d < 0:
        return -EINVAL
    p.block(t, Wait("sleep", p.now() + d, 0))
    return BLOCK


def sys_futex(p, t, uaddr, op, val, timeout, uaddr2, val3):
    cmd = op & FUTEX_CMD_MASK
    if cmd == FUTEX_WAIT:
        if struct.unpack("<I", p.read(uaddr, 4))[0] != val & 0xFFFFFFFF:
            return -EAGAIN
        deadline = p.now() + timespec_ns(p, timeout) if timeout else None
        p.block(t, Wait("futex", deadline, -ETIMEDOUT, restart=timeout == 0, futex=uaddr))
        return BLOCK
    if cmd == FUTEX_WAKE:
        # futex_wake (kernel/futex/waitwake.c) wakes a waiter before `if (++ret >= nr_wake) break`, nr_wake an
        # int: 0 or a negative count still wakes one
        nr = val & 0xFFFFFFFF
        return p.futex_wake(uaddr, max(nr - (1 << 32) if nr >= 1 << 31 else nr, 1))
    return p.unsupported("futex", f"operation {op:#x}")


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    96: ("gettimeofday", sys_gettimeofday), 201: ("time", sys_time),
    35: ("nanosleep", sys_nanosleep), 202: ("futex", sys_futex), 228: ("clock_gettime", sys_clock_gettime),
}
