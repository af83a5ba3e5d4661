"""CPU-time timers: setitimer(ITIMER_PROF/ITIMER_VIRTUAL) and timer_create on the CPU-time clocks, which send
SIGPROF and its kin as the kernel's posix-cpu-timers do (kernel/time/posix-cpu-timers.c, itimer.c).

What Go uses them for: the CPU profiler (runtime/pprof.StartCPUProfile -> runtime.SetCPUProfileRate) sets a
process-wide ITIMER_PROF (runtime/signal_unix.go:280-311 setProcessCPUProfilerTimer) and, on Linux, a timer
per thread on CLOCK_THREAD_CPUTIME_ID that signals that thread itself (SIGEV_THREAD_ID; runtime/os_linux.go:
638-711 setThreadCPUProfiler). Its handler tells them apart by si_code (runtime/os_linux.go:591 validSIGPROF):
SI_KERNEL from setitimer, SI_TIMER from timer_create.

CPU time is virtual: a thread's is the instructions it ran times ns-per-instruction (Thread.cpu_ns), the
process's the sum. The run loop charges each slice to its thread when it ends (Process.run_until ->
CpuTimers.charge), so a timer fires at the end of the slice in which its time ran out (a quantum is 20 us of
virtual time at the defaults; a profiler's period is 10 ms): a process timer signals the thread that used
the time, as the kernel's does in practice (it checks the running task), a thread timer its thread. Several
periods in one slice are one signal and an overrun count, as the kernel counts them.
Left out: ITIMER_REAL and timers on the wall clocks (CLOCK_REALTIME/MONOTONIC: EINVAL, recorded as
unmodelled; Go's time package uses neither), SIGEV_NONE, and timer_getoverrun's exact count.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .sysabi import EFAULT, EINVAL

SIGPROF, SIGVTALRM = 27, 26
ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF = 0, 1, 2
CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID = 2, 3
SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID = 0, 1, 4
SI_KERNEL, SI_TIMER = 0x80, -2                    # include/uapi/asm-generic/siginfo.h
_TIMEVAL2 = struct.Struct("<qqqq")                 # itimerval {interval {sec, usec}, value {sec, usec}}
_TIMESPEC2 = struct.Struct("<qqqq")                # itimerspec {interval {sec, nsec}, value {sec, nsec}}
_SIGEVENT = struct.Struct("<qii4xi")               # sigev_value, sigev_signo, sigev_notify, _tid (at 16)


@dataclass
class CpuTimer:
    signo: int
    code: int                     # SI_KERNEL (setitimer) or SI_TIMER (timer_create)
    tid: int | None               # the thread whose CPU time counts and which gets the signal; None: the process
    interval: int = 0             # ns; 0: one-shot
    remaining: int = 0            # ns of CPU time until it fires; 0: disarmed
    overrun: int = 0


@dataclass
class CpuTimers:
    """The process's CPU-time timers: ITIMER_PROF/ITIMER_VIRTUAL by `which`, timer_create's by id."""
    itimers: dict = field(default_factory=dict)     # which -> CpuTimer
    posix: dict = field(default_factory=dict)       # timer id -> CpuTimer
    next_id: int = 0

    def charge(self, p, t, ns: int) -> None:
        """Thread t ran `ns` of CPU time: count it, and signal every timer whose time ran out."""
        t.cpu_ns += ns
        for timer in list(self.itimers.values()) + list(self.posix.values()):
            if not timer.remaining or (timer.tid is not None and timer.tid != t.tid):
                continue
            timer.remaining -= ns
            if timer.remaining > 0:
                continue
            fired = 1
            if timer.interval:
                late = -timer.remaining
                fired += late // timer.interval
                timer.remaining = timer.interval - late % timer.interval
            else:
                timer.remaining = 0
            timer.overrun = fired - 1
            target = t.tid if timer.tid is None else timer.tid
            p.send_signal(t, target, timer.signo, timer.code)


def _ns_timeval(sec: int, usec: int) -> int:
    return sec * 1_000_000_000 + usec * 1000


def sys_setitimer(p, t, which, new, old, *_):
    """setitimer(2): ITIMER_PROF counts every thread's CPU time, ITIMER_VIRTUAL the same (user time; preemu's
    threads spend none in the kernel). ITIMER_REAL is not modelled (EINVAL, and noted)."""
    if which not in (ITIMER_VIRTUAL, ITIMER_PROF):
        p.unmodelled.append(f"setitimer(which={which})")
        return -EINVAL
    if old:
        sys_getitimer(p, t, which, old)
    if new:
        isec, iusec, vsec, vusec = _TIMEVAL2.unpack(p.read(new, _TIMEVAL2.size))
        if min(isec, vsec) < 0 or not (0 <= iusec < 1_000_000 and 0 <= vusec < 1_000_000):
            return -EINVAL
        value = _ns_timeval(vsec, vusec)
        if value:
            p.timers.itimers[which] = CpuTimer(SIGPROF if which == ITIMER_PROF else SIGVTALRM, SI_KERNEL, None,
                                               _ns_timeval(isec, iusec), value)
        else:
            p.timers.itimers.pop(which, None)
    return 0


def sys_getitimer(p, t, which, cur, *_):
    if which not in (ITIMER_VIRTUAL, ITIMER_PROF):
        return -EINVAL
    timer = p.timers.itimers.get(which)
    iv, rem = (timer.interval, timer.remaining) if timer else (0, 0)
    p.write(cur, _TIMEVAL2.pack(iv // 10**9, iv % 10**9 // 1000, rem // 10**9, rem % 10**9 // 1000))
    return 0


def sys_timer_create(p, t, clockid, sevp, timerid, *_):
    """timer_create(2) on a CPU-time clock: CLOCK_THREAD_CPUTIME_ID counts the calling thread's time,
    CLOCK_PROCESS_CPUTIME_ID the process's; SIGEV_THREAD_ID signals that thread, SIGEV_SIGNAL the process
    (the thread that used the time). Other clocks are not modelled (EINVAL, noted)."""
    clockid = clockid & 0xFFFFFFFF
    if clockid not in (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID):
        p.unmodelled.append(f"timer_create(clock {clockid})")
        return -EINVAL
    if sevp:
        _value, signo, notify, tid = _SIGEVENT.unpack(p.read(sevp, _SIGEVENT.size))
    else:
        signo, notify, tid = 14, SIGEV_SIGNAL, 0            # SIGALRM to the process
    if not 1 <= signo <= 64 or notify not in (SIGEV_SIGNAL, SIGEV_THREAD_ID):
        return -EINVAL
    if notify == SIGEV_THREAD_ID and tid not in p.threads:
        return -EINVAL
    counts = t.tid if clockid == CLOCK_THREAD_CPUTIME_ID else None
    if notify == SIGEV_THREAD_ID and counts is not None and tid != counts:
        return -EINVAL              # a thread's CPU clock signalling another thread: not modelled
    tm = CpuTimer(signo, SI_TIMER, tid if notify == SIGEV_THREAD_ID else counts)
    ident = p.timers.next_id
    p.timers.next_id += 1
    p.timers.posix[ident] = tm
    p.write(timerid, ident.to_bytes(4, "little"))
    return 0


def sys_timer_settime(p, t, timerid, flags, new, old, *_):
    tm = p.timers.posix.get(timerid & 0xFFFFFFFF)
    if tm is None:
        return -EINVAL
    if not new:
        return -EFAULT
    if old:
        sys_timer_gettime(p, t, timerid, old)
    isec, insec, vsec, vnsec = _TIMESPEC2.unpack(p.read(new, _TIMESPEC2.size))
    if min(isec, vsec) < 0 or not (0 <= insec < 10**9 and 0 <= vnsec < 10**9):
        return -EINVAL
    value = vsec * 10**9 + vnsec
    if flags & 1 and value:                         # TIMER_ABSTIME: against the clock's current reading
        used = t.cpu_ns if tm.tid is not None else sum(x.cpu_ns for x in p.threads.values())
        value = max(1, value - used)
    tm.interval, tm.remaining = isec * 10**9 + insec, value
    return 0


def sys_timer_gettime(p, t, timerid, cur, *_):
    tm = p.timers.posix.get(timerid & 0xFFFFFFFF)
    if tm is None:
        return -EINVAL
    p.write(cur, _TIMESPEC2.pack(tm.interval // 10**9, tm.interval % 10**9, tm.remaining // 10**9,
                                 tm.remaining % 10**9))
    return 0


def sys_timer_getoverrun(p, t, timerid, *_):
    tm = p.timers.posix.get(timerid & 0xFFFFFFFF)
    return -EINVAL if tm is None else tm.overrun


def sys_timer_delete(p, t, timerid, *_):
    return 0 if p.timers.posix.pop(timerid & 0xFFFFFFFF, None) is not None else -EINVAL


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    36: ("getitimer", sys_getitimer), 38: ("setitimer", sys_setitimer),
    222: ("timer_create", sys_timer_create), 223: ("timer_settime", sys_timer_settime),
    224: ("timer_gettime", sys_timer_gettime), 225: ("timer_getoverrun", sys_timer_getoverrun),
    226: ("timer_delete", sys_timer_delete),
}
