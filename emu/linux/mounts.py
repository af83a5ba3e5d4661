"""The host directories a process sees: the working directory, read-only, at its own path, any
`--mount HOST:GUEST[:ro|rw]` (a directory or a single file), and a minimal read-only /etc of preemu's own
(ETC) unless a mount gives one. Everything else on the host is invisible (ENOENT) and nothing on it is
written except inside a `:rw` mount.

Path resolution as fs/namei.c does it where it matters here: a relative path starts at the working
directory (which chdir moves, sys_file.py) or at a directory descriptor; sys_file._walk takes `..` and
/tmp's symbolic links first; then the longest mount whose guest path holds the name decides, a host
link inside it is resolved on the host, and a name that resolves out of its mount is not there
(ENOENT), so a link cannot reach the rest of the host. /tmp is
the in-memory tmpfs.py's, except for mounts inside it (and the directories above them, so that a
working directory under /tmp stays visible as the host has it).
"""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass

from ..core.errors import EmuError


@dataclass(frozen=True)
class Mount:
    guest: str                  # absolute, normalized
    host: str                   # the host directory, symlinks resolved
    rw: bool = False


def parse_mount(spec: str) -> Mount:
    """`HOST:GUEST[:ro|rw]` (the option's syntax); a clear error for anything else."""
    parts = spec.split(":")
    mode = "ro"
    if len(parts) == 3:
        mode = parts[2]
    if len(parts) not in (2, 3) or mode not in ("ro", "rw") or not parts[0] or not parts[1]:
        raise EmuError(f"--mount {spec!r}: use HOST:GUEST, HOST:GUEST:ro or HOST:GUEST:rw")
    host, guest = parts[0], parts[1]
    if not guest.startswith("/"):
        raise EmuError(f"--mount {spec!r}: the guest path must be absolute")
    if not os.path.exists(host):
        raise EmuError(f"--mount {spec!r}: {host}: no such file or directory")
    guest = posixpath.normpath(guest)
    if guest in ("/", "/tmp") or within(guest, "/dev"):     # (/devices is not /dev's)
        raise EmuError(f"--mount {spec!r}: {guest} is preemu's own (the root, /tmp or /dev)")
    return Mount(guest, os.path.realpath(host), mode == "rw")


#: the /etc a program sees unless a mount gives its own: enough for Go's resolver and os/user to work as on a
#: small Linux system (localhost resolves from hosts, nsswitch says files then dns, the resolver's nameserver
#: is the loopback, which answers nothing, so a lookup fails at once with ECONNREFUSED; passwd and group
#: name root and the user preemu runs as). {user}/{uid}/{gid}/{group}/{home} are the host's.
ETC = {
    "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
    "resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
    "passwd": "root:x:0:0:root:/root:/bin/sh\n{user}:x:{uid}:{gid}:{user}:{home}:/bin/sh\n",
    "group": "root:x:0:\n{group}:x:{gid}:\n",
}


def etc_mount() -> Mount:
    """A read-only /etc of ETC's files, made once per content under preemu's cache (nothing else on the host
    is written)."""
    import hashlib
    import pwd
    import grp
    from ..front.gobuild import cache_dir
    uid, gid = os.getuid(), os.getgid()
    try:
        user, home = pwd.getpwuid(uid).pw_name, pwd.getpwuid(uid).pw_dir
    except KeyError:
        user, home = f"user{uid}", "/"
    try:
        group = grp.getgrgid(gid).gr_name
    except KeyError:
        group = f"group{gid}"
    files = {n: t.format(user=user, uid=uid, gid=gid, group=group, home=home) for n, t in ETC.items()}
    if uid == 0:                                    # root is the user: one line each
        files["passwd"] = ETC["passwd"].split("\n")[0] + "\n"
    if gid == 0:
        files["group"] = ETC["group"].split("\n")[0] + "\n"
    key = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    d = cache_dir() / "etc" / key
    if not d.is_dir():
        tmp = d.with_name(f"{key}.{os.getpid()}")
        tmp.mkdir(parents=True, exist_ok=True)
        for n, text in files.items():
            (tmp / n).write_text(text)
        try:
            tmp.rename(d)
        except OSError:                             # another process made it first
            pass
    return Mount("/etc", os.path.realpath(d), False)     # host paths are compared resolved (Namespace.lookup)


class Namespace:
    """The mounts, longest guest path first: the user's, the working directory's, and the default /etc
    (etc_mount) unless a mount gives /etc (or `/`) itself."""

    def __init__(self, cwd: str, extra: tuple[Mount, ...] = (), etc: bool = True) -> None:
        own = Mount(posixpath.normpath(cwd), os.path.realpath(cwd), False)
        mine = [own] if all(m.guest != own.guest for m in extra) else []    # a mount at the cwd's path wins
        if etc and all(m.guest != "/etc" for m in list(extra) + mine) and not within("/etc", own.guest):
            mine.append(etc_mount())
        self.mounts = sorted(list(extra) + mine, key=lambda m: -len(m.guest))

    def lookup(self, guest: str, follow: bool = True) -> tuple[Mount, str] | None:
        """The mount holding guest path `guest` and the host file it names, or None (invisible); with
        follow False a link in the last component is the link itself (lstat, unlink, rename)."""
        for m in self.mounts:
            if within(guest, m.guest):
                raw = m.host + guest[len(m.guest):]
                head, tail = os.path.split(raw)
                host = os.path.realpath(raw) if follow or raw == m.host else os.path.join(os.path.realpath(head), tail)
                return (m, host) if within(host, m.host) else None
        return None

    def shadows_tmp(self, guest: str) -> bool:
        """Is this /tmp path a mount's, or a directory above one?"""
        return any(within(guest, m.guest) or within(m.guest, guest) for m in self.mounts)


def within(path: str, root: str) -> bool:
    """Is `path` the directory `root` or inside it (both absolute and normalized)?"""
    return path == root or path.startswith(root.rstrip("/") + "/")
