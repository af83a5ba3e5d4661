"""The syscall table: what Linux x86-64 does for each syscall the Go runtime makes.

Every handler is `sys_NAME(p, t, a0..a5)` with p the Process and t the calling Thread, and
returns the value for RAX (a negative errno on failure), BLOCK (the thread now waits; its result
is written when it wakes) or STOP (the slice must end here: the syscall replaces the whole CPU
context or ends the thread, which must happen outside Unicorn's syscall hook, see process.py).
Numbers and semantics from the kernel's syscall_64.tbl and man pages; the runtime's side is
runtime/sys_linux_amd64.s and runtime/os_linux.go. A syscall not in TABLE is an error naming it
and the PC. Files are sys_file.py's (a read-only view of the working directory, /dev). Left out: writable
files, processes (fork/exec/wait), timers, sockets.
"""
from __future__ import annotations

import struct

from unicorn import x86_const as X

from . import fds as F
from . import sys_file
from .regbatch import read_reg
from .threads import Wait

BLOCK, STOP = object(), object()

EPERM, ENOENT, ESRCH, EINTR, EBADF, EAGAIN, ENOMEM, EFAULT = 1, 2, 3, 4, 9, 11, 12, 14
EEXIST, EINVAL, ENOSYS, ETIMEDOUT, ENODEV, EPIPE = 17, 22, 38, 110, 19, 32

CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_THREAD, CLONE_SETTLS = \
    0x100, 0x200, 0x400, 0x800, 0x10000, 0x80000
CLONE_PARENT_SETTID, CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID = 0x100000, 0x200000, 0x1000000
FUTEX_WAIT, FUTEX_WAKE, FUTEX_CMD_MASK = 0, 1, 0x7F
SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 0, 1, 2
SIGKILL, SIGSTOP = 9, 19
UNBLOCKABLE = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1))      # signals no mask can block
ARCH_SET_FS, ARCH_GET_FS = 0x1002, 0x1003
RLIMIT_NOFILE = 7
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL = 0, 1, 2, 3, 4
EFD_NONBLOCK = 0o4000
REALTIME_EPOCH_NS = 1_767_225_600 * 10**9     # CLOCK_REALTIME at boot: 2026-01-01T00:00:00Z


def _ts(p, addr: int) -> int:
    """Read a struct timespec (seconds, nanoseconds) as nanoseconds."""
    s, ns = struct.unpack("<qq", p.read(addr, 16))
    return s * 10**9 + ns


# --- process and threads --------------------------------------------------------------------
def sys_arch_prctl(p, t, code, addr, *_):
    if code == ARCH_SET_FS:
        p.uc.reg_write(X.UC_X86_REG_FS_BASE, addr)
        return 0
    if code == ARCH_GET_FS:
        p.write(addr, struct.pack("<Q", read_reg(p.uc, X.UC_X86_REG_FS_BASE)))
        return 0
    return -EINVAL


def sys_clone(p, t, flags, stack, ptid, ctid, tls, *_):
    need = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD
    if flags & need != need:
        return p.unsupported("clone", f"flags {flags:#x}: only threads (CLONE_VM|CLONE_THREAD|...) are modelled")
    if flags & (CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID):
        return p.unsupported("clone", f"flags {flags:#x}: SETTID/CLEARTID are not modelled")
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


def sys_prctl(p, t, *_):
    return -EINVAL        # PR_SET_VMA_ANON_NAME and friends: the runtime ignores the failure


def sys_uname(p, t, buf, *_):
    fields = [b"Linux", b"preemu", b"6.1.0", b"#1 SMP preemu", b"x86_64", b"(none)"]
    p.write(buf, b"".join(f.ljust(65, b"\0") for f in fields))
    return 0


def sys_getrandom(p, t, buf, n, flags, *_):
    p.write(buf, p.random_bytes(n))
    return n


# --- memory ----------------------------------------------------------------------------------
def sys_mmap(p, t, addr, length, prot, flags, fd, off):
    from .memory import MAP_ANONYMOUS
    if not flags & MAP_ANONYMOUS:
        return -ENODEV
    return p.mem.mmap(addr, length, prot, flags)


def sys_munmap(p, t, addr, length, *_):
    return p.mem.munmap(addr, length)


def sys_mprotect(p, t, addr, length, prot, *_):
    return p.mem.mprotect(addr, length, prot)


def sys_madvise(p, t, addr, length, advice, *_):
    return p.mem.madvise(addr, length, advice)


# --- signals ---------------------------------------------------------------------------------
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


def sys_tgkill(p, t, tgid, tid, sig, *_):
    if tgid != p.pid or not 0 <= sig <= 64:
        return -EINVAL if sig > 64 else -ESRCH
    return p.send_signal(t, tid, sig)


def sys_rt_sigreturn(p, t, *_):
    p.request_sigreturn(t)
    return STOP


# --- time and waiting ------------------------------------------------------------------------
def sys_clock_gettime(p, t, clk, ts, *_):
    now = p.now()
    if clk == 0:                       # CLOCK_REALTIME
        now += REALTIME_EPOCH_NS - p.boot_ns
    p.write(ts, struct.pack("<qq", now // 10**9, now % 10**9))
    return 0


def sys_nanosleep(p, t, req, rem, *_):
    d = _ts(p, req)
    if d < 0:
        return -EINVAL
    p.block(t, Wait("sleep", p.now() + d, 0))
    return BLOCK


def sys_futex(p, t, uaddr, op, val, timeout, uaddr2, val3):
    cmd = op & FUTEX_CMD_MASK
    if cmd == FUTEX_WAIT:
        if struct.unpack("<I", p.read(uaddr, 4))[0] != val & 0xFFFFFFFF:
            return -EAGAIN
        deadline = p.now() + _ts(p, timeout) if timeout else None
        p.block(t, Wait("futex", deadline, -ETIMEDOUT, restart=timeout == 0, futex=uaddr))
        return BLOCK
    if cmd == FUTEX_WAKE:
        return p.futex_wake(uaddr, val)
    return p.unsupported("futex", f"operation {op:#x}")


# --- files -----------------------------------------------------------------------------------
def sys_write(p, t, fd, buf, n, *_):
    obj = p.fds.get(fd)
    if isinstance(obj, sys_file.Device):
        return n                              # /dev/null and /dev/zero discard; so does /dev/urandom
    if hasattr(obj, "write_bytes"):          # a /tmp file (tmpfs.py)
        return obj.write_bytes(p, p.read(buf, n))
    if isinstance(obj, (sys_file.HostFile, sys_file.HostDir)):
        return -EBADF                         # opened read-only (the view is read-only)
    if isinstance(obj, F.Output):
        data = p.read(buf, n)
        p.output(obj, data)
        return n
    if isinstance(obj, F.EventFd):
        if n < 8:
            return -EINVAL
        obj.counter += struct.unpack("<Q", p.read(buf, 8))[0]
        p.wake_pollers()
        return 8
    if isinstance(obj, F.Pipe) and obj.write_end:
        if not obj.state.readers:
            return -EPIPE                     # (Linux also sends SIGPIPE; the Go runtime ignores it here)
        obj.buf.extend(p.read(buf, n))
        p.wake_pipe_readers()
        p.wake_pollers()
        return n
    return -EBADF


def sys_read(p, t, fd, buf, n, *_):
    obj = p.fds.get(fd)
    if isinstance(obj, F.Input):
        return 0
    if isinstance(obj, F.EventFd):
        if n < 8:
            return -EINVAL
        if not obj.counter:
            return -EAGAIN
        p.write(buf, struct.pack("<Q", obj.counter))
        obj.counter = 0
        return 8
    if isinstance(obj, F.Pipe) and not obj.write_end:
        if not obj.buf:
            if not obj.state.writers:
                return 0                      # end of file: every write end is closed
            if obj.flags & F.O_NONBLOCK:
                return -EAGAIN
            p.block(t, Wait("pipe", None, 0, pipe=obj, buf=buf, count=n))     # pipe_read waits for a writer
            return BLOCK
        data = obj.take(n)
        p.write(buf, data)
        return len(data)
    if hasattr(obj, "read_bytes"):            # files and devices (sys_file.py)
        data = obj.read_bytes(p, n)
        if isinstance(data, int):
            return data
        p.write(buf, data)
        return len(data)
    return -EBADF


def sys_close(p, t, fd, *_):
    r = p.fds.close(fd)
    p.wake_pipe_readers()                     # a closed write end is end of file for a waiting reader
    p.wake_pollers()
    return r


def sys_fcntl(p, t, fd, cmd, arg, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if cmd == F_GETFD:
        return 0
    if cmd == F_GETFL:
        return obj.flags
    if cmd == F_SETFL:
        obj.flags = arg
        return 0
    if cmd == F_SETFD:
        return 0
    return -EINVAL


def sys_eventfd2(p, t, initval, flags, *_):
    return p.fds.install(F.EventFd(initval, F.O_RDWR | (flags & EFD_NONBLOCK)))


def sys_pipe2(p, t, fdsp, flags, *_):
    st = F.PipeState()
    r = p.fds.install(F.Pipe(st, False, F.O_RDONLY | (flags & F.O_NONBLOCK)))
    w = p.fds.install(F.Pipe(st, True, F.O_WRONLY | (flags & F.O_NONBLOCK)))
    p.write(fdsp, struct.pack("<ii", r, w))
    return 0


def sys_epoll_create1(p, t, flags, *_):
    return p.fds.install(F.Epoll())


def sys_epoll_ctl(p, t, epfd, op, fd, ev, *_):
    ep = p.fds.get(epfd)
    if not isinstance(ep, F.Epoll) or p.fds.get(fd) is None:
        return -EBADF
    if op == F.EPOLL_CTL_DEL:
        return 0 if ep.interest.pop(fd, None) is not None else -ENOENT
    events, data = struct.unpack("<IQ", p.read(ev, 12))
    if op == F.EPOLL_CTL_ADD and fd in ep.interest:
        return -EEXIST
    if op == F.EPOLL_CTL_MOD and fd not in ep.interest:
        return -ENOENT
    ep.interest[fd] = (events, data)
    return 0


def sys_epoll_pwait(p, t, epfd, events, maxevents, timeout, sigmask, *_):
    ep = p.fds.get(epfd)
    if not isinstance(ep, F.Epoll):
        return -EBADF
    if maxevents <= 0:
        return -EINVAL
    n = p.epoll_collect(ep, events, maxevents)
    timeout = timeout - (1 << 32) if timeout & 0x80000000 else timeout & 0xFFFFFFFF   # an int in R10
    if n or timeout == 0:
        return n
    deadline = None if timeout < 0 else p.now() + timeout * 10**6
    p.block(t, Wait("epoll", deadline, 0, epfd=epfd, events=events, maxevents=maxevents))
    return BLOCK


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    0: ("read", sys_read), 1: ("write", sys_write), 3: ("close", sys_close),
    9: ("mmap", sys_mmap), 10: ("mprotect", sys_mprotect), 11: ("munmap", sys_munmap),
    13: ("rt_sigaction", sys_rt_sigaction), 14: ("rt_sigprocmask", sys_rt_sigprocmask),
    15: ("rt_sigreturn", sys_rt_sigreturn), 24: ("sched_yield", sys_sched_yield),
    28: ("madvise", sys_madvise), 35: ("nanosleep", sys_nanosleep), 39: ("getpid", sys_getpid),
    56: ("clone", sys_clone), 60: ("exit", sys_exit), 63: ("uname", sys_uname), 72: ("fcntl", sys_fcntl),
    131: ("sigaltstack", sys_sigaltstack), 157: ("prctl", sys_prctl), 158: ("arch_prctl", sys_arch_prctl),
    186: ("gettid", sys_gettid), 202: ("futex", sys_futex), 204: ("sched_getaffinity", sys_sched_getaffinity),
    228: ("clock_gettime", sys_clock_gettime), 231: ("exit_group", sys_exit_group), 233: ("epoll_ctl", sys_epoll_ctl),
    234: ("tgkill", sys_tgkill), 281: ("epoll_pwait", sys_epoll_pwait),
    290: ("eventfd2", sys_eventfd2), 291: ("epoll_create1", sys_epoll_create1), 293: ("pipe2", sys_pipe2),
    97: ("getrlimit", sys_getrlimit), 160: ("setrlimit", sys_setrlimit),
    302: ("prlimit64", sys_prlimit64), 318: ("getrandom", sys_getrandom),
    **sys_file.TABLE,                       # files: the working directory read-only, /dev, getcwd
}

#: every x86-64 syscall name 0..334 in number order (syscall_64.tbl), for error messages
ALL_NAMES = """read write open close stat fstat lstat poll lseek mmap mprotect munmap brk rt_sigaction
rt_sigprocmask rt_sigreturn ioctl pread64 pwrite64 readv writev access pipe select sched_yield mremap msync
mincore madvise shmget shmat shmctl dup dup2 pause nanosleep getitimer alarm setitimer getpid sendfile socket
connect accept sendto recvfrom sendmsg recvmsg shutdown bind listen getsockname getpeername socketpair
setsockopt getsockopt clone fork vfork execve exit wait4 kill uname semget semop semctl shmdt msgget msgsnd
msgrcv msgctl fcntl flock fsync fdatasync truncate ftruncate getdents getcwd chdir fchdir rename mkdir rmdir
creat link unlink symlink readlink chmod fchmod chown fchown lchown umask gettimeofday getrlimit getrusage
sysinfo times ptrace getuid syslog getgid setuid setgid geteuid getegid setpgid getppid getpgrp setsid
setreuid setregid getgroups setgroups setresuid getresuid setresgid getresgid getpgid setfsuid setfsgid
getsid capget capset rt_sigpending rt_sigtimedwait rt_sigqueueinfo rt_sigsuspend sigaltstack utime mknod
uselib personality ustat statfs fstatfs sysfs getpriority setpriority sched_setparam sched_getparam
sched_setscheduler sched_getscheduler sched_get_priority_max sched_get_priority_min sched_rr_get_interval
mlock munlock mlockall munlockall vhangup modify_ldt pivot_root _sysctl prctl arch_prctl adjtimex setrlimit
chroot sync acct settimeofday mount umount2 swapon swapoff reboot sethostname setdomainname iopl ioperm
create_module init_module delete_module get_kernel_syms query_module quotactl nfsservctl getpmsg putpmsg
afs_syscall tuxcall security gettid readahead setxattr lsetxattr fsetxattr getxattr lgetxattr fgetxattr
listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr tkill time futex sched_setaffinity
sched_getaffinity set_thread_area io_setup io_destroy io_getevents io_submit io_cancel get_thread_area
lookup_dcookie epoll_create epoll_ctl_old epoll_wait_old remap_file_pages getdents64 set_tid_address
restart_syscall semtimedop fadvise64 timer_create timer_settime timer_gettime timer_getoverrun timer_delete
clock_settime clock_gettime clock_getres clock_nanosleep exit_group epoll_wait epoll_ctl tgkill utimes
vserver mbind set_mempolicy get_mempolicy mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify
mq_getsetattr kexec_load waitid add_key request_key keyctl ioprio_set ioprio_get inotify_init
inotify_add_watch inotify_rm_watch migrate_pages openat mkdirat mknodat fchownat futimesat newfstatat
unlinkat renameat linkat symlinkat readlinkat fchmodat faccessat pselect6 ppoll unshare set_robust_list
get_robust_list splice tee sync_file_range vmsplice move_pages utimensat epoll_pwait signalfd
timerfd_create eventfd fallocate timerfd_settime timerfd_gettime accept4 signalfd4 eventfd2 epoll_create1
dup3 pipe2 inotify_init1 preadv pwritev rt_tgsigqueueinfo perf_event_open recvmmsg fanotify_init
fanotify_mark prlimit64 name_to_handle_at open_by_handle_at clock_adjtime syncfs sendmmsg setns getcpu
process_vm_readv process_vm_writev kcmp finit_module sched_setattr sched_getattr renameat2 seccomp
getrandom memfd_create kexec_file_load bpf execveat userfaultfd membarrier mlock2 copy_file_range preadv2
pwritev2 pkey_mprotect pkey_alloc pkey_free statx io_pgetevents rseq""".split()
ALL_NAMES_HIGH = {424: "pidfd_send_signal", 425: "io_uring_setup", 426: "io_uring_enter", 434: "pidfd_open",
                  435: "clone3", 439: "faccessat2", 441: "epoll_pwait2"}


def name_of(nr: int) -> str:
    if nr < len(ALL_NAMES):
        return ALL_NAMES[nr]
    return ALL_NAMES_HIGH.get(nr, f"syscall {nr}")
