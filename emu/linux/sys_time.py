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


REALTIME_CLOCKS = (0, 5, 8, 11)      # CLOCK_REALTIME, _COARSE, _ALARM, CLOCK_TAI (its offset 0, as at boot)
MONOTONIC_CLOCKS = (1, 4, 6, 7, 9)   # CLOCK_MONOTONIC, _RAW, _COARSE, CLOCK_BOOTTIME, _ALARM (nothing suspends)
CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID = 2, 3


def clock_ns(p, t, clk: int) -> int | None:
    """What clock `clk` reads now, in ns, or None for a clock there is not (EINVAL). CPU-time clocks
    (kernel/time/posix-cpu-timers.c) read virtual CPU time, the instructions run times ns-per-instruction
    (Thread.cpu_ns, and the running thread's slice so far): the process's (all threads) or the thread's;
    a negative id is another's, ((~pid) << 3) | type with bit 2 for a thread, pid 0 the caller."""
    clk &= 0xFFFFFFFF                                  # a clockid_t, an int
    clk = clk - (1 << 32) if clk & 0x80000000 else clk
    if clk in REALTIME_CLOCKS:
        return realtime(p)
    if clk in MONOTONIC_CLOCKS:
        return p.now()
    if clk == CLOCK_PROCESS_CPUTIME_ID:
        return sum(_cpu(p, x) for x in p.threads.values())
    if clk == CLOCK_THREAD_CPUTIME_ID:
        return _cpu(p, t)
    if clk < 0 and clk & 3 != 3:                       # CPUCLOCK_PROF, _VIRT, _SCHED: all the same here
        pid = ~(clk >> 3)
        if clk & 4:                                    # CPUCLOCK_PERTHREAD_MASK
            x = t if pid == 0 else p.threads.get(pid)
            return None if x is None or x.state == "exited" else _cpu(p, x)
        if pid in (0, p.pid):
            return sum(_cpu(p, x) for x in p.threads.values())
    return None


def _cpu(p, x) -> int:
    """Thread x's CPU time, with the slice in progress when x is running."""
    if p.in_slice and x is p.cur:
        return x.cpu_ns + p.counter.executed * p.opts.ns_per_insn
    return x.cpu_ns


def sys_clock_gettime(p, t, clk, ts, *_):
    now = clock_ns(p, t, clk)
    if now is None:
        return -EINVAL
    p.write(ts, struct.pack("<qq", now // 10**9, now % 10**9))
    return 0


def sys_clock_getres(p, t, clk, res, *_):
    """clock_getres(2): 1 ns for every clock (hrtimer resolution; the coarse ones' tick is not modelled)."""
    if clock_ns(p, t, clk) is None:
        return -EINVAL
    if res:
        p.write(res, struct.pack("<qq", 0, 1))
    return 0


def realtime(p) -> int:
    return p.now() + REALTIME_EPOCH_NS - p.boot_ns


def sys_gettimeofday(p, t, tv, tz, *_):
    """gettimeofday(2): CLOCK_REALTIME in microseconds; the timezone argument is obsolete (zeros)."""
    now = realtime(p)
    if tv:
        p.write(tv, struct.pack("<qq", now // 10**9, now % 10**9 // 1000))
    if tz:
        p.write(tz, bytes(8))
    return 0


def sys_time(p, t, tloc, *_):
    """time(2): CLOCK_REALTIME in seconds, also stored at tloc if given."""
    sec = realtime(p) // 10**9
    if tloc:
        p.write(tloc, struct.pack("<q", sec))
    return sec


def sys_nanosleep(p, t, req, rem, *_):
    d = timespec_ns(p, req)
    if d < 0:
        return -EINVAL
    p.block(t, Wait("sleep", p.now() + d, 0, rem=rem))   # rem: written if a signal interrupts (sigdeliver.py)
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
    229: ("clock_getres", sys_clock_getres),
}
