"""Engine callbacks written in x86-64 machine code, for the hooks that fire too often for Python: assembled
once per process with Keystone into an executable page of their own and registered with uc_hook_add
through ctypes (no compiler at run time). Used by linux/icount.py (the block counter), pagetable.py (the
TLB fill) and callchain.py (the chain runner, called through ctypes rather than registered). Mirrors no Go source.
"""
from __future__ import annotations

import ctypes
import mmap

import keystone
from unicorn.unicorn_py3.unicorn import uclib

_pages: dict[str, tuple[mmap.mmap, int]] = {}       # assembly text -> (its page, its address)


def code_address(asm: str) -> int:
    """The address of `asm` assembled into an executable page (once per process)."""
    got = _pages.get(asm)
    if got is None:
        code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(asm)[0])
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        got = _pages[asm] = (page, ctypes.addressof(ctypes.c_char.from_buffer(page)))
    return got[1]


def add_hook(uc, kind: int, asm: str, user: int, what: str) -> ctypes.c_size_t:
    """Register `asm` as a `kind` hook on every address with `user` as its user data; the hook's handle."""
    hh = ctypes.c_size_t()
    err = uclib.uc_hook_add(uc._uch, ctypes.byref(hh), kind, ctypes.c_void_p(code_address(asm)), ctypes.c_void_p(user),
                            ctypes.c_uint64(1), ctypes.c_uint64(0))
    if err != 0:
        raise RuntimeError(f"uc_hook_add for {what} failed: error {err}")
    return hh
