"""Engine callbacks written in x86-64 machine code, for the hooks that fire too often for Python: assembled
with Keystone (once per machine: the code is remembered on disk by diskmemo.py, keyed by the text and
Keystone's own library, so that a start-up does not import Keystone) into an executable page of their own
and registered with uc_hook_add through ctypes (no compiler at run time). Used by linux/icount.py (the block counter), pagetable.py (the
TLB fill) and callchain.py (the chain runner, called through ctypes rather than registered). Mirrors no Go source.
"""
from __future__ import annotations

import ctypes
import importlib.util
import mmap
import os

from unicorn.unicorn_py3.unicorn import uclib

from . import diskmemo

_pages: dict[str, tuple[mmap.mmap, int]] = {}       # assembly text -> (its page, its address)


def code_address(asm: str) -> int:
    """The address of `asm` assembled into an executable page (once per process)."""
    got = _pages.get(asm)
    if got is None:
        code = assemble(asm)
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        got = _pages[asm] = (page, ctypes.addressof(ctypes.c_char.from_buffer(page)))
    return got[1]


def keystone_identity() -> str | None:
    """Which Keystone assembles (its library's and binding's sizes and times), found without importing it; None
    when it is not installed as a package directory."""
    spec = importlib.util.find_spec("keystone")
    if spec is None or not spec.submodule_search_locations:
        return None
    d = spec.submodule_search_locations[0]
    try:
        return ";".join(f"{n}:{st.st_size}:{st.st_mtime_ns}" for n in ("libkeystone.so", "keystone.py")
                        for st in (os.stat(os.path.join(d, n)),))
    except OSError:
        return None


_ASM_FORMAT = 1          # the layout of a remembered entry: the machine code's hex


def assemble(asm: str, address: int = 0) -> bytes:
    """Keystone's x86-64 machine code for `asm` placed at `address`, remembered on disk (diskmemo.py)."""
    def run() -> str:
        from ..core import assembler
        return bytes(assembler.x86_64().asm(asm, address)[0]).hex()
    who = keystone_identity()
    if who is None:
        return bytes.fromhex(run())
    return bytes.fromhex(diskmemo.remembered("machinecode", diskmemo.key(_ASM_FORMAT, who, address, asm), run))


def add_hook(uc, kind: int, asm: str, user: int, what: str) -> ctypes.c_size_t:
    """Register `asm` as a `kind` hook on every address with `user` as its user data; the hook's handle."""
    hh = ctypes.c_size_t()
    err = uclib.uc_hook_add(uc._uch, ctypes.byref(hh), kind, ctypes.c_void_p(code_address(asm)), ctypes.c_void_p(user),
                            ctypes.c_uint64(1), ctypes.c_uint64(0))
    if err != 0:
        raise RuntimeError(f"uc_hook_add for {what} failed: error {err}")
    return hh
