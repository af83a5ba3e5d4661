"""Syscalls of other processes: clone (a thread's is sys_proc.py's), fork, vfork, execve, wait4, waitid, pidfd_open and
pidfd_send_signal (kill to another process is sys_signal.py's, through the process table). Semantics from
clone(2), execve(2), wait4(2), waitid(2), pidfd_open(2), pidfd_send_signal(2) and kernel/fork.c, fs/exec.c,
fs/binfmt_elf.c, fs/binfmt_script.c, kernel/exit.c; the process table is proctable.py's. Go's side:
syscall/exec_linux.go forkAndExecInChild1 (clone with CLONE_VFORK|CLONE_VM|CLONE_PIDFD|SIGCHLD, then dup3,
fcntl, close and execve in the child, the error on a close-on-exec pipe), os/pidfd_linux.go (pidfd_open,
waitid(P_PIDFD), pidfd_send_signal, checkClonePidfd's clone with no exit signal and waitid with __WCLONE).

What execve can start: a static linux/amd64 Go executable (elfimage.py), found through the process's view of
the files (mounts.py), or the running binary itself by its own host path or /proc/self/exe (as Linux runs
/proc/self/exe), or the first program by the argv[0] it started with (`preemu exec` starts it as ./NAME in
its working directory, as a shell does; the binary itself need not be there): the go test re-exec pattern. What preemu cannot run fails as Linux fails when it cannot run a
file, with a note in the report: a `#!` script or a dynamically linked ELF (PT_INTERP) with ENOENT, what
Linux answers when the interpreter is not there (there is none in preemu's world); an ELF of another machine,
a static executable that is not Go, a file in the in-memory /tmp, or a file in no known format with ENOEXEC
(no binary handler takes it); a directory, a device or a file without execute permission with EACCES.
Left out: execveat, clone3 (Go uses it only for cgroups and time namespaces: ENOSYS, noted), execve in the
first process (ENOSYS, noted), the flags of proctable.py's "Left out".
"""
from __future__ import annotations

import errno
import os
import stat
import struct

from . import startup, sys_file
from .proctable import ProcessTable, PidFd, rusage_bytes, exit_of, CLD_EXITED, CLD_KILLED, SIGCHLD, WNOHANG, \
    WEXITED, WNOWAIT, WALL, WCLONE
from .sys_proc import CLONE_PARENT_SETTID, CLONE_CHILD_SETTID, CLONE_SETTLS, CLONE_SIGHAND, CLONE_THREAD, CLONE_VM, \
    clone_thread
from .sysabi import BLOCK, E2BIG, EACCES, EBADF, ECHILD, EINVAL, ENOENT, ENOEXEC, ENOSYS, ESRCH, STOP
from .threads import Wait

CLONE_PIDFD, CLONE_VFORK, CLONE_DETACHED, CSIGNAL = 0x1000, 0x4000, 0x400000, 0xFF
#: the clone flags of a new process preemu models (with CLONE_VM only together with CLONE_VFORK)
MODELLED = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_SETTLS | CSIGNAL
WSTOPPED, WCONTINUED, WNOTHREAD = 2, 8, 0x20000000
P_ALL, P_PID, P_PGID, P_PIDFD = 0, 1, 2, 3
INT_MIN = -(1 << 31)
MAX_ARG_STRINGS = 0x7FFFFFFF


def _note(p, what: str) -> int:
    """A process call preemu does not model: ENOSYS, so the program goes on with an error of its own, and the
    report says what it tried."""
    p.unmodelled.append(what)
    return -ENOSYS


def _int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


# --- clone, fork, vfork --------------------------------------------------------------------------------------
def sys_clone(p, t, flags, stack, ptid, ctid, tls, *_):
    """clone(2): a thread (CLONE_THREAD: sys_proc.clone_thread) or a new process."""
    if flags & CLONE_THREAD:
        return clone_thread(p, t, flags, stack, ptid, ctid, tls)
    return clone_process(p, t, flags, stack, ptid, ctid, tls)


def clone_process(p, t, flags, stack, ptid, ctid, tls) -> int:
    """clone(2) of a new process."""
    flags &= 0xFFFFFFFF
    if flags & CLONE_PIDFD and flags & (CLONE_DETACHED | CLONE_PARENT_SETTID):
        return -EINVAL            # kernel_clone: legacy clone has one pointer for the pidfd and the parent tid
    if flags & CLONE_SIGHAND and not flags & CLONE_VM:
        return -EINVAL            # copy_process: shared handlers need shared memory
    if flags & ~MODELLED:
        return _note(p, f"clone (flags {flags:#x}): flags for a new process preemu does not model "
                        f"({flags & ~MODELLED:#x}: shared tables, namespaces, tracing or CLEARTID)")
    if flags & CLONE_VM and not flags & CLONE_VFORK:
        return _note(p, f"clone (flags {flags:#x}): CLONE_VM without CLONE_VFORK (two running processes on one "
                        "memory) is not modelled")
    kernel = ProcessTable.of(p)
    vfork = bool(flags & CLONE_VFORK)
    forked = kernel.fork(p, t, flags & CSIGNAL, stack, tls if flags & CLONE_SETTLS else None, vfork)
    if isinstance(forked, int):
        return -forked            # the run's cgroup refused it (memory.Cgroup): EAGAIN or ENOMEM
    rec, child = forked
    if flags & CLONE_CHILD_SETTID:
        child.write(ctid, struct.pack("<i", rec.pid))
    if flags & CLONE_PARENT_SETTID:
        p.write(ptid, struct.pack("<i", rec.pid))
    if flags & CLONE_PIDFD:
        fd = p.fds.install(PidFd(rec), cloexec=True)      # pidfds are always close-on-exec
        for mem in (p, child) if flags & CLONE_VM else (p,):
            mem.write(ptid, struct.pack("<i", fd))         # the child shares the parent's memory: it sees it too
    p.yield_slice()                                         # the CPU is shared from now on
    if vfork:
        p.block(t, Wait("vfork", None, 0))                  # woken with the pid when the child execs or exits
        return BLOCK
    return rec.pid


def sys_fork(p, t, *_):
    return clone_process(p, t, SIGCHLD, 0, 0, 0, 0)


def sys_vfork(p, t, *_):
    return clone_process(p, t, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0)


# --- execve ------------------------------------------------------------------------------------------------
def _strings(p, addr: int) -> list[str] | int:
    """A NULL-terminated array of string pointers (argv, envp); NULL itself is an empty array."""
    out: list[str] = []
    while addr:
        ptr = p.read_u64(addr + 8 * len(out))
        if not ptr:
            break
        if len(out) >= MAX_ARG_STRINGS:
            return -E2BIG
        out.append(p.read_cstr(ptr, 1 << 17))
    return out


def _executable(p, path: str):
    """(host path, None) of what execve(path) runs, or (-errno, why) when preemu cannot run it."""
    guest = sys_file._guest(p, sys_file.AT_FDCWD, path)
    if isinstance(guest, int):
        return guest, None
    if guest == "/proc/self/exe" or guest == os.path.abspath(p.image.path):
        return p.image.path, None                         # the running binary, as /proc/self/exe is always there
    if p.exe_alias is not None and guest == p.exe_alias[0]:
        return p.exe_alias[1], None                       # the first program's ./NAME in its starting directory
    if guest in sys_file.DEVICES:
        return -EACCES, None
    if sys_file._tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        if node is None:
            return -ENOENT, None
        if node.is_dir or not node.mode & 0o111:
            return -EACCES, None                          # as on the host: a directory, or no x bit
        refused = _format(bytes(node.data[:8192]))
        if refused is not None:
            return refused
        return -ENOEXEC, ("an ELF file in preemu's in-memory /tmp: preemu runs binaries from the host's files "
                          "only (ENOEXEC)")
    found = sys_file._host(p, guest)
    if isinstance(found, int):
        return (-EACCES if sys_file._synthetic(p, guest) is not None else found), None
    host = found[1]
    try:
        mode = os.stat(host).st_mode
    except OSError as e:
        return -(e.errno or ENOENT), None
    if stat.S_ISDIR(mode) or not mode & 0o111:
        return -EACCES, None                              # may_open/path_noexec: a directory, or no x bit
    return host, None


def _interpreter(head: bytes) -> str | None:
    """The interpreter a file asks for: a `#!` line's, or an ELF's PT_INTERP; None when it names none."""
    if head.startswith(b"#!"):
        return head[2:].split(b"\n")[0].strip().split(b" ")[0].decode(errors="replace") or "(none)"
    if head[:4] != b"\x7fELF" or len(head) < 64 or head[4] != 2:
        return None
    phoff, = struct.unpack_from("<Q", head, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
    for i in range(phnum):
        off = phoff + i * phentsize
        if off + 16 > len(head):
            break
        p_type, = struct.unpack_from("<I", head, off)
        if p_type == 3:                                   # PT_INTERP
            p_offset, = struct.unpack_from("<Q", head, off + 8)
            return head[p_offset:p_offset + 256].split(b"\0")[0].decode(errors="replace")
    return None


def _image(host: str):
    """(Image, None) for a static Go executable, else (-errno, why) (binfmt_script, binfmt_elf)."""
    from ..core.errors import EmuError
    from . import elfimage
    with open(host, "rb") as f:
        head = f.read(8192)
    refused = _format(head)
    if refused is not None:
        return refused
    try:
        image = elfimage.load(host)
    except EmuError as e:
        return -ENOEXEC, f"{e} (ENOEXEC)"
    if not image.is_go:
        return -ENOEXEC, "a static executable that is not a Go program: preemu runs Go binaries only (ENOEXEC)"
    return image, None


def _format(head: bytes) -> tuple[int, str] | None:
    """(-errno, why) for a file preemu cannot run, judged by its first bytes (fs/binfmt_script.c: a `#!` line
    whose interpreter is not there is ENOENT; fs/binfmt_elf.c: a PT_INTERP loader likewise; no format taking
    it, ENOEXEC), or None for an ELF without an interpreter, to load."""
    interp = _interpreter(head)
    if head.startswith(b"#!"):
        return -ENOENT, (f"a script (#!{interp}): preemu runs static Go binaries only, so its interpreter is not "
                         "there (ENOENT, as Linux answers when a script's interpreter is missing)")
    if head[:4] != b"\x7fELF":
        return -ENOEXEC, "not an ELF file nor a #! script (ENOEXEC: no binary format takes it)"
    if interp is not None:
        return -ENOENT, (f"dynamically linked (it needs {interp}): preemu runs static Go binaries only, so the "
                         "loader is not there (ENOENT, as Linux answers when the ELF interpreter is missing)")
    return None


def sys_execve(p, t, path_addr, argv_addr, envp_addr, *_):
    path = p.read_cstr(path_addr)
    argv, env = _strings(p, argv_addr), _strings(p, envp_addr)
    if isinstance(argv, int) or isinstance(env, int) or startup.args_too_big(argv, env) is not None:
        return -E2BIG
    if p.kernel is None or p is p.kernel.root:
        return _note(p, f"execve {path}: a new image for the first process (syscall.Exec) is not modelled")
    found, why = _executable(p, path)
    if why is None and not isinstance(found, int):
        found, why = _image(found)
    if isinstance(found, int):
        name = errno.errorcode.get(-found, str(-found))
        p.kernel.record_of(p).notes.append(f"execve {path} failed: {why or name}")
        return found
    p.kernel.execve(p, t, found, argv, env)
    return STOP


# --- wait4, waitid -----------------------------------------------------------------------------------------
def _wait(p, t, match, options: int, report, nohang):
    """do_wait: report a child now, -ECHILD, nohang() with WNOHANG, or wait (restartable, as ERESTARTSYS is)."""
    if p.kernel is None:
        return -ECHILD
    res = p.kernel.try_wait(p, match, options, report)
    if res is not None:
        return res
    if options & WNOHANG:
        return nohang()
    retry = lambda: p.kernel.try_wait(p, match, options, report)     # noqa: E731
    p.block(t, Wait("child", None, 0, restart=True, retry=retry))
    return BLOCK



def sys_wait4(p, t, pid, status_p, options, rusage, *_):
    options &= 0xFFFFFFFF
    if options & ~(WNOHANG | WSTOPPED | WCONTINUED | WNOTHREAD | WCLONE | WALL):
        return -EINVAL
    pid = _int(pid)
    if pid == INT_MIN:
        return -ESRCH
    if pid > 0:
        match = lambda r: r.pid == pid                 # noqa: E731
    elif pid == -1:
        match = lambda r: True                          # noqa: E731
    else:                                               # 0: the caller's process group, < -1: group -pid
        match = lambda r: r.pgid == (p.kernel.record_of(p).pgid if pid == 0 else -pid)    # noqa: E731

    def report(r) -> int:
        if status_p:
            p.write(status_p, struct.pack("<i", r.status))
        if rusage:
            p.write(rusage, rusage_bytes(r.cpu_ns))
        return r.pid
    return _wait(p, t, match, options | WEXITED, report, lambda: 0)


def _siginfo(signo: int, code: int, pid: int, uid: int, status: int) -> bytes:
    """waitid's siginfo: si_signo, si_errno, si_code, pad, si_pid, si_uid, si_status (128 bytes)."""
    return struct.pack("<iiiiIIi", signo, 0, code, 0, pid, uid, status).ljust(128, b"\0")


def sys_waitid(p, t, idtype, ident, infop, options, rusage, *_):
    options &= 0xFFFFFFFF
    if options & ~(WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | WNOTHREAD | WCLONE | WALL):
        return -EINVAL
    if not options & (WEXITED | WSTOPPED | WCONTINUED):
        return -EINVAL
    idtype &= 0xFFFFFFFF
    ident = _int(ident)
    if idtype == P_ALL:
        match = lambda r: True                          # noqa: E731
    elif idtype == P_PID:
        if ident <= 0:
            return -EINVAL
        match = lambda r: r.pid == ident                # noqa: E731
    elif idtype == P_PGID:
        if ident < 0:
            return -EINVAL
        # 0: the caller's group (kernel/exit.c kernel_waitid, Linux 5.4+); only asked once there is a table
        match = lambda r: r.pgid == (ident or p.kernel.record_of(p).pgid)                 # noqa: E731
    elif idtype == P_PIDFD:
        obj = p.fds.get(ident) if ident >= 0 else None
        if not isinstance(obj, PidFd):
            return -EBADF                               # pidfd_get_pid: not a descriptor, or not a pidfd
        match = lambda r: r is obj.record               # noqa: E731
    else:
        return -EINVAL

    def report(r) -> int:
        code, sig = exit_of(r.status)
        if infop:
            p.write(infop, _siginfo(SIGCHLD, CLD_KILLED if sig else CLD_EXITED, r.pid, p.uid, sig if sig else code))
        if rusage:
            p.write(rusage, rusage_bytes(r.cpu_ns))
        return 0

    def nohang() -> int:
        if infop:
            p.write(infop, _siginfo(0, 0, 0, 0, 0))     # WNOHANG and nothing to report: the fields read 0
        return 0
    return _wait(p, t, match, options, report, nohang)


# --- pidfds ------------------------------------------------------------------------------------------------
PIDFD_NONBLOCK = 0o4000


def sys_pidfd_open(p, t, pid, flags, *_):
    pid = _int(pid)
    if flags & ~PIDFD_NONBLOCK or pid <= 0:
        return -EINVAL
    rec = ProcessTable.of(p).records.get(pid)
    if rec is None or rec.state == "reaped":
        return -ESRCH
    return p.fds.install(PidFd(rec, 2 | (flags & PIDFD_NONBLOCK)), cloexec=True)


def sys_pidfd_send_signal(p, t, pidfd, sig, info, flags, *_):
    obj = p.fds.get(_int(pidfd))
    if flags:
        return -EINVAL
    if not isinstance(obj, PidFd):
        return -EBADF
    if not 0 <= sig <= 64:
        return -EINVAL
    if info:
        return _note(p, "pidfd_send_signal with a siginfo of the caller's")
    return p.kernel.signal(p, t, obj.record, sig)


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    56: ("clone", sys_clone), 57: ("fork", sys_fork), 58: ("vfork", sys_vfork), 59: ("execve", sys_execve), 61: ("wait4", sys_wait4),
    247: ("waitid", sys_waitid), 434: ("pidfd_open", sys_pidfd_open), 424: ("pidfd_send_signal", sys_pidfd_send_signal),
    435: ("clone3", lambda p, t, *_: _note(p, "clone3: not modelled (Go uses it for cgroups and time namespaces)")),
}
