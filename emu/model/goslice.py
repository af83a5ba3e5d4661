"""The slice runtime that compiled Go code calls, computed as Go 1.27.3 computes it.

Mirrors runtime/slice.go -- makeslice (:102), makeslicecopy (:39), growslice (:178), nextslicecap
(:326), moveSlice/moveSliceNoScan/moveSliceNoCap/moveSliceNoCapNoScan (:442-505) and growsliceBuf
(:510) -- and roundupsize (runtime/msize.go:16). Capacities come out exactly as the real runtime's:
the size-class tables are read from the binary itself (internal/runtime/gc.SizeClassToSize,
SizeToSizeClass8, SizeToSizeClass128), so a program sees the same cap() natively and here.

Each function takes its ABIInternal integer arguments (RAX, RBX, RCX, RDI, RSI, R8, R9) and returns
its results (RAX, RBX, RCX). Memory is allocated through the World's heap (a pointerful element type
gives the object its type's pointer words, tiled; a pointer-free one none) and copied through the
machine.

Left out: panics (a length out of range is a clear error naming panicmakeslicelen/cap, as preemu models
no panics); bulkBarrierPreWriteSrcOnly (the bulk write barrier while writeBarrier.enabled);
the RuntimeFreegc experiment's growsliceNoAlias/growsliceBufNoAlias frees (off by default, and those
functions are not redirected); race/msan/asan.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from ..core import memmap
from ..core.errors import EmuError
from .faults import GuestFaultInHook

PTR_SIZE = 8
MALLOC_HEADER_SIZE = 8                       # internal/runtime/gc/malloc.go:17
MIN_SIZE_FOR_MALLOC_HEADER = PTR_SIZE * 64   # gc/malloc.go:47 (goarch.PtrSize * goarch.PtrBits)
MAX_SMALL_SIZE = 32768                       # internal/runtime/gc/sizeclasses.go:84-95
SMALL_SIZE_DIV, SMALL_SIZE_MAX, LARGE_SIZE_DIV = 8, 1024, 128
PAGE_SIZE = 1 << 13                          # pageSize = 1 << gc.PageShift (malloc.go:118)
MAX_ALLOC = 1 << 48                          # maxAlloc = 1 << heapAddrBits on linux/amd64 (malloc.go:213-220)
U64 = (1 << 64) - 1


@dataclass(frozen=True)
class SizeClasses:
    """The runtime's size-class tables (internal/runtime/gc/sizeclasses.go:98-102)."""

    class_to_size: tuple[int, ...]
    size_to_class8: tuple[int, ...]
    size_to_class128: tuple[int, ...]

    @classmethod
    def from_binary(cls, binary) -> "SizeClasses":
        def table(name: str, fmt: str) -> tuple[int, ...]:
            sym = binary.symbol(f"internal/runtime/gc.{name}")
            if sym is None:
                raise GuestFaultInHook(f"the binary has no internal/runtime/gc.{name} (needed to size slices)")
            addr, size = sym
            return struct.unpack(f"<{size // struct.calcsize(fmt)}{fmt}", binary.read(addr, size))
        return cls(table("SizeClassToSize", "H"), table("SizeToSizeClass8", "B"), table("SizeToSizeClass128", "B"))

    def roundupsize(self, size: int, noscan: bool) -> int:
        """runtime/msize.go:16: the size mallocgc will really hand out for a request of `size` bytes."""
        req = size
        if req <= MAX_SMALL_SIZE - MALLOC_HEADER_SIZE:
            if not noscan and req > MIN_SIZE_FOR_MALLOC_HEADER:
                req += MALLOC_HEADER_SIZE
            if req <= SMALL_SIZE_MAX - 8:
                cls = self.size_to_class8[_div_round_up(req, SMALL_SIZE_DIV)]
            else:
                cls = self.size_to_class128[_div_round_up(req - SMALL_SIZE_MAX, LARGE_SIZE_DIV)]
            return self.class_to_size[cls] - (req - size)
        req += PAGE_SIZE - 1
        if req > U64:                             # overflow: reqSize < size
            return size
        return req & ~(PAGE_SIZE - 1)


def _div_round_up(n: int, a: int) -> int:
    return (n + a - 1) // a


def _signed(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def nextslicecap(new_len: int, old_cap: int) -> int:
    """runtime/slice.go:326."""
    newcap = old_cap
    doublecap = newcap + newcap
    if new_len > doublecap:
        return new_len
    threshold = 256
    if old_cap < threshold:
        return doublecap
    while True:
        newcap += (newcap + 3 * threshold) >> 2
        if newcap & U64 >= new_len & U64:
            break
    return new_len if _signed(newcap & U64) <= 0 else newcap


@dataclass
class SliceRuntime:
    """The slice functions over one World: `elem(typ)` -> the element's GoType, `alloc(call, size, t)` ->
    an object for runtime function `call` (t None or pointer-free: a noscan object), `read`/`write` guest memory,
    `zerobase` = &runtime.zerobase, and `touch(kind, addr)`, told of every range copied from ("read")
    or into ("write") by its first address, as the heap watch is of the guest's own accesses (a slice's
    elements never span two objects)."""

    classes: SizeClasses
    elem: Callable
    alloc: Callable[[str, int, object], int]
    read: Callable[[int, int], bytes]
    write: Callable[[int, bytes], None]
    zerobase: int
    touch: Callable[[str, int], None] = lambda kind, addr: None
    calling: str = ""

    def call(self, name: str, regs: list[int]) -> tuple[int, ...]:
        """runtime.<name> (a key of memmap.GO_CALLS) on its integer argument registers."""
        self.calling = f"runtime.{name}"
        try:
            return getattr(self, name)(*regs[:ARITY[name]])
        except ZeroDivisionError:                 # a zero-size element where Go divides by et.Size_
            raise self._too_long(f"{name}: integer divide by zero") from None
        except EmuError as e:                     # e.g. an element type address outside the binary
            raise GuestFaultInHook(f"{self.calling}: {e}") from None

    # --- helpers ----------------------------------------------------------------------------
    def _malloc(self, size: int, t) -> int:
        """mallocgc(size, typ, needzero): size 0 is &zerobase (malloc.go:1075); t None or pointer-free
        allocates a noscan object. The arena is zeroed, so needzero costs nothing."""
        if size == 0:
            return self.zerobase
        return self.alloc(self.calling, size, t)

    def _memmove(self, dst: int, src: int, n: int) -> None:
        if n:
            self.touch("read", src)
            self.touch("write", dst)
            self.write(dst, self.read(src, n))

    def _memclr(self, dst: int, n: int) -> None:
        if n:
            self.touch("write", dst)
            self.write(dst, bytes(n))

    @staticmethod
    def _too_long(what: str) -> GuestFaultInHook:
        return GuestFaultInHook(f"runtime.{what}: Go would panic here; preemu models no panics")

    # --- runtime/slice.go -------------------------------------------------------------------
    def makeslice(self, typ: int, length: int, cap_: int) -> tuple[int]:
        t = self.elem(typ)
        length, cap_ = _signed(length), _signed(cap_)
        mem = t.size * (cap_ & U64)
        if mem > U64 or mem > MAX_ALLOC or length < 0 or length > cap_:
            mem = t.size * (length & U64)
            raise self._too_long("makeslice: len out of range (panicmakeslicelen)"
                                 if mem > U64 or mem > MAX_ALLOC or length < 0 else
                                 "makeslice: cap out of range (panicmakeslicecap)")
        return (self._malloc(mem, t),)

    def makeslicecopy(self, typ: int, tolen: int, fromlen: int, frm: int) -> tuple[int]:
        t = self.elem(typ)
        if tolen > fromlen:                       # compared as uintptr
            tomem = t.size * tolen
            if tomem > U64 or tomem > MAX_ALLOC or _signed(tolen) < 0:
                raise self._too_long("makeslicecopy: len out of range (panicmakeslicelen)")
            copymem = t.size * fromlen
        else:
            tomem = copymem = t.size * tolen
        to = self._malloc(tomem, t)
        self._memmove(to, frm, copymem)           # the arena is zero beyond copymem already
        return (to,)

    def growslice(self, old_ptr: int, new_len: int, old_cap: int, num: int, typ: int) -> tuple[int, int, int]:
        t = self.elem(typ)
        new_len, old_cap, num = _signed(new_len), _signed(old_cap), _signed(num)
        old_len = new_len - num
        if new_len < 0:
            raise self._too_long("growslice: len out of range")
        if t.size == 0:
            return self.zerobase, new_len & U64, new_len & U64
        newcap = nextslicecap(new_len, old_cap)
        noscan = not t.ptrbytes
        size = t.size
        lenmem = old_len * size
        if size == 1:
            capmem = self.classes.roundupsize(newcap, noscan)
            overflow = newcap & U64 > MAX_ALLOC
            newcap = capmem
        elif size & (size - 1) == 0:              # PtrSize and the other powers of two
            shift = size.bit_length() - 1
            capmem = self.classes.roundupsize((newcap << shift) & U64, noscan)
            overflow = newcap & U64 > MAX_ALLOC >> shift
            newcap = capmem >> shift
            capmem = newcap << shift
        else:
            capmem = size * (newcap & U64)
            overflow = capmem > U64
            capmem = self.classes.roundupsize(capmem & U64, noscan)
            newcap = capmem // size
            capmem = newcap * size
        if overflow or capmem > MAX_ALLOC:
            raise self._too_long("growslice: len out of range")
        p = self._malloc(capmem, t)               # noscan: memclr of [newlenmem, capmem) -- zeroed arena
        self._memmove(p, old_ptr, lenmem)
        return p, new_len & U64, newcap & U64

    def growsliceBuf(self, old_ptr: int, new_len: int, old_cap: int, num: int, typ: int, buf: int,
                     buf_len: int) -> tuple[int, int, int]:
        if _signed(new_len) > _signed(buf_len):
            return self.growslice(old_ptr, new_len, old_cap, num, typ)
        t = self.elem(typ)
        old_len = _signed(new_len) - _signed(num)
        if old_ptr != buf and old_len != 0:
            self._memmove(buf, old_ptr, old_len * t.size)
        new_cap = self.classes.roundupsize(new_len * t.size, not t.ptrbytes) // t.size
        if new_len < new_cap:                     # the buffer is stack memory: clear beyond newLen
            self._memclr(buf + new_len * t.size, (new_cap - new_len) * t.size)
        return buf, new_len, new_cap

    def _move(self, t, old: int, length: int, cap_: int) -> tuple[int, int, int]:
        if cap_ == 0:
            return (self.zerobase if old else 0), 0, 0
        new = self._malloc(cap_ * t.size, t)
        self._memmove(new, old, cap_ * t.size)
        return new, length, cap_

    def moveSlice(self, typ: int, old: int, length: int, cap_: int) -> tuple[int, int, int]:
        return self._move(self.elem(typ), old, length, cap_)

    def moveSliceNoScan(self, elem_size: int, old: int, length: int, cap_: int) -> tuple[int, int, int]:
        return self._move(_NoScan(elem_size), old, length, cap_)

    def _move_no_cap(self, t, old: int, length: int, noscan: bool) -> tuple[int, int, int]:
        if length == 0:
            return (self.zerobase if old else 0), 0, 0
        lenmem = length * t.size
        capmem = self.classes.roundupsize(lenmem, noscan)
        cap_ = capmem // t.size
        new = self._malloc(capmem if noscan else cap_ * t.size, t)
        self._memmove(new, old, lenmem)           # memclr of the tail: the arena is zeroed
        return new, length, cap_

    def moveSliceNoCap(self, typ: int, old: int, length: int) -> tuple[int, int, int]:
        # roundupsize(lenmem, false) whatever the element type (slice.go:481)
        return self._move_no_cap(self.elem(typ), old, length, False)

    def moveSliceNoCapNoScan(self, elem_size: int, old: int, length: int) -> tuple[int, int, int]:
        return self._move_no_cap(_NoScan(elem_size), old, length, True)


@dataclass(frozen=True)
class _NoScan:
    """The element of the *NoScan variants: only its size is passed."""

    size: int
    ptrbytes: int = 0


#: the slice functions of memmap.GO_CALLS and how many integer arguments each takes (its signature here)
ARITY = {name: getattr(SliceRuntime, name).__code__.co_argcount - 1 for name in memmap.GO_CALLS
         if hasattr(SliceRuntime, name)}
