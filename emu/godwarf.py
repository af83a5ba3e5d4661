"""Struct layouts and global variable addresses from a Go binary's DWARF (pyelftools).

Mirrors what the Go linker writes (cmd/link/internal/ld/dwarf.go): one DW_TAG_structure_type per Go struct,
named with its package path (`runtime.g`, `internal/abi.Type`), DW_AT_byte_size, and DW_TAG_member children
with DW_AT_data_member_location as a plain constant; global variables as DW_TAG_variable with a
DW_OP_addr location (dwarf.go:123-133, 712 for DW_AT_go_runtime_type, an offset from moduledata.types).
The Go definitions read here: runtime/runtime2.go:303 (gobuf), 471 (g), 616 (m), 774 (p);
runtime/preempt_amd64.go:5-46 (xRegs); runtime/preempt_xreg.go:30-55 (xRegState, xRegPerG, xRegPerP);
runtime/mwbbuf.go (wbBuf).

Reading is lazy and stops early: compilation units are scanned in order only until every requested name
is found (Go 1.27 puts the runtime's types in an early `runtime` unit, so g/m/p cost a fraction of a second);
member types are resolved only for the structs asked for. Left out: bitfields, DWARF < 4 location lists
for globals, and binaries built with `-ldflags=-w` (no DWARF: DwarfError names the fallback).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from elftools.elf.elffile import ELFFile

from .errors import EmuError

DW_OP_addr = 0x03
PTR_SIZE = 8
#: Struct names preemu's runtime model needs (g, m, p, the xRegs block, the write-barrier buffer).
RUNTIME_STRUCTS = ("runtime.g", "runtime.m", "runtime.p", "runtime.gobuf", "runtime.stack", "runtime.xRegs",
                   "runtime.xRegPerP", "runtime.xRegPerG", "runtime.xRegState", "runtime.wbBuf")


class DwarfError(EmuError):
    """The binary has no usable DWARF for the request."""


class Member(NamedTuple):
    offset: int
    size: int


@dataclass(frozen=True)
class StructLayout:
    name: str
    size: int
    members: dict[str, Member]                           # in declaration order; zero-size members included
    member_types: dict[str, str] = field(default_factory=dict, repr=False)   # member -> its type's name


class GoDwarf:
    """DWARF of one Go binary; use GoDwarf.open(path)."""

    def __init__(self, path: Path, elf: ELFFile, stream):
        self.path, self._elf, self._stream = path, elf, stream
        if not elf.has_dwarf_info():
            raise DwarfError(f"{path}: no DWARF (built with -ldflags=-w or -s?); the typed Go 1.27.3 "
                             f"table (emu/gostructs.py) is the only layout source for it")
        self._dwarf = elf.get_dwarf_info()
        self._cus = iter(self._dwarf.iter_CUs())
        self._structs: dict[str, object] = {}    # name -> DIE (structures seen so far)
        self._vars: dict[str, int] = {}          # name -> address
        self._layouts: dict[str, StructLayout] = {}

    @classmethod
    def open(cls, path: Path | str) -> GoDwarf:
        p = Path(path)
        try:
            stream = p.open("rb")
        except OSError as e:
            raise EmuError(f"{path}: {e.strerror}") from None
        try:
            return cls(p, ELFFile(stream), stream)
        except Exception:
            stream.close()
            raise

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> GoDwarf:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- scanning ---------------------------------------------------------------------------------
    def _scan_until(self, found) -> None:
        """Index further compilation units until found() holds or none are left."""
        while not found():
            cu = next(self._cus, None)
            if cu is None:
                return
            for die in cu.get_top_DIE().iter_children():
                if die.tag == "DW_TAG_structure_type":
                    name = _name(die)
                    if name and "DW_AT_declaration" not in die.attributes:
                        self._structs.setdefault(name, die)
                elif die.tag == "DW_TAG_variable":
                    name, addr = _name(die), _addr(die)
                    if name and addr is not None:
                        self._vars.setdefault(name, addr)

    # ---- structs ----------------------------------------------------------------------------------
    def struct(self, name: str) -> StructLayout:
        """The layout of struct `name` (package-qualified, e.g. 'runtime.g')."""
        if name not in self._layouts:
            self._scan_until(lambda: name in self._structs)
            die = self._structs.get(name)
            if die is None:
                raise DwarfError(f"{self.path}: no struct {name!r} in DWARF")
            members: dict[str, Member] = {}
            types: dict[str, str] = {}
            for m in die.iter_children():
                if m.tag != "DW_TAG_member":
                    continue
                t = m.get_DIE_from_attribute("DW_AT_type")
                mname = _name(m) or "?"
                members[mname] = Member(m.attributes["DW_AT_data_member_location"].value, _type_size(t))
                types[mname] = _name(t) or ""
            self._layouts[name] = StructLayout(name, die.attributes["DW_AT_byte_size"].value, members, types)
        return self._layouts[name]

    def structs(self, names) -> dict[str, StructLayout]:
        names = list(names)
        self._scan_until(lambda: all(n in self._structs for n in names))
        return {n: self.struct(n) for n in names}

    def field(self, struct: str, path: str) -> Member:
        """(offset, size) of a dotted member path inside struct, e.g. field('runtime.g', 'sched.sp')."""
        layout, off = self.struct(struct), 0
        parts = path.split(".")
        for i, part in enumerate(parts):
            if part not in layout.members:
                raise DwarfError(f"{self.path}: {layout.name} has no member {part!r} (looking up {struct}.{path})")
            m = layout.members[part]
            off += m.offset
            if i == len(parts) - 1:
                return Member(off, m.size)
            layout = self.struct(layout.member_types[part])
        raise AssertionError("unreachable")

    # ---- globals ----------------------------------------------------------------------------------
    def global_addr(self, name: str) -> int:
        """Link address of a package-level variable, e.g. 'runtime.writeBarrier'."""
        self._scan_until(lambda: name in self._vars)
        if name not in self._vars:
            raise DwarfError(f"{self.path}: no global variable {name!r} in DWARF")
        return self._vars[name]


def _name(die) -> str | None:
    a = die.attributes.get("DW_AT_name")
    return a.value.decode("utf-8", "replace") if a else None


def _addr(die) -> int | None:
    a = die.attributes.get("DW_AT_location")
    if a is None or not isinstance(a.value, list) or len(a.value) != 9 or a.value[0] != DW_OP_addr:
        return None
    return int.from_bytes(bytes(a.value[1:9]), "little")


def _type_size(die) -> int:
    """Byte size of a type DIE: its DW_AT_byte_size, a pointer's 8 bytes (Go's pointer DIEs, unsafe.Pointer
    included, carry no size), or the size of the type a typedef names."""
    while die is not None:
        a = die.attributes.get("DW_AT_byte_size")
        if a is not None:
            return a.value
        if die.tag == "DW_TAG_pointer_type":
            return PTR_SIZE
        if die.tag != "DW_TAG_typedef" or "DW_AT_type" not in die.attributes:
            return 0
        die = die.get_DIE_from_attribute("DW_AT_type")
    return 0


def struct_layouts(path: Path | str, names=RUNTIME_STRUCTS) -> dict[str, StructLayout]:
    """{name: StructLayout} for the given struct names of the binary at path."""
    with GoDwarf.open(path) as d:
        return d.structs(names)
