"""The syscall table: what Linux x86-64 does for each syscall the Go runtime makes, one dispatch table
over the syscall families (as gVisor's sentry and Qiling's os/linux/syscall split them):

  sys_proc.py    process and threads: clone, exit, ids, affinity, rlimits, uname, getrandom
  sys_fork.py    other processes: fork, vfork, execve, wait4, waitid, pidfds (the table: proctable.py)
  sys_pgrp.py    process groups and sessions: getpgid, setpgid, getsid, setsid
  sys_cred.py    credentials: set*uid/set*gid, getres*id, groups
  sys_mem.py     memory: mmap, munmap, mprotect, madvise
  sys_signal.py  signals: rt_sigaction, rt_sigprocmask, sigaltstack, kill/tkill/tgkill, rt_sigreturn
  sys_time.py    time and waiting: clock_gettime, nanosleep, futex
  sys_timer.py   CPU-time timers: setitimer(ITIMER_PROF), timer_create on the CPU clocks (SIGPROF)
  sys_io.py      descriptors that are not files: read/write/close/fcntl, pipes, eventfd, epoll
  sys_file.py    files: the mounts (mounts.py), /tmp in memory, /dev, chdir/getcwd, symbolic links
  sys_fattr.py   file attributes: access/faccessat2, umask, fchmodat2, utimensat and the other time setters
  sys_socket.py  sockets inside the process: socketpair, AF_UNIX, loopback TCP/UDP (tcp.py: FIN, RST),
                 MPTCP (mptcp.py), raw IPv4 (rawip.py), NETLINK_ROUTE's interface dumps (netlink.py)
  sys_splice.py  splice, sendfile: bytes between a file or socket and a pipe, a file to a socket
  sys_msg.py     sendmsg/recvmsg, SCM_RIGHTS

Numbers from arch/x86/entry/syscalls/syscall_64.tbl; the runtime's side is runtime/sys_linux_amd64.s
and runtime/os_linux.go. A syscall in no family's table is an error naming it and the PC. Handler
conventions and errnos: sysabi.py.
"""
from __future__ import annotations

from . import (sys_cred, sys_fattr, sys_file, sys_fork, sys_io, sys_mem, sys_msg, sys_pgrp, sys_proc, sys_signal,
               sys_socket, sys_splice, sys_time, sys_timer)
from .sysabi import ENOSYS

FAMILIES = (sys_proc, sys_cred, sys_fork, sys_pgrp, sys_mem, sys_signal, sys_time, sys_timer, sys_io, sys_file,
            sys_fattr, sys_socket, sys_splice, sys_msg)


def _table() -> dict:
    out: dict = {}
    for fam in FAMILIES:
        for nr, entry in fam.TABLE.items():
            if nr in out:
                raise AssertionError(f"syscall {nr} is in two families: {out[nr][0]} and {entry[0]}")
            out[nr] = entry
    return out


#: syscall number -> (name, handler)
TABLE = _table()

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
ALL_NAMES_HIGH = dict(enumerate("""pidfd_send_signal io_uring_setup io_uring_enter io_uring_register open_tree
move_mount fsopen fsconfig fsmount fspick pidfd_open clone3 close_range openat2 pidfd_getfd faccessat2
process_madvise epoll_pwait2 mount_setattr quotactl_fd landlock_create_ruleset landlock_add_rule
landlock_restrict_self memfd_secret process_mrelease futex_waitv set_mempolicy_home_node cachestat fchmodat2
map_shadow_stack futex_wake futex_wait futex_requeue statmount listmount lsm_get_self_attr lsm_set_self_attr
lsm_list_modules mseal""".split(), start=424))


def name_of(nr: int) -> str:
    if nr < len(ALL_NAMES):
        return ALL_NAMES[nr]
    return ALL_NAMES_HIGH.get(nr, f"syscall {nr}")


#: the last number of the x86-64 table of the kernel preemu presents (sys_proc.RELEASE, 6.1:
#: set_mempolicy_home_node); a number above it, or in the table's unassigned gap 335-423, is ENOSYS on that
#: kernel (past NR_syscalls, sys_ni_syscall), which is what Go's fallbacks look for (fchmodat2, 452)
LAST_SYSCALL, GAP = 450, range(335, 424)
X32_FIRST = 512                                     # __X32_SYSCALL_BIT's numbers: not x86-64's


def _enosys(p, t, *_):
    return -ENOSYS


TABLE.update({nr: (name_of(nr), _enosys) for nr in (*GAP, *range(LAST_SYSCALL + 1, X32_FIRST)) if nr not in TABLE})
