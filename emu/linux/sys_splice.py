"""splice(2) and sendfile(2): bytes moved between descriptors without passing through the program's memory, as
Linux 6.x moves them (fs/splice.c, fs/read_write.c); Go's internal/poll uses them for a file or a stream socket
sent to a socket (sendfile_unix.go sendFile) and for socket -> pipe -> socket or file (splice_linux.go Splice).

- sendfile (fs/read_write.c do_sendfile): from in_fd's offset (f_pos, updated; or *offset, updated, in_fd's own
  left alone, ESPIPE for what has none), at most count bytes (MAX_RW_COUNT). Into a pipe it is a splice
  (splice_file_to_pipe); else the source must be a regular file (splice_direct_to_actor: EINVAL otherwise,
  a pipe or a socket included, so Go copies those itself) and an O_APPEND destination is EINVAL; the bytes go
  through an internal pipe a PIPE_DEF_SIZE chunk at a time (do_splice_direct): a non-blocking socket takes
  what it has room for (the count, or EAGAIN when nothing fit: Go's poller then waits), a blocking one waits
  for room until every byte is sent or the file ends;
- splice (fs/splice.c sys_splice, __do_splice, do_splice): len 0 is 0; flags past SPLICE_F_ALL are EINVAL; an
  offset given for a pipe end is ESPIPE, for a socket EINVAL; a descriptor not open for reading (in) or
  writing (out) is EBADF; one of the two must be a pipe (else EINVAL), not both ends of the same one.
  * pipe -> pipe (splice_pipe_to_pipe): whole buffers moved while len lasts, the last one split;
  * pipe -> socket, file, device or stdout (splice_to_socket, iter_file_splice_write, splice_write_null): an
    empty pipe is 0 once no writer is left, else EAGAIN (SPLICE_F_NONBLOCK or the pipe O_NONBLOCK) or a wait
    for data; then as much of len as the pipe holds, into a non-blocking socket as much as it has room for
    (EAGAIN when none: the bytes stay in the pipe); a blocking socket waits for room (sock_sendmsg) and the
    splice returns once len is moved or the pipe is empty; an O_APPEND destination is EINVAL;
  * socket, file or device -> pipe (splice_file_to_pipe): no reader is EPIPE and SIGPIPE; a full pipe is
    EAGAIN (SPLICE_F_NONBLOCK or the pipe O_NONBLOCK) or a wait for room; then at most the pipe's free slots'
    worth (do_splice_read), as page-sized buffers: from a file at its offset (0 at its end), from a TCP socket
    what a read would take (tcp_splice_read: waiting, unless the socket is O_NONBLOCK, for data, the FIN or an
    error; SPLICE_F_NONBLOCK does not matter there), from an AF_UNIX stream the same, where SPLICE_F_NONBLOCK
    does count (unix_stream_splice_read). SPLICE_F_MOVE, SPLICE_F_MORE and SPLICE_F_GIFT are hints: accepted.
(Linux 6.1, the release preemu's uname gives, sends a pipe into a socket through generic_splice_sendpage and
sock_sendpage: the same answers.) Moved bytes wake readers, writers waiting for room and epoll as a read or write
does. A wait is SA_RESTART-able while nothing moved; a signal after some bytes moved returns their count. A write into a socket that fails
EPIPE sends SIGPIPE (splice_to_socket sends without MSG_NOSIGNAL).
Left out: datagram and SOCK_SEQPACKET sockets (EINVAL; Linux 6.x splices them through copy_splice_read, and
Go never asks), sendfile's EOVERFLOW past the file system's largest file, vmsplice and tee, buffers kept by
reference (the bytes are copied, so a pipe's later writes never alter them, as with Linux's copies), a socket's
skb fragments as pipe buffers (a page a buffer here), copy_file_range (ENOSYS: Go copies with read and write,
copy_file_range_linux.go).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from unicorn import UcError

from . import fds as F
from .sys_file import MAX_RW_COUNT, Device, HostFd, _os
from .sys_socket import MSG_DONTWAIT, MSG_NOSIGNAL, SOCK_STREAM, Socket, send
from .sysabi import BLOCK, EAGAIN, EBADF, EFAULT, EINVAL, ENOSYS, ENOTCONN, EPIPE, ESPIPE
from .tcp import take_now as tcp_take_now
from .threads import Wait
from .tmpfs import O_ACCMODE, O_APPEND, MemFile

SPLICE_F_MOVE, SPLICE_F_NONBLOCK, SPLICE_F_MORE, SPLICE_F_GIFT = 1, 2, 4, 8
SPLICE_F_ALL = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT


# --- what an open file can do ------------------------------------------------------------------------------
def _mode(obj, write: bool) -> bool:
    """FMODE_READ / FMODE_WRITE: the open file's access mode."""
    acc = getattr(obj, "flags", F.O_RDWR) & O_ACCMODE
    return acc in (1, 2) if write else acc in (0, 2)


def _regular(obj) -> bool:
    """A regular file: it has an offset of its own, FMODE_PREAD and FMODE_PWRITE."""
    return isinstance(obj, (MemFile, HostFd))


def _stream(obj) -> bool:
    return isinstance(obj, Socket) and obj.type == SOCK_STREAM


def _can_read(obj) -> bool:
    """Has splice_read (in the cases modelled): a regular file, a device, a stream socket."""
    return _regular(obj) or isinstance(obj, Device) or _stream(obj)


def _can_write(obj) -> bool:
    """Has splice_write: a regular file, a device, stdout/stderr, a stream socket."""
    return _regular(obj) or isinstance(obj, (Device, F.Output)) or _stream(obj)


def _pos(obj) -> int:
    return _os(os.lseek, obj.fd, 0, os.SEEK_CUR) if isinstance(obj, HostFd) else getattr(obj, "pos", 0)


def _set_pos(obj, pos: int) -> None:
    if isinstance(obj, HostFd):
        _os(os.lseek, obj.fd, pos, os.SEEK_SET)
    elif _regular(obj):
        obj.pos = pos


# --- taking bytes from a source, putting them into a destination -------------------------------------------
def _take(p, src, pos: int, n: int, nonblock_flag: bool) -> bytes | int | None:
    """Up to n bytes of src now: from a file at pos (b"" at its end), from a device, or from a stream socket
    (b"" at its end, -errno, or None when it would wait); EAGAIN instead of waiting when the socket says so."""
    if isinstance(src, Device):
        return src.read_bytes(p, n)
    if _regular(src):
        return _os(os.pread, src.fd, n, pos) if isinstance(src, HostFd) else src.pread(pos, n)
    if src.rx is None:                           # tcp_read_sock: ENOTCONN; unix_stream_read_generic: EINVAL
        return -ENOTCONN if src.family == 2 else -EINVAL
    if src.tcp:
        data, nonblock = tcp_take_now(src, n), src.flags & F.O_NONBLOCK
    else:
        data, nonblock = F.pipe_take_now(src.rx, n), src.flags & F.O_NONBLOCK or nonblock_flag
    return -EAGAIN if data is None and nonblock else data


def _put(p, t, dst, pos: int | None, data: bytes) -> int:
    """Put data into dst now, never waiting: the bytes taken (a socket: what it has room for, EAGAIN for none,
    EPIPE with SIGPIPE to t once it is shut), or -errno. A file is written at pos (None: at its offset)."""
    if isinstance(dst, Socket):
        r = send(p, dst, data, None, MSG_DONTWAIT | MSG_NOSIGNAL)
        if r == -EPIPE:
            F.send_sigpipe(p, t)
        return r
    if isinstance(dst, F.Output):
        p.output(dst, data)
        return len(data)
    if isinstance(dst, Device):
        return len(data)                          # splice_write_null
    if isinstance(dst, HostFd):
        return _os(os.write, dst.fd, data) if pos is None else _os(os.pwrite, dst.fd, data, pos)
    if pos is None:
        return dst.write_bytes(p, data)
    keep, dst.pos = dst.pos, pos
    try:
        return dst.write_bytes(p, data)
    finally:
        dst.pos = keep


def _free(st: F.PipeState) -> int:
    """The bytes a pipe takes as new page buffers: its free slots (do_splice_read's p_space)."""
    return st.fits(MAX_RW_COUNT, merge=False)


# --- one transfer: what moves now, and a wait for the rest --------------------------------------------------
@dataclass(eq=False)
class Transfer:
    """A splice or sendfile in progress: `step(t)` moves what it can now and gives the call's result, or None
    while it waits (then Process.wake_pipe_readers calls it again). `done` counts the bytes moved."""
    kind: str                     # "to-pipe", "from-pipe", "pipe-pipe", "direct"
    src: object
    dst: object
    left: int
    pos: int | None = None        # the file offset read (to-pipe, direct) or written (from-pipe)
    off_addr: int = 0             # where *offset lives (0: the file's own offset moves)
    room_nb: bool = False         # EAGAIN instead of waiting for a pipe's room (to-pipe, pipe-pipe)
    data_nb: bool = False         # EAGAIN instead of waiting for a pipe's data (from-pipe, pipe-pipe), and
    #                               SPLICE_F_NONBLOCK for an AF_UNIX source (to-pipe)
    done: int = 0
    busy: bool = False

    def step(self, p, t) -> int | None:
        if self.busy:             # a wakeup while this very step moves bytes
            return None
        self.busy, before = True, self.done
        try:
            r = getattr(self, "_" + self.kind.replace("-", "_"))(p, t)
        finally:
            self.busy = False
        if self.done != before:
            self._commit(p)
            p.wake_pipe_readers()
            p.wake_pollers()
        if r is None and t.wait is not None and t.wait.kind == "splice":
            t.wait.count, t.wait.restart = self.done, not self.done
        return r

    def _commit(self, p) -> None:
        """The offset moved: the file's own, or *offset."""
        if self.pos is None:
            return
        if self.off_addr:
            p.write(self.off_addr, struct.pack("<q", self.pos))
        else:
            _set_pos(self.src if self.kind != "from-pipe" else self.dst, self.pos)

    def _to_pipe(self, p, t) -> int | None:
        """splice_file_to_pipe: wait_for_space, then do_splice_read (one read of what there is)."""
        st = self.dst.state
        if not st.readers:
            F.send_sigpipe(p, t)
            return -EPIPE
        if not st.writable():
            return -EAGAIN if self.room_nb else None
        if self.left >= 1 << 63 or not _can_read(self.src):        # vfs_splice_read: rw_verify_area, no splice_read
            return -EINVAL
        data = _take(p, self.src, self.pos or 0, min(self.left, MAX_RW_COUNT, _free(st)), self.data_nb)
        if data is None or isinstance(data, int):
            return data
        st.put(data, merge=False)
        self.done += len(data)
        if self.pos is not None:
            self.pos += len(data)
        return len(data)

    def _pipe_pipe(self, p, t) -> int | None:
        """splice_pipe_to_pipe: whole buffers while len lasts, the last split; EPIPE once no one reads."""
        ist, ost = self.src.state, self.dst.state
        if not ist.pending():
            return 0 if not ist.writers else -EAGAIN if self.data_nb else None
        if not ost.readers:
            F.send_sigpipe(p, t)
            return -EPIPE
        if not ost.writable():
            return -EAGAIN if self.data_nb else None
        while self.left and ist.slots and ost.writable():
            data = ist.take(min(self.left, ist.slots[0]))
            ost.put(data, merge=False)
            self.done += len(data)
            self.left -= len(data)
        return self.done

    def _from_pipe(self, p, t) -> int | None:
        """splice_to_socket / iter_file_splice_write: wait for data unless some moved; the bytes the pipe holds,
        as many as the destination takes; a blocking socket waits for room."""
        st = self.src.state
        while self.left:
            if not st.pending():
                if not st.writers or self.done:
                    return self.done
                return -EAGAIN if self.data_nb else None
            data = bytes(st.buf[:min(self.left, len(st.buf))])
            k = _put(p, t, self.dst, self.pos, data)
            if k < 0:
                if k == -EAGAIN and not self.dst.flags & F.O_NONBLOCK:
                    return None                  # sock_sendmsg waits for room
                return self.done or k
            st.take(k)
            self.done += k
            self.left -= k
            if self.pos is not None:
                self.pos += k
            if k < len(data) and not (isinstance(self.dst, Socket) and not self.dst.flags & F.O_NONBLOCK):
                return self.done                 # a non-blocking socket is full, a file could take no more
        return self.done

    def _direct(self, p, t) -> int | None:
        """splice_direct_to_actor: PIPE_DEF_SIZE chunks of the file into dst until count is sent or the file
        ends; a non-blocking socket with no more room ends it, a blocking one is waited for."""
        while self.left:
            data = _take(p, self.src, self.pos, min(self.left, F.PIPE_DEF_SIZE), False)
            if isinstance(data, int) or not data:
                return self.done or (data if isinstance(data, int) else 0)
            k = _put(p, t, self.dst, None, data)
            if k == -EAGAIN and not self.dst.flags & F.O_NONBLOCK:
                return None
            if k < 0:
                return self.done or k
            self.done += k
            self.left -= k
            self.pos += k
            if k < len(data) and self.dst.flags & F.O_NONBLOCK:
                return self.done
        return self.done


def _run(p, t, tr: Transfer) -> int:
    r = tr.step(p, t)
    if r is not None:
        return r
    p.block(t, Wait("splice", None, 0, restart=not tr.done, count=tr.done, retry=lambda th: tr.step(p, th)))
    return BLOCK


def _offset(p, obj, addr: int, refused: int) -> int | None:
    """*offset (a loff_t) for obj, None when addr is NULL: -refused for what has no offset of its own (no
    FMODE_PREAD/FMODE_PWRITE), -EFAULT for a bad pointer, -EINVAL for a negative offset (rw_verify_area)."""
    if not addr:
        return None
    if not _regular(obj) and not isinstance(obj, Device):
        return -refused
    try:
        off = struct.unpack("<q", p.read(addr, 8))[0]
    except UcError:
        return -EFAULT
    return -EINVAL if off < 0 else off


# --- the syscalls -------------------------------------------------------------------------------------------
def sys_sendfile(p, t, out_fd, in_fd, off_addr, count, *_):
    """sendfile64 (fs/read_write.c do_sendfile)."""
    src, dst = p.fds.get(in_fd & 0xFFFFFFFF), p.fds.get(out_fd & 0xFFFFFFFF)
    if src is None or not _mode(src, False):
        return -EBADF
    pos = _offset(p, src, off_addr, ESPIPE)
    if pos is None:
        pos = _pos(src)
    elif pos < 0:
        return pos
    if count >= 1 << 63:
        return -EINVAL                                               # rw_verify_area: (ssize_t)count < 0
    count = min(count, MAX_RW_COUNT)
    if dst is None or not _mode(dst, True):
        return -EBADF
    if isinstance(dst, F.Pipe):                                     # splice_file_to_pipe
        nb = bool(dst.flags & F.O_NONBLOCK)                         # do_sendfile: SPLICE_F_NONBLOCK then
        return _run(p, t, Transfer("to-pipe", src, dst, count, pos if _regular(src) else None, off_addr,
                                   room_nb=nb, data_nb=nb))
    if dst.flags & O_APPEND or not _regular(src):                   # do_splice_direct, splice_direct_to_actor
        return -EINVAL
    if not _can_write(dst):
        return -EINVAL                                               # do_splice_from: no splice_write
    return _run(p, t, Transfer("direct", src, dst, count, pos, off_addr))


def sys_splice(p, t, fd_in, off_in, fd_out, off_out, n, flags, *_):
    """splice(2) (fs/splice.c)."""
    if not n:
        return 0
    if flags & 0xFFFFFFFF & ~SPLICE_F_ALL:                          # an unsigned int
        return -EINVAL
    src, dst = p.fds.get(fd_in & 0xFFFFFFFF), p.fds.get(fd_out & 0xFFFFFFFF)
    if src is None or dst is None:
        return -EBADF
    ipipe, opipe = isinstance(src, F.Pipe), isinstance(dst, F.Pipe)
    if ipipe and off_in or opipe and off_out:
        return -ESPIPE
    if not _mode(src, False) or not _mode(dst, True):
        return -EBADF
    nb = bool(flags & SPLICE_F_NONBLOCK)
    if ipipe and opipe:
        if src.state is dst.state:
            return -EINVAL
        nb = nb or bool((src.flags | dst.flags) & F.O_NONBLOCK)
        return _run(p, t, Transfer("pipe-pipe", src, dst, n, data_nb=nb, room_nb=nb))
    if ipipe:
        pos = _offset(p, dst, off_out, EINVAL)
        if pos is not None and pos < 0:
            return pos
        if dst.flags & O_APPEND or n >= 1 << 63:                    # rw_verify_area: (ssize_t)len < 0
            return -EINVAL
        if not _can_write(dst):
            return -EINVAL
        if pos is None and _regular(dst) and not isinstance(dst, HostFd):
            pos = dst.pos
        return _run(p, t, Transfer("from-pipe", src, dst, n, pos, off_out,
                                   data_nb=nb or bool(src.flags & F.O_NONBLOCK)))
    if opipe:
        pos = _offset(p, src, off_in, EINVAL)
        if pos is None and _regular(src):
            pos = _pos(src)
        elif pos is not None and pos < 0:
            return pos
        return _run(p, t, Transfer("to-pipe", src, dst, n, pos, off_in,
                                   room_nb=nb or bool(dst.flags & F.O_NONBLOCK), data_nb=nb))
    return -EINVAL


def sys_copy_file_range(p, t, *_):
    return -ENOSYS


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {40: ("sendfile", sys_sendfile), 275: ("splice", sys_splice), 326: ("copy_file_range", sys_copy_file_range)}
