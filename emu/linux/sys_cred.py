"""Credentials: the effective and saved user and group ids and the supplementary groups, and the calls that
change them, as kernel/sys.c and kernel/groups.c have them for one process: setuid, setgid, setreuid,
setregid, setresuid, setresgid, getresuid, getresgid, geteuid, getegid, setfsuid, setfsgid, getgroups,
setgroups, and the capability sets (capget, capset: kernel/capability.c). The real ids are Process.uid and .gid (the host's own at start, sys_proc.py getuid/getgid); the
effective and saved ones start equal to them (Process.creds, made here on first use), the groups the host
process's. Go's side: syscall/exec_linux.go forkAndExecInChild1 (SysProcAttr.Credential: setgroups, setgid,
setuid in the child), syscall.Setuid and friends (all threads, through runtime's AllThreadsSyscall).

Without CAP_SETUID (euid not 0) an id may only be set to one of the real, effective or saved ids (EPERM
otherwise); setgroups needs CAP_SETGID (EPERM). An id of -1 leaves that id as it is. Left out: capabilities
beyond "euid 0 has them all", the fs ids beyond reading as the effective ones, and file access checks by
the changed ids (the host checks files as the user preemu runs as).
"""
from __future__ import annotations

import os
import struct

from unicorn import UcError

from .sysabi import EFAULT, EINVAL, EPERM

NGROUPS_MAX = 65536
KEEP = 0xFFFFFFFF                                   # (uid_t)-1


def creds(p) -> dict:
    c = getattr(p, "creds", None)
    if c is None:
        c = p.creds = {"u": [p.uid, p.uid, p.uid], "g": [p.gid, p.gid, p.gid], "groups": list(os.getgroups())}
    c["u"][0], c["g"][0] = p.uid, p.gid
    return c


def privileged(p) -> bool:
    """CAP_SETUID, CAP_NET_RAW and the like: the effective uid is 0 (what this module models of capabilities)."""
    return creds(p)["u"][1] == 0


def _setres(p, kind: str, new) -> int:
    """setresuid/setresgid: each id not -1 becomes the new value; unprivileged, only to a current id."""
    c = creds(p)
    ids = c[kind]
    new = [v & 0xFFFFFFFF for v in new]
    if not privileged(p) and any(v != KEEP and v not in ids for v in new):
        return -EPERM
    for i, v in enumerate(new):
        if v != KEEP:
            ids[i] = v
    if kind == "u":
        p.uid = ids[0]
    else:
        p.gid = ids[0]
    return 0


def _set_id(p, kind: str, v: int) -> int:
    """setuid/setgid (kernel/sys.c __sys_setuid): privileged, all three; else the effective one, if it is the
    real or saved id."""
    v &= 0xFFFFFFFF
    if v == KEEP:
        return -EINVAL
    if privileged(p):
        return _setres(p, kind, (v, v, v))
    ids = creds(p)[kind]
    if v not in (ids[0], ids[2]):
        return -EPERM
    return _setres(p, kind, (KEEP, v, KEEP))


def _set_re(p, kind: str, r: int, e: int) -> int:
    """setreuid/setregid: the saved id follows the effective one when the real one is set or the effective
    one changes to other than the real one."""
    ids = creds(p)[kind]
    r, e = r & 0xFFFFFFFF, e & 0xFFFFFFFF
    if not privileged(p) and (r != KEEP and r not in ids[:2] or e != KEEP and e not in ids):
        return -EPERM
    s = e if r != KEEP or (e != KEEP and e != ids[0]) else KEEP
    s = ids[1] if s == KEEP and r != KEEP and e == KEEP else s
    return _setres(p, kind, (r, e, s))


def _get_res(p, kind: str, a: int, b: int, c: int) -> int:
    for addr, v in zip((a, b, c), creds(p)[kind]):
        p.write(addr, struct.pack("<I", v))
    return 0


def sys_getgroups(p, t, size, buf, *_):
    groups = creds(p)["groups"]
    size &= 0xFFFFFFFF
    if size == 0:
        return len(groups)
    if size < len(groups) or size > 0x7FFFFFFF:
        return -EINVAL
    p.write(buf, struct.pack(f"<{len(groups)}I", *groups))
    return len(groups)


def sys_setgroups(p, t, size, buf, *_):
    size &= 0xFFFFFFFF
    if size > NGROUPS_MAX:
        return -EINVAL
    if not privileged(p):
        return -EPERM
    creds(p)["groups"] = sorted(struct.unpack(f"<{size}I", p.read(buf, 4 * size))) if size else []
    return 0


#: capget/capset's header versions (include/uapi/linux/capability.h): v1 has one data struct, v2 and v3 two
CAP_V1, CAP_V2, CAP_V3 = 0x19980330, 0x20071026, 0x20080522
CAP_LAST_CAP = 40                                   # sys_proc's: CAP_CHECKPOINT_RESTORE


def _caps(p) -> list:
    """[effective, permitted, inheritable] as 64-bit sets: all of them for euid 0 at first, none otherwise."""
    c = creds(p)
    if "caps" not in c:
        full = (1 << (CAP_LAST_CAP + 1)) - 1 if c["u"][1] == 0 else 0
        c["caps"] = [full, full, 0]
    return c["caps"]


def _efault(handler):
    """A bad header or data pointer is EFAULT (copy_from_user/copy_to_user), as syscall's
    TestAllThreadsSyscallError checks with capget(NULL, NULL)."""
    def checked(p, t, hdr, data, *_):
        try:
            return handler(p, t, hdr, data)
        except UcError:
            return -EFAULT
    return checked


@_efault
def sys_capget(p, t, hdr, data, *_):
    """capget(2) (kernel/capability.c): an unknown version is EINVAL with v3 written back (0 when data is
    NULL: the caller asks for the version); pid 0 or the caller's own; the sets as 32-bit halves."""
    version, pid = struct.unpack("<Ii", p.read(hdr, 8))
    if version not in (CAP_V1, CAP_V2, CAP_V3):
        p.write(hdr, struct.pack("<I", CAP_V3))
        return 0 if not data else -EINVAL
    if pid < 0:
        return -EINVAL
    if not data:
        return 0
    n = 1 if version == CAP_V1 else 2
    sets = _caps(p)
    p.write(data, b"".join(struct.pack("<III", *((x >> (32 * i)) & 0xFFFFFFFF for x in sets)) for i in range(n)))
    return 0


@_efault
def sys_capset(p, t, hdr, data, *_):
    """capset(2) for the caller: the new permitted set within the old, effective and inheritable within it
    (EPERM otherwise; inheritable's CAP_SETPCAP rule is not modelled)."""
    version, pid = struct.unpack("<Ii", p.read(hdr, 8))
    if version not in (CAP_V1, CAP_V2, CAP_V3):
        p.write(hdr, struct.pack("<I", CAP_V3))
        return -EINVAL
    if pid not in (0, p.pid):
        return -EPERM
    n = 1 if version == CAP_V1 else 2
    words = struct.unpack(f"<{3 * n}I", p.read(data, 12 * n))
    new = [sum(words[3 * i + k] << (32 * i) for i in range(n)) for k in range(3)]
    old = _caps(p)
    if new[1] & ~old[1] or new[0] & ~new[1]:
        return -EPERM
    old[:] = new
    return 0


def _fs_id(p, kind: str, v: int) -> int:
    """setfsuid/setfsgid: the old fs id (the effective one here); the new one is not kept apart."""
    return creds(p)[kind][1]


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {
    105: ("setuid", lambda p, t, v, *_: _set_id(p, "u", v)),
    106: ("setgid", lambda p, t, v, *_: _set_id(p, "g", v)),
    107: ("geteuid", lambda p, t, *_: creds(p)["u"][1]),
    108: ("getegid", lambda p, t, *_: creds(p)["g"][1]),
    113: ("setreuid", lambda p, t, r, e, *_: _set_re(p, "u", r, e)),
    114: ("setregid", lambda p, t, r, e, *_: _set_re(p, "g", r, e)),
    115: ("getgroups", sys_getgroups), 116: ("setgroups", sys_setgroups),
    117: ("setresuid", lambda p, t, r, e, s, *_: _setres(p, "u", (r, e, s))),
    118: ("getresuid", lambda p, t, a, b, c, *_: _get_res(p, "u", a, b, c)),
    119: ("setresgid", lambda p, t, r, e, s, *_: _setres(p, "g", (r, e, s))),
    120: ("getresgid", lambda p, t, a, b, c, *_: _get_res(p, "g", a, b, c)),
    122: ("setfsuid", lambda p, t, v, *_: _fs_id(p, "u", v)),
    123: ("setfsgid", lambda p, t, v, *_: _fs_id(p, "g", v)),
    125: ("capget", sys_capget), 126: ("capset", sys_capset),
}
