"""The guest address space as the Machine maps it, and the host memory Python reads and writes directly.

The program's regions and preemu's code regions are Unicorn-owned (writes there invalidate
translations); preemu's data regions and the stacks are host buffers shared with the engine
(uc_mem_map_ptr), so a read or write of g/m/p, a stack or the heap costs a slice, not an engine call.
Also the typed views over that memory (field_view, byte_view, unpacker, struct). Mixed into
machine.Machine, whose engine handle (_h) and view caches (_host, _u64_views, _structs) it uses.
Mirrors no Go source (the layout is memmap's). Left out: unmapping anything but a stack.
"""
from __future__ import annotations

import ctypes
from functools import partial
from typing import TYPE_CHECKING, Callable

import unicorn
from unicorn.unicorn_py3.unicorn import uclib as _uclib

from ..core import memmap
from ..core.errors import EmuError
from ..core.structref import SlowField, StructRef
from ..engine.hostmap import map_host

if TYPE_CHECKING:
    from ..core.program import Program

#: The program's own regions (its text and data) and preemu's code regions stay in Unicorn-owned
#: memory (writes there invalidate translations); preemu's data regions and the stacks are host
#: memory shared with Python (uc_mem_map_ptr), so reading or writing g/m/p, stacks and the heap
#: costs a slice, not an engine call.
CODE_REGIONS = (memmap.STUB, memmap.RT)

_UINT_FMT = {1: "B", 2: "H", 4: "I", 8: "Q"}    # memoryview.cast formats (native = little-endian here)
_CHUNK = 20                 # host-backed regions are found by address >> _CHUNK (1 MiB chunks)


class HostMemoryMixin:
    """The Machine's memory: map the guest image and the stacks, read and write it, view it typed."""

    # --- mapping ----------------------------------------------------------------------------
    def _map_image(self, program: Program) -> None:
        """Map the program, preemu's regions and its code; write the INT3s of the runtime functions
        preemu does not model (self.traps); make every code region read-only."""
        img = program.image
        # The program's regions first, then preemu's: mapping in the other order changes how many
        # instructions a REP MOVSB between two watched heap objects counts (a Unicorn 2.1.4 quirk seen
        # in gc_ptr_interior), so keep this order.
        for base, size in img.regions:
            self.uc.mem_map(base, size)
        for r in memmap.RUNTIME_REGIONS:
            if r in CODE_REGIONS:
                self.uc.mem_map(r.base, r.size)
            else:
                self._map_host(r.base, r.size)
        for addr, code in self.all.code:
            self.uc.mem_write(addr, code)
        for d in program.data:
            self.uc.mem_write(d.addr, d.init)
        for addr, patch in img.patches:
            self.uc.mem_write(addr, patch)
        for addr in self.traps:
            self.uc.mem_write(addr, b"\xcc")
        lo, hi = memmap.page_down(img.text[0]), memmap.page_up(img.text[1])
        for base, end in ((lo, hi), (memmap.STUB.base, memmap.STUB.end), (memmap.RT.base, memmap.RT.end)):
            self.uc.mem_protect(base, end - base, unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC)   # code is read-only

    def _map_host(self, base: int, size: int) -> None:
        """Map [base, base+size) onto a host buffer Python reads and writes directly."""
        buf, anchor = map_host(self._h, base, size, unicorn.UC_PROT_ALL)
        entry = (base, base + size, buf, anchor)
        for c in range(base >> _CHUNK, ((base + size - 1) >> _CHUNK) + 1):
            self._host.setdefault(c, []).append(entry)

    def _unmap_host(self, base: int, size: int) -> None:
        st = _uclib.uc_mem_unmap(self._h, base, size)
        if st:
            raise unicorn.UcError(st)
        self._u64_views.clear()
        self._structs.clear()
        for c in range(base >> _CHUNK, ((base + size - 1) >> _CHUNK) + 1):
            self._host[c] = [e for e in self._host[c] if e[0] != base]

    # --- stacks, reads and writes, typed views ----------------------------------------------
    def map_stack(self, lo: int, hi: int) -> None:
        """Map [lo, hi) read/write, up to the end of hi's page (lo is page-aligned: memmap.stack_bounds);
        the page below lo stays unmapped (the guard page)."""
        if lo in self._mapped_stacks:
            return
        self._map_host(lo, memmap.page_up(hi) - lo)
        self._mapped_stacks.add(lo)

    def unmap_stack(self, lo: int, hi: int) -> None:
        self._unmap_host(lo, memmap.page_up(hi) - lo)
        self._mapped_stacks.discard(lo)

    def read(self, addr: int, size: int) -> bytes:
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + size <= end:
                return buf[addr - base:addr - base + size]
        if size > len(self._rbuf):
            self._rbuf = ctypes.create_string_buffer(size)
            self._rbuf_addr = ctypes.addressof(self._rbuf)
        st = _uclib.uc_mem_read(self._h, addr, self._rbuf, size)
        if st:
            raise unicorn.UcError(st, addr, size)
        return ctypes.string_at(self._rbuf_addr, size)

    def write(self, addr: int, data: bytes) -> None:
        n = len(data)
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + n <= end:
                buf[addr - base:addr - base + n] = data
                return
        st = _uclib.uc_mem_write(self._h, addr, bytes(data), len(data))
        if st:
            raise unicorn.UcError(st, addr, len(data))

    def _host_slot(self, addr: int, size: int):
        """(host buffer, offset) holding [addr, addr+size), or None when it is not host memory."""
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + size <= end:
                return buf, addr - base
        return None

    def field_view(self, addr: int, size: int):
        """An object whose [0] reads and writes the `size`-byte unsigned integer at addr: a typed
        memoryview of host memory (x86-64 hosts are little-endian, like the guest), else a slow proxy."""
        slot = self._host_slot(addr, size)
        if slot is None:
            return SlowField(self, addr, size)
        buf, off = slot
        return memoryview(buf)[off:off + size].cast(_UINT_FMT[size])

    def byte_view(self, addr: int, size: int) -> memoryview:
        """A writable memoryview of [addr, addr+size) in host memory (an EmuError for memory Unicorn
        holds itself: only preemu's own regions are viewed this way)."""
        slot = self._host_slot(addr, size)
        if slot is None:
            raise EmuError(f"{addr:#x}+{size}: not host-mapped memory")
        buf, off = slot
        return memoryview(buf)[off:off + size]

    def unpacker(self, addr: int, st: struct.Struct, size: int) -> Callable[[], tuple]:
        """A function unpacking `st` from the `size` bytes at addr (bound to host memory when it is)."""
        slot = self._host_slot(addr, size)
        if slot is None:
            return lambda: st.unpack(self.read(addr, size))
        return partial(st.unpack_from, *slot)

    def struct(self, base: int, fields: dict) -> StructRef:
        """The struct at `base` laid out as the gostructs table `fields` (one StructRef per pair)."""
        key = (base, id(fields))
        ref = self._structs.get(key)
        if ref is None or ref.fields is not fields:        # (an id may be reused by a newer table)
            ref = self._structs[key] = StructRef(self, base, fields)
        return ref

    def _u64_view(self, addr: int):
        """field_view(addr, 8), kept per address (the sweep reads and writes the same few slots)."""
        v = self._u64_views.get(addr)
        if v is None:
            v = self._u64_views[addr] = self.field_view(addr, 8)
        return v

    def read_u64(self, addr: int) -> int:
        return self._u64_view(addr)[0]

    def write_u64(self, addr: int, value: int) -> None:
        self._u64_view(addr)[0] = value & 0xFFFF_FFFF_FFFF_FFFF

