"""Signal syscalls: rt_sigaction, rt_sigprocmask, sigaltstack, kill/tkill/tgkill (other processes: proctable.py),
rt_sigreturn. Semantics from
sigaction(2), sigprocmask(2), sigaltstack(2), tgkill(2) and kernel/signal.c (SIGKILL and SIGSTOP can be
neither caught nor blocked); delivery, frames and default actions are sigdeliver.py's and sigframe.py's.
"""
from __future__ import annotations

import struct

from unicorn import x86_const as X

from .regbatch import read_reg
from .sigframe import SI_USER
from .sysabi import EINVAL, EPERM, ESRCH, STOP

SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 0, 1, 2
SIGKILL, SIGSTOP = 9, 19
UNBLOCKABLE = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1))      # signals no mask can block


def sys_rt_sigaction(p, t, sig, act, oact, setsize, *_):
    if not 1 <= sig <= 64 or setsize != 8:
        return -EINVAL
    if act and sig in (SIGKILL, SIGSTOP):
        return -EINVAL
    if oact:
        p.write(oact, struct.pack("<QQQQ", *p.sigactions.get(sig, (0, 0, 0, 0))))
    if act:
        p.sigactions[sig] = struct.unpack("<QQQQ", p.read(act, 32))   # handler, flags, restorer, mask
    return 0


def sys_rt_sigprocmask(p, t, how, nset, oset, setsize, *_):
    if setsize != 8:
        return -EINVAL
    if oset:
        p.write(oset, struct.pack("<Q", t.sigmask))
    if nset:
        m = struct.unpack("<Q", p.read(nset, 8))[0] & ~UNBLOCKABLE
        if how == SIG_BLOCK:
            t.sigmask |= m
        elif how == SIG_UNBLOCK:
            t.sigmask &= ~m
        elif how == SIG_SETMASK:
            t.sigmask = m
        else:
            return -EINVAL
        if t.deliverable():
            p.yield_slice()       # an unblocked pending signal is taken on the way back to user mode
    return 0


def sys_sigaltstack(p, t, ss, old, *_):
    from .sigframe import SS_DISABLE, SS_ONSTACK
    rsp = read_reg(p.uc, X.UC_X86_REG_RSP)
    on = t.altstack is not None and t.altstack[0] <= rsp < t.altstack[0] + t.altstack[1]
    if old:
        sp, size = t.altstack or (0, 0)
        flags = SS_ONSTACK if on else (SS_DISABLE if t.altstack is None else 0)
        p.write(old, struct.pack("<QiiQ", sp, flags, 0, size))
    if ss:
        if on:
            return -EPERM
        sp, flags, _pad, size = struct.unpack("<QiiQ", p.read(ss, 24))
        t.altstack = None if flags & SS_DISABLE else (sp, size)
    return 0


def _int(v: int) -> int:
    """A pid/tid argument: the kernel reads an int."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def sys_kill(p, t, pid, sig, *_):
    """kill(2) to the process itself (its pid, or 0 for its process group): a process-directed signal goes
    to a thread that does not block it (kernel/signal.c complete_signal), else stays pending on the main
    thread; signal 0 only checks that the process exists. Without other processes any other pid is ESRCH, and
    so is -1 (kill_something_info leaves the caller out of "every process"); with them, proctable.py's kill."""
    if p.kernel is not None and _int(pid) != p.pid:
        return p.kernel.kill(p, t, _int(pid), sig) if 0 <= sig <= 64 else -EINVAL   # other processes (proctable.py)
    if _int(pid) not in (p.pid, 0):
        return -ESRCH
    if not 0 <= sig <= 64:
        return -EINVAL
    if sig == 0:
        return 0
    return p.send_signal(t, p.signal_target(sig).tid, sig, SI_USER)


def sys_tkill(p, t, tid, sig, *_):
    if not 0 <= sig <= 64:
        return -EINVAL
    return p.send_signal(t, _int(tid), sig)


def sys_tgkill(p, t, tgid, tid, sig, *_):
    if tgid != p.pid or not 0 <= sig <= 64:
        return -EINVAL if sig > 64 else -ESRCH
    return p.send_signal(t, tid, sig)


def sys_rt_sigreturn(p, t, *_):
    p.request_sigreturn(t)
    return STOP


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    62: ("kill", sys_kill), 200: ("tkill", sys_tkill),
    13: ("rt_sigaction", sys_rt_sigaction), 14: ("rt_sigprocmask", sys_rt_sigprocmask),
    15: ("rt_sigreturn", sys_rt_sigreturn), 131: ("sigaltstack", sys_sigaltstack), 234: ("tgkill", sys_tgkill),
}
