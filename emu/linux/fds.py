"""The file-descriptor table: stdio, eventfd, pipes and epoll, as far as the Go runtime uses them.

Mirrors fs/eventfd.c (a 64-bit counter; write adds, read returns and clears it, EAGAIN when zero
in non-blocking mode), fs/pipe.c (a byte queue) and fs/eventpoll.c (an interest list of
(fd, events, data); epoll_pwait reports ready entries, level-triggered). Files and devices are
sys_file.py's; paths outside the working directory answer ENOENT, which also makes the runtime skip
its cgroup and hugepage probes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

EPOLLIN, EPOLLOUT = 0x1, 0x4
EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD = 1, 2, 3
O_RDONLY, O_WRONLY, O_RDWR, O_LARGEFILE, O_NONBLOCK = 0, 1, 2, 0o100000, 0o4000


@dataclass
class Output:
    """fd 1 or 2: everything written is kept (and optionally passed through)."""

    name: str
    flags: int = O_WRONLY | O_LARGEFILE
    data: bytearray = field(default_factory=bytearray)


@dataclass
class Input:
    flags: int = O_RDONLY | O_LARGEFILE


@dataclass
class EventFd:
    counter: int = 0
    flags: int = O_RDWR | O_NONBLOCK

    def readiness(self) -> int:
        return (EPOLLIN if self.counter else 0) | EPOLLOUT


@dataclass
class Pipe:
    buf: bytearray
    write_end: bool
    flags: int = O_RDONLY

    def readiness(self) -> int:
        return EPOLLOUT if self.write_end else (EPOLLIN if self.buf else 0)


@dataclass
class Epoll:
    interest: dict = field(default_factory=dict)   # fd -> (events, data)
    flags: int = O_RDWR

    def ready(self, table: "FdTable") -> list[tuple[int, int]]:
        """(revents, data) of every ready interest, in fd order."""
        out = []
        for fd in sorted(self.interest):
            events, data = self.interest[fd]
            obj = table.get(fd)
            if obj is None or not hasattr(obj, "readiness"):
                continue
            rev = obj.readiness() & events
            if rev:
                out.append((rev, data))
        return out


class FdTable:
    def __init__(self) -> None:
        self.stdout, self.stderr = Output("stdout"), Output("stderr")
        self.fds: dict[int, object] = {0: Input(), 1: self.stdout, 2: self.stderr}

    def get(self, fd: int):
        return self.fds.get(fd)

    def install(self, obj) -> int:
        fd = 0
        while fd in self.fds:
            fd += 1
        self.fds[fd] = obj
        return fd

    def close(self, fd: int) -> int:
        if self.fds.pop(fd, None) is None:
            return -9               # EBADF
        for obj in self.fds.values():
            if isinstance(obj, Epoll):
                obj.interest.pop(fd, None)
        return 0
