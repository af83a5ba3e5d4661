"""Which per-point path runs: the compiled one (emu/engine/_native.c, built at install time) or the Python
one it mirrors. PREEMU_NATIVE=0 selects Python everywhere (the differential test runs both); unset or 1, the
compiled module is used, and a checkout whose module was not built (no `pip install -e .` or
`python setup.py build_ext --inplace` yet) runs the Python path; PREEMU_NATIVE=1 requires the module and
says so when it is missing.

`lib` is the module, initialised with the addresses of the libunicorn functions the Python binding has
loaded (so both call one library instance), or None for the Python path.
"""
from __future__ import annotations

import os

from unicorn import UC_HOOK_CODE, UC_HOOK_INSN, UC_HOOK_INTR, UcError
from unicorn.x86_const import UC_X86_INS_SYSCALL
from unicorn.unicorn_py3.unicorn import uclib

from ..core.errors import EmuError
from .capi import address_of

MODE = os.environ.get("PREEMU_NATIVE", "").strip()


def _load():
    if MODE == "0":
        return None
    try:
        from . import _native
    except ImportError as e:
        if MODE == "1":
            raise EmuError(f"PREEMU_NATIVE=1 but the compiled module is missing ({e}): run `pip install -e .` "
                           "or `python setup.py build_ext --inplace` (gcc needed)") from None
        return None
    _native.init(address_of(uclib.uc_reg_read_batch), address_of(uclib.uc_reg_write_batch),
                 address_of(uclib.uc_mem_read), address_of(uclib.uc_mem_write), address_of(uclib.uc_reg_read), UcError,
                 address_of(uclib.uc_hook_add), address_of(uclib.uc_emu_stop), address_of(uclib.uc_emu_start))
    return _native


lib = _load()


def hook_code(uc, callback, user_data, begin: int, end: int) -> int:
    """uc.hook_add(UC_HOOK_CODE, callback, user_data, begin, end), through the compiled module's C trampoline
    when it is loaded (the same calls, the same exceptions; no libffi closure, no binding wrapper frames);
    uc.hook_del removes either."""
    if lib is None:
        return uc.hook_add(UC_HOOK_CODE, callback, user_data, begin, end)
    return lib.hook_add(uc, 0, callback, user_data, begin, end)


def hook_g_store(uc, callback, addr: int, reg: int | None, imm: int | None, clock, proc) -> int:
    """A code hook at `addr`, a store to the TLS g slot of `reg` (a register id) or of `imm`, for gclock's
    GoroutineClock `clock` in process `proc`: hook_code(uc, callback, None, addr, addr), but with the compiled
    module the stores callback(...) would leave everything as it was (G not counted on this thread, and the
    store not making G current outside an injection window and a signal handler) return in C without
    calling it (_native_hooks.c g_store_cb)."""
    if lib is None:
        return uc.hook_add(UC_HOOK_CODE, callback, None, addr, addr)
    return lib.hook_add(uc, 3, callback, None, addr, addr, clock, proc, -1 if reg is None else reg, imm or 0)


def hook_syscall(uc, callback, user_data=None) -> int:
    """uc.hook_add(UC_HOOK_INSN, callback, user_data, 1, 0, UC_X86_INS_SYSCALL), as hook_code."""
    if lib is None:
        return uc.hook_add(UC_HOOK_INSN, callback, user_data, 1, 0, UC_X86_INS_SYSCALL)
    return lib.hook_add(uc, 1, callback, user_data, 1, 0)


def hook_intr(uc, callback, user_data=None) -> int:
    """uc.hook_add(UC_HOOK_INTR, callback, user_data), as hook_code."""
    if lib is None:
        return uc.hook_add(UC_HOOK_INTR, callback, user_data)
    return lib.hook_add(uc, 2, callback, user_data, 1, 0)


def _py_emu_start(uc, begin: int, until: int, timeout: int, count: int) -> None:
    uc.emu_start(begin, until, timeout, count)


#: emu_start(uc, begin, until, timeout, count) is uc.emu_start(...); with the compiled module the same call
#: (the GIL released, a hook's exception raised after it) without the binding's argument conversion
emu_start = _py_emu_start if lib is None else lib.emu_start


def loaded():
    """The compiled module, or None for the Python path."""
    return lib
