"""Files: the mounts (mounts.py: the working directory read-only at its own path, and --mount HOST:GUEST
[:ro|rw]), /tmp in memory (tmpfs.py), /dev/null, /dev/zero and /dev/urandom, and the working directory.

Semantics from the man pages and fs/: openat(2) (fs/open.c; AT_FDCWD or a directory fd, O_DIRECTORY,
write access refused with EROFS in a read-only mount), read(2)/pread(2)/pwrite(2)/lseek(2)
(fs/read_write.c), fstat(2)/fstatat(2)/statx(2) with AT_EMPTY_PATH (fs/stat.c, struct stat of
arch/x86/include/uapi/asm/stat.h), getdents64(2) (fs/readdir.c: linux_dirent64 records, 8-byte aligned),
mkdirat/unlinkat/renameat(2) (EXDEV across mounts), truncate/ftruncate(2), getcwd(2) (ERANGE when the buffer
is too small), chdir/fchdir(2), symlink/readlink(2). A read-only mount is written by no syscall: each answers as
Linux answers a read-only bind mount, EROFS after the checks fs/namei.c makes first (EEXIST for a name that is
there, ENOENT for one that is not, EISDIR, EXDEV); tests/test_containment.py tries them all. Every path is
walked as fs/namei.c walks it (_walk: `..` from where the walk is, /tmp's symbolic links followed, the last
one only where the call follows links or the path ends in `/`, ELOOP after 40). Nothing outside the mounts is visible (ENOENT; a host
link is resolved inside its mount); `/`, `/dev` and the directories above a mount exist, read-only,
listing only what leads to a mount (_synthetic). A file of a :rw mount is opened on the host and written
through; nothing else on the host is ever written. /dev/urandom (and /dev/random) read the process's
seeded generator; readlink of /proc/self/exe names the binary (which need not be visible). Left out: symbolic
links on the host side of a mount (seen through, never made), the rest of /proc,
file-backed mmap, O_APPEND on /dev/null beyond discarding. Hard links in /tmp are tmpfs's; on a :rw mount's
host side links are not made (EPERM) where Linux would make them; where Linux refuses one (linkat: EXDEV
across mounts, EROFS, EEXIST, ENOENT) the answer is Linux's. File times: sys_fattr.py.
"""
from __future__ import annotations

import os
import posixpath
import stat as S
import struct
from dataclasses import dataclass

from . import fds, procfs
from .sys_time import realtime
from .tmpfs import DirHandle, MemFile, TmpFile, TmpFs

AT_FDCWD = -100
AT_EMPTY_PATH, AT_REMOVEDIR, AT_SYMLINK_NOFOLLOW = 0x1000, 0x200, 0x100
O_NOFOLLOW, ELOOP = 0o400000, 40
from .sysabi import BLOCK, ENAMETOOLONG  # noqa: E402  (BLOCK: an open that waits, a FIFO's: fifo.py)
O_ACCMODE, O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY = 3, 0o100, 0o200, 0o1000, 0o200000
ENOENT, EBADF, ENOTDIR, EISDIR, EINVAL, ESPIPE, EROFS, ERANGE, EXDEV, EPERM, EIO, EBUSY, EEXIST, EACCES = \
    2, 9, 20, 21, 22, 29, 30, 34, 18, 1, 5, 16, 17, 13
#: open flags passed on to the host for a file of a :rw mount (access mode, O_CREAT, O_EXCL, O_TRUNC, O_APPEND)
_HOST_OPEN_FLAGS = O_ACCMODE | 0o100 | 0o200 | 0o1000 | 0o2000
SEEK_SET, SEEK_CUR, SEEK_END = 0, 1, 2
DT_CHR, DT_DIR, DT_REG = 2, 4, 8
DEVICES = {"/dev/null": "null", "/dev/zero": "zero", "/dev/urandom": "urandom", "/dev/random": "urandom"}


@dataclass
class HostFile(MemFile):
    """A file of a read-only mount: its bytes are read from the host when the program reads them (never held:
    a big or endless file, /dev/zero under a mount, costs only what each read asks for), by path, so no host
    descriptor stays open. An I/O error of the host's is EIO."""
    path: str
    flags: int
    pos: int = 0

    def pread(self, off: int, n: int):
        try:
            with open(self.path, "rb", buffering=0) as f:
                f.seek(off)
                return f.read(min(n, MAX_RW_COUNT)) or b""
        except OSError:
            return -EIO

    def size(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:
            return 0

    def read_bytes(self, p, n: int):
        out = self.pread(self.pos, n)
        if not isinstance(out, int):
            self.pos += len(out)
        return out


MAX_RW_COUNT = 0x7FFFF000                           # what one read returns at most (include/linux/fs.h)


HostDir = DirHandle                                 # a directory of a mount (DirHandle.host: where it is)


@dataclass(eq=False)
class HostFd:
    """A file of a :rw mount, open on the host: reads, writes and the offset are the host file's own."""
    path: str
    fd: int
    flags: int

    def read_bytes(self, p, n: int):
        return _os(os.read, self.fd, n)

    def write_bytes(self, p, data: bytes) -> int:
        return _os(os.write, self.fd, data)

    def on_close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass                                    # already closed (the process copied by a snapshot)


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


def _guest(p, dirfd: int, path: str, follow: bool = True) -> str | int:
    """The guest path `path` names, absolute and resolved (_walk): as it is, or relative to the working
    directory or to the directory descriptor dirfd (ENOTDIR/EBADF for a descriptor that is no directory)."""
    dirfd = _fd(dirfd)
    if not path or len(path.encode()) >= PATH_MAX:  # "" names nothing (AT_EMPTY_PATH is the caller's); getname:
        return -ENOENT if not path else -ENAMETOOLONG  # no NUL in PATH_MAX bytes (read_cstr reads 4096 at most)
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
    return _walk(p, posixpath.join(base, path), follow)


MAXSYMLINKS, PATH_MAX, NAME_MAX = 40, 4096, 255    # include/linux/namei.h (then ELOOP), limits.h


def _walk(p, path: str, follow: bool) -> str | int:
    """fs/namei.c's walk over a guest path, component by component: `.` stays, `..` goes up from where the
    walk is (not lexically: after a link it is the link target's parent), and a symbolic link of /tmp is
    replaced by its target (absolute, or relative to the link's directory) -- the last component only when
    `follow`. More than 40 links is ELOOP. Host links are resolved in the mount (mounts.Namespace.lookup)."""
    follow = follow or path.endswith("/")          # a trailing slash: the last component must be a directory
    todo = [c for c in path.split("/") if c and c != "."]
    todo.reverse()
    done, links = "/", 0
    while todo:
        name = todo.pop()
        if len(name.encode()) > NAME_MAX:
            return -ENAMETOOLONG
        if name == "..":
            done = posixpath.dirname(done)
            continue
        here = posixpath.join(done, name)
        node = p.tmpfs.nodes.get(here) if _tmp(p, here) is not None else None
        if node is not None and node.target is not None and (follow or todo):
            links += 1
            if links > MAXSYMLINKS:
                return -ELOOP
            if node.target.startswith("/"):
                done = "/"
            todo.extend(reversed([c for c in node.target.split("/") if c and c != "."]))
            continue
        if node is not None and todo and not node.is_dir:
            return -ENOTDIR
        done = here
    return done


def _tmp(p, guest: str) -> str | None:
    """`guest` if it is the tmpfs's: under /tmp and not a mount's (mounts.Namespace.shadows_tmp)."""
    return guest if TmpFs.owns(guest) and not p.ns.shadows_tmp(guest) else None


def _host(p, guest: str, follow: bool = True):
    """(mount, host path) for a guest path in a mount, or -ENOENT (nothing else on the host is visible)."""
    found = p.ns.lookup(guest, follow)
    return found if found is not None else -ENOENT


def _synthetic(p, guest: str) -> list | None:
    """The entries of a directory preemu makes up so that every mount has parents: `/`, `/dev` and each
    directory above a mount (the working directory's among them), read-only; None for any other path."""
    if guest == "/dev":
        return [(".", DT_DIR), ("..", DT_DIR)] + [(n[5:], DT_CHR) for n in sorted(DEVICES)]
    prefix = guest.rstrip("/") + "/"
    names = {g[len(prefix):].split("/")[0] for g in [m.guest for m in p.ns.mounts] + ["/tmp", "/dev"]
             if g.startswith(prefix)}
    return [(".", DT_DIR), ("..", DT_DIR)] + [(n, DT_DIR) for n in sorted(names)] if names else None


def _oserr(e: OSError) -> int:
    return -(e.errno or EIO)


def _os(op, *args):
    """A host call on a :rw mount's behalf: its result (0 for None), or the negative errno it failed with."""
    try:
        r = op(*args)
    except OSError as e:
        return _oserr(e)
    return 0 if r is None else r


def _fd_at(p, fd: int, off: int):
    """(the open file behind fd, a file offset as the kernel's signed loff_t), or -EBADF / -EINVAL."""
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    off = _negative(off)
    return -EINVAL if off < 0 else (obj, off)


def _listing(host: str) -> list:
    names = sorted(os.listdir(host))
    # a host link is seen through (lstat answers for its target), so it is listed as what it points to
    return [(".", DT_DIR), ("..", DT_DIR)] + [
        (n, DT_DIR if os.path.isdir(os.path.join(host, n)) else DT_REG) for n in names]


def sys_openat(p, t, dirfd, path_addr, flags, mode, *_):
    fd = _openat(p, dirfd, path_addr, flags, mode)
    if fd is not BLOCK and fd >= 0 and flags & fds.O_CLOEXEC:
        p.fds.set_cloexec(fd, True)            # FD_CLOEXEC from the start (execve closes it)
    return fd


def _openat(p, dirfd, path_addr, flags, mode):
    path = p.read_cstr(path_addr)
    p.note_path(path)
    # open(2): O_NOFOLLOW, and O_CREAT|O_EXCL, do not follow a link in the last component
    guest = _guest(p, dirfd, path, follow=not flags & O_NOFOLLOW and not (flags & O_CREAT and flags & 0o200))
    if isinstance(guest, int):
        return guest
    if guest in DEVICES:
        return p.fds.install(Device(DEVICES[guest], flags))
    if procfs.is_maps(p, guest):
        f = procfs.open_maps(p, flags)
        return f if isinstance(f, int) else p.fds.install(f)
    if p.exe_alias is not None and guest == p.exe_alias[0] and not _tmp_has(p, guest):
        # the running binary at the path that started it (argv[0]), wherever it is on the host: its own
        # bytes, read-only (a write open of a running executable is ETXTBSY, fs/namei.c do_open -> deny_write_access)
        if flags & O_ACCMODE or flags & O_TRUNC:
            return -ETXTBSY
        try:
            with open(p.exe_alias[1], "rb") as f:
                f.read(1)                        # readable (an unreadable binary is the open's error)
            return p.fds.install(HostFile(p.exe_alias[1], flags))
        except OSError as e:
            return _oserr(e)
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        if node is not None and node.fifo is not None and not (flags & O_CREAT and flags & O_EXCL):
            from .fifo import open_fifo
            return open_fifo(p, p.cur, node.fifo, flags)
        obj = p.tmpfs.open(guest, flags, mode & ~p.fsstate.umask, realtime(p))
        return obj if isinstance(obj, int) else p.fds.install(obj)
    found = _host(p, guest)
    if isinstance(found, int):
        made_up = _synthetic(p, guest)
        if made_up is None:
            return -EROFS if flags & O_CREAT and _synthetic(p, posixpath.dirname(guest)) is not None else found
        if flags & O_ACCMODE or flags & O_CREAT:
            return -EROFS
        return p.fds.install(HostDir(guest, flags, made_up, host=""))
    mount, host = found
    if not mount.rw:
        refused = _read_only_open(host, flags)      # a read-only mount (the working directory's view)
        if refused:
            return refused
    if os.path.isdir(host):
        if flags & O_ACCMODE:
            return -EISDIR
        try:
            return p.fds.install(HostDir(guest, flags, _listing(host), host=host))
        except OSError as e:
            return _oserr(e)
    if flags & O_DIRECTORY:
        return -ENOTDIR if os.path.exists(host) else -ENOENT
    if mount.rw:
        fd = _os(os.open, host, flags & _HOST_OPEN_FLAGS, mode & 0o7777)
        return fd if fd < 0 else p.fds.install(HostFd(host, fd, flags))
    try:
        with open(host, "rb", buffering=0):          # readable: an unreadable file is the open's error
            pass
    except OSError as e:
        return _oserr(e)
    return p.fds.install(HostFile(host, flags))


ETXTBSY = 26


def _tmp_has(p, guest: str) -> bool:
    """A file of that name in /tmp (which then hides the alias of the running binary)."""
    return _tmp(p, guest) is not None and guest in p.tmpfs.nodes


def _read_only_open(host: str, flags: int) -> int:
    """open(2) of a file of a read-only mount, in fs/namei.c's order: a missing name is ENOENT, or EROFS with
    O_CREAT in an existing directory (lookup_open); an existing one is EEXIST with O_CREAT|O_EXCL, EISDIR for a
    directory opened to write or create (may_open, do_open), and EROFS opened to write or truncate
    (mnt_want_write); else 0: a read, which goes on."""
    if not os.path.exists(host):
        return -EROFS if flags & O_CREAT and os.path.isdir(os.path.dirname(host)) else -ENOENT
    if flags & O_CREAT and flags & O_EXCL:
        return -EEXIST
    if os.path.isdir(host):
        return -EISDIR if flags & (O_ACCMODE | O_CREAT | O_TRUNC) else 0
    return -EROFS if flags & (O_ACCMODE | O_TRUNC) else 0


def _on_host(p, guest: str, op, follow: bool = True, exists: int = 0) -> int:
    """Run op(host path) for a change in a :rw mount; EROFS in a read-only one or in a directory preemu made
    up (_synthetic), ENOENT outside any. `exists` is what the change answers before EROFS, as fs/namei.c
    looks the name up first: -EEXIST for one that makes a name (mkdir, symlink, link: filename_create), -ENOENT
    for one that needs the file (chmod, truncate: the path walk)."""
    found = _host(p, guest, follow)
    if isinstance(found, int):
        return -EROFS if exists != -ENOENT and _synthetic(p, posixpath.dirname(guest)) is not None else found
    mount, host = found
    there = os.path.lexists(host)
    if exists == -EEXIST and there or exists == -ENOENT and not there:
        return exists
    if not mount.rw:
        return -EROFS
    if host == mount.host:
        return -EBUSY                               # the mount point itself cannot be removed or renamed
    return _os(op, host)


def _paths(p, dirfd, path_addr, follow: bool = True) -> str | int:
    return _guest(p, dirfd, p.read_cstr(path_addr), follow)


def _change(p, dirfd, path_addr, in_tmp, on_host, follow: bool, exists: int = 0) -> int:
    """A change to the file a path names: in_tmp(guest path) in /tmp, on_host(host path) in a :rw mount;
    `follow`: a link in the last component stands for its target (chmod) or for itself (mkdir, unlink);
    `exists`: _on_host's."""
    guest = _paths(p, dirfd, path_addr, follow)
    if isinstance(guest, int):
        return guest
    return in_tmp(guest) if _tmp(p, guest) is not None else _on_host(p, guest, on_host, follow, exists)


def sys_mkdirat(p, t, dirfd, path_addr, mode, *_):
    return _change(p, dirfd, path_addr, lambda g: p.tmpfs.mkdir(g, mode & ~p.fsstate.umask, realtime(p)),
                   lambda h: os.mkdir(h, mode & 0o7777), follow=False, exists=-EEXIST)


def sys_mknodat(p, t, dirfd, path_addr, mode, dev=0, *_):
    """mknod(2) (fs/namei.c do_mknodat, may_mknod): a regular file (type 0 or S_IFREG) is created as
    open(O_CREAT|O_EXCL) creates it; a directory type is EPERM, an unknown one EINVAL; a FIFO, socket or device
    node is EPERM once the path checks pass (EEXIST, ENOENT, EROFS first), as on a file system without mknod
    (vfs_mknod: no i_op->mknod), but a FIFO in /tmp is made (fifo.py): preemu makes no FIFO or device on the
    host, and no device in /tmp."""
    kind = mode & 0o170000                          # S_IFMT
    if kind in (0, S.S_IFREG):
        fd = sys_openat(p, t, dirfd, path_addr, O_CREAT | O_EXCL, mode & 0o7777)
        return fd if fd < 0 else p.fds.close(fd)
    if kind == S.S_IFDIR:
        return -EPERM
    if kind not in (S.S_IFIFO, S.S_IFSOCK, S.S_IFCHR, S.S_IFBLK):
        return -EINVAL

    def in_tmp(g: str) -> int:
        if g in p.tmpfs.nodes:
            return -EEXIST
        parent = p.tmpfs.nodes.get(posixpath.dirname(g))
        if parent is None or not parent.is_dir:
            return -ENOENT if parent is None else -ENOTDIR
        if kind != S.S_IFIFO:
            return -EPERM
        from .fifo import FifoState
        node = p.tmpfs._new(g, False, mode & 0o7777 & ~p.fsstate.umask, realtime(p))
        node.mode, node.fifo = S.S_IFIFO | node.mode & 0o7777, FifoState()
        return 0

    def on_host(h: str):
        raise PermissionError(EPERM, "mknod")
    return _change(p, dirfd, path_addr, in_tmp, on_host, follow=False, exists=-EEXIST)


def sys_unlinkat(p, t, dirfd, path_addr, flags, *_):
    return _change(p, dirfd, path_addr, lambda g: p.tmpfs.unlink(g, flags),
                   os.rmdir if flags & AT_REMOVEDIR else os.unlink, follow=False)


def sys_renameat2(p, t, olddirfd, old_addr, newdirfd, new_addr, flags=0, *_):
    old, new = _paths(p, olddirfd, old_addr, False), _paths(p, newdirfd, new_addr, False)
    if isinstance(old, int) or isinstance(new, int):
        return old if isinstance(old, int) else new
    to, tn = _tmp(p, old), _tmp(p, new)
    if flags:
        return -EINVAL
    if to is not None and tn is not None:
        return p.tmpfs.rename(to, tn)
    if to is not None or tn is not None:
        return -EXDEV                               # across mounts
    src, dst = _host(p, old, False), _host(p, new, False)
    if isinstance(src, int) or isinstance(dst, int):
        return src if isinstance(src, int) else dst
    if src[0] is not dst[0]:
        return -EXDEV
    return _on_host(p, old, lambda h: os.rename(h, dst[1]), follow=False)


def sys_renameat(p, t, olddirfd, old_addr, newdirfd, new_addr, *_):
    return sys_renameat2(p, t, olddirfd, old_addr, newdirfd, new_addr, 0)


def sys_pwrite64(p, t, fd, buf, n, off, *_):
    at = _fd_at(p, fd, off)
    if isinstance(at, int):
        return at
    obj, off = at
    if not isinstance(obj, TmpFile):
        if isinstance(obj, HostFd):
            return _os(os.pwrite, obj.fd, p.read(buf, n), off)
        return -ESPIPE if not isinstance(obj, (HostFile, Device)) else -EBADF
    pos = obj.pos
    obj.pos = off
    try:
        return obj.write_bytes(p, p.read(buf, n))
    finally:
        obj.pos = pos                               # pwrite leaves the file offset alone


def sys_symlinkat(p, t, target_addr, dirfd, path_addr, *_):
    """symlink(2): a link in /tmp (EROFS in a read-only mount; links in a :rw one are not made)."""
    target = p.read_cstr(target_addr)
    if not target:
        return -ENOENT
    guest = _paths(p, dirfd, path_addr, follow=False)
    if isinstance(guest, int):
        return guest
    if _tmp(p, guest) is not None:
        return p.tmpfs.symlink(guest, target, realtime(p))
    return _on_host(p, guest, lambda h: -EPERM, follow=False, exists=-EEXIST)


AT_SYMLINK_FOLLOW = 0x400


def sys_linkat(p, t, olddirfd, old_addr, newdirfd, new_addr, flags=0, *_):
    """link(2): in /tmp a second name of the file (tmpfs.link); on the host hard links are not made (EPERM),
    but where Linux refuses one the answer is its: ENOENT for a missing file, EXDEV across mounts (do_linkat: a link never leaves its mount, so nothing outside a :rw
    mount can be linked into it), EEXIST for a name already there, EROFS in a read-only mount."""
    old = _paths(p, olddirfd, old_addr, bool(flags & AT_SYMLINK_FOLLOW))
    new = _paths(p, newdirfd, new_addr, False)
    if isinstance(old, int) or isinstance(new, int):
        return old if isinstance(old, int) else new
    to, tn = _tmp(p, old), _tmp(p, new)
    if to is not None or tn is not None:
        if to is None or tn is None:
            return -EXDEV
        return p.tmpfs.link(to, tn)
    src, dst = _host(p, old, bool(flags & AT_SYMLINK_FOLLOW)), _host(p, new, False)
    if isinstance(src, int):
        return src
    if not os.path.lexists(src[1]):
        return -ENOENT
    if isinstance(dst, int) or src[0] is not dst[0]:
        return -EXDEV if not isinstance(dst, int) or _synthetic(p, posixpath.dirname(new)) is not None else dst
    return _on_host(p, new, lambda h: -EPERM, follow=False, exists=-EEXIST)


def _link_text(p, buf: int, size: int, text: str) -> int:
    """readlink's answer: the link's text, cut to the buffer (no terminating NUL), and its length."""
    raw = text.encode()[:size]
    p.write(buf, raw)
    return len(raw)


def sys_readlinkat(p, t, dirfd, path_addr, buf, size, *_):
    guest = _paths(p, dirfd, path_addr, follow=False)
    if isinstance(guest, int):
        return guest
    if guest == "/proc/self/exe":                   # proc(5): the executable's path (os.Executable reads it)
        return _link_text(p, buf, size, os.path.abspath(p.image.path))
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        if node is None:
            return -ENOENT
        if node.target is None:
            return -EINVAL
        return _link_text(p, buf, size, node.target)
    found = _host(p, guest)
    if isinstance(found, int):
        return found                                # outside every mount
    return -EINVAL if os.path.exists(found[1]) else -ENOENT    # links are resolved inside the mount


def sys_open(p, t, path_addr, flags, mode, *_):
    return sys_openat(p, t, AT_FDCWD, path_addr, flags, mode)


def sys_pread64(p, t, fd, buf, n, off, *_):
    at = _fd_at(p, fd, off)
    if isinstance(at, int):
        return at
    obj, off = at
    if isinstance(obj, MemFile):
        data = obj.pread(off, n) if obj.flags & O_ACCMODE != 1 else -EBADF     # O_WRONLY: vfs_read's EBADF
        if isinstance(data, int):
            return data
    elif isinstance(obj, HostFd):
        data = _os(os.pread, obj.fd, n, off)
        if isinstance(data, int):
            return data
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
    if isinstance(obj, HostFd):
        return _os(os.lseek, obj.fd, off, whence)
    if not isinstance(obj, MemFile):
        return -ESPIPE
    new = {SEEK_SET: off, SEEK_CUR: obj.pos + off, SEEK_END: obj.size() + off}.get(whence)
    if new is None or new < 0:
        return -EINVAL
    obj.pos = new
    return new


def _stat_bytes(st: os.stat_result | None, device: bool = False) -> bytes:
    if device:                                      # a character device, as /dev/null is (1:3)
        return struct.pack("<QQQIIIIQqqq", 6, 5, 1, S.S_IFCHR | 0o666, 0, 0, 0, 0x103, 0, 4096, 0) + bytes(72)
    if st is None:                                  # a directory preemu made up (_synthetic): root's, read-only
        return struct.pack("<QQQIIIIQqqq", 7, 2, 2, S.S_IFDIR | 0o555, 0, 0, 0, 0, 4096, 4096, 8) + bytes(72)
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
    if isinstance(obj, procfs.ProcFile):              # a regular file of size 0, 0444 (proc_pid_maps_operations)
        return struct.pack("<QQQIIIIQqqq", 0x16, 0, 1, S.S_IFREG | 0o444, p.uid, p.gid, 0, 0, 0, 1024, 0) + bytes(72)
    if isinstance(obj, DirHandle) and obj.in_tmp:
        node = p.tmpfs.nodes.get(obj.path)
        return p.tmpfs.stat_bytes(node) if node is not None else -ENOENT
    try:
        if isinstance(obj, HostDir):
            return _stat_bytes(os.stat(obj.host) if obj.host else None)
        if isinstance(obj, HostFile):
            return _stat_bytes(os.stat(obj.path))
        if isinstance(obj, HostFd):
            return _stat_bytes(os.fstat(obj.fd))
    except OSError as e:
        return _oserr(e)                            # removed from the host since it was opened
    return _stat_bytes(None, device=True)           # stdio, pipes, eventfd: a character device will do


def sys_fstat(p, t, fd, buf, *_):
    st = _fd_stat(p, fd)
    if isinstance(st, int):
        return st
    p.write(buf, st)
    return 0


def _stat_at(p, dirfd, path_addr, flags) -> bytes | int:
    """fstatat's work: the struct stat of what a path names (or of dirfd itself with AT_EMPTY_PATH)."""
    path = p.read_cstr(path_addr)
    if not path and flags & AT_EMPTY_PATH:
        return _fd_stat(p, _fd(dirfd))
    guest = _guest(p, dirfd, path, follow=not flags & AT_SYMLINK_NOFOLLOW)
    if isinstance(guest, int):
        return guest
    if guest in DEVICES:
        return _stat_bytes(None, device=True)
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        return p.tmpfs.stat_bytes(node) if node is not None else -ENOENT
    found = _host(p, guest)
    if isinstance(found, int):
        return found if _synthetic(p, guest) is None else _stat_bytes(None)
    try:
        return _stat_bytes(os.stat(found[1]))
    except OSError as e:
        return _oserr(e)


def sys_newfstatat(p, t, dirfd, path_addr, buf, flags, *_):
    st = _stat_at(p, dirfd, path_addr, flags)
    if isinstance(st, int):
        return st
    p.write(buf, st)
    return 0


STATX_BASIC_STATS = 0x7FF


def sys_statx(p, t, dirfd, path_addr, flags, mask, buf, *_):
    """statx(2): the same answer as fstatat, in struct statx (include/uapi/linux/stat.h): the basic
    fields (STATX_BASIC_STATS), no birth time."""
    st = _stat_at(p, dirfd, path_addr, flags)
    if isinstance(st, int):
        return st
    dev, ino, nlink, mode, uid, gid, _pad, rdev, size, blksize, blocks = struct.unpack_from("<QQQIIIIQqqq", st)
    atime, mtime, ctime = (struct.unpack_from("<qq", st, 72 + 16 * k) for k in range(3))
    ts = lambda s_ns: struct.pack("<qIi", s_ns[0], s_ns[1], 0)          # noqa: E731 statx_timestamp
    raw = (struct.pack("<IIQIIIHHQQQQ", STATX_BASIC_STATS, blksize, 0, nlink, uid, gid, mode, 0, ino, size, blocks, 0)
           + ts(atime) + bytes(16) + ts(ctime) + ts(mtime)
           + struct.pack("<IIII", os.major(rdev), os.minor(rdev), os.major(dev), os.minor(dev)))
    p.write(buf, raw + bytes(256 - len(raw)))
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


def sys_chdir(p, t, path_addr, *_):
    """chdir(2): the working directory moves to a directory of /tmp or of a mount (fs/open.c)."""
    guest = _paths(p, AT_FDCWD, path_addr)
    return guest if isinstance(guest, int) else _enter(p, guest)


def sys_fchdir(p, t, fd, *_):
    d = p.fds.get(fd)
    if d is None:
        return -EBADF
    return _enter(p, d.path) if isinstance(d, DirHandle) else -ENOTDIR


def _enter(p, guest: str) -> int:
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        if node is None:
            return -ENOENT
        if not node.is_dir:
            return -ENOTDIR
    else:
        found = _host(p, guest)
        if isinstance(found, int) and _synthetic(p, guest) is None:
            return found
        if not isinstance(found, int) and not os.path.isdir(found[1]):
            return -ENOTDIR if os.path.exists(found[1]) else -ENOENT
    p.cwd = guest
    return 0


def sys_fchmodat(p, t, dirfd, path_addr, mode, *_):
    """chmod(2): a /tmp file's mode bits, or a :rw mount's file on the host; EROFS elsewhere."""
    return _change(p, dirfd, path_addr, lambda g: p.tmpfs.chmod(g, mode), lambda h: os.chmod(h, mode & 0o7777),
                   follow=True, exists=-ENOENT)


def sys_truncate(p, t, path_addr, length, *_):
    """truncate(2) (fs/open.c vfs_truncate): EINVAL for a negative length, EISDIR for a directory (before
    EROFS), then a /tmp file resized, a :rw mount's on the host, EROFS elsewhere."""
    length = _negative(length)
    if length < 0:
        return -EINVAL
    guest = _paths(p, AT_FDCWD, path_addr)
    if isinstance(guest, int):
        return guest
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        if node is None or node.is_dir:
            return -ENOENT if node is None else -EISDIR
        return p.tmpfs.resize(node, length)
    found = _host(p, guest)
    if not isinstance(found, int) and os.path.isdir(found[1]) or _synthetic(p, guest) is not None:
        return -EISDIR
    return _on_host(p, guest, lambda h: os.truncate(h, length), True, exists=-ENOENT)


def sys_fchmod(p, t, fd, mode, *_):
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if isinstance(obj, TmpFile) or (isinstance(obj, DirHandle) and obj.in_tmp):
        return p.tmpfs.chmod(obj.path, mode)
    if isinstance(obj, HostFd):
        return _os(os.fchmod, obj.fd, mode & 0o7777)
    return -EROFS if isinstance(obj, (HostFile, DirHandle)) else -EINVAL


def sys_ftruncate(p, t, fd, length, *_):
    at = _fd_at(p, fd, length)
    if isinstance(at, int):
        return at
    obj, length = at
    if isinstance(obj, TmpFile) and obj.flags & O_ACCMODE:
        return p.tmpfs.resize(obj.node, length)
    if isinstance(obj, HostFd):
        return _os(os.ftruncate, obj.fd, length)
    return -EINVAL                                  # not a regular file open for writing (do_ftruncate)


def sys_getcwd(p, t, buf, size, *_):
    raw = p.cwd.encode() + b"\0"
    if size < len(raw):
        return -ERANGE
    p.write(buf, raw)
    return len(raw)


#: syscall number -> (name, handler), merged into kernel.TABLE
TABLE = {
    2: ("open", sys_open), 5: ("fstat", sys_fstat), 8: ("lseek", sys_lseek), 17: ("pread64", sys_pread64),
    90: ("chmod", lambda p, t, a, m, *_: sys_fchmodat(p, t, AT_FDCWD, a, m)), 91: ("fchmod", sys_fchmod),
    268: ("fchmodat", sys_fchmodat),
    133: ("mknod", lambda p, t, a, m, d, *_: sys_mknodat(p, t, AT_FDCWD, a, m, d)), 259: ("mknodat", sys_mknodat),
    76: ("truncate", sys_truncate),
    79: ("getcwd", sys_getcwd), 80: ("chdir", sys_chdir), 81: ("fchdir", sys_fchdir), 77: ("ftruncate", sys_ftruncate), 217: ("getdents64", sys_getdents64), 257: ("openat", sys_openat),
    262: ("newfstatat", sys_newfstatat), 332: ("statx", sys_statx), 258: ("mkdirat", sys_mkdirat),
    263: ("unlinkat", sys_unlinkat),
    264: ("renameat", sys_renameat), 316: ("renameat2", sys_renameat2), 18: ("pwrite64", sys_pwrite64),
    266: ("symlinkat", sys_symlinkat), 265: ("linkat", sys_linkat),
    88: ("symlink", lambda p, t, a, b, *_: sys_symlinkat(p, t, a, AT_FDCWD, b)), 267: ("readlinkat", sys_readlinkat),
}
