"""Types and global pointer bitmaps of a Go binary: abi.Type records with their pointer words, the
typelinks, and the GC programs of .data and .bss.

Mirrors (Go 1.27.3):
  * abi.Type, GC masks:  internal/abi/type.go:21-46, 270-275, 573-587; runtime/type.go:87-144, 198-256.
  * data/bss GC programs:  runGCProg, runtime/mbitmap.go:1536-1640; symtab.go:550-555.
The binary's release (goreleases) says whether a type's GCData is a GC program (Go <= 1.23).

TypesMixin is the part of GoBinary (gobinary.py) that reads them; a type is decoded on first request and
cached. Left out: the rest of a type (methods, uncommon type, kind-specific fields other than an array's
element and length and a struct's fields), which the GC masks do not need.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..core.errors import EmuError
from .gopclntab import PTR_SIZE, _uvarint

# internal/abi/type.go:102-127 (TFlag) and 50-80 (Kind)
TFLAG_EXTRA_STAR, TFLAG_GC_MASK_ON_DEMAND = 0x2, 0x10
KIND_ARRAY, KIND_STRUCT = 17, 25
KIND_MASK, KIND_GC_PROG = 0x1F, 0x40         # internal/abi/type.go (KindGCProg: Go <= 1.23)


@dataclass(frozen=True)
class GoType:
    """An `internal/abi.Type` record (internal/abi/type.go:21-46)."""
    addr: int
    size: int
    ptrbytes: int
    kind: int
    tflag: int
    name: str
    ptr_words: tuple[int, ...]  # word indices (within one object of `size` bytes) that hold pointers


def run_gc_prog(prog: bytes, p: int = 0) -> list[int]:
    """Expand a GC program into its bits, one int (0/1) per word (runtime/mbitmap.go:1553-1640)."""
    bits: list[int] = []
    while True:
        inst = prog[p]
        p += 1
        n = inst & 0x7F
        if not inst & 0x80:
            if n == 0:
                return bits
            nbytes = (n + 7) // 8
            chunk = int.from_bytes(prog[p:p + nbytes], "little")
            p += nbytes
            bits.extend((chunk >> i) & 1 for i in range(n))
            continue
        if n == 0:
            n, p = _uvarint(prog, p)
        c, p = _uvarint(prog, p)
        bits.extend(bits[-n:] * c)


class TypesMixin:
    """GoBinary's type records and the pointer words of its globals."""

    def go_type(self, addr: int) -> GoType:
        """The abi.Type at addr with its pointer words (GCMaskOnDemand types rebuilt as buildGCMask does)."""
        t = self._type_cache.get(addr)
        if t is None:
            size, ptrbytes, _hash, tflag, _align, _falign, kind = struct.unpack("<QQIBBBB", self.read(addr, 24))
            words = self._ptr_words(addr, size, ptrbytes, tflag, kind)
            t = self._type_cache[addr] = GoType(addr, size, ptrbytes, kind, tflag, self._type_name(addr, tflag),
                                                tuple(words))
        return t

    def _type_name(self, addr: int, tflag: int) -> str:
        (str_off,) = struct.unpack("<i", self.read(addr + 40, 4))
        if str_off == 0:
            return ""
        p = self.moduledata["types"] + str_off + 1       # skip the flag byte (internal/abi/type.go:615-690)
        sec = self.section_at(p)
        if sec is None or sec.nobits:
            raise EmuError(f"{self.path}: type name at {p:#x} is outside the file image")
        n, q = _uvarint(sec.data, p - sec.addr)
        name = sec.data[q:q + n].decode("utf-8", "replace")
        return name[1:] if tflag & TFLAG_EXTRA_STAR and name.startswith("*") else name

    def _ptr_words(self, addr: int, size: int, ptrbytes: int, tflag: int, kind: int) -> list[int]:
        nwords = ptrbytes // PTR_SIZE
        if nwords == 0:
            return []
        if kind & KIND_GC_PROG and self.release.gc_prog_types:
            # Go <= 1.23: GCData is a GC program after its uint32 length (mbitmap.go's materializeGCProg)
            prog = self.u64(addr + 32)
            s = self.section_at(prog)
            bits = run_gc_prog(s.data, prog + 4 - s.addr)
            return [i for i, b in enumerate(bits[:nwords]) if b]
        if not tflag & TFLAG_GC_MASK_ON_DEMAND or self.release.gc_prog_types:
            gcdata = self.u64(addr + 32)
            mask = int.from_bytes(self.read(gcdata, (nwords + 7) // 8), "little")
            return [i for i in range(nwords) if mask >> i & 1]
        # runtime/type.go:198-256 (buildGCMask), done recursively: arrays repeat the element, structs
        # place each field's mask at its offset.
        if kind & KIND_MASK == KIND_ARRAY:
            elem, length = self.u64(addr + 48), self.u64(addr + 64)
            et = self.go_type(elem)
            stride = et.size // PTR_SIZE
            return [i * stride + w for i in range(length) for w in et.ptr_words]
        if kind & KIND_MASK == KIND_STRUCT:
            fields, nfields = self.u64(addr + 56), self.u64(addr + 64)
            words: set[int] = set()
            for i in range(nfields):
                typ, offset = struct.unpack("<QQ", self.read(fields + 24 * i + 8, 16))
                words.update(offset // PTR_SIZE + w for w in self.go_type(typ).ptr_words)
            return sorted(words)
        raise EmuError(f"{self.path}: type at {addr:#x} has an on-demand GC mask but kind {kind}")

    def linked_types(self) -> list[int]:
        """Addresses of the type descriptors moduledata.typelinks lists (the unnamed composite types reflect
        may look up; Go <= 1.26: Go 1.27's moduledata has no typelinks, and this returns [])."""
        n = self.moduledata.get("typelinks_len", 0)
        if not n:
            return []
        offs = struct.unpack(f"<{n}i", self.read(self.moduledata["typelinks"], 4 * n))
        return [self.moduledata["types"] + o for o in offs]

    def global_pointer_words(self) -> list[int]:
        """Addresses of the pointer words of .data and .bss, from the gcdata/gcbss GC programs
        (runtime/symtab.go:550-555; mbitmap.go:1536-1545)."""
        md = self.moduledata
        out: list[int] = []
        for prog_field, start in (("gcdata", "data"), ("gcbss", "bss")):
            s = self.section_at(md[prog_field])
            bits = run_gc_prog(s.data, md[prog_field] - s.addr)
            base = md[start]
            out += [base + PTR_SIZE * i for i, b in enumerate(bits) if b]
        return out

    def gc_program_words(self, which: str) -> int:
        """Number of words the gcdata ("data") or gcbss ("bss") program describes."""
        prog = self.moduledata["gcdata" if which == "data" else "gcbss"]
        s = self.section_at(prog)
        return len(run_gc_prog(s.data, prog - s.addr))
