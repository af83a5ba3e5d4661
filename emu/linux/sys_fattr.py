"""File attributes: access checks (faccessat2, faccessat, access: fs/open.c do_faccessat), the umask (umask(2),
kernel/sys.c: the caller's fs_struct's, threads.FsState, what sys_file's creations in /tmp mask their mode
with), fchmodat2 (fs/open.c do_fchmodat), owners (fchownat, fchown, chown, lchown: fs/open.c chown_common),
and file times: utimensat(2), utimes(2), futimesat(2) and utime(2),
as fs/utimes.c sets them. In /tmp a node's atime and mtime (tmpfs.Node; ctime reads as mtime), on a :rw mount
the host file's (os.utime), in a read-only mount EROFS after the lookup; "now" is CLOCK_REALTIME
(sys_time.realtime), what /tmp's writes stamp too.

utimensat: times NULL sets both to now; UTIME_NOW and UTIME_OMIT per field; both UTIME_OMIT returns 0 without
looking at the path; a tv_nsec outside 0..999999999 otherwise is EINVAL; a NULL path with a descriptor sets that
descriptor's file (futimens; flags must be 0), a NULL path with AT_FDCWD is EFAULT; AT_SYMLINK_NOFOLLOW sets a
/tmp link's own times; other flags EINVAL. utimes and futimesat take timevals (tv_usec 0..999999), utime a
utimbuf of seconds. Go's side: syscall.UtimesNano (utimensat), os.Chtimes, syscall.Utimes. Left out: the
owner and permission checks (EPERM/EACCES: the caller owns every file it can write here) and ctime.
"""
from __future__ import annotations

import os
import stat as S
import struct

from .sys_cred import creds
from .sys_file import (AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_NOFOLLOW, DEVICES, HostFd, HostFile, _fd, _guest, _host,
                       _on_host, _stat_at, _tmp, sys_fchmod, sys_fchmodat)
from .sys_time import realtime
from .sysabi import EACCES, EBADF, EFAULT, EINVAL, ENOENT, EOPNOTSUPP, EPERM, EROFS
from .tmpfs import DirHandle, TmpFile

UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
KEEP = 0xFFFFFFFF                                   # chown's (uid_t)-1
NOW, OMIT = "now", "omit"


def _set(p, dirfd: int, path_addr: int, times, flags: int) -> int:
    """Set (atime, mtime), each ns, NOW or OMIT, on what dirfd/path names (fs/utimes.c do_utimes)."""
    if times == (OMIT, OMIT):
        return 0
    stamp = [realtime(p) if x == NOW else x for x in times]
    dirfd = _fd(dirfd)
    if not path_addr:
        if dirfd == AT_FDCWD:
            return -EFAULT
        if flags:
            return -EINVAL
        return _attr_fd(p, dirfd, lambda node: _set_node(node, stamp), lambda h, follow: _set_host(h, stamp, follow))
    return _attr_at(p, dirfd, path_addr, flags, lambda node: _set_node(node, stamp),
                    lambda h, follow: _set_host(h, stamp, follow))


def _attr_at(p, dirfd, path_addr: int, flags: int, on_node, on_host) -> int:
    """A change to what dirfd/path names: on_node(its /tmp node) or on_host(host path, follow) in a :rw mount
    (EROFS in a read-only one, ENOENT outside); AT_SYMLINK_NOFOLLOW for the link itself, AT_EMPTY_PATH with ""
    for dirfd's own file (_attr_fd); other flags EINVAL."""
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -EINVAL
    path = p.read_cstr(path_addr)
    if not path and flags & AT_EMPTY_PATH:
        return _attr_fd(p, _fd(dirfd), on_node, on_host)
    follow = not flags & AT_SYMLINK_NOFOLLOW
    guest = _guest(p, dirfd, path, follow)
    if isinstance(guest, int):
        return guest
    if _tmp(p, guest) is not None:
        node = p.tmpfs.nodes.get(guest)
        return -ENOENT if node is None else on_node(node)
    return _on_host(p, guest, lambda h: on_host(h, follow), follow, exists=-ENOENT)


def _attr_fd(p, fd: int, on_node, on_host) -> int:
    """The same change to an open file's: a /tmp file or directory's node, a :rw mount's file or a mount's
    directory on the host (EROFS for a read-only mount's); nothing for stdio, pipes and sockets."""
    obj = p.fds.get(fd)
    if obj is None:
        return -EBADF
    if isinstance(obj, TmpFile):
        return on_node(obj.node)
    if isinstance(obj, DirHandle) and obj.in_tmp:
        node = p.tmpfs.nodes.get(obj.path)
        return -ENOENT if node is None else on_node(node)
    if isinstance(obj, DirHandle):                  # a mount's directory (or one preemu made up): by its path
        return _on_host(p, obj.path, lambda h: on_host(h, True), True, exists=-ENOENT)
    if isinstance(obj, HostFd):
        return _os_call(lambda: on_host(obj.path, True))
    if isinstance(obj, HostFile):
        return -EROFS                               # a read-only mount's file
    return 0                                        # stdio, pipes, sockets: their inode's are not kept


def _set_node(node, stamp) -> int:
    atime = node.mtime if node.atime is None else node.atime
    node.atime = atime if stamp[0] == OMIT else stamp[0]
    node.mtime = node.mtime if stamp[1] == OMIT else stamp[1]
    return 0


def _set_host(host: str, stamp, follow: bool):
    st = os.stat(host, follow_symlinks=follow)
    old = (st.st_atime_ns, st.st_mtime_ns)
    os.utime(host, ns=tuple(o if x == OMIT else x for x, o in zip(stamp, old)), follow_symlinks=follow)


def _spec(p, addr: int, unit: int, limit: int):
    """Two (seconds, fraction) pairs at addr -> (atime, mtime) for _set, or -EINVAL; unit: ns per fraction."""
    out = []
    for sec, frac in struct.iter_unpack("<qq", p.read(addr, 32)):
        if unit == 1 and frac in (UTIME_NOW, UTIME_OMIT):
            out.append(NOW if frac == UTIME_NOW else OMIT)
        elif not 0 <= frac < limit:
            return -EINVAL
        else:
            out.append(sec * 10**9 + frac * unit)
    return tuple(out)


def sys_utimensat(p, t, dirfd, path_addr, times_addr, flags, *_):
    times = _spec(p, times_addr, 1, 10**9) if times_addr else (NOW, NOW)
    return times if isinstance(times, int) else _set(p, dirfd, path_addr, times, flags & 0xFFFFFFFF)


def sys_futimesat(p, t, dirfd, path_addr, times_addr, *_):
    times = _spec(p, times_addr, 1000, 10**6) if times_addr else (NOW, NOW)
    return times if isinstance(times, int) else _set(p, dirfd, path_addr, times, 0)


def sys_utime(p, t, path_addr, buf, *_):
    if buf:
        a, m = struct.unpack("<qq", p.read(buf, 16))
        return _set(p, AT_FDCWD, path_addr, (a * 10**9, m * 10**9), 0)
    return _set(p, AT_FDCWD, path_addr, (NOW, NOW), 0)


def sys_fchmodat2(p, t, dirfd, path_addr, mode, flags, *_):
    """fchmodat2(2) (Linux 6.6, fs/open.c do_fchmodat): fchmodat with flags; AT_SYMLINK_NOFOLLOW on a symbolic
    link is EOPNOTSUPP (links have no mode of their own to set), on anything else the plain chmod; AT_EMPTY_PATH
    with "" is fchmod of dirfd; other flags EINVAL."""
    flags &= 0xFFFFFFFF
    if flags & ~(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):
        return -EINVAL
    path = p.read_cstr(path_addr)
    if not path and flags & AT_EMPTY_PATH:
        return sys_fchmod(p, t, _fd(dirfd), mode)
    if flags & AT_SYMLINK_NOFOLLOW:
        guest = _guest(p, dirfd, path, follow=False)
        if isinstance(guest, int):
            return guest
        if _tmp(p, guest) is not None:
            node = p.tmpfs.nodes.get(guest)
            link = node is not None and node.target is not None
        else:
            found = _host(p, guest, False)
            link = not isinstance(found, int) and os.path.islink(found[1])
        if link:
            return -EOPNOTSUPP
    return sys_fchmodat(p, t, dirfd, path_addr, mode)


R_OK, W_OK, X_OK = 4, 2, 1


def sys_faccessat2(p, t, dirfd, path_addr, mode, flags, *_):
    """faccessat2(2) (and faccessat, access): whether the caller may read, write or execute what a path names
    (fs/open.c do_faccessat). The guest runs with the host's ids (sys_proc.py): as root, read and write are
    granted and execute needs an x bit (or a directory), as generic_permission decides; otherwise the owner's,
    group's or others' bits. Writing is refused with EROFS in a read-only mount and preemu's own directories
    (fs/open.c: after the permission checks, `__mnt_is_readonly`)."""
    if mode & ~7 or flags & ~(0x200 | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH):     # AT_EACCESS, and EINVAL else
        return -EINVAL
    st = _stat_at(p, dirfd, path_addr, flags & (AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
    if isinstance(st, int):
        return st
    st_mode, uid, gid = struct.unpack_from("<III", st, 24)
    if p.uid == 0:
        if mode & X_OK and not (st_mode & 0o111 or S.S_ISDIR(st_mode)):
            return -EACCES
    else:
        bits = (st_mode >> 6) & 7 if uid == p.uid else (st_mode >> 3) & 7 if gid == p.gid else st_mode & 7
        if mode & ~bits & 7:
            return -EACCES
    if mode & W_OK:
        guest = _guest(p, dirfd, p.read_cstr(path_addr), follow=not flags & AT_SYMLINK_NOFOLLOW)
        if isinstance(guest, str) and _tmp(p, guest) is None and guest not in DEVICES:
            found = _host(p, guest)
            if isinstance(found, int) or not found[0].rw:
                return -EROFS
    return 0


def _chown(p, node_or_host, uid: int, gid: int, follow: bool = True) -> int:
    """fs/open.c chown_common: -1 keeps an id; without CAP_CHOWN (euid not 0) the owner may only set its own uid
    and a group it is in (EPERM); a /tmp node keeps the pair, a :rw mount's file is chowned on the host."""
    c = creds(p)
    uid, gid = uid & 0xFFFFFFFF, gid & 0xFFFFFFFF
    if c["u"][1] != 0 and (uid not in (KEEP, c["u"][1]) or gid not in (KEEP, c["g"][1], *c["groups"])):
        return -EPERM
    if isinstance(node_or_host, str):
        return _os_call(lambda: os.chown(node_or_host, -1 if uid == KEEP else uid, -1 if gid == KEEP else gid,
                                         follow_symlinks=follow))
    old = node_or_host.owner or (p.tmpfs.uid, p.tmpfs.gid)
    node_or_host.owner = (old[0] if uid == KEEP else uid, old[1] if gid == KEEP else gid)
    return 0


def _os_call(fn) -> int:
    """fn's own result when it is an errno, 0 when it returns else, or the errno of the OSError it raised."""
    try:
        r = fn()
    except OSError as e:
        return -(e.errno or EINVAL)
    return r if isinstance(r, int) else 0


def sys_fchownat(p, t, dirfd, path_addr, uid, gid, flags, *_):
    """fchownat(2) (and chown, lchown): AT_SYMLINK_NOFOLLOW changes a link itself, AT_EMPTY_PATH dirfd's file."""
    return _attr_at(p, dirfd, path_addr, flags & 0xFFFFFFFF, lambda node: _chown(p, node, uid, gid),
                    lambda h, follow: _chown(p, h, uid, gid, follow))


def sys_fchown(p, t, fd, uid, gid, *_):
    return _attr_fd(p, fd, lambda node: _chown(p, node, uid, gid), lambda h, follow: _chown(p, h, uid, gid, follow))


def sys_umask(p, t, mask, *_):
    old, p.fsstate.umask = p.fsstate.umask, mask & 0o777
    return old


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    95: ("umask", sys_umask), 452: ("fchmodat2", sys_fchmodat2), 260: ("fchownat", sys_fchownat),
    93: ("fchown", sys_fchown), 92: ("chown", lambda p, t, a, u, g, *_: sys_fchownat(p, t, AT_FDCWD, a, u, g, 0)),
    94: ("lchown", lambda p, t, a, u, g, *_: sys_fchownat(p, t, AT_FDCWD, a, u, g, AT_SYMLINK_NOFOLLOW)),
    439: ("faccessat2", sys_faccessat2), 269: ("faccessat", lambda p, t, d, a, m, *_: sys_faccessat2(p, t, d, a, m, 0)),
    21: ("access", lambda p, t, a, m, *_: sys_faccessat2(p, t, AT_FDCWD, a, m, 0)), 280: ("utimensat", sys_utimensat), 261: ("futimesat", sys_futimesat), 132: ("utime", sys_utime),
    235: ("utimes", lambda p, t, path, tv, *_: sys_futimesat(p, t, AT_FDCWD, path, tv)),
}
