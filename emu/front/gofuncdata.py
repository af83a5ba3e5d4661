"""Funcdata of a Go binary: stack maps, frame geometry, stack objects and the inline tree.

Mirrors the runtime's own readers (Go 1.27.3):
  * funcdata:  runtime/symtab.go:1265-1281 (stored directly at moduledata.gofunc + off).
  * stack maps and frame geometry:  stackmapdata symtab.go:1323-1338; stkframe.getStackMap
    runtime/stkframe.go:94-240; frame fp/varp/argp runtime/traceback.go:327-411; scan mgcmark.go:1135-1143.
  * stack objects:  runtime/stkframe.go:245-251, stack.go:1372-1403.
  * inline tree:  runtime/symtabinl.go:13-19, 67-138.

FuncdataMixin is the part of GoBinary (gobinary.py) that answers per function and pc, on top of the
function table and pc-value tables (gopclntab); stack objects are decoded once per function and cached.
Left out: open-coded defer info and the other funcdata (ArgInfo, ArgLiveInfo, wrapper info).
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from ..core.errors import EmuError
from .gopclntab import (ARGS_SIZE_UNKNOWN, FUNC_HEADER_SIZE, FUNCDATA_ArgsPointerMaps, FUNCDATA_InlTree,
                        FUNCDATA_LocalsPointerMaps, FUNCDATA_StackObjects, PCDATA_InlTreeIndex,
                        PCDATA_StackMapIndex, PTR_SIZE, GoFunc)


class StackMap(NamedTuple):
    nbit: int               # words covered by each bitmap
    bitmaps: list[int]      # bit i set = word i holds a live pointer (LSB = word 0)


class InlinedCall(NamedTuple):
    """runtime/symtabinl.go:13-19."""
    funcid: int
    name: str
    parent_pc: int      # offset from the outer function's entry of an instruction at the call site
    start_line: int


class StackObject(NamedTuple):
    """A stack object record (runtime/stack.go:1372-1380): an address-taken local the GC scans by type."""
    off: int                    # < 0: from varp; >= 0: from argp
    size: int
    ptrbytes: int
    ptr_words: tuple[int, ...]  # word indices (from the object's start) that hold pointers


class Frame(NamedTuple):
    """A physical frame's geometry (runtime/traceback.go:327-411), for amd64 with frame pointers."""
    sp: int
    fp: int     # caller's SP: sp + spdelta + 8 (the return address sits at fp - 8)
    varp: int   # top of the locals (below the saved RBP when the frame has one)
    argp: int   # start of the stack-passed args/spill area (= fp; MinFrameSize is 0)


class FuncdataMixin:
    """GoBinary's funcdata: the stack maps and frame geometry the GC scans a frame with, stack objects,
    the inline tree."""

    def funcdata_addr(self, f: GoFunc, idx: int) -> int | None:
        """Address of FUNCDATA idx (symtab.go:1265-1281: gofunc + off, no indirection), None if absent."""
        if idx < 0 or idx >= f.nfuncdata:
            return None
        p = self._functab + f.func_off + FUNC_HEADER_SIZE + 4 * f.npcdata + 4 * idx
        (off,) = struct.unpack_from("<I", self._pcln, p)
        return None if off == 0xFFFFFFFF else self.gofunc + off

    def stackmap(self, f: GoFunc, idx: int) -> StackMap | None:
        """FUNCDATA_LocalsPointerMaps / _ArgsPointerMaps: {n int32, nbit int32, n bitmaps}
        (runtime/symtab.go:1323-1338), each bitmap as an int with bit i = word i."""
        addr = self.funcdata_addr(f, idx)
        if addr is None:
            return None
        n, nbit = struct.unpack("<ii", self.read(addr, 8))
        nbytes = (nbit + 7) >> 3
        blob = self.read(addr + 8, n * nbytes) if n > 0 else b""
        return StackMap(nbit, [int.from_bytes(blob[i * nbytes:(i + 1) * nbytes], "little") for i in range(n)])

    def frame(self, f: GoFunc, pc: int, sp: int = 0) -> Frame:
        """Geometry of f's frame with SP = sp at pc (runtime/traceback.go:327-331, 378-411)."""
        fp = sp + self.sp_delta(f, pc) + PTR_SIZE
        varp = fp - PTR_SIZE
        if varp > sp:       # frame pointers are on: the saved RBP sits just below the return address
            varp -= PTR_SIZE
        return Frame(sp, fp, varp, fp)

    def stackmap_index(self, f: GoFunc, continpc: int) -> int:
        """Stack-map index for a frame continuing at continpc (a return address), per stkframe.go:165-179:
        look up at continpc-1, the entry map at the entry, -1 read as 0."""
        idx = -1
        if continpc != f.entry:
            idx = self.pcdata_value(f, PCDATA_StackMapIndex, continpc - 1)
        return 0 if idx == -1 else idx

    def live_pointer_slots(self, f: GoFunc, continpc: int, sp: int = 0) -> list[int]:
        """Addresses of the stack words the GC scans precisely in f's frame (stkframe.go:157-240,
        mgcmark.go:1135-1143): the locals bitmap below varp and the args bitmap from argp; with sp=0
        they are offsets from the frame's SP (argument words are above the return address).
        Raises EmuError where the runtime would throw ("missing stackmap", "bad symbol table")."""
        fr = self.frame(f, continpc, sp)
        idx = self.stackmap_index(f, continpc)
        out: list[int] = []
        if fr.varp - fr.sp > 0:
            sm = self.stackmap(f, FUNCDATA_LocalsPointerMaps)
            if sm is None or not sm.bitmaps:
                raise EmuError(f"{f.name}: missing stackmap (untyped locals)")
            if sm.nbit > 0:
                if not 0 <= idx < len(sm.bitmaps):
                    raise EmuError(f"{f.name}: stack map index {idx} of {len(sm.bitmaps)} at {continpc:#x}")
                base = fr.varp - PTR_SIZE * sm.nbit
                out += [base + PTR_SIZE * i for i in range(sm.nbit) if sm.bitmaps[idx] >> i & 1]
        if f.args != ARGS_SIZE_UNKNOWN and f.args // PTR_SIZE > 0:
            sm = self.stackmap(f, FUNCDATA_ArgsPointerMaps)
            if sm is None or not sm.bitmaps:
                raise EmuError(f"{f.name}: missing stackmap (untyped args)")
            if not 0 <= idx < len(sm.bitmaps):
                raise EmuError(f"{f.name}: stack map index {idx} of {len(sm.bitmaps)} args maps at {continpc:#x}")
            out += [fr.argp + PTR_SIZE * i for i in range(sm.nbit) if sm.bitmaps[idx] >> i & 1]
        return out

    def stack_objects(self, f: GoFunc) -> list[StackObject]:
        """FUNCDATA_StackObjects: uintptr count, then 16-byte {off, size, ptrBytes int32, gcdataoff u32}
        records whose mask is at moduledata.rodata + gcdataoff (runtime/stkframe.go:245-251, stack.go:1372-1403)."""
        out = self._stack_objects.get(f.entry)
        if out is not None:
            return out
        out = self._stack_objects[f.entry] = []
        addr = self.funcdata_addr(f, FUNCDATA_StackObjects)
        for i in range(self.u64(addr) if addr is not None else 0):
            off, size, ptrbytes, gcdataoff = struct.unpack("<iiiI", self.read(addr + 8 + 16 * i, 16))
            nwords = ptrbytes // PTR_SIZE
            mask = int.from_bytes(self.read(self.moduledata["rodata"] + gcdataoff, (nwords + 7) // 8), "little")
            out.append(StackObject(off, size, ptrbytes, tuple(w for w in range(nwords) if mask >> w & 1)))
        return out

    def allocated_stack_objects(self, f: GoFunc, fr: Frame) -> list[tuple[int, StackObject]]:
        """(address, record) of f's stack objects in its frame fr: an offset below zero counts from
        varp, else from argp (stkframe.go:245-251); an object below the frame's SP is not allocated yet
        (a frame in its prologue) and is left out, as adjustframe (stack.go:780-795) and
        scanframeworker do."""
        out = []
        for ob in self.stack_objects(f):
            base = (fr.varp if ob.off < 0 else fr.argp) + ob.off
            if base >= fr.sp:
                out.append((base, ob))
        return out

    def inline_tree(self, f: GoFunc) -> list[InlinedCall]:
        """FUNCDATA_InlTree records (symtabinl.go:13-19); the count is max(PCDATA_InlTreeIndex) + 1."""
        addr = self.funcdata_addr(f, FUNCDATA_InlTree)
        if addr is None:
            return []
        n = max((r.value for r in self.pcdata(f, PCDATA_InlTreeIndex)), default=-1) + 1
        out = []
        for i in range(n):
            funcid, name_off, parent_pc, start_line = struct.unpack("<B3xiii", self.read(addr + 16 * i, 16))
            out.append(InlinedCall(funcid, self.func_name_at(name_off), parent_pc, start_line))
        return out

    def func_name_at(self, name_off: int) -> str:
        p = self._funcnametab + name_off
        return self._pcln[p:self._pcln.index(b"\0", p)].decode("utf-8", "replace")

    def inline_frames(self, f: GoFunc, pc: int) -> list[str]:
        """Logical function names at pc, innermost first, ending with f.name (symtabinl.go:67-98)."""
        return [name for name, _file, _line in self.inline_positions(f, pc)]

    def inline_positions(self, f: GoFunc, pc: int) -> list[tuple[str, str, int]]:
        """(function, file, line) of each logical frame at pc, innermost first: the innermost at pc,
        each outer one at its call site (inlineUnwinder.next/fileLine, symtabinl.go:91-141)."""
        tree = self.inline_tree(f)
        out = []
        idx = self.pcdata_value(f, PCDATA_InlTreeIndex, pc) if tree else -1
        while 0 <= idx < len(tree):
            out.append((tree[idx].name, *self.file_line(f, pc)))
            pc = f.entry + tree[idx].parent_pc
            idx = self.pcdata_value(f, PCDATA_InlTreeIndex, pc)
        out.append((f.name, *self.file_line(f, pc)))
        return out
