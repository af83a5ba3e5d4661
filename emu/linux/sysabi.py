"""What every syscall family shares: the handler's special results and the errno values (one table:
include/uapi/asm-generic/errno-base.h and errno.h), and how a struct timespec reads.

A handler is `sys_NAME(p, t, a0..a5)` with p the Process and t the calling Thread; it returns the value
for RAX (a negative errno on failure), BLOCK (the thread now waits; its result is written when it
wakes) or STOP (the slice must end here: the syscall replaces the whole CPU context or ends the thread,
which must happen outside Unicorn's syscall hook, see process.py).
"""
from __future__ import annotations

import struct

BLOCK, STOP = object(), object()

EPERM, ENOENT, ESRCH, EINTR, EIO, EBADF, EAGAIN, ENOMEM, EACCES, EFAULT = 1, 2, 3, 4, 5, 9, 11, 12, 13, 14
EEXIST, EXDEV, ENODEV, ENOTDIR, EISDIR, EINVAL, ESPIPE, EROFS, EPIPE, ERANGE = 17, 18, 19, 20, 21, 22, 29, 30, 32, 34
ENOSYS, ENOTEMPTY, ENOTSOCK, EDESTADDRREQ, EPROTOTYPE, ENOPROTOOPT, EPROTONOSUPPORT, EOPNOTSUPP = \
    38, 39, 88, 89, 91, 92, 93, 95
EAFNOSUPPORT, EADDRINUSE, EADDRNOTAVAIL, ENETUNREACH, ECONNRESET, EISCONN, ENOTCONN, ETIMEDOUT = \
    97, 98, 99, 101, 104, 106, 107, 110
ECONNREFUSED, EALREADY, EINPROGRESS = 111, 114, 115
E2BIG, ENOEXEC, ECHILD, ENXIO, ENAMETOOLONG, EBUSY = 7, 8, 10, 6, 36, 16
EMSGSIZE = 90
ESOCKTNOSUPPORT = 94


def timespec_ns(p, addr: int) -> int:
    """Read a struct timespec (seconds, nanoseconds) as nanoseconds."""
    s, ns = struct.unpack("<qq", p.read(addr, 16))
    return s * 10**9 + ns
