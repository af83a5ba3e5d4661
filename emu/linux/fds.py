"""The file-descriptor table: stdio, eventfd, pipes and epoll, as far as the Go runtime uses them.

Mirrors fs/eventfd.c (a 64-bit counter; write adds, read returns and clears it, EAGAIN when zero
in non-blocking mode), fs/pipe.c (a byte queue shared by its two ends, in at most 16 page-sized buffers: a
read of an empty pipe whose write end is closed is end of file, one whose write end is open waits, or
answers EAGAIN when O_NONBLOCK; a write waits for a free buffer, or takes what fits with O_NONBLOCK; a write with no reader left
is EPIPE and SIGPIPE; pipe_poll's EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR) and
fs/eventpoll.c (an interest list of
(fd, events, data); epoll_pwait reports ready entries, level-triggered, or with EPOLLET once per wakeup:
every object counts its wakeups in `gen`, which data arriving, room freed, a close or a connection
bumps, as the kernel's wake_up calls on the object's wait queue would, counted apart for wakeups
keyed EPOLLIN (data or EOF arrived) and EPOLLOUT (room freed): ep_poll_callback drops a wakeup whose key
the entry did not ask for; EPOLLERR and EPOLLHUP are reported whether asked for or not). Files and devices are
sys_file.py's (paths outside the mounts answer ENOENT, which also makes the runtime skip its cgroup and
hugepage probes), sockets sys_socket.py's.

Descriptor tables of several processes (proctable.py) share open files as fork does (kernel/fork.c dup_fd: the
child's table refers to the parent's open files): an object's on_close runs when its last descriptor in any
table closes, so a pipe's reader in one process sees end of file only once every process closed the write end.
The close-on-exec flag is per descriptor (fs/file.c: FD_CLOEXEC in the table, not in the open file): execve
closes those descriptors (fs/exec.c do_close_on_exec), dup2/dup3 without O_CLOEXEC give a descriptor without it.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .sysabi import BLOCK, EAGAIN, EPIPE
from .threads import Wait

EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLRDHUP, EPOLLET = 0x1, 0x4, 0x8, 0x10, 0x2000, 1 << 31
EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD = 1, 2, 3
O_RDONLY, O_WRONLY, O_RDWR, O_LARGEFILE, O_NONBLOCK = 0, 1, 2, 0o100000, 0o4000
O_CLOEXEC = 0o2000000             # also EFD_CLOEXEC, EPOLL_CLOEXEC and SOCK_CLOEXEC
PIPE_BUF, PIPE_SIZE = 4096, 65536   # include/uapi/linux/limits.h; fs/pipe.c: PIPE_DEF_BUFFERS (16) pages


def wakeups(events: int, in_gen: int, out_gen: int) -> int:
    """The wakeups an entry asking for `events` hears: those keyed EPOLLIN/EPOLLRDHUP and those keyed EPOLLOUT."""
    return (in_gen if events & (EPOLLIN | EPOLLRDHUP) else 0) + (out_gen if events & EPOLLOUT else 0)


#: what preemu keeps of a stream it passes through as the program writes it (`exec`): the last bytes, for the
#: report and a crash's text; the rest is streamed, never held
OUTPUT_TAIL = 1 << 20
#: what it keeps of a stream it does not pass through (`exec --json`, the sweeps' runs): the first bytes, at
#: most this and what the run's memory limit leaves (memory.Cgroup); the rest is counted in `dropped`
OUTPUT_KEEP = 64 << 20


@dataclass
class Output:
    """fd 1 or 2: what is written is passed through (services.output) and kept, up to a bound (OUTPUT_TAIL,
    OUTPUT_KEEP); `dropped` counts the bytes written but not kept."""

    name: str
    flags: int = O_WRONLY | O_LARGEFILE
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0


@dataclass
class Input:
    flags: int = O_RDONLY | O_LARGEFILE


@dataclass
class EventFd:
    counter: int = 0
    flags: int = O_RDWR | O_NONBLOCK
    gen: int = 0

    def readiness(self) -> int:
        return (EPOLLIN if self.counter else 0) | EPOLLOUT


@dataclass(eq=False)
class PipeState:
    """What both ends of one pipe share: the bytes in flight and how many open ends of each kind."""
    buf: bytearray = field(default_factory=bytearray)
    readers: int = 1
    writers: int = 1
    in_gen: int = 0                   # wakeups keyed EPOLLIN so far: bytes written, the last writer gone
    out_gen: int = 0                  # wakeups keyed EPOLLOUT: bytes read, the last reader gone
    records: object = None            # a SOCK_SEQPACKET stream: a deque of the writes' lengths, else None
    capacity: int | None = None       # a pipe's (PIPE_SIZE): writes wait for room; None: no limit (sockets)
    slots: deque = field(default_factory=deque)   # a pipe's buffers, [offset, length] in their page each

    def writable(self) -> bool:
        """pipe_poll's EPOLLOUT: a buffer slot is free (always, without a capacity)."""
        return self.capacity is None or len(self.slots) < self.capacity // PIPE_BUF

    def put_pipe(self, data: bytes) -> int:
        """pipe_write's copy into a pipe with a capacity: the length modulo a page merges into the last buffer
        when its page has room for it, then one buffer a page while a slot is free; what went in."""
        n, done = len(data), 0
        chars = n & (PIPE_BUF - 1)
        if chars and self.slots and sum(self.slots[-1]) + chars <= PIPE_BUF:
            self.slots[-1][1] += chars
            done = chars
        while done < n and self.writable():
            k = min(PIPE_BUF, n - done)
            self.slots.append([0, k])
            done += k
        if done:
            self.put(data[:done])
        return done

    def put(self, data: bytes) -> None:
        self.buf.extend(data)
        if self.records is not None:
            self.records.append(len(data))
        self.in_gen += 1

    def take(self, n: int) -> bytes:
        """Up to n bytes from the front (removed); of records, the first one, cut to n (the rest is dropped,
        as unix_seqpacket_recvmsg drops what does not fit)."""
        size = self.records.popleft() if self.records else len(self.buf)
        data = bytes(self.buf[:min(n, size)])
        del self.buf[:size if self.records is not None else len(data)]
        left = len(data)
        while left and self.slots:                  # pipe_read: a buffer emptied is freed
            c = min(left, self.slots[0][1])
            self.slots[0][0] += c
            self.slots[0][1] -= c
            left -= c
            if not self.slots[0][1]:
                self.slots.popleft()
        self.out_gen += 1
        return data

    def pending(self) -> bool:
        """Something to read: bytes, or a record (even an empty one)."""
        return bool(self.buf or self.records)


def read_stream(p, t, end, buf: int, n: int):
    """read(2) of a byte stream: a pipe's read end (fs/pipe.c pipe_read) or a connected stream socket, each
    with .state, the PipeState it reads, and .flags. End of data once reading was shut (a socket's
    SHUT_RD) or every writer is gone; an empty stream answers EAGAIN with O_NONBLOCK, else the thread waits
    (Process.wake_pipe_readers finishes the read)."""
    r = read_now(p, end, buf, n)
    if r:
        p.wake_pipe_readers()         # room for a writer that waits for it (Wait "pipewrite")
        p.wake_pollers()
    if r is not None:
        return r
    if end.flags & O_NONBLOCK:
        return -EAGAIN
    p.block(t, Wait("pipe", None, 0, restart=True, pipe=end, buf=buf, count=n))
    return BLOCK


def read_now(p, end, buf: int, n: int) -> int | None:
    """What a read of `end` returns now (bytes read into buf, 0 at end of data), or None when it would wait:
    the end's own read_now (a TCP socket, tcp.py), else a pipe's."""
    return end.read_now(p, buf, n) if hasattr(end, "read_now") else pipe_read_now(p, end.state, buf, n)


def pipe_read_now(p, st: "PipeState", buf: int, n: int) -> int | None:
    if not st.readers:
        return 0
    if not st.pending():
        return 0 if not st.writers else None
    data = st.take(n)
    p.write(buf, data)
    return len(data)


SIGPIPE = 13



def write_stream(p, st: PipeState, data: bytes, sigpipe: bool = True, nonblock: bool = False):
    """write(2) into a byte stream (pipe_write): EPIPE once no one reads or writing was shut, and SIGPIPE to
    the writing thread as fs/pipe.c and net/unix/af_unix.c send it (send_sig(SIGPIPE, current, 0): SI_USER,
    unless `sigpipe` is False, a send with MSG_NOSIGNAL); else queued and the waiting readers and pollers
    woken. A pipe holds PIPE_SIZE bytes: a write of at most PIPE_BUF goes in whole or not at all, a longer
    one as far as it fits; what does not fit waits for a reader (BLOCK; the write returns once all is in,
    or the count so far when the last reader goes), or with O_NONBLOCK the write returns what went in
    (EAGAIN for nothing). A socket's stream has no limit (a write never waits). (The Go runtime's handler
    ignores a SIGPIPE for a descriptor other than 1 and 2, or passes it to signal.Notify.)"""
    done = _write_some(p, st, data, sigpipe)
    if done is not None and (done < 0 or done == len(data)):
        return done
    if nonblock:
        return done or -EAGAIN
    return _wait_room(p, st, data, done or 0, sigpipe)


def _write_some(p, st: PipeState, data: bytes, sigpipe: bool, t=None) -> int | None:
    """What goes in now: the bytes written, -EPIPE, or None when a write of at most PIPE_BUF must wait;
    SIGPIPE goes to the writing thread t (the current one by default)."""
    if not st.readers or not st.writers:
        if sigpipe:
            from .sigframe import SI_USER
            t = t or p.cur
            p.send_signal(t, t.tid, SIGPIPE, SI_USER)
        return -EPIPE
    if st.capacity is None:
        st.put(data)
        n = len(data)
    else:
        n = st.put_pipe(data)
    if n == 0 and data:
        return None
    p.wake_pipe_readers()
    p.wake_pollers()
    return n


def _wait_room(p, st: PipeState, data: bytes, done: int, sigpipe: bool):
    """The rest of a blocking write waits for room (pipe_write's wait_event on pipe->wr_wait); the reader's
    take wakes it (Process.wake_pipe_readers calls `retry`)."""
    t, sent, busy = p.cur, [done], [False]

    def retry():
        if busy[0]:                   # the wakeups of its own write call back here: one write at a time
            return None
        if not st.readers:
            return sent[0] or _write_some(p, st, b"", sigpipe, t)
        busy[0] = True
        try:
            more = _write_some(p, st, data[sent[0]:], sigpipe, t)
        finally:
            busy[0] = False
        if more is None:
            return None
        sent[0] += more
        return sent[0] if sent[0] == len(data) else None
    p.block(t, Wait("pipewrite", None, 0, restart=True, retry=retry))
    return BLOCK


@dataclass(eq=False)
class Pipe:
    state: PipeState
    write_end: bool
    flags: int = O_RDONLY

    def wakeups(self, events: int) -> int:
        return wakeups(events, self.state.in_gen, self.state.out_gen)

    def on_close(self) -> None:
        """The last descriptor of this end: readers see EOF, writers EPIPE."""
        if self.write_end:
            self.state.writers -= 1
            self.state.in_gen += 1
        else:
            self.state.readers -= 1
            self.state.out_gen += 1

    def readiness(self) -> int:
        st = self.state
        if self.write_end:               # pipe_poll: writable while a buffer slot is free
            return (EPOLLOUT if st.writable() else 0) | (EPOLLERR if not st.readers else 0)
        # pipe_poll: EPOLLIN only with data, EPOLLHUP once every writer is gone (no EPOLLRDHUP: that is a socket's)
        return (EPOLLIN if st.buf else 0) | (EPOLLHUP if not st.writers else 0)


@dataclass
class Epoll:
    interest: dict = field(default_factory=dict)   # fd -> (events, data)
    flags: int = O_RDWR
    reported: dict = field(default_factory=dict)   # EPOLLET: fd -> the object's gen when last reported

    def ready(self, table: "FdTable", limit: int | None = None, consume: bool = False) -> list[tuple[int, int]]:
        """(revents, data) of the ready interests, in fd order, at most `limit`; `consume`: they are being
        reported (an EPOLLET entry then waits for its object's next wakeup)."""
        out = []
        for fd in sorted(self.interest):
            if limit is not None and len(out) >= limit:
                break
            events, data = self.interest[fd]
            obj = table.get(fd)
            if obj is None or not hasattr(obj, "readiness"):
                continue
            rev = obj.readiness() & (events | EPOLLERR | EPOLLHUP)
            if not rev:
                continue
            if events & EPOLLET:
                gen = obj.wakeups(events) if hasattr(obj, "wakeups") else getattr(obj, "gen", 0)
                if self.reported.get(fd) == gen:
                    continue
                if consume:
                    self.reported[fd] = gen
            out.append((rev, data))
        return out


class FdTable:
    def __init__(self) -> None:
        self.stdout, self.stderr = Output("stdout"), Output("stderr")
        self.fds: dict[int, object] = {0: Input(), 1: self.stdout, 2: self.stderr}
        self.cloexec: set[int] = set()        # descriptors with FD_CLOEXEC
        self.tables: list[FdTable] = [self]   # every live table that may share this one's open files

    def get(self, fd: int):
        return self.fds.get(fd)

    def install(self, obj, lowest: int = 0, cloexec: bool = False) -> int:
        """obj at the lowest free descriptor >= lowest (a dup shares obj: one open file, one offset)."""
        fd = lowest
        while fd in self.fds:
            fd += 1
        self.fds[fd] = obj
        self.set_cloexec(fd, cloexec)
        return fd

    def set_cloexec(self, fd: int, on: bool) -> None:
        (self.cloexec.add if on else self.cloexec.discard)(fd)

    def dup_to(self, old: int, new: int, cloexec: bool = False) -> int:
        """dup2's work: new refers to old's open file; what new referred to is closed first."""
        obj = self.fds[old]
        if new in self.fds:
            self.close(new)
        self.fds[new] = obj
        self.set_cloexec(new, cloexec)
        return new

    def close(self, fd: int) -> int:
        obj = self.fds.pop(fd, None)
        if obj is None:
            return -9               # EBADF
        self.cloexec.discard(fd)
        for other in self.fds.values():
            # an epoll instance forgets fd unless another process that shares it still has obj at fd (Linux
            # keeps an interest until its file's last close, ep_remove from eventpoll_release)
            if isinstance(other, Epoll) and not any(tab.fds.get(fd) is obj and any(e is other for e in tab.fds.values())
                                                    for tab in self.tables if tab is not self):
                other.interest.pop(fd, None)
                other.reported.pop(fd, None)
        if hasattr(obj, "on_close") and not getattr(obj, "in_flight", 0) \
                and not any(o is obj for tab in self.tables for o in tab.fds.values()):
            obj.on_close()          # the last descriptor of the object (a pipe end, a socket) in any process,
        return 0                    # none in flight in an SCM_RIGHTS message either (sys_msg.py)

    # --- processes (proctable.py) -----------------------------------------------------------------
    def fork(self) -> "FdTable":
        """A child's table (kernel/fork.c dup_fd): the same open files at the same numbers, FD_CLOEXEC kept."""
        child = FdTable.__new__(FdTable)
        child.stdout, child.stderr = self.stdout, self.stderr
        child.fds, child.cloexec, child.tables = dict(self.fds), set(self.cloexec), self.tables
        self.tables.append(child)
        return child

    def close_on_exec(self) -> None:
        """execve's do_close_on_exec: every descriptor with FD_CLOEXEC closes."""
        for fd in sorted(self.cloexec):
            self.close(fd)

    def close_all(self) -> None:
        """The process exits (exit_files): every descriptor closes, and the table shares nothing any more."""
        for fd in sorted(self.fds):
            self.close(fd)
        self.tables.remove(self)
