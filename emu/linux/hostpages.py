"""The emulated process's memory in host pages preemu owns, so that a whole-memory snapshot is the host
kernel's copy-on-write instead of Unicorn's.

Every region the address space maps in the engine is a host mapping handed to Unicorn with
`uc_mem_map_ptr`. A snapshot copies each mapping's resident pages (mincore(2): pages never touched read
as zeros and are not copied) into a memfd and maps the memfd over the same host addresses, MAP_PRIVATE:
the process goes on writing into private copies the host kernel makes page by page, and restoring is one
mmap(MAP_FIXED) per mapping, which drops those copies. Unicorn's pointers stay valid (the host addresses
do not move), and so do its TLB and translated code.

Unicorn 2's own snapshot (UC_CTL_CONTEXT_MEMORY) copies a page into a new memory region on its first
write, rebuilding the flat view and flushing the TLB each time, and from then on sends *every* store to a
page of a snapshotted region through its slow path (notdirty_write never marks such a page dirty while a
snapshot level is open: cputlb.c). A real-program sweep runs entirely under a snapshot, so that was a
tax on every store it made.

Regions mapped, unmapped or re-protected in the engine after a snapshot are undone by snapshot.py, which
keeps the block layout (`layout`, `set_layout`) and maps the blocks' host memory back.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import re
from dataclasses import dataclass, field

from ..core.memmap import PAGE
from ..engine.hostmap import map_host

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_MAP_FAILED = ctypes.c_void_p(-1).value
_MAP_FIXED = 0x10                        # <sys/mman.h>; Python's mmap module does not export it
_RESIDENT_RUN = re.compile(rb"\x01+")
_RESIDENT_BIT = bytes(i & 1 for i in range(256))            # mincore's byte per page: bit 0 = resident


@dataclass(eq=False)
class Block:
    """One host mapping behind one uc_mem_map_ptr call: guest [guest, guest + size) at host `host`."""
    guest: int
    size: int
    buf: mmap.mmap                       # owns the host mapping (unmapped when the block is dropped)
    anchor: ctypes.c_char                # pins buf's address for Unicorn
    host: int
    live: list = field(default_factory=list)     # the guest ranges still mapped in the engine


class HostPages:
    """The host mappings behind one engine (`map`, `release`) and their snapshots (`snapshot`, `restore`)."""

    def __init__(self, uc) -> None:
        self._uch = uc._uch
        self.blocks: list[Block] = []
        uc.preemu_host_pages = self          # the host memory lives as long as the engine that points into it

    def map(self, guest: int, size: int, perms: int) -> None:
        """Map guest [guest, guest + size) in the engine onto fresh zeroed host pages."""
        buf, anchor = map_host(self._uch, guest, size, perms)
        self.blocks.append(Block(guest, size, buf, anchor, ctypes.addressof(anchor), [(guest, guest + size)]))

    def release(self, a: int, b: int) -> None:
        """Guest [a, b) was unmapped in the engine: drop the blocks no longer mapped at all; give the host the
        pages of the others back (MADV_DONTNEED)."""
        for blk in list(self.blocks):
            lo, hi = max(a, blk.guest), min(b, blk.guest + blk.size)
            if lo >= hi:
                continue
            blk.live = [p for s, e in blk.live for p in ((s, min(e, lo)), (max(s, hi), e)) if p[0] < p[1]]
            if not blk.live:
                self.blocks.remove(blk)
            else:
                _libc.madvise(blk.host + lo - blk.guest, hi - lo, mmap.MADV_DONTNEED)

    def layout(self) -> list:
        """The blocks and the guest ranges of each still mapped, as set_layout takes them back."""
        return [(blk, list(blk.live)) for blk in self.blocks]

    def set_layout(self, layout: list) -> None:
        """Back to the blocks of an earlier layout() (their host memory is alive: the layout holds them)."""
        self.blocks = [blk for blk, _ in layout]
        for blk, live in layout:
            blk.live = list(live)

    def resident(self):
        """(guest address, bytes) of every run of pages touched so far that is still mapped (mincore(2): a page
        never touched reads as zeros and is left out), for fork's copy of the address space."""
        for blk in self.blocks:
            for a, b in _resident_runs(blk):
                for s, e in blk.live:
                    lo, hi = max(s, blk.guest + a), min(e, blk.guest + b)
                    if lo < hi:
                        yield lo, blk.buf[lo - blk.guest:hi - blk.guest]

    # --- snapshots ----------------------------------------------------------------------------------
    def snapshot(self) -> "Snapshot":
        """Freeze every block's contents in a memfd and map it privately over the block."""
        taken = []
        try:
            for blk in self.blocks:
                fd = os.memfd_create("preemu-snapshot", os.MFD_CLOEXEC)
                taken.append((blk, fd))
                os.ftruncate(fd, blk.size)
                _copy_resident(blk, fd)
                _map_private(blk, fd)
        except BaseException:
            for _, fd in taken:
                os.close(fd)
            raise
        return Snapshot(taken)

    def restore(self, snap: "Snapshot") -> None:
        """Every block of `snap` reads again as when it was taken (its private copies are dropped)."""
        for blk, fd in snap.blocks:
            _map_private(blk, fd)


class Snapshot:
    """Blocks and the memfds holding their contents; the files close with the snapshot."""

    def __init__(self, blocks: list) -> None:
        self.blocks = blocks
        self._close = os.close              # kept: at interpreter exit the module's globals may be gone first

    def __del__(self) -> None:
        for _, fd in self.blocks:
            self._close(fd)
        self.blocks = []


def _resident_runs(blk: Block):
    """[a, b) byte offsets in blk of its runs of resident pages."""
    n = blk.size // PAGE
    vec = (ctypes.c_ubyte * n)()
    if _libc.mincore(blk.host, blk.size, vec) != 0:
        raise OSError(ctypes.get_errno(), f"mincore: {os.strerror(ctypes.get_errno())}")
    return [(run.start() * PAGE, run.end() * PAGE) for run in _RESIDENT_RUN.finditer(bytes(vec).translate(_RESIDENT_BIT))]


def _copy_resident(blk: Block, fd: int) -> None:
    view = memoryview(blk.buf)
    try:
        for a, b in _resident_runs(blk):
            if os.pwrite(fd, view[a:b], a) != b - a:
                raise OSError(f"short write to the snapshot of {blk.guest:#x}")
    finally:
        view.release()


def _map_private(blk: Block, fd: int) -> None:
    got = _libc.mmap(blk.host, blk.size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | _MAP_FIXED, fd, 0)
    if got is None or got == _MAP_FAILED or got != blk.host:
        raise OSError(ctypes.get_errno(), f"mmap over the block at {blk.guest:#x}: {os.strerror(ctypes.get_errno())}")

