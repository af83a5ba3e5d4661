"""Read a Go 1.20+ linux/amd64 ELF binary: sections, symbols, moduledata and the pclntab.

GoBinary is one object put together from four modules, each mirroring its part of the runtime
(Go 1.27.3) and saying so in its docstring:
  * gobinary (here):  ELF sections, segments and symbols; moduledata, runtime/symtab.go:402-450 as laid
    out by the binary's release (goreleases).
  * gopclntab (PclntabMixin):  pcHeader, the _func records, pc-value tables, file:line.
  * gofuncdata (FuncdataMixin):  stack maps, frame geometry, stack objects, the inline tree.
  * gotypes (TypesMixin):  abi.Type records and GC masks, typelinks, the data/bss GC programs.
Their constants and records are imported from the module that defines them, not from here.

Decoding is lazy: opening reads the section headers, moduledata and the fixed-size _func headers of every
function (names and pc-table ends included); the pc-value tables, stack maps, inline tree and types are
decoded on first request per function and cached. Left out: several text sections (textsectmap with more
than one entry), open-coded defer info, PIE load bias (addresses
are link-time addresses), and the runtime's own AIX/PPC64 special cases.
"""
from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from elftools.elf.constants import SH_FLAGS
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .elfheaders import GO_BUILDINFO, ElfHeaders
from .elfsym import SHN_UNDEF, STT_FUNC, STT_NOTYPE, STT_OBJECT, iter_symbols
from . import goreleases
from ..core.errors import EmuError
from .gofuncdata import FuncdataMixin, StackObject
from .gopclntab import PclntabMixin, PCRange
from .gotypes import GoType, TypesMixin


#: moduledata field offsets (runtime/symtab.go:402-450 as laid out on linux/amd64; DWARF size 568).
#: moduledata's layout in the newest release preemu reads; the binary's own release picks its row
#: of goreleases.RELEASES (GoBinary.release).
MODULEDATA_FIELDS = goreleases.MODULEDATA_GO127
#: Slice fields: their length word follows the pointer.
MODULEDATA_SLICES = ("funcnametab", "cutab", "filetab", "pctab", "pclntable", "ftab", "textsectmap", "typelinks")


@dataclass(frozen=True)
class Section:
    name: str
    addr: int
    size: int
    data: bytes = field(repr=False)     # b"" for NOBITS (.bss, .noptrbss): the loader zero-fills
    writable: bool
    executable: bool
    nobits: bool

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass(frozen=True)
class Segment:
    """A PT_LOAD program header: what a loader maps (memsz bytes at addr, the first len(data) from the file)."""
    addr: int
    memsz: int
    data: bytes = field(repr=False)
    writable: bool
    executable: bool

    @property
    def end(self) -> int:
        return self.addr + self.memsz


class GoBinary(PclntabMixin, FuncdataMixin, TypesMixin):
    """A parsed Go ELF binary; use GoBinary.open(path). This class reads the ELF and moduledata; the
    mixins read the pclntab (gopclntab), funcdata (gofuncdata) and types (gotypes)."""

    def __init__(self, path: Path, raw: bytes):
        self.path = path
        self.raw = raw
        #: maps a line-table file name to the file on this machine (gobuild sets it for -trimpath builds)
        self.source_path: Callable[[str], str] = lambda name: name
        self._pc_cache: dict[tuple[int, int], list[PCRange]] = {}
        self._type_cache: dict[int, GoType] = {}
        self._stack_objects: dict[int, list[StackObject]] = {}     # function entry -> its records
        self._read_elf()
        self._read_moduledata()
        self._read_pclntab()

    @classmethod
    def open(cls, path: Path | str) -> GoBinary:
        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise EmuError(f"{path}: {e.strerror}") from None
        if raw[:4] != b"\x7fELF":
            raise EmuError(f"{path}: not an ELF file")
        try:
            return cls(p, raw)
        except (ELFError, IndexError, ValueError, struct.error) as e:    # truncated or corrupt tables
            raise EmuError(f"{path}: malformed ELF or Go tables ({type(e).__name__}: {e})") from None

    # ---- ELF -------------------------------------------------------------------------------------
    def _read_elf(self) -> None:
        import io
        if (why := ElfHeaders(self.raw).not_amd64()) is not None:
            raise EmuError(f"{self.path}: {why}")
        elf = ELFFile(io.BytesIO(self.raw))
        self.sections: dict[str, Section] = {}
        self._raw_sections: dict[str, tuple[int, int, int]] = {}  # name -> (file offset, size, link)
        names = []
        for sec in elf.iter_sections():
            h = sec.header
            names.append(sec.name)
            self._raw_sections[sec.name] = (h.sh_offset, h.sh_size, h.sh_link)
            if not h.sh_flags & SH_FLAGS.SHF_ALLOC or h.sh_addr == 0:
                continue
            nobits = h.sh_type == "SHT_NOBITS"
            data = b"" if nobits else self.raw[h.sh_offset:h.sh_offset + h.sh_size]
            self.sections[sec.name] = Section(sec.name, h.sh_addr, h.sh_size, data,
                                              bool(h.sh_flags & SH_FLAGS.SHF_WRITE),
                                              bool(h.sh_flags & SH_FLAGS.SHF_EXECINSTR), nobits)
        self._section_names = names
        self.segments: list[Segment] = [
            Segment(seg["p_vaddr"], seg["p_memsz"], self.raw[seg["p_offset"]:seg["p_offset"] + seg["p_filesz"]],
                    bool(seg["p_flags"] & 2), bool(seg["p_flags"] & 1))
            for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD"]
        self._by_addr = sorted(self.sections.values(), key=lambda s: s.addr)
        self._starts = [s.addr for s in self._by_addr]

    @cached_property
    def symbols(self) -> dict[str, tuple[int, int]]:
        """`.symtab` names -> (addr, size); ABI0 assembly functions keep their `.abi0` suffix. Empty if stripped."""
        if ".symtab" not in self._raw_sections:
            return {}
        off, size, link = self._raw_sections[".symtab"]
        stroff, strsize, _ = self._raw_sections[self._section_names[link]]
        strtab = self.raw[stroff:stroff + strsize]
        out: dict[str, tuple[int, int]] = {}
        for name, info, shndx, value, sz in iter_symbols(self.raw[off:off + size], strtab):
            if shndx != SHN_UNDEF and (info & 0xF) in (STT_NOTYPE, STT_OBJECT, STT_FUNC):
                out.setdefault(name, (value, sz))
        return out

    def symbol(self, name: str) -> tuple[int, int] | None:
        """(addr, size) of a symbol, trying the `.abi0` spelling of assembly functions too."""
        return self.symbols.get(name) or self.symbols.get(name + ".abi0")

    def section_at(self, addr: int) -> Section | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and addr < self._by_addr[i].end:
            return self._by_addr[i]
        return None

    def read(self, addr: int, n: int) -> bytes:
        """n bytes of the file image at a link address (zeros in NOBITS sections)."""
        s = self.section_at(addr)
        if s is None or addr + n > s.end:
            raise EmuError(f"{self.path}: address {addr:#x}+{n} is not inside one section")
        if s.nobits:
            return bytes(n)
        return s.data[addr - s.addr:addr - s.addr + n]

    def u64(self, addr: int) -> int:
        return int.from_bytes(self.read(addr, 8), "little")

    # ---- moduledata ------------------------------------------------------------------------------
    def _read_moduledata(self) -> None:
        mod = self.sections.get(".go.module")
        if mod is not None:
            base = mod.addr
        elif self.symbol("runtime.firstmoduledata"):
            base = self.symbol("runtime.firstmoduledata")[0]
        else:
            raise EmuError(f"{self.path}: no .go.module section: not a Go 1.20+ binary" if GO_BUILDINFO in
                           self._raw_sections else f"{self.path}: not a Go program (no {GO_BUILDINFO} section)")
        info = self.sections.get(GO_BUILDINFO)
        self.version = goreleases.build_version(info.data) if info is not None else ""
        #: the Go release that built the binary: its moduledata layout, GC metadata, stub and oracle rules
        self.release = goreleases.release_of(self.version, str(self.path))
        md: dict[str, int] = {}
        for name, off in self.release.moduledata.items():
            md[name] = self.u64(base + off)
            if name in MODULEDATA_SLICES:
                md[name + "_len"] = self.u64(base + off + 8)
        self.moduledata = md
        if md["textsectmap_len"] > 1:
            raise EmuError(f"{self.path}: {md['textsectmap_len']} text sections are not supported")

    @property
    def write_barrier_flag(self) -> int | None:
        """Address of `runtime.writeBarrier` (its first field `enabled` is what compiled code tests)."""
        s = self.symbol("runtime.writeBarrier")
        return s[0] if s else None
