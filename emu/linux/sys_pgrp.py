"""Process groups and sessions: getpgid, getpgrp, setpgid, getsid, setsid, as kernel/sys.c has them. The ids
live in the process table's records (proctable.ProcRecord pgid, sid; a child takes its parent's at fork); kill
and wait4/waitid with 0 or -pgid select by them (proctable.ProcessTable.kill, sys_fork.sys_wait4).

The first process leads its own group and session, as a job a shell starts does (natively under `go test` or a
Python subprocess it would be in its starter's; there is no starter here). Go's side: syscall/exec_linux.go
forkAndExecInChild1 (setpgid(0, Pgid) for SysProcAttr.Setpgid, setsid for Setsid), the syscall tests
syscall/exec_unix_test.go TestSetpgid, TestPgid. Left out: controlling terminals (TIOCSCTTY, tcsetpgrp: there
is no tty) and the orphaned-group SIGHUP/SIGCONT of kernel/exit.c.
"""
from __future__ import annotations

from .proctable import REAPED, ProcessTable
from .sysabi import EACCES, EINVAL, EPERM, ESRCH


def _int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _rec(p, pid: int):
    """The record of pid (0: the caller), None when there is no such process (ESRCH); a zombie still counts."""
    table = ProcessTable.of(p)
    rec = table.records.get(pid or p.pid)
    return None if rec is None or rec.state == REAPED else rec


def sys_getpgid(p, t, pid, *_):
    rec = _rec(p, _int(pid))
    return -ESRCH if rec is None else rec.pgid


def sys_getpgrp(p, t, *_):
    return _rec(p, 0).pgid


def sys_getsid(p, t, pid, *_):
    rec = _rec(p, _int(pid))
    return -ESRCH if rec is None else rec.sid


def sys_setpgid(p, t, pid, pgid, *_):
    """kernel/sys.c setpgid: pid 0 is the caller, pgid 0 the target's pid; the target is the caller or a child
    of it (ESRCH), a child that has not called execve (EACCES), in the caller's session (EPERM), not a session
    leader (EPERM); joining another group needs one with that id in the caller's session (EPERM)."""
    pid, pgid = _int(pid), _int(pgid)
    if pgid < 0:
        return -EINVAL
    me = _rec(p, 0)
    rec = _rec(p, pid)
    if rec is None or (rec is not me and rec.ppid != me.pid):
        return -ESRCH
    pgid = pgid or rec.pid
    if rec is not me:
        if rec.sid != me.sid:
            return -EPERM
        if rec.execed:
            return -EACCES
    if rec.sid == rec.pid:
        return -EPERM
    if pgid != rec.pid and not any(r.pgid == pgid and r.sid == me.sid and r.state != REAPED
                                   for r in ProcessTable.of(p).records.values()):
        return -EPERM
    rec.pgid = pgid
    return 0


def sys_setsid(p, t, *_):
    """kernel/sys.c ksys_setsid: EPERM when a process group with the caller's id exists (it leads one);
    otherwise a new session and group, both the caller's pid."""
    me = _rec(p, 0)
    if any(r.pgid == me.pid and r.state != REAPED for r in ProcessTable.of(p).records.values()):
        return -EPERM
    me.pgid = me.sid = me.pid
    return me.pid


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {109: ("setpgid", sys_setpgid), 111: ("getpgrp", sys_getpgrp), 112: ("setsid", sys_setsid),
         121: ("getpgid", sys_getpgid), 124: ("getsid", sys_getsid)}
