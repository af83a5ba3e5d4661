"""x86-64 instructions' addresses, lengths, mnemonics and operands from Capstone's own C library (cs_disasm,
detail off), bound through ctypes without the capstone package's Python layer: importing that package
loads every architecture's module, ~14 ms of the ~0.2 s a trivial `preemu exec` costs, and start-up needs
only instruction boundaries (the block counter's tails, linux/icount.py; asyncPreempt's RETs, goruntime/watch.py;
the RDTSC sites, linux/elfimage.py).

`disasm_lite(code, address)` yields what `capstone.Cs(CS_ARCH_X86, CS_MODE_64).disasm_lite` yields for the same
bytes (the same library call; tests/test_startup.py compares the two over a Go binary's whole text). The
library is the one the capstone package ships (capstone/lib/libcapstone.so, found without importing the
package); `cs_insn` is laid out as Capstone 5 declares it (include/capstone/capstone.h), and a library of
another major version, or none found, makes this module use the package instead. Mirrors no Go source.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from typing import Iterator

CS_ARCH_X86, CS_MODE_64 = 3, 1 << 3
CS_MAJOR = 5                       # the cs_insn layout below is Capstone 5's


class _Insn(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint), ("address", ctypes.c_uint64), ("size", ctypes.c_uint16),
                ("bytes", ctypes.c_ubyte * 24), ("mnemonic", ctypes.c_char * 32), ("op_str", ctypes.c_char * 160),
                ("detail", ctypes.c_void_p)]


class _Library:
    """libcapstone with the three calls used here, and one x86-64 handle."""

    def __init__(self, path: str) -> None:
        lib = self.lib = ctypes.CDLL(path)
        lib.cs_version.restype = ctypes.c_int
        lib.cs_version.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.cs_version(ctypes.byref(major), ctypes.byref(minor))
        self.version = (major.value, minor.value)
        lib.cs_open.restype = ctypes.c_int
        lib.cs_open.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_size_t)]
        lib.cs_disasm.restype = ctypes.c_size_t
        lib.cs_disasm.argtypes = [ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_size_t,
                                  ctypes.POINTER(ctypes.POINTER(_Insn))]
        lib.cs_free.restype = None
        lib.cs_free.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.handle = ctypes.c_size_t()
        if major.value == CS_MAJOR and lib.cs_open(CS_ARCH_X86, CS_MODE_64, ctypes.byref(self.handle)) != 0:
            raise OSError(f"cs_open failed in {path}")
        # one instruction at a time into one cs_insn made once (cs_disasm_iter): cs_disasm allocates and frees
        # an array each call, ~9 us for a single instruction (the sweep asks once per single-step target)
        lib.cs_malloc.restype = ctypes.POINTER(_Insn)
        lib.cs_malloc.argtypes = [ctypes.c_size_t]
        lib.cs_disasm_iter.restype = ctypes.c_bool
        lib.cs_disasm_iter.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_uint64),
                                       ctypes.POINTER(_Insn)]
        self._one = lib.cs_malloc(self.handle) if major.value == CS_MAJOR else None
        self._code, self._size, self._addr = ctypes.c_char_p(), ctypes.c_size_t(), ctypes.c_uint64()
        self._args = (ctypes.byref(self._code), ctypes.byref(self._size), ctypes.byref(self._addr))
        self._lock = threading.Lock()       # the one cs_insn and its arguments: ctypes lets go of the GIL in the call

    def first(self, code: bytes, address: int) -> tuple[int, int, str, str] | None:
        """The first instruction of `code` at `address`, or None (cs_disasm_iter into the one cs_insn)."""
        code = bytes(code)
        with self._lock:
            self._code.value, self._size.value, self._addr.value = code, len(code), address
            if not self.lib.cs_disasm_iter(self.handle, *self._args, self._one):
                return None
            insn = self._one.contents
            return insn.address, insn.size, insn.mnemonic.decode("ascii"), insn.op_str.decode("ascii")

    def disasm_lite(self, code: bytes, address: int, count: int = 0) -> Iterator[tuple[int, int, str, str]]:
        insns = ctypes.POINTER(_Insn)()
        n = self.lib.cs_disasm(self.handle, bytes(code), len(code), address, count, ctypes.byref(insns))
        try:
            for i in range(n):
                insn = insns[i]
                yield insn.address, insn.size, insn.mnemonic.decode("ascii"), insn.op_str.decode("ascii")
        finally:
            if n:
                self.lib.cs_free(insns, n)


def library_path() -> str | None:
    """The capstone package's own libcapstone.so, or None when it is not where the package keeps it."""
    spec = importlib.util.find_spec("capstone")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], "lib", "libcapstone.so")
    return path if os.path.isfile(path) else None


_decoder = None


def decoder():
    """The x86-64 decoder: this module's binding when the library is Capstone 5's, else the package's Cs."""
    global _decoder
    if _decoder is None:
        path = library_path()
        lib = None
        if path is not None:
            try:
                lib = _Library(path)
            except OSError:
                lib = None
        if lib is not None and lib.version[0] == CS_MAJOR:
            _decoder = lib
        else:
            import capstone
            _decoder = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    return _decoder


def identity() -> str:
    """Which decoder this is, for keys of remembered results (diskmemo.py): the library's version, or the
    package's."""
    d = decoder()
    if isinstance(d, _Library):
        return f"libcapstone {d.version[0]}.{d.version[1]} (x86decode)"
    import capstone
    return f"capstone {capstone.__version__}"


def disasm_lite(code: bytes, address: int) -> Iterator[tuple[int, int, str, str]]:
    """(address, size, mnemonic, operands) of each instruction of `code` (at `address`), linearly, up to the first
    byte sequence that is no instruction, as capstone's Cs.disasm_lite."""
    return decoder().disasm_lite(code, address)


def first(code: bytes, address: int) -> tuple[int, int, str, str] | None:
    """The first instruction of `code` (at `address`), decoded alone, or None when the bytes start no instruction."""
    d = decoder()
    if isinstance(d, _Library):
        return d.first(code, address)
    return next(iter(d.disasm_lite(code, address, 1)), None)
