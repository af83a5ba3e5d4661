"""Unicorn's C API called directly, for the calls made often enough that the Python binding's per-call work
matters: a function's address (for native code and call chains), a uclib function without ctypes' argument
conversion, and a CPU context saved into one that already exists. Used by both engines (model/machine.py,
linux/regbatch.py, linux/icount.py) and by callchain.py. Mirrors no Go source.
"""
from __future__ import annotations

import ctypes

from unicorn import UcError
from unicorn.unicorn_py3.unicorn import uclib


def address_of(fn) -> int:
    """The C address of a ctypes function (e.g. a uclib export)."""
    return ctypes.cast(fn, ctypes.c_void_p).value


def unconverted(fn):
    """`fn` (a uclib function) called with no per-argument conversion: ctypes' argtypes path looks up
    and calls `from_param` for every argument, which costs more than the call itself (uc_reg_write
    0.84 -> 0.35 µs, uc_emu_start 1.2 -> 0.6 µs measured, issue #11). Callers pass ctypes objects
    for every 64-bit or pointer argument; a plain Python int goes as a C int."""
    return ctypes.CFUNCTYPE(ctypes.c_int)(address_of(fn))


_context_save = unconverted(uclib.uc_context_save)


def save_context(uc, into=None):
    """uc.context_save(), or, with `into` (an earlier context of this engine), the context copied into it
    instead of a new one: allocating a context costs more than the copy (2.5 against 0.39 µs, timeit), and
    the sweep saves one per point, the real process one per slice."""
    if into is None:
        return uc.context_save()
    err = _context_save(uc._uch, into.context)
    if err:
        raise UcError(err)
    return into


_context_restore = unconverted(uclib.uc_context_restore)


def restore_context(uc, ctx) -> None:
    """uc.context_restore(ctx) without the binding's argument conversion (0.9 against 2.0 us, timeit): the real
    process restores one per slice."""
    err = _context_restore(uc._uch, ctx.context)
    if err:
        raise UcError(err)
