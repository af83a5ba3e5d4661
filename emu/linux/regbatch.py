"""Registers and guest memory through Unicorn's C API with no per-call conversion: a fixed list of registers
read or written in one `uc_reg_read_batch`/`uc_reg_write_batch` call, one register, a memory range.

The Python binding's own batch calls classify every register on every call (~6 us a register); the
signal path of whole-program mode reads and writes the same lists thousands of times a second. A RegBatch
keeps the ids and one buffer per register (16 bytes each: an XMM register fits) made once, so a call
costs the C call and the conversion of the values.
"""
from __future__ import annotations

import array
import ctypes
import struct

from unicorn import UcError
from unicorn.unicorn_py3.unicorn import uclib

from ..engine.capi import unconverted
from ..engine.native import loaded as _native_lib

_read, _write = unconverted(uclib.uc_reg_read_batch), unconverted(uclib.uc_reg_write_batch)
_read1 = unconverted(uclib.uc_reg_read)
_one = ctypes.c_uint64()
_one_p = ctypes.byref(_one)
_ONE_ADDR = ctypes.addressof(_one)


_mem_read = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)(
    ctypes.cast(uclib.uc_mem_read, ctypes.c_void_p).value)
_mem_write = unconverted(uclib.uc_mem_write)


_M64 = (1 << 64) - 1
_SCRATCH = ctypes.create_string_buffer(4096)
_SCRATCH_ADDR = ctypes.addressof(_SCRATCH)
_SCRATCH_VIEW = memoryview(_SCRATCH).cast("B")     # a slice of it copies n bytes (.raw copies all 4096)


def mem_read(uc, addr: int, n: int) -> bytes:
    """Guest memory, without the binding's argument conversion (UcError as the binding raises it); reads up
    to a page go through one scratch buffer."""
    if n <= 4096:
        err = _mem_read(uc._uch, addr, _SCRATCH_ADDR, n)
        if not err:
            return _SCRATCH_VIEW[:n].tobytes()
    else:
        buf = ctypes.create_string_buffer(n)
        err = _mem_read(uc._uch, addr, buf, n)
        if not err:
            return buf.raw
    raise UcError(err)


_ctx_read1 = unconverted(uclib.uc_context_reg_read)


def context_reg(ctx, reg: int) -> int:
    """A 64-bit register of a saved context (a UcContext), without the binding's classification of the
    register (~4 us a call)."""
    _one.value = 0
    err = _ctx_read1(ctx.context, reg, _one_p)
    if err:
        raise UcError(err)
    return _one.value


_memcmp = ctypes.CDLL(None).memcmp
_memcmp.restype = ctypes.c_int
_memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
_MIB = 1 << 20


def changed_pages(uc, addr: int, before, into: bytearray, page: int = 4096) -> list[int]:
    """The offsets of the `page`-sized pieces of guest [addr, addr + len(before)) that differ from `before`,
    the memory read into `into` (a buffer of that length the caller keeps: a segment of tens of MB read
    through mem_read cost ~25 ms a time in fresh buffers and page faults, against a copy and memcmp here)."""
    n = len(before)
    dst = (ctypes.c_char * n).from_buffer(into)
    err = _mem_read(uc._uch, addr, ctypes.addressof(dst), n)
    if err:
        raise UcError(err)
    src = (ctypes.c_char * n).from_buffer(before) if isinstance(before, bytearray) else ctypes.c_char_p(before)
    a, b = ctypes.addressof(dst), ctypes.cast(src, ctypes.c_void_p).value
    out = []
    for c in range(0, n, _MIB):                 # a MiB at a time, then its pages where it differs
        m = min(_MIB, n - c)
        if _memcmp(a + c, b + c, m):
            out += [off for off in range(c, c + m, page) if _memcmp(a + off, b + off, min(page, n - off))]
    del dst, src
    return out


def mem_read_into(uc, addr: int, into: bytearray) -> bytearray:
    """Guest [addr, addr + len(into)) copied into `into` (one copy: a read of tens of MB through mem_read
    zero-fills a ctypes buffer, copies into it and copies again into bytes)."""
    dst = (ctypes.c_char * len(into)).from_buffer(into)
    err = _mem_read(uc._uch, addr, ctypes.addressof(dst), len(into))
    del dst
    if err:
        raise UcError(err)
    return into


def read_u64(uc, addr: int) -> int:
    """One little-endian 64-bit word of guest memory."""
    err = _mem_read(uc._uch, addr, _ONE_ADDR, 8)
    if err:
        raise UcError(err)
    return _one.value


_FIELD = struct.Struct("<IB3x")          # one field of a read_fields spec: its offset and size (1, 2, 4 or 8)
_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


def field_spec(fields) -> bytes:
    """The spec read_fields takes for `fields`, (offset, size) pairs in the order the values are wanted (fields
    that do not overlap)."""
    fields = list(fields)
    end = -1
    for off, size in sorted(fields):
        if size not in _CODES or not 0 <= off < 1 << 16 or off < end:
            raise ValueError(f"a field of {size} bytes at offset {off}: read_fields reads fields of 1, 2, 4 or 8 "
                             "bytes within 64 KiB of the base that do not overlap")
        end = off + size
    return b"".join(_FIELD.pack(off, size) for off, size in fields)


_LAYOUTS: dict[bytes, tuple] = {}       # spec -> (first offset, span, its Struct or None, the spec's order, fields)


def _layout(spec: bytes) -> tuple:
    fields = list(_FIELD.iter_unpack(spec))
    by_off = sorted(range(len(fields)), key=lambda i: fields[i][0])
    lo = fields[by_off[0]][0] if fields else 0
    hi = max((off + size for off, size in fields), default=0)
    st, at = None, lo
    if fields and hi - lo <= 4096:
        fmt = "<"
        for i in by_off:
            off, size = fields[i]
            fmt += f"{off - at}x{_CODES[size]}"
            at = off + size
        st = struct.Struct(fmt)
    order = [by_off.index(i) for i in range(len(fields))]       # the spec's i-th field in st's values
    r = _LAYOUTS[spec] = (lo, hi - lo, st, order, fields)
    return r


def read_fields(uc, base: int, spec: bytes) -> tuple[int, ...]:
    """The unsigned little-endian fields of `spec` (field_spec) of the struct at `base`, in the spec's order;
    UcError when a field's bytes are not mapped. The fields' span is read at once when it is at most a page (a
    struct's fields share its pages), field by field when it is longer or that read fails."""
    lo, n, st, order, fields = _LAYOUTS.get(spec) or _layout(spec)
    if st is not None:
        try:
            v = st.unpack(mem_read(uc, base + lo, n))
        except UcError:
            pass
        else:
            return tuple([v[i] for i in order])
    return tuple([int.from_bytes(mem_read(uc, base + off, size), "little") for off, size in fields])


def mem_write(uc, addr: int, data: bytes) -> None:
    err = _mem_write(uc._uch, ctypes.c_uint64(addr), data, ctypes.c_size_t(len(data)))
    if err:
        raise UcError(err)


def read_reg(uc, reg: int) -> int:
    """One 64-bit register (or a narrower one, zero-extended), without the binding's classification."""
    _one.value = 0
    if _read1(uc._uch, reg, _one_p):
        raise RuntimeError(f"uc_reg_read of register {reg} failed")
    return _one.value


_native = _native_lib()


class RegBatch:
    """`batch(uc)` -> tuple of ints; `batch.write(uc, values)`. `wide` registers are 128-bit (XMM). With the
    compiled module the four calls are emu/engine/_native.c's batch_* (the same slots, values and errors)."""

    def __init__(self, ids, wide=()) -> None:
        self.ids = list(ids)
        self.n = len(self.ids)
        self._wide = [i in set(wide) for i in self.ids]
        self._ids = (ctypes.c_int * self.n)(*self.ids)
        self._buf = ctypes.create_string_buffer(16 * self.n)
        base = ctypes.addressof(self._buf)
        self._ptrs = (ctypes.c_void_p * self.n)(*[base + 16 * k for k in range(self.n)])
        self._fmt = struct.Struct("<" + "".join("QQ" if w else "Q8x" for w in self._wide))
        self._any_wide = any(self._wide)
        if _native is not None and self.n <= 64:
            self._cids, self._cwide = array.array("i", self.ids).tobytes(), bytes(self._wide)
            self.__class__ = _NativeRegBatch

    def __call__(self, uc) -> tuple:
        ctypes.memset(self._buf, 0, 16 * self.n)        # a 16- or 32-bit register fills only its bytes
        if _read(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_read_batch failed")
        vals = self._fmt.unpack(self._buf.raw)
        if not self._any_wide:
            return vals
        out, i = [], 0
        for w in self._wide:
            if w:
                out.append(vals[i] | vals[i + 1] << 64)
                i += 2
            else:
                out.append(vals[i])
                i += 1
        return tuple(out)

    def raw(self, uc) -> bytes:
        """The registers as read, 16 bytes each in list order (little-endian, zero-padded): an XMM register's
        slot is its bytes as FXSAVE stores them."""
        ctypes.memset(self._buf, 0, 16 * self.n)
        if _read(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_read_batch failed")
        return self._buf.raw

    def write_raw(self, uc, data: bytes) -> None:
        """Write the registers from 16-byte slots in list order (raw's format)."""
        ctypes.memmove(self._buf, data, 16 * self.n)
        if _write(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_write_batch failed")

    def write(self, uc, values) -> None:
        if self._any_wide:
            flat = []
            for w, v in zip(self._wide, values):
                flat += (v & _M64, (v >> 64) & _M64) if w else (v & _M64,)
        else:
            flat = [v & _M64 for v in values]
        self._fmt.pack_into(self._buf, 0, *flat)      # a narrower register takes only its low bytes
        if _write(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_write_batch failed")


class _NativeRegBatch(RegBatch):
    """RegBatch's calls in C (emu/engine/_native.c); RegBatch's own are the reference (PREEMU_NATIVE=0)."""

    def __call__(self, uc) -> tuple:
        return _native.batch_values(uc, self._cids, self._cwide)

    def raw(self, uc) -> bytes:
        return _native.batch_raw(uc, self._cids, self._cwide)

    def write_raw(self, uc, data: bytes) -> None:
        _native.batch_write_raw(uc, self._cids, self._cwide, data)

    def write(self, uc, values) -> None:
        _native.batch_write(uc, self._cids, self._cwide, values)


# Translation-cache controls (uc_ctl, unicorn.h UC_CTL_TB_*) with the arguments built once: the binding's
# ctl_request_cache/ctl_remove_cache convert each argument through generators (~10 us a call), and the
# instruction counter asks once for every block it has not seen (thousands in a program's start).
_ctl = unconverted(uclib.uc_ctl)
_CTL_REQUEST_CACHE = (3 << 30) | (2 << 26) | 8       # UC_CTL_IO_READ_WRITE, 2 arguments, UC_CTL_TB_REQUEST_CACHE
_CTL_REMOVE_CACHE = (1 << 30) | (2 << 26) | 9        # UC_CTL_IO_WRITE, 2 arguments, UC_CTL_TB_REMOVE_CACHE


class _Tb(ctypes.Structure):
    _fields_ = [("pc", ctypes.c_uint64), ("icount", ctypes.c_uint16), ("size", ctypes.c_uint16)]


_tb = _Tb()
_tb_p = ctypes.byref(_tb)


def request_cache(uc, addr: int) -> tuple[int, int, int]:
    """The translation block at addr (translated now if it is not cached): (pc, instructions, size);
    UcError as the binding's ctl_request_cache raises it."""
    err = _ctl(uc._uch, _CTL_REQUEST_CACHE, ctypes.c_uint64(addr), _tb_p)
    if err:
        raise UcError(err)
    return _tb.pc, _tb.icount, _tb.size


def remove_cache(uc, begin: int, end: int) -> None:
    """Drop the cached translations of the blocks in [begin, end) (ctl_remove_cache)."""
    err = _ctl(uc._uch, _CTL_REMOVE_CACHE, ctypes.c_uint64(begin), ctypes.c_uint64(end))
    if err:
        raise UcError(err)


# The compiled path (emu/engine/_native.c, issue #49): the same calls with no Python frame and no ctypes
# call between the caller and Unicorn (about 20 register reads and 10 memory reads a point of a real-program
# sweep; read_fields: the oracle's g, m and p, one read of each struct's span). The Python functions above stay
# the reference (PY) and the path under PREEMU_NATIVE=0.
PY = {"read_reg": read_reg, "read_u64": read_u64, "mem_read": mem_read, "mem_write": mem_write,
      "read_fields": read_fields}
if _native is not None:
    read_reg, read_u64, mem_read, mem_write = _native.read_reg, _native.read_u64, _native.mem_read, _native.mem_write
    read_fields = _native.read_fields
