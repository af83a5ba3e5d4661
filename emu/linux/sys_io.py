"""Descriptors that are not files: read/write/close/fcntl on stdio, pipes, eventfd and epoll (fds.py
holds the objects). Semantics from read(2)/write(2) (fs/read_write.c), fs/pipe.c (a read of an empty pipe
waits for a writer, or EAGAIN with O_NONBLOCK; EOF once every write end is closed; EPIPE with no
reader), fs/eventfd.c and fs/eventpoll.c (epoll_pwait, level- or edge-triggered: fds.Epoll). Files are
sys_file.py's, sockets sys_socket.py's.
"""
from __future__ import annotations

import struct

from . import fds as F
from . import sys_file, sys_socket
from .sys_msg import iovecs
from .sys_proc import RLIMIT_NOFILE
from .sysabi import BLOCK, EAGAIN, EBADF, EBUSY, EEXIST, EINVAL, ENOENT, EPERM
from .threads import Wait

F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC = 0, 1, 2, 3, 4, 1030
F_SETPIPE_SZ, F_GETPIPE_SZ = 1031, 1032
#: /proc/sys/fs/pipe-max-size's default (fs/pipe.c pipe_max_size): the largest F_SETPIPE_SZ without CAP_SYS_RESOURCE
PIPE_MAX_SIZE = 1 << 20
O_CLOEXEC = F.O_CLOEXEC
FD_CLOEXEC = 1
EFD_NONBLOCK = 0o4000


def sys_write(p, t, fd, buf, n, *_):
    return write_data(p, fd, lambda: p.read(buf, n), n)


def write_data(p, fd: int, data, n: int):
    """write(2) of n bytes that data() reads from the guest (not read for /dev/null)."""
    obj = p.fds.get(fd)
    if isinstance(obj, sys_socket.Socket):
        return sys_socket.send(p, obj, data(), None)
    if isinstance(obj, sys_file.Device):
        return n                              # /dev/null and /dev/zero discard; so does /dev/urandom
    if hasattr(obj, "write_bytes"):          # a /tmp file (tmpfs.py)
        return obj.write_bytes(p, data())
    if isinstance(obj, (sys_file.HostFile, sys_file.HostDir)):
        return -EBADF                         # opened read-only (the view is read-only)
    if isinstance(obj, F.Output):
        p.output(obj, data())
        return n
    if isinstance(obj, F.EventFd):
        if n < 8:
            return -EINVAL
        obj.counter += struct.unpack_from("<Q", data())[0]
        obj.gen += 1
        p.wake_pollers()
        return 8
    if isinstance(obj, F.Pipe) and obj.write_end:
        return F.write_stream(p, obj.state, data(), nonblock=bool(obj.flags & F.O_NONBLOCK))
    return -EBADF


def sys_writev(p, t, fd, iov, iovcnt, *_):
    """writev(2) (fs/read_write.c do_writev): the iovecs' bytes in order as one write (net.Buffers' WriteTo;
    a pipe or stream takes them as write takes one buffer); EINVAL for more than UIO_MAXIOV."""
    vecs = iovecs(p, iov, iovcnt & 0xFFFFFFFF)
    if isinstance(vecs, int):
        return -EINVAL
    n = sum(ln for _b, ln in vecs)
    return write_data(p, fd, lambda: b"".join(bytes(p.read(b, ln)) for b, ln in vecs if ln), n)


def sys_readv(p, t, fd, iov, iovcnt, *_):
    """readv(2) into the first non-empty iovec (a short read, which readv may return, as recvmsg does here)."""
    vecs = iovecs(p, iov, iovcnt & 0xFFFFFFFF)
    if isinstance(vecs, int):
        return -EINVAL
    base, ln = next(((b, ln) for b, ln in vecs if ln), (0, 0))
    return sys_read(p, t, fd, base, ln)


def sys_read(p, t, fd, buf, n, *_):
    obj = p.fds.get(fd)
    if isinstance(obj, sys_socket.Socket):
        return sys_socket.recv(p, t, obj, buf, n)
    if isinstance(obj, F.Input):
        return 0
    if isinstance(obj, F.EventFd):
        if n < 8:
            return -EINVAL
        if not obj.counter:
            return -EAGAIN
        p.write(buf, struct.pack("<Q", obj.counter))
        obj.counter = 0
        obj.gen += 1
        return 8
    if isinstance(obj, F.Pipe) and not obj.write_end:
        return F.read_stream(p, t, obj, buf, n)
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


def sys_fsync(p, t, fd, *_):
    """fsync(2)/fdatasync(2): nothing to flush (files live in memory); EINVAL for what is not a file
    (stdio, pipes, sockets, eventfd), as Linux answers for them."""
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    return 0 if hasattr(obj, "read_bytes") else -EINVAL


def _fd_limit(p) -> int:
    """RLIMIT_NOFILE's soft limit: descriptors are numbered below it."""
    return p.rlimits[RLIMIT_NOFILE][0]


def sys_dup(p, t, fd, *_):
    """dup(2): the lowest free descriptor, sharing fd's open file (offset and status flags)."""
    return p.fds.install(p.fds.get(fd)) if p.fds.get(fd) is not None else -EBADF


def sys_dup2(p, t, old, new, *_):
    if p.fds.get(old) is None or new >= _fd_limit(p):
        return -EBADF
    return new if old == new else _dup_to(p, old, new)


def sys_dup3(p, t, old, new, flags, *_):
    if flags & ~O_CLOEXEC:
        return -EINVAL
    if p.fds.get(old) is None or new >= _fd_limit(p):
        return -EBADF
    return -EINVAL if old == new else _dup_to(p, old, new, bool(flags & O_CLOEXEC))


def _dup_to(p, old: int, new: int, cloexec: bool = False) -> int:
    r = p.fds.dup_to(old, new, cloexec)
    p.wake_pipe_readers()                     # what new referred to may have been a pipe's last write end
    p.wake_pollers()
    return r


def sys_fcntl(p, t, fd, cmd, arg, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if cmd in (F_DUPFD, F_DUPFD_CLOEXEC):
        return p.fds.install(obj, arg, cmd == F_DUPFD_CLOEXEC) if arg < _fd_limit(p) else -EINVAL
    if cmd == F_GETFD:
        return FD_CLOEXEC if fd in p.fds.cloexec else 0
    if cmd == F_GETFL:
        return obj.flags
    if cmd == F_SETFL:
        obj.flags = arg
        return 0
    if cmd == F_SETFD:
        p.fds.set_cloexec(fd, bool(arg & FD_CLOEXEC))
        return 0
    if cmd in (F_GETPIPE_SZ, F_SETPIPE_SZ):
        return _pipe_size(p, obj, cmd, arg)
    return -EINVAL


def _pipe_size(p, obj, cmd: int, arg: int) -> int:
    """fs/pipe.c pipe_fcntl: a pipe's capacity, and setting it (round_pipe_size: a power of two of pages; more
    than pipe-max-size is EPERM unless root, CAP_SYS_RESOURCE; less than what the pipe holds is EBUSY)."""
    if not isinstance(obj, F.Pipe) or obj.state.slots is None:
        return -EBADF
    st = obj.state
    if cmd == F_GETPIPE_SZ:
        return st.capacity
    arg &= 0xFFFFFFFF                          # an unsigned int
    if arg > 1 << 31:                          # round_pipe_size gives 0: no slots
        return -EINVAL
    pages = 1 << max(0, (-(-arg // F.PAGE) - 1).bit_length())   # round_pipe_size (under a page, 0 too: one page)
    size = pages * F.PAGE
    if size > PIPE_MAX_SIZE and p.uid != 0:
        return -EPERM
    if pages < len(st.slots):                  # pipe_resize_ring: the slots in use must fit
        return -EBUSY
    st.capacity = size
    st.out_gen += 1                            # room may have grown: a writer waiting for it goes on
    p.wake_pipe_readers()
    p.wake_pollers()
    return size


def sys_eventfd2(p, t, initval, flags, *_):
    return p.fds.install(F.EventFd(initval, F.O_RDWR | (flags & EFD_NONBLOCK)), cloexec=bool(flags & O_CLOEXEC))


def sys_pipe2(p, t, fdsp, flags, *_):
    st = F.PipeState()
    cloexec = bool(flags & O_CLOEXEC)
    r = p.fds.install(F.Pipe(st, False, F.O_RDONLY | (flags & F.O_NONBLOCK)), cloexec=cloexec)
    w = p.fds.install(F.Pipe(st, True, F.O_WRONLY | (flags & F.O_NONBLOCK)), cloexec=cloexec)
    p.write(fdsp, struct.pack("<ii", r, w))
    return 0


def sys_epoll_create1(p, t, flags, *_):
    return p.fds.install(F.Epoll(), cloexec=bool(flags & O_CLOEXEC))      # EPOLL_CLOEXEC is O_CLOEXEC


def sys_epoll_ctl(p, t, epfd, op, fd, ev, *_):
    ep = p.fds.get(epfd)
    if not isinstance(ep, F.Epoll) or p.fds.get(fd) is None:
        return -EBADF
    if op == F.EPOLL_CTL_DEL:
        ep.reported.pop(fd, None)
        return 0 if ep.interest.pop(fd, None) is not None else -ENOENT
    events, data = struct.unpack("<IQ", p.read(ev, 12))
    if op == F.EPOLL_CTL_ADD and fd in ep.interest:
        return -EEXIST
    if op == F.EPOLL_CTL_MOD and fd not in ep.interest:
        return -ENOENT
    ep.interest[fd] = (events, data)
    ep.reported.pop(fd, None)                 # ep_insert/ep_modify: a ready object is reported at once
    p.wake_pollers()
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
    32: ("dup", sys_dup), 33: ("dup2", sys_dup2), 292: ("dup3", sys_dup3),
    74: ("fsync", sys_fsync), 75: ("fdatasync", sys_fsync),
    0: ("read", sys_read), 1: ("write", sys_write), 19: ("readv", sys_readv), 20: ("writev", sys_writev), 3: ("close", sys_close), 72: ("fcntl", sys_fcntl),
    233: ("epoll_ctl", sys_epoll_ctl), 281: ("epoll_pwait", sys_epoll_pwait), 290: ("eventfd2", sys_eventfd2),
    291: ("epoll_create1", sys_epoll_create1), 293: ("pipe2", sys_pipe2),
}
