"""AF_UNIX socket files in the in-memory /tmp: bind(2) of a path there makes a socket node (S_IFSOCK, tmpfs.Node
.sock), and connect(2) and sendto(2) find the socket through the node the path names, as net/unix/af_unix.c
does (unix_bind_bsd: mknod of the path, EADDRINUSE when it exists; unix_find_bsd: ENOENT for no file,
ECONNREFUSED for a file that is no socket or whose socket is closed). The file outlives its socket until
unlinked, so a second bind to the path is EADDRINUSE until then, and an unlinked path can be bound anew
while the old socket stays bound (log/syslog's TestFlap); a rename moves the name.

The node's mode is S_IFSOCK | 0777 less the umask (unix_bind_bsd). Outside /tmp a path that names something
(a mount's file or directory, a directory preemu made up such as `/`, a device) is EADDRINUSE as there (Go's
TestProtocolListenError binds "//"); any other path stays a key of the process's socket namespace
(sys_socket.Net), as before: preemu makes no socket file on the host. Abstract names have no file in Linux either.
"""
from __future__ import annotations

import os
import posixpath
import stat as S

from .sys_file import AT_FDCWD, DEVICES, _guest, _host, _synthetic, _tmp
from .sys_time import realtime
from .sysabi import EADDRINUSE, ECONNREFUSED, ENOENT, ENOTDIR

def bind(p, s, path: str) -> int | None:
    """Bind socket s to the /tmp path `path`: 0 or -errno; None when the path is not /tmp's."""
    guest = _guest(p, AT_FDCWD, path, follow=False)
    if isinstance(guest, int):
        return guest
    if _tmp(p, guest) is None:
        return -EADDRINUSE if _exists_outside_tmp(p, guest) else None
    if guest in p.tmpfs.nodes:
        return -EADDRINUSE
    parent = p.tmpfs.nodes.get(posixpath.dirname(guest))
    if parent is None or not parent.is_dir:
        return -ENOENT if parent is None else -ENOTDIR
    node = p.tmpfs._new(guest, False, 0o777 & ~p.fsstate.umask, realtime(p))
    node.mode, node.sock = S.S_IFSOCK | node.mode & 0o777, s
    s.node = node
    return 0


def _exists_outside_tmp(p, guest: str) -> bool:
    """Whether the guest path (not /tmp's) names something: a device, a directory preemu made up, a mount's file."""
    if guest in DEVICES or _synthetic(p, guest) is not None:
        return True
    found = _host(p, guest, False)
    return not isinstance(found, int) and os.path.lexists(found[1])


def missing(p, path: str) -> int:
    """The errno of a connect or send to an AF_UNIX name no socket is bound at outside /tmp (unix_find_other): an
    abstract name ECONNREFUSED (unix_find_abstract); a path ECONNREFUSED when it names something else
    (unix_find_bsd: no socket inode), ENOENT when it names nothing (the path walk)."""
    if path.startswith("@"):
        return ECONNREFUSED
    guest = _guest(p, AT_FDCWD, path, follow=True)
    if isinstance(guest, int):
        return -guest
    return ECONNREFUSED if _exists_outside_tmp(p, guest) else ENOENT


def lookup(p, path: str):
    """The socket the /tmp path `path` names, -errno, or None when the path is not /tmp's."""
    guest = _guest(p, AT_FDCWD, path, follow=True)
    if isinstance(guest, int):
        return guest
    if _tmp(p, guest) is None:
        return None
    node = p.tmpfs.nodes.get(guest)
    if node is None:
        return -ENOENT
    return node.sock if node.sock is not None else -ECONNREFUSED


def closed(s) -> None:
    """s's last descriptor closed: its file stays, and a connect to it is refused."""
    if s.node is not None and s.node.sock is s:
        s.node.sock = None
