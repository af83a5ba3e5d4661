"""A writable /tmp in memory (a tmpfs), as far as Go's os package and `testing.T.TempDir` use it.

Semantics from the man pages and fs/ (fs/namei.c, fs/open.c, mm/shmem.c): openat with O_CREAT, O_EXCL,
O_TRUNC, O_APPEND and O_DIRECTORY; mkdirat (EEXIST, ENOENT for a missing parent); unlinkat (EISDIR for a
directory without AT_REMOVEDIR, ENOTEMPTY for a non-empty one); renameat/renameat2 (flags 0); read, write,
pread64, lseek, fstat/fstatat and getdents64 on its files and directories. Paths are /tmp or below it, or
relative to a directory descriptor of it. Nothing on the host is touched; the whole tree is part of the
process (snapshots copy it). Symbolic links (symlink(7)) are nodes holding their target; sys_file.py's
path walk follows them. Left out: permissions (every file is the process's own), hard links,
file-backed mmap, sizes beyond memory, timestamps other than the virtual clock at creation and write.
"""
from __future__ import annotations

import posixpath
import stat as S
import struct
from dataclasses import dataclass, field

from .sys_time import realtime
from .sysabi import ENXIO, EPERM

BOGO_DIRENT_SIZE = 20             # mm/shmem.c: what a directory entry adds to its directory's size
ROOT = "/tmp"
O_ACCMODE, O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY = 3, 0o100, 0o200, 0o1000, 0o2000, 0o200000
AT_REMOVEDIR = 0x200
ENOENT, EEXIST, ENOTDIR, EISDIR, EINVAL, ENOTEMPTY, EBADF, ELOOP = 2, 17, 20, 21, 22, 39, 9, 40
ENOSPC, EFBIG = 28, 27
DT_DIR, DT_REG, DT_LNK, DT_SOCK = 4, 8, 10, 12


@dataclass(eq=False)
class Node:
    ino: int
    is_dir: bool
    mode: int
    mtime: int                         # CLOCK_REALTIME ns (sys_time.realtime)
    data: bytearray = field(default_factory=bytearray)
    target: str | None = None          # a symbolic link: what it points to (the node is neither file nor dir)
    fifo: object = None                # a named pipe (mknod S_IFIFO): its fifo.FifoState
    sock: object = None                # an AF_UNIX socket's file (unixfile.py): the socket bound to it, while open
    atime: int | None = None           # set apart from mtime by utimensat (sys_fattr.py); None: mtime's
    owner: tuple | None = None         # (uid, gid) set by chown (sys_fattr.py); None: the file system's

    @property
    def d_type(self) -> int:
        if S.S_ISSOCK(self.mode):
            return DT_SOCK
        return DT_DIR if self.is_dir else DT_LNK if self.target is not None else 1 if self.fifo is not None else DT_REG


class MemFile:
    """A regular file read at its own offset (`pos`) through pread(off, n) and size(): /tmp's (its bytes in
    memory, `data`), and a read-only mount's (sys_file.HostFile, read from the host on demand)."""

    def pread(self, off: int, n: int) -> bytes:
        return bytes(self.data[off:off + n])

    def size(self) -> int:
        return len(self.data)

    def read_bytes(self, p, n: int) -> bytes | int:
        if self.flags & O_ACCMODE == 1:
            return -EBADF                   # fs/read_write.c vfs_read: opened O_WRONLY, no FMODE_READ
        out = self.pread(self.pos, n)
        self.pos += len(out)
        return out


@dataclass(eq=False)
class TmpFile(MemFile):
    path: str
    node: Node
    flags: int
    pos: int = 0

    @property
    def data(self) -> bytearray:
        return self.node.data

    def write_bytes(self, p, data: bytes) -> int:
        if self.flags & O_ACCMODE == 0:
            return -EBADF
        d = self.node.data
        if self.flags & O_APPEND:
            self.pos = len(d)
        room = p.tmpfs.cgroup.room()
        if room is not None and self.pos + len(data) > len(d) + room:
            # the file would pass the run's memory limit (memory.Cgroup): what fits is written, and a write of which
            # nothing fits fails with ENOSPC, as on a tmpfs full to its size= (mm/shmem.c shmem_write_begin)
            fit = len(d) + room - self.pos
            if fit <= 0:
                p.tmpfs.cgroup.failcnt += 1
                return -ENOSPC
            data = data[:fit]
        p.tmpfs.grown(len(d), max(len(d), self.pos + len(data)))
        if self.pos > len(d):
            d.extend(bytes(self.pos - len(d)))
        d[self.pos:self.pos + len(data)] = data
        self.pos += len(data)
        self.node.mtime = realtime(p)
        return len(data)


@dataclass(eq=False)
class DirHandle:
    """An open directory: a listing for getdents64 (the working-directory view's, sys_file.py, or /tmp's)."""
    path: str
    flags: int
    entries: list = field(default_factory=list)     # (name, d_type), "." and ".." first
    pos: int = 0
    in_tmp: bool = False                            # a directory of this tmpfs (paths relative to it are /tmp's)
    host: str = ""                                  # a mounted host directory: where it is on the host

    def read_bytes(self, p, n: int) -> int:
        return -EISDIR


class TmpFs:
    """The tree: normalized path -> Node."""

    def __init__(self, now: int = 0, uid: int = 1000, gid: int = 1000, cgroup=None) -> None:
        from .memory import Cgroup
        #: the run's cgroup (memory.Cgroup), which the files' bytes are charged to ("shmem"): shared, never copied
        self.cgroup = cgroup if cgroup is not None else Cgroup(None, None)
        self.nodes: dict[str, Node] = {ROOT: Node(1, True, S.S_IFDIR | 0o1777, now)}
        self.next_ino = 2
        self.uid, self.gid = uid, gid          # the owner of every file (the process's own ids)

    def size(self) -> int:
        """The bytes of every file (what the cgroup is charged for /tmp)."""
        return sum(len(n.data) for n in self.nodes.values())

    def grown(self, old: int, new: int) -> None:
        """A file went from `old` to `new` bytes: the cgroup's charge follows (the caller checked the room)."""
        if new > old:
            self.cgroup.charge("shmem", new - old)
        else:
            self.cgroup.uncharge("shmem", old - new)

    def resize(self, node: Node, length: int) -> int:
        """truncate/ftruncate's work: 0, or EFBIG when the zeros would pass the run's memory limit (these files
        are not sparse: a tmpfs's holes cost nothing, these cost their bytes)."""
        room = self.cgroup.room()
        if room is not None and length - len(node.data) > room:
            self.cgroup.failcnt += 1
            return -EFBIG
        self.grown(len(node.data), length)
        del node.data[length:]
        node.data.extend(bytes(length - len(node.data)))
        return 0

    def _drop(self, node: Node) -> None:
        """A node leaves the tree: its bytes leave the cgroup (at once; Linux waits for the last close)."""
        self.grown(len(node.data), 0)

    def _remove(self, path: str) -> None:
        """A name leaves the tree; the node with it when that was its last link (_drop)."""
        node = self.nodes.pop(path)
        if self.links(node) == 0:
            self._drop(node)

    def links(self, node: Node) -> int:
        """How many names the node has (a hard link is a second name of one Node)."""
        return sum(n is node for n in self.nodes.values())

    @staticmethod
    def owns(path: str) -> bool:
        return path == ROOT or path.startswith(ROOT + "/")

    def _parent(self, path: str) -> Node | int:
        parent = self.nodes.get(posixpath.dirname(path))
        if parent is None:
            return -ENOENT
        return parent if parent.is_dir else -ENOTDIR

    def _new(self, path: str, is_dir: bool, mode: int, now: int) -> Node:
        node = self.nodes[path] = Node(self.next_ino, is_dir, (S.S_IFDIR if is_dir else S.S_IFREG) | (mode & 0o7777),
                                       now)
        self.next_ino += 1
        return node

    def children(self, path: str) -> list[str]:
        pre = path.rstrip("/") + "/"
        return sorted(q[len(pre):] for q in self.nodes if q.startswith(pre) and "/" not in q[len(pre):])

    # --- the syscalls' work ----------------------------------------------------------------------------
    def open(self, path: str, flags: int, mode: int, now: int):
        node = self.nodes.get(path)
        if node is None:
            if not flags & O_CREAT:
                return -ENOENT
            parent = self._parent(path)
            if isinstance(parent, int):
                return parent
            node = self._new(path, False, mode, now)
        elif flags & O_CREAT and flags & O_EXCL:
            return -EEXIST
        if node.target is not None:
            return -ELOOP                   # the walk followed every link it was allowed to: O_NOFOLLOW
        if S.S_ISSOCK(node.mode):
            return -ENXIO                   # a socket's file cannot be opened (fs/open.c: no f_op for S_IFSOCK)
        if node.is_dir:
            if flags & O_ACCMODE:
                return -EISDIR
            return DirHandle(path, flags, [(".", DT_DIR), ("..", DT_DIR)] +
                             [(n, self.nodes[posixpath.join(path, n)].d_type) for n in self.children(path)],
                             in_tmp=True)
        if flags & O_DIRECTORY:
            return -ENOTDIR
        if flags & O_TRUNC and flags & O_ACCMODE:
            self._drop(node)
            node.data.clear()
        return TmpFile(path, node, flags)

    def _create(self, path: str, is_dir: bool, mode: int, now: int) -> Node | int:
        """A new node at path: EEXIST if there is one, ENOENT/ENOTDIR without a directory above it."""
        if path in self.nodes:
            return -EEXIST
        parent = self._parent(path)
        return parent if isinstance(parent, int) else self._new(path, is_dir, mode, now)

    def mkdir(self, path: str, mode: int, now: int) -> int:
        node = self._create(path, True, mode, now)
        return node if isinstance(node, int) else 0

    def unlink(self, path: str, flags: int) -> int:
        node = self.nodes.get(path)
        if node is None:
            return -ENOENT
        if path == ROOT:
            return -EINVAL
        if node.is_dir:
            if not flags & AT_REMOVEDIR:
                return -EISDIR
            if self.children(path):
                return -ENOTEMPTY
        elif flags & AT_REMOVEDIR:
            return -ENOTDIR
        self._remove(path)
        return 0

    def rename(self, old: str, new: str) -> int:
        """rename(2): EINVAL into itself; onto an existing name, a directory only replaces an empty directory
        (ENOTDIR, ENOTEMPTY) and anything else only a non-directory (EISDIR); renaming onto itself is a no-op."""
        node = self.nodes.get(old)
        if node is None:
            return -ENOENT
        if new == old:
            return 0
        if new.startswith(old + "/"):
            return -EINVAL
        parent = self._parent(new)
        if isinstance(parent, int):
            return parent
        there = self.nodes.get(new)
        if there is node:
            return 0                            # two names of one file: rename does nothing (do_renameat2)
        if there is not None:
            if node.is_dir and not there.is_dir:
                return -ENOTDIR
            if there.is_dir and not node.is_dir:
                return -EISDIR
            if there.is_dir and self.children(new):
                return -ENOTEMPTY
            self._remove(new)
        moved = {q: n for q, n in self.nodes.items() if q == old or q.startswith(old + "/")}
        for q in moved:
            del self.nodes[q]
        for q, n in moved.items():
            self.nodes[new + q[len(old):]] = n
        return 0

    def link(self, old: str, new: str) -> int:
        """link(2) (fs/namei.c do_linkat, shmem_link): a second name of the file; ENOENT without one, EPERM for a
        directory, EEXIST for a name already there, ENOENT/ENOTDIR without a directory above the new name."""
        node = self.nodes.get(old)
        if node is None:
            return -ENOENT
        if new in self.nodes:
            return -EEXIST
        parent = self._parent(new)
        if isinstance(parent, int):
            return parent
        if node.is_dir:
            return -EPERM
        self.nodes[new] = node
        return 0

    def symlink(self, path: str, target: str, now: int) -> int:
        node = self._create(path, False, 0o777, now)
        if isinstance(node, int):
            return node
        node.mode, node.target = S.S_IFLNK | 0o777, target
        return 0

    def chmod(self, path: str, mode: int) -> int:
        node = self.nodes.get(path)
        if node is None:
            return -ENOENT
        node.mode = (node.mode & ~0o7777) | (mode & 0o7777)
        return 0

    def stat_bytes(self, node: Node) -> bytes:
        atime = node.mtime if node.atime is None else node.atime
        t = b"".join(struct.pack("<qq", x // 10**9, x % 10**9) for x in (atime, node.mtime, node.mtime))
        size = len(node.data) if node.target is None else len(node.target.encode())
        if node.is_dir:               # mm/shmem.c: 2 * BOGO_DIRENT_SIZE (20), and 20 more for every entry
            path = next(k for k, v in self.nodes.items() if v is node)
            size = BOGO_DIRENT_SIZE * (2 + len(self.children(path)))
        uid, gid = node.owner or (self.uid, self.gid)
        return (struct.pack("<QQQIIIIQqqq", 0x2A, node.ino, 2 if node.is_dir else self.links(node), node.mode, uid, gid, 0, 0,
                            size, 4096, (size + 511) // 512) + t + bytes(24))
