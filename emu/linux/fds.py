"""The file-descriptor table: stdio, eventfd, pipes and epoll, as far as the Go runtime uses them.

Mirrors fs/eventfd.c (a 64-bit counter; write adds, read returns and clears it, EAGAIN when zero
in non-blocking mode), fs/pipe.c (a byte queue shared by its two ends: a read of an empty pipe whose
write end is closed is end of file, one whose write end is open waits, or answers EAGAIN when
O_NONBLOCK; a write with no reader left is EPIPE and SIGPIPE; the ring's 16 page slots bound it, a writer
waiting for room or, O_NONBLOCK, writing what fits; pipe_poll's EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR) and
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


PAGE = 4096
#: a pipe's capacity: PIPE_DEF_BUFFERS (16) slots of a page each (fs/pipe.c alloc_pipe_info; pipe(7): 65,536 bytes)
PIPE_DEF_SIZE = 16 * PAGE
#: a connected AF_UNIX stream's bytes in flight one way: net.core.wmem_default, the writer's sk_sndbuf
#: (net/unix/af_unix.c unix_stream_sendmsg waits in sock_alloc_send_pskb while it is spent). Counted as data
#: bytes, without the sk_buff overhead Linux charges too, so somewhat more fits than on Linux
SOCK_STREAM_BUF = 212_992


@dataclass(eq=False)
class PipeState:
    """What both ends of one pipe share: the bytes in flight and how many open ends of each kind. A pipe's
    room is counted in slots as fs/pipe.c counts it (`slots`: the bytes each page in the ring holds, at most
    capacity // PAGE of them); a stream socket's (slots None) in bytes, at most `capacity`."""
    buf: bytearray = field(default_factory=bytearray)
    capacity: int = PIPE_DEF_SIZE
    slots: deque | None = field(default_factory=deque)
    readers: int = 1
    writers: int = 1
    in_gen: int = 0                   # wakeups keyed EPOLLIN so far: bytes written, the last writer gone
    out_gen: int = 0                  # wakeups keyed EPOLLOUT: bytes read, the last reader gone
    records: object = None            # a SOCK_SEQPACKET stream: a deque of the writes' lengths, else None

    def put(self, data: bytes, merge: bool = True) -> None:
        """Queue `data` (what fits(len(data), merge) said goes in): in a pipe, the last page takes the write's
        part past whole pages if it has room for all of it (`merge`: a write's first round), new pages the rest."""
        self.buf.extend(data)
        if self.slots is not None:
            n, chars = len(data), len(data) % PAGE
            if merge and chars and self.slots and self.slots[-1] + chars <= PAGE:
                self.slots[-1] += chars
                n -= chars
            while n > 0:
                self.slots.append(min(PAGE, n))
                n -= PAGE
        if self.records is not None:
            self.records.append(len(data))
        self.in_gen += 1

    def take(self, n: int) -> bytes:
        """Up to n bytes from the front (removed); of records, the first one, cut to n (the rest is dropped,
        as unix_seqpacket_recvmsg drops what does not fit)."""
        size = self.records.popleft() if self.records else len(self.buf)
        data = bytes(self.buf[:min(n, size)])
        del self.buf[:size if self.records is not None else len(data)]
        if self.slots is not None:          # pipe_read: a page read to its end frees its slot
            left = len(data)
            while left and self.slots:
                k = min(left, self.slots[0])
                self.slots[0] -= k
                left -= k
                if not self.slots[0]:
                    self.slots.popleft()
        self.out_gen += 1
        return data

    def fits(self, n: int, merge: bool = True) -> int:
        """How many of a write's n bytes go in now. A pipe (pipe_write): the part past whole pages into the
        last page if it has room for all of that part (`merge`: only in a write's first round), then a page
        at a time into free slots; so a write of at most PIPE_BUF (a page) goes in whole or not at all. A
        stream socket: what the bytes left of `capacity` hold, a record (SOCK_SEQPACKET) whole or not at all."""
        if self.slots is None:
            room = max(0, self.capacity - len(self.buf))
            return n if n <= room else 0 if self.records is not None else room
        chars = n % PAGE
        k = chars if merge and chars and self.slots and self.slots[-1] + chars <= PAGE else 0
        return k + min(n - k, max(0, self.capacity // PAGE - len(self.slots)) * PAGE)

    def writable(self) -> bool:
        """Room for a write (pipe_poll's EPOLLOUT: a free slot; a socket: a free byte)."""
        return len(self.slots) < self.capacity // PAGE if self.slots is not None else len(self.buf) < self.capacity

    def pending(self) -> bool:
        """Something to read: bytes, or a record (even an empty one)."""
        return bool(self.buf or self.records)


def read_stream(p, t, end, buf: int, n: int):
    """read(2) of a byte stream: a pipe's read end (fs/pipe.c pipe_read) or a connected stream socket, each
    with .state, the PipeState it reads, and .flags. End of data once reading was shut (a socket's
    SHUT_RD) or every writer is gone; an empty stream answers EAGAIN with O_NONBLOCK, else the thread waits
    (Process.wake_pipe_readers finishes the read)."""
    r = read_now(p, end, buf, n)
    if r is not None:
        if r > 0:                   # room freed: a writer waiting for it goes on, a poller for EPOLLOUT hears it
            p.wake_pipe_readers()
            p.wake_pollers()
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
    data = pipe_take_now(st, n)
    if data:
        p.write(buf, data)
    return None if data is None else len(data)


def pipe_take_now(st: "PipeState", n: int) -> bytes | None:
    """What a read of up to n bytes of a pipe (or an AF_UNIX stream) takes now: bytes, b"" at end of data (no
    writer left, or reading shut), None when it would wait."""
    if not st.readers:
        return b""
    if not st.pending():
        return b"" if not st.writers else None
    return st.take(n)


SIGPIPE = 13


def write_stream(p, st: PipeState, data: bytes, sigpipe: bool = True, nonblock: bool = False) -> int:
    """write(2) into a byte stream (fs/pipe.c pipe_write): EPIPE once no one reads or writing was shut, and
    SIGPIPE to the writing thread as fs/pipe.c and net/unix/af_unix.c send it (send_sig(SIGPIPE, current, 0):
    SI_USER, unless `sigpipe` is False, a send with MSG_NOSIGNAL). Else as much as the stream has room for is
    queued (PipeState.fits: a write of at most PIPE_BUF bytes, or a record, all or nothing) and the waiting
    readers and pollers woken; what is left waits for room (the thread blocks until all is written, Process.wake_pipe_readers
    going on with it: write_more), or with `nonblock` the write returns what went in, EAGAIN if nothing did.
    (The Go runtime's handler ignores a SIGPIPE for a descriptor other than 1 and 2, or passes it to
    signal.Notify.)"""
    if not st.readers or not st.writers:
        send_sigpipe(p, p.cur, sigpipe)
        return -EPIPE
    return queue_write(p, st, data, sigpipe, nonblock)


def queue_write(p, st: PipeState, data: bytes, sigpipe: bool, nonblock: bool, broken=None) -> int:
    """A write into a stream that can take it (write_stream, tcp.send): what fits queued, the rest waiting for
    room or, `nonblock`, the count or EAGAIN. `broken(t)`: the stream's own test for a waiting write (the error
    that ends it, or None), instead of a pipe's readers and writers."""
    k = st.fits(len(data))
    if k == len(data):
        st.put(data)
    elif k:
        st.put(data[:k])
    if k:
        p.wake_pipe_readers()
        p.wake_pollers()
    if k == len(data):
        return k
    if nonblock:
        return k or -EAGAIN
    p.block(p.cur, Wait("pipe-write", None, 0, restart=not k, pipe=st, count=k, data=data[k:], sigpipe=sigpipe,
                        retry=broken))
    return BLOCK


def write_more(p, t) -> int | None:
    """A write waiting for room (write_stream) goes on: the bytes written in all once every one is in (or
    EPIPE's, when no reader is left), None while some still wait."""
    w = t.wait
    st = w.pipe
    if w.retry is not None:              # a TCP connection's own test (tcp.py): an error ends the write
        broken = w.retry(t)
        if broken is not None:
            return w.count or broken
    elif not st.readers or not st.writers:
        send_sigpipe(p, t, w.sigpipe)
        return w.count or -EPIPE         # pipe_write: what went in before the last reader left, else EPIPE
    k = st.fits(len(w.data), merge=False)
    if k:
        st.put(w.data[:k], merge=False)
        w.data, w.count, w.restart = w.data[k:], w.count + k, False    # interrupted now, it returns the count
        p.wake_pollers()
    return None if w.data else w.count


def send_sigpipe(p, t, send: bool = True) -> None:
    if send:
        from .sigframe import SI_USER
        p.send_signal(t, t.tid, SIGPIPE, SI_USER)


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
        if self.write_end:                   # pipe_poll: EPOLLOUT while the pipe is not full
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
