"""Memory syscalls: anonymous mmap, munmap, mprotect, madvise, on the process's AddressSpace (memory.py).
Semantics from mmap(2)/mprotect(2)/madvise(2) and mm/mmap.c. Left out: file-backed mappings (ENODEV).
"""
from __future__ import annotations

from .sysabi import ENODEV


def sys_mmap(p, t, addr, length, prot, flags, fd, off):
    from .memory import MAP_ANONYMOUS
    if not flags & MAP_ANONYMOUS:
        return -ENODEV
    return p.mem.mmap(addr, length, prot, flags)


def sys_munmap(p, t, addr, length, *_):
    return p.mem.munmap(addr, length)


def sys_mprotect(p, t, addr, length, prot, *_):
    return p.mem.mprotect(addr, length, prot)


def sys_madvise(p, t, addr, length, advice, *_):
    return p.mem.madvise(addr, length, advice)


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    9: ("mmap", sys_mmap), 10: ("mprotect", sys_mprotect), 11: ("munmap", sys_munmap),
    28: ("madvise", sys_madvise),
}
