"""/proc/self/maps (and /proc/PID/maps of the process itself): the process's mappings as Linux prints them
(proc(5); fs/proc/task_mmu.c show_map_vma), generated when the file is opened.

One line per run of pages with the same permissions and backing: `start-end perms offset dev inode path`, perms
`r`/`-` (accessible or a PROT_NONE reservation), `w`, `x`, and `p` (every mapping is private). The ELF's
PT_LOAD segments are the binary's file (its host path, device and inode, the segment's p_offset: what Go's
runtime/pprof reads to name its mappings), their bss past the file's last page anonymous; preemu's vDSO page is
`[vdso]`, the counter's page `[vvar]`, the main thread's stack `[stack]`; the rest anonymous (00:00 0).
Left out: `[vsyscall]` (not mapped: preemu's processes have none), `[heap]` (no brk), the other /proc/PID files
(status, task/, fd/), and maps of another process.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..core.memmap import page_down, page_up
from . import startup, vdso
from .sysabi import EACCES, EINVAL
from .tmpfs import MemFile


@dataclass(eq=False)
class ProcFile(MemFile):
    """A /proc file's text, made when it was opened (reads see that moment's mappings, as a read of the real file
    at offset 0 does). Mode 0444: root may open it for writing (CAP_DAC_OVERRIDE), but a write is EINVAL (the file
    has no write operation, vfs_write's FMODE_CAN_WRITE)."""
    data: bytes
    flags: int
    pos: int = 0

    def write_bytes(self, p, data: bytes) -> int:
        return -EINVAL


def is_maps(p, guest: str) -> bool:
    return guest in ("/proc/self/maps", "/proc/thread-self/maps", f"/proc/{p.pid}/maps")


def open_maps(p, flags: int):
    """open(2) of /proc/self/maps: the file, or EACCES for a write open by a user other than root."""
    if flags & 3 and p.uid != 0:
        return -EACCES
    return ProcFile(maps(p), flags)


def maps(p) -> bytes:
    """The text of /proc/self/maps for process p."""
    mem = p.mem
    named = {vdso.VDSO_BASE: "[vdso]", vdso.VVAR: "[vvar]", startup.STACK_TOP - startup.STACK_SIZE: "[stack]"}
    try:
        st = os.stat(p.image.path)
        dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}"
        ino, path = st.st_ino, os.path.abspath(p.image.path)
    except OSError:
        dev, ino, path = "00:00", 0, os.path.abspath(p.image.path)
    files = [(page_down(s.vaddr), page_up(s.vaddr + len(s.data)), page_down(s.offset)) for s in p.image.segments]
    cuts = {x for a, b in mem.vmas.r for x in (a, b)}
    cuts |= {x for iv in (mem.mapped, mem.writable, mem.executable) for a, b in iv.r for x in (a, b)}
    cuts |= {x for a, b, _ in files for x in (a, b)} | set(named)
    lines: list[list] = []
    for a, b in mem.vmas.r:
        points = sorted({a, b} | {c for c in cuts if a < c < b})
        for lo, hi in zip(points, points[1:]):
            perms = ("r" if mem.mapped.contains(lo, hi) else "-") + ("w" if mem.writable.contains(lo, hi) else "-") \
                + ("x" if mem.executable.contains(lo, hi) else "-") + "p"
            f = next(((flo, off) for flo, fhi, off in files if flo <= lo < fhi), None)
            if f is not None:
                back = (dev, ino, path, f[1] + lo - f[0])
            else:
                back = ("00:00", 0, named.get(lo, ""), 0)
            last = lines[-1] if lines else None
            if (last is not None and last[1] == lo and last[2] == perms and last[3][:3] == back[:3]
                    and not back[2].startswith("[") and (f is None or last[3][3] + (lo - last[0]) == back[3])):
                last[1] = hi                    # one vma: the same permissions and backing, contiguous
            else:
                lines.append([lo, hi, perms, back])
    out = []
    for lo, hi, perms, (d, i, name, off) in lines:
        head = f"{lo:08x}-{hi:08x} {perms} {off:08x} {d} {i}"
        out.append(f"{head:<72} {name}" if name else f"{head} ")
    return ("\n".join(out) + "\n").encode()
