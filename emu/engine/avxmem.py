"""The vector unit's loads and stores (avxexec.py), made as the engine's own are: the same page protections and
the same memory hooks.

Unicorn's API calls (uc_mem_read/uc_mem_write) are a debugger's access: no hook sees them and uc_mem_write
writes even a read-only page (measured: a 512-byte AVX copy into a read-only page wrote it). An instruction
the engine executes is checked against its region's permissions and calls every UC_HOOK_MEM_READ/WRITE hook
whose range holds the access's address. So every access of an instruction preemu executes goes through here:
- an access to an unmapped page, or a store to a page that is not writable, raises VectorFault with the
  engine's error for it (UC_ERR_READ_UNMAPPED, UC_ERR_WRITE_UNMAPPED, UC_ERR_WRITE_PROT) and the address the
  CPU reports (cr2: the first byte of the access on the failing page; an access that starts on the page
  before faults at the page's first byte, as faultaddr.py computes for the engine's own faults). Nothing is
  written then: a faulting x86 instruction has no effect. The caller turns it into the thread's SIGSEGV.
- the memory hooks registered here (hook_add, mirroring Unicorn's: kinds, callback(uc, access, address,
  size, value, user), an inclusive range, begin > end for all memory) are called for each 8-byte piece of the
  access, as QEMU splits a vector access into 64-bit ones, reads after the load succeeded and writes before
  the store. Whoever hooks the engine's memory registers the same hook here too (goruntime/realgc.py's watch).
- EVEX masked moves touch only the elements their mask selects (read_parts/write_parts): the others are
  neither read, written, checked nor hooked (the SDM's memory fault suppression of masked-off elements).
Which pages are writable comes from `writable(page) -> bool` (the process's address space,
linux/memory.AddressSpace.is_writable, which keeps the engine's region permissions), else from the engine's
regions. Mirrors no Go source: the CPU's side (Intel SDM vol. 3A 4.7, page-fault error code and CR2).
"""
from __future__ import annotations

from unicorn import (UC_ERR_READ_UNMAPPED, UC_ERR_WRITE_PROT, UC_ERR_WRITE_UNMAPPED, UC_HOOK_MEM_READ,
                     UC_HOOK_MEM_WRITE, UC_MEM_READ, UC_MEM_WRITE, UC_PROT_WRITE, UcError)

from ..core.memmap import PAGE

_PIECE = 8                     # QEMU's widest single access: a vector access is split into 64-bit ones


class VectorFault(Exception):
    """An access of an instruction preemu executes that the CPU would fault: `errno` is the engine's UC_ERR_* for
    it, `addr` the faulting address."""

    def __init__(self, errno: int, addr: int):
        self.errno, self.addr = errno, addr
        super().__init__(f"vector access fault {errno} at {addr:#x}")


def _pages(addr: int, n: int) -> list[int]:
    return list(range(addr - addr % PAGE, addr + n, PAGE)) if n else []


class VectorMemory:
    """One engine's memory as the vector unit's instructions reach it."""

    def __init__(self, uc, writable=None):
        self.uc = uc
        self.writable = writable
        self.hooks: dict[int, tuple] = {}        # handle -> (kinds, callback, user, begin, end)
        self._next = 0

    # --- hooks, as Unicorn's ---------------------------------------------------------------------------
    def hook_add(self, kinds: int, callback, user=None, begin: int = 1, end: int = 0) -> int:
        self._next += 1
        self.hooks[self._next] = (kinds, callback, user, begin, end)
        return self._next

    def hook_del(self, handle: int) -> None:
        self.hooks.pop(handle, None)

    def _call(self, access: int, addr: int, data: bytes) -> None:
        kind = UC_HOOK_MEM_READ if access == UC_MEM_READ else UC_HOOK_MEM_WRITE
        for off in range(0, len(data), _PIECE):
            a, piece = addr + off, data[off:off + _PIECE]
            value = int.from_bytes(piece, "little") if access == UC_MEM_WRITE else 0
            for kinds, cb, user, begin, end in list(self.hooks.values()):
                if kinds & kind and (begin > end or begin <= a <= end):
                    cb(self.uc, access, a, len(piece), value, user)

    # --- the checks ------------------------------------------------------------------------------------
    def _mapped(self, page: int) -> bool:
        try:
            self.uc.mem_read(page, 1)
            return True
        except UcError:
            return False

    def _page_writable(self, page: int) -> bool:
        if self.writable is not None:
            return self.writable(page)
        return any(b <= page <= e and p & UC_PROT_WRITE for b, e, p in self.uc.mem_regions())

    def check_read(self, addr: int, n: int) -> None:
        for page in _pages(addr, n):
            if not self._mapped(page):
                raise VectorFault(UC_ERR_READ_UNMAPPED, max(addr, page))

    def check_write(self, addr: int, n: int) -> None:
        for page in _pages(addr, n):
            if not self._page_writable(page):
                raise VectorFault(UC_ERR_WRITE_PROT if self._mapped(page) else UC_ERR_WRITE_UNMAPPED, max(addr, page))

    # --- the accesses ----------------------------------------------------------------------------------
    def read(self, addr: int, n: int) -> bytes:
        try:
            data = bytes(self.uc.mem_read(addr, n))
        except UcError:
            self.check_read(addr, n)                 # names the first unmapped page
            raise
        if self.hooks:
            self._call(UC_MEM_READ, addr, data)
        return data

    def write(self, addr: int, data: bytes) -> None:
        self.write_parts([(addr, data)])

    def read_parts(self, parts: list[tuple[int, int]]) -> list[bytes]:
        """[(address, size)] read as one instruction's accesses: all checked before any is hooked."""
        for a, n in parts:
            self.check_read(a, n)
        return [self.read(a, n) for a, n in parts]

    def write_parts(self, parts: list[tuple[int, bytes]]) -> None:
        """[(address, bytes)] written as one instruction's stores: every page checked before anything is
        written, then hooked and written in order."""
        for a, data in parts:
            self.check_write(a, len(data))
        for a, data in parts:
            if self.hooks:
                self._call(UC_MEM_WRITE, a, data)
            self.uc.mem_write(a, data)
