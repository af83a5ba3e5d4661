"""Syscalls of the process and its threads: clone (threads), exit, ids, affinity, resource limits,
uname, getrandom, arch_prctl, getppid and the user and group ids (the host's own, so a test that checks
for root decides as it does natively; the parent is pid 1). Semantics from clone(2), exit_group(2), sched_getaffinity(2), prlimit(2),
uname(2), getrandom(2), arch_prctl(2) and kernel/fork.c (CLONE_* flags); the runtime's side is
runtime/os_linux.go (newosproc, getproccount) and runtime/sys_linux_amd64.s. The clone syscall itself is
sys_fork.py's, which passes a thread's (CLONE_THREAD) to clone_thread here; the effective and saved ids and
their setters are sys_cred.py's.
"""
from __future__ import annotations

import struct

from unicorn import x86_const as X

from .regbatch import read_reg
from .sysabi import EINVAL, EPERM, STOP
from .threads import FsState

CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD, CLONE_SETTLS = \
    0x100, 0x200, 0x400, 0x800, 0x10000, 0x80000
CLONE_PARENT_SETTID, CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID = 0x100000, 0x200000, 0x1000000
ARCH_SET_FS, ARCH_GET_FS = 0x1002, 0x1003
RLIMIT_NOFILE = 7
RELEASE = "6.1.0"                         # the Linux release preemu's syscalls are (uname; kernel.LAST_SYSCALL)


def sys_arch_prctl(p, t, code, addr, *_):
    if code == ARCH_SET_FS:
        p.uc.reg_write(X.UC_X86_REG_FS_BASE, addr)
        return 0
    if code == ARCH_GET_FS:
        p.write(addr, struct.pack("<Q", read_reg(p.uc, X.UC_X86_REG_FS_BASE)))
        return 0
    return -EINVAL


def clone_thread(p, t, flags, stack, ptid, ctid, tls):
    """clone(2) with CLONE_THREAD (sys_fork.sys_clone passes it here): a thread of this process."""
    need = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD
    if flags & need != need:
        return p.unsupported("clone", f"flags {flags:#x}: only threads (CLONE_VM|CLONE_THREAD|...) are modelled")
    if flags & (CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID):
        return p.unsupported("clone", f"flags {flags:#x}: SETTID/CLEARTID are not modelled")
    from .memory import THREAD_COST
    err = p.cgroup.try_task(THREAD_COST)      # pids.max: EAGAIN, memory.max: ENOMEM (memory.Cgroup)
    if err:
        return -err
    p.tasks += 1
    return p.new_thread(t, stack, tls if flags & CLONE_SETTLS else None)


def sys_exit(p, t, code, *_):
    p.exit_thread(t, code)
    return STOP


def sys_exit_group(p, t, code, *_):
    p.exit_group(code & 0xFF)
    return STOP


def sys_gettid(p, t, *_):
    return t.tid


def sys_getpid(p, t, *_):
    return p.pid


def sys_getppid(p, t, *_):
    return p.ppid


def sys_getuid(p, t, *_):
    return p.uid


def sys_getgid(p, t, *_):
    return p.gid


def sys_sched_yield(p, t, *_):
    p.yield_slice()
    return 0


def sys_sched_getaffinity(p, t, pid, size, mask, *_):
    if size < 8:
        return -EINVAL
    p.write(mask, struct.pack("<Q", (1 << p.ncpu) - 1))
    return 8


def sys_prlimit64(p, t, pid, resource, new, old, *_):
    cur, mx = p.rlimits.get(resource, (2**64 - 1, 2**64 - 1))
    if old:
        p.write(old, struct.pack("<QQ", cur, mx))
    if new:
        p.rlimits[resource] = struct.unpack("<QQ", p.read(new, 16))
    return 0


def sys_getrlimit(p, t, resource, old, *_):
    """getrlimit(2) (Go <= 1.21's runtime reads RLIMIT_NOFILE with it): prlimit64 on itself."""
    return sys_prlimit64(p, t, 0, resource, 0, old)


def sys_setrlimit(p, t, resource, new, *_):
    return sys_prlimit64(p, t, 0, resource, new, 0)


#: prctl(2) options kept as per-process flags: option -> (the matching GET option, its default, valid values).
#: kernel/sys.c: PR_SET_PDEATHSIG 1 (signals 0-64), PR_SET_DUMPABLE 4 (0, 1), PR_SET_KEEPCAPS 8 (0, 1),
#: PR_SET_TIMERSLACK 29 (any; 0 means the default), PR_SET_CHILD_SUBREAPER 36, PR_SET_NO_NEW_PRIVS 38 (only 1,
#: and once set it stays), PR_SET_THP_DISABLE 41 (0, 1)
PR_FLAGS = {1: (2, 0, range(65)), 4: (3, 1, range(2)), 8: (7, 0, range(2)), 29: (30, 50_000, None),
            36: (37, 0, None), 38: (39, 0, range(1, 2)), 41: (42, 0, range(2))}
#: GET options that write the value through arg2 (PR_GET_PDEATHSIG, PR_GET_CHILD_SUBREAPER) instead of returning it
PR_GET_BY_POINTER = (2, 37)
PR_SET_NAME, PR_GET_NAME, PR_CAPBSET_READ, PR_GET_SECCOMP = 15, 16, 23, 21
CAP_LAST_CAP = 40                         # CAP_CHECKPOINT_RESTORE, Linux 5.9+


def sys_prctl(p, t, option, arg2, arg3, arg4, arg5, *_):
    """prctl(2) as an unprivileged process gets it (kernel/sys.c): the per-process flags of PR_FLAGS read back
    what was set, PR_SET_NAME/PR_GET_NAME the thread's 16-byte comm, PR_CAPBSET_READ a full bounding set,
    PR_GET_SECCOMP 0 (no filter); anything else EINVAL (PR_SET_VMA's anonymous names included, which the
    runtime asks for and ignores failing, as on a kernel without CONFIG_ANON_VMA_NAME)."""
    option &= 0xFFFFFFFF
    gets = {get: (setter, default) for setter, (get, default, _) in PR_FLAGS.items()}
    if option in PR_FLAGS:
        _, _, valid = PR_FLAGS[option]
        if valid is not None and arg2 not in valid:
            return -EINVAL
        if option == 38 and arg3 | arg4 | arg5:
            return -EINVAL
        p.prctl[option] = arg2
        return 0
    if option in gets:
        setter, default = gets[option]
        value = p.prctl.get(setter, default)
        if option in PR_GET_BY_POINTER:
            p.write(arg2, value.to_bytes(4, "little"))
            return 0
        return value
    if option == PR_SET_NAME:
        t.comm = p.read_cstr(arg2, 16).encode()[:15]
        return 0
    if option == PR_GET_NAME:
        p.write(arg2, getattr(t, "comm", b"prog")[:15].ljust(16, b"\0"))
        return 0
    if option == PR_CAPBSET_READ:
        return 1 if arg2 <= CAP_LAST_CAP else -EINVAL
    if option == PR_GET_SECCOMP:
        return 0
    return -EINVAL


def sys_unshare(p, t, flags, *_):
    """unshare(2) as an unprivileged process gets it: every namespace but a user namespace needs
    CAP_SYS_ADMIN (EPERM); CLONE_NEWUSER alone is refused too (a single-threaded caller is required and
    preemu does not model user namespaces: EPERM, as with user namespaces disabled); flags that only unshare
    what the process does not share (files, sysvsem) succeed. CLONE_FS gives the calling thread its own
    working directory (kernel/fork.c unshare_fs, threads.FsState): a chdir there no longer moves the other
    threads', as runtime/testdata/testprog LockOSThreadAvoidsStatePropagation checks."""
    CLONE_FS, CLONE_FILES, CLONE_SYSVSEM = 0x200, 0x400, 0x40000
    if flags & ~(CLONE_FS | CLONE_FILES | CLONE_SYSVSEM):
        return -EPERM
    if flags & CLONE_FS:
        t.fs = FsState(p.cwd, p.fsstate.umask)   # (a copy also when no one shares it: the same thing then)
    return 0


def sys_mount(p, t, *_):
    """mount(2), umount2(2): EPERM, as without CAP_SYS_ADMIN (fs/namespace.c may_mount), the answer unshare
    gives a namespace: preemu's mounts are its command line's."""
    return -EPERM


RUSAGE_SELF, RUSAGE_CHILDREN, RUSAGE_THREAD = 0, -1, 1


def sys_getrusage(p, t, who, buf, *_):
    """getrusage(2) (kernel/sys.c getrusage): user time is CPU time in virtual ns (the thread's for
    RUSAGE_THREAD, every thread's for RUSAGE_SELF; Thread.cpu_ns), system time 0 (the kernel's work costs no
    virtual time); children's 0; ru_maxrss the memory mapped accessible now, in KiB; the other counters 0.
    Left out: reaped children's times, page faults, context switches."""
    who = who - (1 << 64) if who >= 1 << 63 else who
    if who == RUSAGE_THREAD:
        ns = t.cpu_ns
    elif who == RUSAGE_SELF:
        ns = sum(x.cpu_ns for x in p.threads.values())
    elif who == RUSAGE_CHILDREN:
        ns = 0
    else:
        return -EINVAL
    maxrss = p.mem.committed_bytes() // 1024 if who != RUSAGE_CHILDREN else 0
    p.write(buf, struct.pack("<qq", ns // 10**9, ns % 10**9 // 1000) + bytes(16)
            + struct.pack("<q", maxrss) + bytes(13 * 8))
    return 0


def sys_uname(p, t, buf, *_):
    fields = [b"Linux", b"preemu", RELEASE.encode(), b"#1 SMP preemu", b"x86_64", b"(none)"]
    p.write(buf, b"".join(f.ljust(65, b"\0") for f in fields))
    return 0


def sys_getrandom(p, t, buf, n, flags, *_):
    p.write(buf, p.random_bytes(n))
    return n


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    110: ("getppid", sys_getppid), 102: ("getuid", sys_getuid), 104: ("getgid", sys_getgid),
    24: ("sched_yield", sys_sched_yield), 39: ("getpid", sys_getpid),
    60: ("exit", sys_exit), 63: ("uname", sys_uname), 97: ("getrlimit", sys_getrlimit), 157: ("prctl", sys_prctl),
    158: ("arch_prctl", sys_arch_prctl), 160: ("setrlimit", sys_setrlimit), 186: ("gettid", sys_gettid),
    204: ("sched_getaffinity", sys_sched_getaffinity), 231: ("exit_group", sys_exit_group),
    98: ("getrusage", sys_getrusage), 302: ("prlimit64", sys_prlimit64), 318: ("getrandom", sys_getrandom), 272: ("unshare", sys_unshare),
    165: ("mount", sys_mount), 166: ("umount2", sys_mount),
}
