"""A fixed list of registers read or written in one `uc_reg_read_batch`/`uc_reg_write_batch` call.

The Python binding's own batch calls classify every register on every call (~6 us a register); the
signal path of whole-program mode reads and writes the same lists thousands of times a second. A RegBatch
keeps the ids and one buffer per register (16 bytes each: an XMM register fits) made once, so a call
costs the C call and the conversion of the values.
"""
from __future__ import annotations

import ctypes

from unicorn.unicorn_py3.unicorn import uclib

_read = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_read_batch, ctypes.c_void_p).value)
_write = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(uclib.uc_reg_write_batch, ctypes.c_void_p).value)


class RegBatch:
    """`batch(uc)` -> tuple of ints; `batch.write(uc, values)`. `wide` registers are 128-bit (XMM)."""

    def __init__(self, ids, wide=()) -> None:
        self.ids = list(ids)
        self.n = len(self.ids)
        self._wide = [i in set(wide) for i in self.ids]
        self._ids = (ctypes.c_int * self.n)(*self.ids)
        self._buf = ctypes.create_string_buffer(16 * self.n)
        base = ctypes.addressof(self._buf)
        self._ptrs = (ctypes.c_void_p * self.n)(*[base + 16 * k for k in range(self.n)])

    def __call__(self, uc) -> tuple:
        ctypes.memset(self._buf, 0, 16 * self.n)        # a 16- or 32-bit register fills only its bytes
        if _read(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_read_batch failed")
        raw = self._buf.raw
        return tuple(int.from_bytes(raw[16 * k:16 * k + (16 if w else 8)], "little")
                     for k, w in enumerate(self._wide))

    def write(self, uc, values) -> None:
        b = bytearray(16 * self.n)
        for k, v in enumerate(values):
            b[16 * k:16 * k + 16] = (v & ((1 << 128) - 1)).to_bytes(16, "little")
        ctypes.memmove(self._buf, bytes(b), len(b))
        if _write(uc._uch, self._ids, self._ptrs, self.n):
            raise RuntimeError("uc_reg_write_batch failed")
