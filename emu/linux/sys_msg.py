"""sendmsg(2) and recvmsg(2) on sys_socket.py's sockets, with SCM_RIGHTS and SCM_CREDENTIALS over AF_UNIX
(unix(7), cmsg(3)).

Mirrors net/socket.c ___sys_sendmsg/___sys_recvmsg (struct msghdr read and written back: msg_namelen,
msg_controllen, msg_flags) and net/core/scm.c (__scm_send: SOL_SOCKET/SCM_RIGHTS carries descriptors, at most
SCM_MAX_FD = 253; an unknown control message is EINVAL; scm_detach_fds: the receiver gets new descriptors
for the same open files, MSG_CTRUNC when its control buffer holds fewer, MSG_CMSG_CLOEXEC sets FD_CLOEXEC and
stays in msg_flags; SCM_CREDENTIALS: the sender may claim only its own pid, uid and gid unless it is root
(scm_check_creds: EPERM), a SO_PASSCRED socket's messages carry the sender's credentials when it sent none
(unix_maybe_add_creds), and a SO_PASSCRED receiver gets them first).
sendmsg sends what every iovec holds, as one write/sendto; recvmsg receives into the first non-empty iovec
(a stream may return fewer bytes than asked: the same answer, read in one piece). Descriptors sent over a
stream wait at the receiving socket and go with the next recvmsg that reads data.
Left out: other control messages (EINVAL, as Linux for an unknown one; AF_INET carries none here),
recvmsg of descriptors by a read that had to wait (its data arrives, the descriptors wait for the next
recvmsg), a read(2) dropping the descriptors waiting (they wait for a recvmsg), a cut datagram's MSG_TRUNC
flag, MSG_PEEK and MSG_WAITALL; descriptors still queued when the socket closes are dropped without
running their close (a pipe end so dropped never reaches end of file).
"""
from __future__ import annotations

import struct

from . import sys_socket as S
from .sockopt import SO_PASSCRED, SOL_SOCKET
from .sysabi import EINVAL, EMSGSIZE, EPERM

SCM_RIGHTS, SCM_CREDENTIALS, SCM_MAX_FD = 1, 2, 253
MSG_CTRUNC, MSG_TRUNC, MSG_CMSG_CLOEXEC = 0x8, 0x20, 0x40000000
UIO_MAXIOV = 1024
MAX_RW_COUNT = 0x7FFFF000           # include/linux/fs.h: INT_MAX rounded down to a page


def _msghdr(p, msg: int) -> tuple:
    """(name, namelen, iov, iovlen, control, controllen, flags) of a struct msghdr (56 bytes)."""
    return struct.unpack("<QI4xQQQQi4x", p.read(msg, 56))


def iovecs(p, iov: int, n: int) -> list[tuple[int, int]] | int:
    """An iovec array's (base, length) pairs (lib/iov_iter.c import_iovec): EMSGSIZE past UIO_MAXIOV (readv and
    writev answer EINVAL there), EINVAL for a negative length, the lengths cut to MAX_RW_COUNT in all."""
    if n > UIO_MAXIOV:
        return -EMSGSIZE
    raw = p.read(iov, 16 * n) if n else b""
    vecs = [struct.unpack_from("<QQ", raw, 16 * i) for i in range(n)]
    if any(ln >> 63 for _b, ln in vecs):
        return -EINVAL                                # lib/iov_iter.c: a negative length
    out, total = [], 0                                # at most MAX_RW_COUNT bytes in all (the rest ignored)
    for base, ln in vecs:
        ln = min(ln, MAX_RW_COUNT - total)
        out.append((base, ln))
        total += ln
    return out


def _cmsgs(p, control: int, length: int):
    """The control messages: (level, type, data) each, or a negative errno (EINVAL for a malformed one)."""
    out, off = [], 0
    while off + 16 <= length:
        clen, level, typ = struct.unpack("<Qii", p.read(control + off, 16))
        if clen < 16 or off + clen > length:
            return -EINVAL
        out.append((level, typ, bytes(p.read(control + off + 16, clen - 16))))
        off += (clen + 7) & ~7
    return out


def sys_sendmsg(p, t, fd, msg, flags, *_):
    s = S._sock(p, fd)
    if isinstance(s, int):
        return s
    name, namelen, iov, iovlen, control, controllen, _f = _msghdr(p, msg)
    vecs = iovecs(p, iov, iovlen)
    if isinstance(vecs, int):
        return vecs
    passed, creds = [], None
    if controllen:
        cm = _cmsgs(p, control, controllen)
        if isinstance(cm, int):
            return cm
        for level, typ, data in cm:
            if level != SOL_SOCKET or s.family != S.AF_UNIX or typ not in (SCM_RIGHTS, SCM_CREDENTIALS):
                return -EINVAL                      # __scm_send: an unknown message; AF_INET carries none
            if typ == SCM_CREDENTIALS:
                if len(data) != 12:
                    return -EINVAL
                creds = struct.unpack("<iII", data)
                if not _may_claim(p, creds):
                    return -EPERM
                continue
            for (fdn,) in struct.iter_unpack("<i", data[:len(data) // 4 * 4]):
                obj = p.fds.get(fdn)
                if obj is None:
                    return -S.EBADF
                passed.append(obj)
        if len(passed) > SCM_MAX_FD:
            return -EINVAL
    dest = None
    if name and namelen:
        dest = S.read_addr(p, s, name, namelen)
        if isinstance(dest, int):
            return dest
        dest = S.to_local_host(dest)
    data = b"".join(bytes(p.read(base, ln)) for base, ln in vecs if ln)
    r = S.send(p, s, data, dest, flags)
    peer = _receiver(p, s, dest) if r >= 0 and s.family == S.AF_UNIX else None
    if peer is not None:
        if creds is None and (_passcred(s) or _passcred(peer)):
            creds = (p.pid, p.uid, p.gid)           # unix_maybe_add_creds: the sender's own
        if passed or creds is not None:
            for obj in passed:                      # the message holds a reference (scm_fp_dup: get_file)
                obj.in_flight = getattr(obj, "in_flight", 0) + 1
            peer.rights.append((passed, creds))
    return r


def _may_claim(p, creds: tuple) -> bool:
    """net/core/scm.c scm_check_creds: one's own pid, uid and gid, or anything with the capabilities root has."""
    pid, uid, gid = creds
    return p.uid == 0 or (pid == p.pid and uid == p.uid and gid == p.gid)


def _passcred(s) -> bool:
    raw = s.opts.get((SOL_SOCKET, SO_PASSCRED), b"")
    return len(raw) >= 4 and struct.unpack("<i", raw[:4])[0] != 0


def _receiver(p, s, dest):
    """The socket a stream's (or a datagram's) ancillary data reaches (send found it: not an errno here)."""
    if s.other is not None and dest is None:
        return s.other
    to = dest or s.remote
    found = S.find(p, s, to) if to else None
    return None if isinstance(found, int) else found


def sys_recvmsg(p, t, fd, msg, flags, *_):
    s = S._sock(p, fd)
    if isinstance(s, int):
        return s
    name, namelen, iov, iovlen, control, controllen, _f = _msghdr(p, msg)
    vecs = iovecs(p, iov, iovlen)
    if isinstance(vecs, int):
        return vecs
    buf, n = next(((b, ln) for b, ln in vecs if ln), (vecs[0][0] if vecs else 0, 0))
    alen_p = msg + 8 if name else 0
    if alen_p:
        p.write(alen_p, struct.pack("<I", namelen))
    r = S.recv(p, t, s, buf, n, name, alen_p, flags & ~MSG_CMSG_CLOEXEC)
    if r is S.BLOCK or r < 0:
        return r
    out_flags = flags & MSG_CMSG_CLOEXEC                # ___sys_recvmsg starts msg_flags from these
    cmsgs = b""
    if s.rights and (r > 0 or s.type == S.SOCK_DGRAM):
        objs, creds = s.rights.popleft()
        for obj in objs:
            obj.in_flight -= 1
        if creds is not None and _passcred(s):      # scm_recv: credentials first, to a SO_PASSCRED receiver
            cmsgs, cut = _put_cmsg(cmsgs, controllen if control else 0, SCM_CREDENTIALS, struct.pack("<iII", *creds))
            out_flags |= MSG_CTRUNC if cut else 0
        room = max(0, (controllen - len(cmsgs) - 16) // 4) if control else 0
        given = objs[:room]
        if len(given) < len(objs):
            out_flags |= MSG_CTRUNC
            for obj in objs[len(given):]:           # scm_detach_fds: the rest are closed (fput)
                if hasattr(obj, "on_close") and not obj.in_flight \
                        and not any(o is obj for tab in p.fds.tables for o in tab.fds.values()):
                    obj.on_close()
        if given:
            nums = [p.fds.install(o, cloexec=bool(flags & MSG_CMSG_CLOEXEC)) for o in given]
            cmsgs, _cut = _put_cmsg(cmsgs, controllen, SCM_RIGHTS, struct.pack(f"<{len(nums)}i", *nums))
    if cmsgs:
        p.write(control, cmsgs)
    if not name:
        p.write(msg + 8, struct.pack("<I", 0))
    p.write(msg + 40, struct.pack("<Q", len(cmsgs)))
    p.write(msg + 48, struct.pack("<i", out_flags))
    return r


def _put_cmsg(out: bytes, room: int, typ: int, body: bytes) -> tuple[bytes, bool]:
    """net/core/scm.c put_cmsg: the message, padded to CMSG_SPACE unless that passes the room; cut when the
    header does not fit."""
    if len(out) + 16 > room:
        return out, True
    raw = struct.pack("<Qii", 16 + len(body), SOL_SOCKET, typ) + body
    space = (len(raw) + 7) & ~7
    raw = (raw + bytes(space - len(raw)))[:room - len(out)]
    return out + raw, len(raw) < 16 + len(body)


#: syscall number -> (name, handler); numbers from arch/x86/entry/syscalls/syscall_64.tbl
TABLE = {46: ("sendmsg", sys_sendmsg), 47: ("recvmsg", sys_recvmsg)}
