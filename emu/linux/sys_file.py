"""Files: a read-only view of the working directory, /dev/null, /dev/zero and /dev/urandom, and getcwd.

Semantics from the man pages and fs/: openat(2) (fs/open.c; AT_FDCWD or a directory fd, O_DIRECTORY,
write access refused with EROFS on the read-only view), read(2)/pread(2)/lseek(2) (fs/read_write.c),
fstat(2)/fstatat(2) with AT_EMPTY_PATH (fs/stat.c, struct stat of arch/x86/include/uapi/asm/stat.h),
getdents64(2) (fs/readdir.c: linux_dirent64 records, 8-byte aligned), getcwd(2) (ERANGE when the buffer is
too small). The process sees its working directory at the host path it has; nothing outside it is visible
(ENOENT, symlinks resolved first), and nothing on the host is ever written. /dev/urandom (and /dev/random)
read the process's seeded generator. /tmp is writable, in memory (tmpfs.py: openat with O_CREAT, mkdirat,
unlinkat, renameat, and reads, writes, stats and directory listings of what is there). Left out: other
mounts, chdir, readlink (/proc/self/exe), file-backed mmap, O_APPEND on /dev/null beyond discarding.
"""
from __future__ import annotations

import os
import posixpath
import stat as S
import struct
from dataclasses import dataclass

from .tmpfs import DirHandle, TmpFile, TmpFs

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
O_ACCMODE, O_CREAT, O_TRUNC, O_DIRECTORY = 3, 0o100, 0o1000, 0o200000
ENOENT, EBADF, ENOTDIR, EISDIR, EINVAL, ESPIPE, EROFS, ERANGE, EXDEV, EPERM = 2, 9, 20, 21, 22, 29, 30, 34, 18, 1
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
DT_DIR, DT_REG, DT_LNK, DT_UNKNOWN = 4, 8, 10, 0
DEVICES = {"/dev/null": "null", "/dev/zero": "zero", "/dev/urandom": "urandom", "/dev/random": "urandom"}


@dataclass
class HostFile:
    path: str
    data: bytes
    flags: int
    pos: int = 0

    def read_bytes(self, p, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out


HostDir = DirHandle                                 # a directory of the working-directory view


@dataclass
class Device:
    name: str                                       # null, zero, urandom
    flags: int

    def read_bytes(self, p, n: int) -> bytes:
        if self.name == "null":
            return b""
        return bytes(n) if self.name == "zero" else p.random_bytes(n)


def _negative(v: int) -> int:
    """A 64-bit register as a signed offset."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _fd(v: int) -> int:
    """A file descriptor argument: the kernel reads an int (AT_FDCWD is -100)."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _resolve(p, dirfd: int, path: str):
    """The host path `path` names for the process, or a negative errno."""
    dirfd = _fd(dirfd)
    if path.startswith("/"):
        base = "/"
    elif dirfd == AT_FDCWD:
        base = p.cwd
    else:
        d = p.fds.get(dirfd)
        if d is None:
            return -EBADF
        if not isinstance(d, DirHandle):
            return -ENOTDIR
        base = d.path
    full = os.path.realpath(os.path.join(base, path))
    root = p.cwd_root
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        return -ENOENT                              # outside the view
    return full


def _tmp(p, dirfd: int, path: str) -> str | None:
    """The /tmp path `path` names (absolute, or relative to a /tmp directory descriptor), else None. The
    working-directory view wins where the two overlap (a program run from a directory under /tmp)."""
    dirfd = _fd(dirfd)
    if path.startswith("/"):
        full = posixpath.normpath(path)
    else:
        d = p.fds.get(dirfd) if dirfd != AT_FDCWD else None
        if not (isinstance(d, DirHandle) and d.in_tmp):
            return None
        full = posixpath.normpath(posixpath.join(d.path, path))
    root = p.cwd_root.rstrip("/")
    if full == root or full.startswith(root + "/") or (root + "/").startswith(full + "/"):
        return None
    return full if TmpFs.owns(full) else None


def sys_openat(p, t, dirfd, path_addr, flags, mode, *_):
    path = p.read_cstr(path_addr)
    p.note_path(path)
    if path in DEVICES:
        return p.fds.install(Device(DEVICES[path], flags))
    tp = _tmp(p, dirfd, path)
    if tp is not None:
        obj = p.tmpfs.open(tp, flags, mode, p.now())
        return obj if isinstance(obj, int) else p.fds.install(obj)
    host = _resolve(p, dirfd, path)
    if isinstance(host, int):
        return host
    if flags & O_ACCMODE or flags & (O_CREAT | O_TRUNC):
        return -EROFS                               # the view is read-only (creating in it too)
    if not os.path.exists(host):
        return -ENOENT
    if os.path.isdir(host):
        names = sorted(os.listdir(host))
        kinds = [(n, DT_DIR if os.path.isdir(os.path.join(host, n)) else
                  DT_LNK if os.path.islink(os.path.join(host, n)) else DT_REG) for n in names]
        return p.fds.install(HostDir(host, flags, [(".", DT_DIR), ("..", DT_DIR)] + kinds))
    if flags & O_DIRECTORY:
        return -ENOTDIR
    try:
        with open(host, "rb") as f:
            data = f.read()
    except OSError as e:
        return -(e.errno or ENOENT)
    return p.fds.install(HostFile(host, data, flags))


def _elsewhere(p, dirfd: int, path: str) -> int:
    """A change outside /tmp: EROFS in the read-only view of the working directory, ENOENT outside it."""
    host = _resolve(p, dirfd, path)
    return host if isinstance(host, int) else -EROFS


def sys_mkdirat(p, t, dirfd, path_addr, mode, *_):
    path = p.read_cstr(path_addr)
    tp = _tmp(p, dirfd, path)
    return p.tmpfs.mkdir(tp, mode, p.now()) if tp is not None else _elsewhere(p, dirfd, path)


def sys_unlinkat(p, t, dirfd, path_addr, flags, *_):
    path = p.read_cstr(path_addr)
    tp = _tmp(p, dirfd, path)
    return p.tmpfs.unlink(tp, flags) if tp is not None else _elsewhere(p, dirfd, path)


def sys_renameat2(p, t, olddirfd, old_addr, newdirfd, new_addr, flags=0, *_):
    old, new = p.read_cstr(old_addr), p.read_cstr(new_addr)
    to, tn = _tmp(p, olddirfd, old), _tmp(p, newdirfd, new)
    if to is not None and tn is not None:
        return p.tmpfs.rename(to, tn) if not flags else -EINVAL
    if to is not None or tn is not None:
        return -EXDEV                               # across mounts
    return _elsewhere(p, olddirfd, old)


def sys_renameat(p, t, olddirfd, old_addr, newdirfd, new_addr, *_):
    return sys_renameat2(p, t, olddirfd, old_addr, newdirfd, new_addr, 0)


def sys_pwrite64(p, t, fd, buf, n, off, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if not isinstance(obj, TmpFile):
        return -ESPIPE if not isinstance(obj, (HostFile, Device)) else -EBADF
    pos = obj.pos
    obj.pos = _negative(off)
    try:
        return obj.write_bytes(p, p.read(buf, n))
    finally:
        obj.pos = pos                               # pwrite leaves the file offset alone


def sys_symlinkat(p, t, *_):
    return -EPERM                                   # no links in this /tmp (tmpfs.py)


def sys_readlinkat(p, t, dirfd, path_addr, buf, size, *_):
    path = p.read_cstr(path_addr)
    tp = _tmp(p, dirfd, path)
    if tp is not None:
        return -EINVAL if tp in p.tmpfs.nodes else -ENOENT     # nothing in /tmp is a link
    host = _resolve(p, dirfd, path)
    if isinstance(host, int):
        return host                                 # /proc/self/exe among them: outside the view
    return -EINVAL if os.path.exists(host) else -ENOENT


def sys_open(p, t, path_addr, flags, mode, *_):
    return sys_openat(p, t, AT_FDCWD, path_addr, flags, mode)


def sys_pread64(p, t, fd, buf, n, off, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if isinstance(obj, TmpFile):
        data = bytes(obj.node.data[off:off + n])
    elif isinstance(obj, HostFile):
        data = obj.data[off:off + n]
    else:
        return -ESPIPE
    p.write(buf, data)
    return len(data)


def sys_lseek(p, t, fd, off, whence, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    off = _negative(off)
    if isinstance(obj, DirHandle):
        if whence == SEEK_SET and off == 0:
            obj.pos = 0
            return 0
        return -EINVAL
    if not isinstance(obj, (HostFile, TmpFile)):
        return -ESPIPE
    size = len(obj.node.data) if isinstance(obj, TmpFile) else len(obj.data)
    new = {SEEK_SET: off, SEEK_CUR: obj.pos + off, SEEK_END: size + off}.get(whence)
    if new is None or new < 0:
        return -EINVAL
    obj.pos = new
    return new


def _stat_bytes(st: os.stat_result | None, device: bool = False) -> bytes:
    if device:                                      # a character device, as /dev/null is (1:3)
        return struct.pack("<QQQIIIIQqqq", 6, 5, 1, S.S_IFCHR | 0o666, 0, 0, 0, 0x103, 0, 4096, 0) + bytes(72)
    times = b"".join(struct.pack("<qq", int(ts), int((ts % 1) * 1e9)) for ts in (st.st_atime, st.st_mtime,
                                                                               st.st_ctime))
    return (struct.pack("<QQQIIIIQqqq", st.st_dev, st.st_ino, st.st_nlink, st.st_mode, st.st_uid, st.st_gid, 0,
                        0, st.st_size, 4096, (st.st_size + 511) // 512) + times + bytes(24))


def _fd_stat(p, fd: int):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if isinstance(obj, Device):
        return _stat_bytes(None, device=True)
    if isinstance(obj, TmpFile):
        return p.tmpfs.stat_bytes(obj.node)
    if isinstance(obj, DirHandle) and obj.in_tmp:
        node = p.tmpfs.nodes.get(obj.path)
        return p.tmpfs.stat_bytes(node) if node is not None else -ENOENT
    if isinstance(obj, (HostFile, HostDir)):
        return _stat_bytes(os.stat(obj.path))
    return _stat_bytes(None, device=True)           # stdio, pipes, eventfd: a character device will do


def sys_fstat(p, t, fd, buf, *_):
    st = _fd_stat(p, fd)
    if isinstance(st, int):
        return st
    p.write(buf, st)
    return 0


def sys_newfstatat(p, t, dirfd, path_addr, buf, flags, *_):
    path = p.read_cstr(path_addr)
    if not path and flags & AT_EMPTY_PATH:
        return sys_fstat(p, t, _fd(dirfd), buf)
    if path in DEVICES:
        p.write(buf, _stat_bytes(None, device=True))
        return 0
    tp = _tmp(p, dirfd, path)
    if tp is not None:
        node = p.tmpfs.nodes.get(tp)
        if node is None:
            return -ENOENT
        p.write(buf, p.tmpfs.stat_bytes(node))
        return 0
    host = _resolve(p, dirfd, path)
    if isinstance(host, int):
        return host
    if not os.path.exists(host):
        return -ENOENT
    p.write(buf, _stat_bytes(os.stat(host)))
    return 0


def sys_getdents64(p, t, fd, dirp, count, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if not isinstance(obj, DirHandle):
        return -ENOTDIR
    out = bytearray()
    while obj.pos < len(obj.entries):
        name, kind = obj.entries[obj.pos]
        raw = name.encode() + b"\0"
        reclen = (19 + len(raw) + 7) & ~7
        if len(out) + reclen > count:
            if not out:
                return -EINVAL
            break
        ino = 1 + obj.pos
        out += struct.pack("<QqHB", ino, obj.pos + 1, reclen, kind) + raw + bytes(reclen - 19 - len(raw))
        obj.pos += 1
    p.write(dirp, bytes(out))
    return len(out)


def sys_getcwd(p, t, buf, size, *_):
    raw = p.cwd.encode() + b"\0"
    if size < len(raw):
        return -ERANGE
    p.write(buf, raw)
    return len(raw)


#: syscall number -> (name, handler), merged into kernel.TABLE
TABLE = {
    2: ("open", sys_open), 5: ("fstat", sys_fstat), 8: ("lseek", sys_lseek), 17: ("pread64", sys_pread64),
    79: ("getcwd", sys_getcwd), 217: ("getdents64", sys_getdents64), 257: ("openat", sys_openat),
    262: ("newfstatat", sys_newfstatat), 258: ("mkdirat", sys_mkdirat), 263: ("unlinkat", sys_unlinkat),
    264: ("renameat", sys_renameat), 316: ("renameat2", sys_renameat2), 18: ("pwrite64", sys_pwrite64),
    266: ("symlinkat", sys_symlinkat), 265: ("linkat", sys_symlinkat), 267: ("readlinkat", sys_readlinkat),
}
