"""The host directories a process sees: the working directory, read-only, at its own path, and any
`--mount HOST:GUEST[:ro|rw]`. Everything else on the host is invisible (ENOENT) and nothing on it is
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
    if not os.path.isdir(host):
        raise EmuError(f"--mount {spec!r}: {host} is not a directory")
    guest = posixpath.normpath(guest)
    if guest == "/" or guest == "/tmp" or guest.startswith("/dev"):
        raise EmuError(f"--mount {spec!r}: {guest} is preemu's own (the root, /tmp or /dev)")
    return Mount(guest, os.path.realpath(host), mode == "rw")


class Namespace:
    """The mounts, longest guest path first."""

    def __init__(self, cwd: str, extra: tuple[Mount, ...] = ()) -> None:
        own = Mount(posixpath.normpath(cwd), os.path.realpath(cwd), False)
        mine = [own] if all(m.guest != own.guest for m in extra) else []    # a mount at the cwd's path wins
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
