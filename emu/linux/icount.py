"""Exact instruction counting at native speed: a UC_HOOK_CODE callback written in x86-64 machine code.

Virtual time is an instruction count, so every slice must know exactly how many instructions ran.
`emu_start(count=N)` is fast but does not say how many ran when a syscall hook stops a slice early,
and a Python per-block hook is exact but ~10x slower. This module assembles (with Keystone) a
five-instruction C-ABI callback, `void cb(uc_engine *uc, uint64_t addr, uint32_t size, void *user)`,
into an executable page and registers it with `uc_hook_add` through ctypes. `user` points at a
struct {u64 executed; u64 limit; void *uc_emu_stop}: the callback runs before each instruction,
and stops the engine (the instruction not executed) once `executed == limit`, else counts it.
No compiler is needed at run time. Unicorn's own hook for `count=` works the same way.
"""
from __future__ import annotations

import ctypes
import mmap

import keystone
from unicorn import UC_HOOK_CODE
from unicorn.unicorn_py3.unicorn import uclib

# rdi = uc, rsi = address, edx = size, rcx = user (System V AMD64 ABI)
_CALLBACK_ASM = """
    mov rax, qword ptr [rcx]
    cmp rax, qword ptr [rcx + 8]
    jae stop
    inc rax
    mov qword ptr [rcx], rax
    ret
stop:
    jmp qword ptr [rcx + 16]
"""


class _Counter(ctypes.Structure):
    _fields_ = [("executed", ctypes.c_uint64), ("limit", ctypes.c_uint64), ("stop", ctypes.c_void_p)]


_page: mmap.mmap | None = None
_callback_addr = 0


def _callback() -> int:
    """Assemble the callback once per process; return its address."""
    global _page, _callback_addr
    if _page is None:
        code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(_CALLBACK_ASM)[0])
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        _page = page
        _callback_addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    return _callback_addr


class InsnCounter:
    """Counts executed instructions on one Uc; `arm(n)` stops the engine after n more."""

    UNLIMITED = (1 << 64) - 1

    def __init__(self, uc) -> None:
        self._uc = uc
        self._c = _Counter(0, self.UNLIMITED, ctypes.cast(uclib.uc_emu_stop, ctypes.c_void_p).value)
        self._hh = ctypes.c_size_t()
        err = uclib.uc_hook_add(uc._uch, ctypes.byref(self._hh), UC_HOOK_CODE, ctypes.c_void_p(_callback()),
                                ctypes.c_void_p(ctypes.addressof(self._c)), ctypes.c_uint64(1), ctypes.c_uint64(0))
        if err != 0:
            raise RuntimeError(f"uc_hook_add for the instruction counter failed: error {err}")

    @property
    def executed(self) -> int:
        return self._c.executed

    def arm(self, limit: int) -> None:
        """Reset the count to zero and stop the engine once `limit` instructions have executed."""
        self._c.executed = 0
        self._c.limit = min(limit, self.UNLIMITED)
