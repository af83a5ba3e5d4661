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

from ..core.errors import EmuError

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


#: DW_AT_go_kind (cmd/link/internal/ld/dwarf.go, DW_AT_go_kind = 0x2900): the type's reflect kind
DW_AT_GO_KIND = 0x2900
#: reflect kinds (internal/abi/type.go Kind), grouped by how ABIInternal passes a value of the kind
GO_KIND_NAMES = {1: "bool", **{k: "int" for k in range(2, 13)}, 13: "float", 14: "float", 15: "complex",
                 16: "complex", 17: "array", 18: "ptr", 19: "ptr", 20: "iface", 21: "ptr", 22: "ptr",
                 23: "slice", 24: "string", 25: "struct", 26: "ptr"}


class Leaf(NamedTuple):
    """One scalar part of a value: its offset in the value, size, and kind: "int", "bool", "float", "ptr"
    (any pointer-shaped word), "strptr"/"len" (a string), "ptr"/"len"/"len" (a slice), "itab"/"ptr" (an
    interface), or "array" (an array of more than one element: ABIInternal never puts it in registers)."""
    offset: int
    size: int
    kind: str


class Param(NamedTuple):
    """A function argument or result: name (~r0 when unnamed), type name, size and leaves."""
    name: str
    type: str
    size: int
    leaves: list


def _leaves(t, base: int) -> list:
    """Flatten a DWARF type to Leafs (reflect kinds from DW_AT_go_kind; members and array elements from
    the DIEs, cmd/link/internal/ld/dwarf.go)."""
    while t.tag == "DW_TAG_typedef":
        t = t.get_DIE_from_attribute("DW_AT_type")
    kattr = t.attributes.get(DW_AT_GO_KIND)
    kind = GO_KIND_NAMES.get(kattr.value if kattr else 0, "other")
    size = _type_size(t)
    if kind in ("int", "bool", "float", "ptr"):
        return [Leaf(base, size, kind)]
    if kind == "complex":
        return [Leaf(base, size // 2, "float"), Leaf(base + size // 2, size // 2, "float")]
    if kind == "string":
        return [Leaf(base, 8, "strptr"), Leaf(base + 8, 8, "len")]
    if kind == "slice":
        return [Leaf(base, 8, "ptr"), Leaf(base + 8, 8, "len"), Leaf(base + 16, 8, "len")]
    if kind == "iface":
        return [Leaf(base, 8, "itab"), Leaf(base + 8, 8, "ptr")]
    if kind == "struct" or t.tag == "DW_TAG_structure_type":
        out = []
        for m in t.iter_children():
            if m.tag == "DW_TAG_member" and "DW_AT_type" in m.attributes:
                loc = m.attributes.get("DW_AT_data_member_location")
                out += _leaves(m.get_DIE_from_attribute("DW_AT_type"), base + (loc.value if loc else 0))
        return out
    if kind == "array" and size > 0:
        elem = t.get_DIE_from_attribute("DW_AT_type")
        esize = _type_size(elem)
        if esize == size:                       # [1]T: passed as its element
            return _leaves(elem, base)
        return [Leaf(base, size, "array")]
    return [Leaf(base, size, "other")] if size else []


class GoDwarf:
    """DWARF of one Go binary; use GoDwarf.open(path)."""

    def __init__(self, path: Path, elf: ELFFile, stream):
        self.path, self._elf, self._stream = path, elf, stream
        if not elf.has_dwarf_info():
            raise DwarfError(f"{path}: no DWARF (built with -ldflags=-w or -s?); the typed Go 1.27.3 "
                             f"table (emu/core/gostructs.py) is the only layout source for it")
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

    # ---- functions --------------------------------------------------------------------------------
    def func_params(self, func: str) -> tuple[list[Param], list[Param]] | None:
        """(arguments, results) of Go function `func` (e.g. `main.sum`), in order, from its
        DW_TAG_subprogram: results are the formal parameters with DW_AT_variable_parameter set (dwarf.go).
        Each is flattened to its leaves (scalars, pointer-shaped words, string/slice/interface parts). None
        when the function has no DWARF entry (assembly, or not in the binary)."""
        pkg = package_of(func)
        for cu in self._dwarf.iter_CUs():
            top = cu.get_top_DIE()
            if _name(top) != pkg:
                continue
            for die in top.iter_children():
                if die.tag != "DW_TAG_subprogram" or _name(die) != func:
                    continue
                args, results = [], []
                for c in die.iter_children():
                    if c.tag != "DW_TAG_formal_parameter" or "DW_AT_type" not in c.attributes:
                        continue
                    t = c.get_DIE_from_attribute("DW_AT_type")
                    out = c.attributes.get("DW_AT_variable_parameter")
                    (results if out is not None and out.value else args).append(
                        Param(_name(c) or "?", _name(t) or "?", _type_size(t), _leaves(t, 0)))
                return args, results
        return None

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
    def globals_of_type(self, type_name: str) -> list[int]:
        """Link addresses of every package-level variable whose DWARF type is `type_name` (e.g. 'sync.Pool');
        reads every compilation unit."""
        out = []
        for cu in self._dwarf.iter_CUs():
            for die in cu.get_top_DIE().iter_children():
                if die.tag != "DW_TAG_variable" or "DW_AT_type" not in die.attributes:
                    continue
                addr = _addr(die)
                if addr is not None and _name(die.get_DIE_from_attribute("DW_AT_type")) == type_name:
                    out.append(addr)
        return sorted(out)

    def global_addr(self, name: str) -> int:
        """Link address of a package-level variable, e.g. 'runtime.writeBarrier'."""
        self._scan_until(lambda: name in self._vars)
        if name not in self._vars:
            raise DwarfError(f"{self.path}: no global variable {name!r} in DWARF")
        return self._vars[name]


def package_of(func: str) -> str:
    """The package path of a Go function name: `crypto/sha256.Sum256` -> `crypto/sha256`,
    `main.(*T).m` -> `main` (symtab.go funcpkgpath: up to the first dot after the last slash)."""
    slash = func.rfind("/", 0, func.find("(") if "(" in func else len(func))
    dot = func.find(".", slash + 1)
    return func[:dot] if dot >= 0 else func


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
