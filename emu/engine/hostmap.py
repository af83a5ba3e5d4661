"""Guest memory in a host buffer Python owns, handed to the engine with uc_mem_map_ptr: the model world
maps its stacks and data regions this way (model/hostmem.py, so Python reads them as slices), the real
process all of its memory (linux/hostpages.py, so snapshots are the host kernel's copy-on-write).
Mirrors no Go source.
"""
from __future__ import annotations

import ctypes
import mmap

from unicorn import UcError
from unicorn.unicorn_py3.unicorn import uclib


def map_host(uch, base: int, size: int, perms: int) -> tuple[mmap.mmap, ctypes.c_char]:
    """Map guest [base, base + size) onto a fresh zeroed host buffer; return the buffer and the ctypes anchor
    that pins its address (ctypes.addressof(anchor)). Keep both for as long as the engine maps them."""
    buf = mmap.mmap(-1, size)
    anchor = ctypes.c_char.from_buffer(buf)
    st = uclib.uc_mem_map_ptr(uch, base, size, perms, ctypes.addressof(anchor))
    if st:
        del anchor
        raise UcError(st)
    return buf, anchor
