"""The kernel model driven syscall by syscall: a real emu.linux.process.Process of a small Go program (loaded,
never run) whose handlers a test calls by name, as the SYSCALL hook would, with strings and buffers in a
scratch mapping of the guest's memory. Tests of Linux behaviour the Go runtime never exercises (a write to a
read-only mount through every syscall, SA_NODEFER, a truncated datagram) use it."""
from __future__ import annotations

import struct

from conftest import ROOT

from emu.front import gobuild
from emu.linux import elfimage, kernel, process
from emu.goruntime.goprocess import GoProcess
from emu.linux.threads import Thread

AT_FDCWD = -100
NUMBERS = {name: nr for nr, (name, _) in kernel.TABLE.items()}
_IMAGE = None


def image():
    global _IMAGE
    if _IMAGE is None:
        _IMAGE = elfimage.load(str(gobuild.build(ROOT / "scenarios" / "go" / "hello").binary))
    return _IMAGE


class Guest:
    """One process: `call(name, *args)` runs the syscall handler with str/bytes arguments copied into guest
    memory (their addresses passed) and returns its result; `t` is the thread making the calls."""

    def __init__(self, cwd: str | None = None, mounts=()) -> None:
        self.p = GoProcess(image(), process.Options(argv=["prog"], cwd=cwd, mounts=tuple(mounts)),
                                 oracle=None)
        self.t = self.p.threads[self.p.pid]
        self.p.cur = self.t
        self.base = self.p.mem.mmap(0, 1 << 20, 3, 0x22)
        self.top = self.base

    def alloc(self, n: int) -> int:
        a = self.top
        self.top += (n + 15) & ~15
        return a

    def put(self, data) -> int:
        if isinstance(data, str):
            data = data.encode() + b"\0"
        a = self.alloc(len(data))
        self.p.write(a, data)
        return a

    def call(self, name: str, *args, t: Thread | None = None):
        nr = NUMBERS[name]
        args = [self.put(a) if isinstance(a, (str, bytes)) else a for a in args]
        args += [0] * (6 - len(args))
        self.p.syscall_nr = nr
        return kernel.TABLE[nr][1](self.p, t or self.t, *args)

    # --- what tests ask most ------------------------------------------------------------------------
    def open(self, path: str, flags: int = 0, mode: int = 0o644, dirfd: int = AT_FDCWD) -> int:
        return self.call("openat", dirfd, path, flags, mode)

    def read(self, fd: int, n: int = 4096) -> bytes | int:
        buf = self.alloc(n)
        r = self.call("read", fd, buf, n)
        return r if r < 0 else bytes(self.p.read(buf, r))

    def read_file(self, path: str) -> bytes | int:
        fd = self.open(path)
        if fd < 0:
            return fd
        data = self.read(fd)
        self.call("close", fd)
        return data

    def write(self, fd: int, data: bytes) -> int:
        return self.call("write", fd, data, len(data))

    def stat(self, path: str, flags: int = 0) -> int:
        return self.call("newfstatat", AT_FDCWD, path, self.alloc(144), flags)

    def thread(self) -> Thread:
        """Another thread of the process (the sender of a signal to a waiting one)."""
        t = Thread(max(self.p.threads) + 1, self.p.uc.context_save())
        self.p.threads[t.tid] = t
        return t

    def pipe(self) -> tuple[int, int]:
        fds = self.alloc(8)
        assert self.call("pipe2", fds, 0) == 0
        return struct.unpack("<ii", bytes(self.p.read(fds, 8)))
