"""Threads (tasks) and what they wait for: the per-thread half of the kernel state.

Each thread keeps its CPU state as a Unicorn context between slices (FS base included, so Go's
TLS needs nothing more), its signal mask, alternate signal stack and pending signals, and, when
blocked, a Wait saying what wakes it: a futex word, a deadline, an epoll instance.
"""
from __future__ import annotations

from dataclasses import dataclass, field

RUNNABLE, BLOCKED, EXITED = "runnable", "blocked", "exited"


@dataclass(eq=False)
class FsState:
    """What CLONE_FS shares (include/linux/fs_struct.h struct fs_struct): the working directory. Every thread
    shares its process's until it calls unshare(CLONE_FS) (kernel/fork.c unshare_fs: a copy of its own),
    and a thread it clones shares that copy; the umask (sys_fattr.sys_umask) travels with it. Left out: the
    root directory (chroot)."""
    cwd: str
    umask: int = 0o022                             # a login shell's; what new files' modes are masked with


@dataclass
class Wait:
    kind: str                      # "futex", "sleep", "epoll", "pipe", "pipe-write", "vfork", "child", ...
    deadline: int | None           # virtual ns, or None = no timeout
    on_timeout: int                # the syscall's result when the deadline passes
    restart: bool = False          # SA_RESTART-able (futex wait without timeout, pipe read): restart, not EINTR
    nr: int = -1                   # the waiting syscall's number (a restart puts it back in RAX)
    futex: int = 0
    epfd: int = -1
    events: int = 0
    maxevents: int = 0
    pipe: object = None            # "pipe"/"dgram": the read end (a pipe or a socket), and where the data goes
    buf: int = 0
    count: int = 0
    fd: int = -1                   # "accept": the listening socket
    addr: int = 0                  # "accept"/"dgram": where the peer's sockaddr goes, and its length word
    addrlen: int = 0
    flags: int = 0                 # "accept": accept4's flags; "dgram": recvfrom's (MSG_TRUNC)
    retry: object = None           # "child" (wait4, waitid): a callable giving the result, or None to go on waiting;
    #                                "pipe-write" on TCP: retry(t) gives the error that ends the write (tcp.py)
    rem: int = 0                   # "sleep" (nanosleep): where the time left goes when a signal interrupts it
    data: bytes = b""              # "pipe-write": the bytes still to write (count: those written so far)
    sigpipe: bool = True           # "pipe-write": SIGPIPE if the last reader leaves (not with MSG_NOSIGNAL)


@dataclass(eq=False)          # a thread is itself: `t in runq` asks identity, not equal fields
class Thread:
    tid: int
    ctx: object
    state: str = RUNNABLE
    wait: Wait | None = None
    sigmask: int = 0
    altstack: tuple[int, int] | None = None        # (ss_sp, ss_size) when set
    pending: dict = field(default_factory=dict)    # signo -> sender tid
    signal_countdown: int = 0                      # instructions still to run before a pending signal is taken
    frames: list = field(default_factory=list)     # sigframe.Delivered, innermost last
    name: str = ""
    cpu_ns: int = 0                                # CPU time used: its instructions x ns-per-instruction
    ready_ns: int = 0                              # when it last became runnable (cpus.py: it runs no earlier)
    vruntime: int = 0                              # CFS's virtual runtime (cpus.py: wakeup preemption)
    kregs: tuple = ()                              # K0-K7 at --cpu v4 (engine/avx.py; not in ctx): () = zeros
    fs: "FsState | None" = None                    # its own fs state after unshare(CLONE_FS); None: the process's

    def deliverable(self) -> int:
        """The lowest pending signal not blocked by the mask, or 0."""
        if not self.pending:
            return 0
        for sig in sorted(self.pending):
            if not self.sigmask & (1 << (sig - 1)):
                return sig
        return 0
