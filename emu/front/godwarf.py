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
#: DW_AT_go_key, DW_AT_go_elem, DW_AT_go_runtime_type (cmd/internal/dwarf/dwarf.go:310-315)
DW_AT_GO_KEY, DW_AT_GO_ELEM, DW_AT_GO_RUNTIME_TYPE = 0x2901, 0x2902, 0x2904
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
    gk = 0
    while True:                  # the kind is on the outermost DIE that has one: `error`, `map[K]V` and `chan T`
        kattr = t.attributes.get(DW_AT_GO_KIND)      # are typedefs of runtime.iface or of a pointer DIE
        gk = gk or (kattr.value if kattr else 0)
        if t.tag != "DW_TAG_typedef":
            break
        t = t.get_DIE_from_attribute("DW_AT_type")
    kind = GO_KIND_NAMES.get(gk, "ptr" if t.tag == "DW_TAG_pointer_type" else "other")   # unsafe.Pointer: no kind
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

    def inlined_away(self, names) -> str | None:
        """The first of `names` (full Go function names) that the compiler inlined into every caller: its
        DW_TAG_subprogram is only the abstract one the inlined copies refer to (DW_AT_inline, no DW_AT_low_pc:
        cmd/compile/internal/dwarfgen puts no code of its own there), so the binary has no such symbol."""
        want = set(names)
        for cu in self._dwarf.iter_CUs():
            top = cu.get_top_DIE()
            if _name(top) not in {package_of(n) for n in want}:
                continue
            for die in top.iter_children():
                if die.tag == "DW_TAG_subprogram" and _name(die) in want and "DW_AT_inline" in die.attributes \
                        and "DW_AT_low_pc" not in die.attributes:
                    return _name(die)
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


    # ---- the type catalogue (heapgraph.py) -------------------------------------------------------------
    def type_catalog(self) -> dict:
        """Every type DIE, global variable and function result of the binary in one pass over all units, as
        plain JSON-ready data for emu/goruntime/heapgraph.py (which caches it per binary):
          types:   {offset: record} for each DW_TAG_*_type / typedef: "t" tag (base, struct, ptr, typedef, array,
                   func, other), "n" name, "s" DW_AT_byte_size, "k" DW_AT_go_kind, "ty" DW_AT_type, "key" and
                   "el" DW_AT_go_key / DW_AT_go_elem, "rt" DW_AT_go_runtime_type (an offset from
                   moduledata.types), "enc" DW_AT_encoding, "c" an array's DW_AT_count, "m" a struct's members as
                   [name, offset, type];
          globals: {name: [address, type offset]} (DW_TAG_variable with a DW_OP_addr location);
          results: {function: [[name, type offset], ...]} (formal parameters with DW_AT_variable_parameter).
        Offsets are absolute .debug_info offsets (Go writes its references as DW_FORM_ref_addr)."""
        types: dict[int, dict] = {}
        gvars: dict[str, list] = {}
        results: dict[str, list] = {}
        tags = {"DW_TAG_base_type": "base", "DW_TAG_structure_type": "struct", "DW_TAG_pointer_type": "ptr",
                "DW_TAG_typedef": "typedef", "DW_TAG_array_type": "array", "DW_TAG_subroutine_type": "func",
                "DW_TAG_unspecified_type": "other"}
        for cu in self._dwarf.iter_CUs():
            for die in cu.get_top_DIE().iter_children():
                tag = die.tag
                if tag in tags:
                    types[die.offset] = _type_record(die, tags[tag])
                elif tag == "DW_TAG_variable":
                    name, addr = _name(die), _addr(die)
                    if name and addr is not None and "DW_AT_type" in die.attributes:
                        gvars.setdefault(name, [addr, _ref(die, "DW_AT_type")])
                elif tag == "DW_TAG_subprogram":
                    name = _name(die)
                    if not name or name in results:
                        continue
                    outs = []
                    for c in die.iter_children():
                        out = c.attributes.get("DW_AT_variable_parameter")
                        if (c.tag == "DW_TAG_formal_parameter" and out is not None and out.value
                                and "DW_AT_type" in c.attributes):
                            outs.append([_name(c) or "?", _ref(c, "DW_AT_type")])
                    results[name] = outs
        return {"types": types, "globals": gvars, "results": results}


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


def _ref(die, attr) -> int | None:
    """The absolute .debug_info offset a reference attribute names (CU-relative forms made absolute)."""
    a = die.attributes.get(attr)
    if a is None:
        return None
    return a.value + die.cu.cu_offset if a.form in ("DW_FORM_ref1", "DW_FORM_ref2", "DW_FORM_ref4",
                                                     "DW_FORM_ref8", "DW_FORM_ref_udata") else a.value


def _type_record(die, tag: str) -> dict:
    """One type DIE as type_catalog's record (only the attributes present)."""
    rec: dict = {"t": tag}
    at = die.attributes
    for key, attr in (("n", "DW_AT_name"),):
        if attr in at:
            rec[key] = _name(die)
    for key, attr in (("s", "DW_AT_byte_size"), ("k", DW_AT_GO_KIND), ("rt", DW_AT_GO_RUNTIME_TYPE),
                      ("enc", "DW_AT_encoding")):
        if attr in at:
            rec[key] = at[attr].value
    for key, attr in (("ty", "DW_AT_type"), ("key", DW_AT_GO_KEY), ("el", DW_AT_GO_ELEM)):
        if attr in at:
            rec[key] = _ref(die, attr)
    if tag == "struct":
        rec["m"] = [[_name(m) or "?", m.attributes["DW_AT_data_member_location"].value
                     if "DW_AT_data_member_location" in m.attributes else 0, _ref(m, "DW_AT_type")]
                    for m in die.iter_children() if m.tag == "DW_TAG_member" and "DW_AT_type" in m.attributes]
    elif tag == "array":
        for c in die.iter_children():
            if c.tag == "DW_TAG_subrange_type" and "DW_AT_count" in c.attributes:
                rec["c"] = c.attributes["DW_AT_count"].value
    return rec


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
