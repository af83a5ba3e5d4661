"""An ELF file's header, program headers and section headers, decoded with struct (the System V gABI's
Elf64_Ehdr, Elf64_Phdr and Elf64_Shdr, as Linux declares them in include/uapi/linux/elf.h).

What start-up needs and no more: the loader (linux/elfimage: PT_LOAD segments, PT_INTERP, e_entry, the
program headers for AT_PHDR, .symtab and .go.buildinfo) and the build-version probe (goreleases.elf_version).
Importing pyelftools costs ~25 ms of CPU, a tenth of a trivial `preemu exec`; gobinary and godwarf keep it for
what they read (DWARF, every section's flags). Left out: the rest of the format (notes, dynamic
sections, relocations, compressed sections); the header of an ELF32 or big-endian file is read (its class,
type and machine, so that a caller can name what it is), its tables are not.
"""
from __future__ import annotations

import struct

ELF_MAGIC = b"\x7fELF"
ELFCLASS64, ELFDATA2LSB = 2, 1
EHDR64 = struct.Struct("<16sHHIQQQIHHHHHH")   # e_ident .. e_shstrndx
PHDR64 = struct.Struct("<IIQQQQQQ")           # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
SHDR64 = struct.Struct("<IIQQQQIIQQ")         # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, ...
PT_LOAD, PT_INTERP, PT_PHDR = 1, 3, 6
SHT_NOBITS = 8
#: the section every Go binary's linker writes its build information in (debug/buildinfo/buildinfo.go:457)
GO_BUILDINFO = ".go.buildinfo"
EM_X86_64 = 62
#: e_type names (as pyelftools and readelf spell them): the loader's messages name a file's type
ET_NAMES = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}
#: e_machine names of the machines a Go toolchain builds for (elf.h EM_*); any other is named by number
EM_NAMES = {3: "EM_386", 8: "EM_MIPS", 20: "EM_PPC", 21: "EM_PPC64", 22: "EM_S390", 40: "EM_ARM",
            62: "EM_X86_64", 183: "EM_AARCH64", 243: "EM_RISCV", 258: "EM_LOONGARCH"}


class ElfFormatError(ValueError):
    """A file that is not ELF, or whose headers point past its end."""


class NotElfError(ElfFormatError):
    """The first four bytes are not \\x7fELF."""


class ProgramHeader:
    """An Elf64_Phdr's fields that a loader reads (a plain class: a dataclass costs ~0.7 ms to create at import)."""
    __slots__ = ("type", "flags", "offset", "vaddr", "filesz", "memsz")

    def __init__(self, type: int, flags: int, offset: int, vaddr: int, filesz: int, memsz: int) -> None:
        self.type, self.flags, self.offset, self.vaddr, self.filesz, self.memsz = type, flags, offset, vaddr, filesz, memsz


class SectionHeader:
    """An Elf64_Shdr's fields read here, its name resolved."""
    __slots__ = ("name", "type", "flags", "addr", "offset", "size", "link")

    def __init__(self, name: str, type: int, flags: int, addr: int, offset: int, size: int, link: int) -> None:
        self.name, self.type, self.flags, self.addr, self.offset, self.size, self.link = \
            name, type, flags, addr, offset, size, link


class ElfHeaders:
    """The headers of one ELF image held in memory (`raw`); see the module docstring for what is read."""

    def __init__(self, raw: bytes) -> None:
        if raw[:4] != ELF_MAGIC:
            raise NotElfError(f"magic number {raw[:4]!r}, not {ELF_MAGIC!r}")
        if len(raw) < 20:
            raise ElfFormatError(f"the ELF header is cut short ({len(raw)} bytes)")
        self.raw = raw
        self.elfclass = 64 if raw[4] == ELFCLASS64 else 32
        self.little_endian = raw[5] == ELFDATA2LSB
        e_type, e_machine = struct.unpack_from("<HH" if self.little_endian else ">HH", raw, 16)
        self.type = ET_NAMES.get(e_type, f"ET_{e_type:#x}")
        self.machine = EM_NAMES.get(e_machine, f"EM {e_machine}")
        self.segments: list[ProgramHeader] = []
        self.sections: list[SectionHeader] = []
        self.entry = self.phoff = self.phnum = self.phentsize = 0
        if self.elfclass == 64 and self.little_endian:
            self._read_tables()

    def not_amd64(self) -> str | None:
        """What makes the file something other than a 64-bit little-endian x86-64 ELF, said in words (None: it
        is one): its class first (an ELF32 file's e_machine may still say EM_X86_64, for the x32 ABI), then its
        byte order, then its machine."""
        if self.elfclass != 64:
            return "a 32-bit ELF file (ELFCLASS32); preemu runs 64-bit x86-64 (ELFCLASS64) executables"
        if not self.little_endian:
            return "a big-endian ELF file; preemu runs little-endian x86-64 executables"
        if self.machine != EM_NAMES[EM_X86_64]:
            return f"built for another machine ({self.machine}); preemu runs x86-64 (EM_X86_64) executables"
        return None

    def _read_tables(self) -> None:
        raw = self.raw
        if len(raw) < EHDR64.size:
            raise ElfFormatError(f"the ELF header is cut short ({len(raw)} bytes)")
        (_, _, _, _, self.entry, self.phoff, shoff, _, _, self.phentsize, self.phnum, shentsize, shnum,
         shstrndx) = EHDR64.unpack_from(raw)
        self.segments = [ProgramHeader(t, f, off, va, fsz, msz) for t, f, off, va, _pa, fsz, msz, _al in
                         self._table(self.phoff, self.phnum, self.phentsize, PHDR64, "program header")]
        rows = self._table(shoff, shnum, shentsize, SHDR64, "section header")
        if not rows:
            return
        if shstrndx >= len(rows):
            raise ElfFormatError(f"e_shstrndx {shstrndx} is not one of the {len(rows)} sections")
        names = self._bytes(rows[shstrndx][4], rows[shstrndx][5], "the section names")
        for name_off, typ, flags, addr, off, size, link, _info, _align, _entsize in rows:
            end = names.find(b"\0", name_off)
            name = names[name_off:end if end >= 0 else len(names)].decode("utf-8", "replace")
            self.sections.append(SectionHeader(name, typ, flags, addr, off, size, link))

    def _table(self, offset: int, count: int, entsize: int, rec: struct.Struct, what: str) -> list[tuple]:
        if count == 0:
            return []
        if entsize < rec.size:
            raise ElfFormatError(f"{what} entries of {entsize} bytes (an ELF64 one has {rec.size})")
        if offset + count * entsize > len(self.raw):
            raise ElfFormatError(f"the {what} table ({count} x {entsize} bytes at {offset:#x}) runs past the "
                                 f"end of the file ({len(self.raw)} bytes)")
        return [rec.unpack_from(self.raw, offset + i * entsize) for i in range(count)]

    def _bytes(self, offset: int, size: int, what: str) -> bytes:
        if offset + size > len(self.raw):
            raise ElfFormatError(f"{what} ({size} bytes at {offset:#x}) run past the end of the file "
                                 f"({len(self.raw)} bytes)")
        return self.raw[offset:offset + size]

    def segment_data(self, ph: ProgramHeader) -> bytes:
        """The p_filesz bytes of a segment from the file."""
        return self._bytes(ph.offset, ph.filesz, f"a segment's {ph.filesz} bytes")

    def interp(self, ph: ProgramHeader) -> str:
        """The loader a PT_INTERP segment names."""
        return self.segment_data(ph).split(b"\0", 1)[0].decode("utf-8", "replace")

    def section(self, name: str) -> SectionHeader | None:
        return next((s for s in self.sections if s.name == name), None)

    def section_data(self, s: SectionHeader) -> bytes:
        """A section's bytes from the file (none for SHT_NOBITS)."""
        return b"" if s.type == SHT_NOBITS else self._bytes(s.offset, s.size, f"section {s.name}")
