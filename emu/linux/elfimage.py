"""A static linux/amd64 Go executable as the kernel's ELF loader sees it (binfmt_elf), plus .symtab.

Mirrors what `execve` needs (PT_LOAD segments, e_entry, the program headers for AT_PHDR) and
refuses what this mode cannot run: other architectures, dynamic executables (PT_INTERP), and
(check_level) a binary built for a GOAMD64 level above the CPU's (--cpu): Go's rt0 would stop it.
Symbol names come from .symtab; function metadata (pclntab) is not read here.
"""
from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field

import capstone
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..front.elfsym import STT_FUNC, iter_symbols
from ..core.errors import EmuError
from ..core.program import func_offset

PT_LOAD, PT_INTERP, PT_PHDR = 1, 3, 6
PF_X = 1                 # a segment's executable flag (elf.h); the loader maps only these executable
PF_W = 2                 # ... and its writable flag: the loader maps only these writable


@dataclass(frozen=True)
class Segment:
    vaddr: int
    memsz: int
    data: bytes          # the FileSiz bytes; the rest of memsz is zero (bss)
    flags: int           # PF_X, PF_W=2, PF_R=4


@dataclass
class Image:
    path: str
    entry: int
    phoff: int
    phnum: int
    phentsize: int
    segments: list[Segment]
    symbols: dict[str, tuple[int, int]]           # name -> (address, size)
    goamd64: int | None
    is_go: bool = True                            # a Go program (build info or runtime symbols)
    _func_starts: list[int] = field(default_factory=list, repr=False)
    _func_names: list[str] = field(default_factory=list, repr=False)
    _func_ends: list[int] = field(default_factory=list, repr=False)

    @property
    def phdr_addr(self) -> int:
        """AT_PHDR: where the program headers are mapped (inside the first PT_LOAD, at its file offset)."""
        first = self.segments[0]
        return first.vaddr - (first.vaddr & 0xFFF) + self.phoff if self.phoff < len(first.data) else 0

    def symbol(self, name: str) -> int:
        try:
            return self.symbols[name][0]
        except KeyError:
            raise EmuError(f"{self.path}: no symbol {name!r} in .symtab (is the binary stripped?)") from None

    def resolve(self, spec: str, what: str, data: bool = False) -> int:
        """FUNC+OFF (offset decimal or 0x hex, an instruction boundary), FUNC, a global (+OFF), or a 0x address
        -> address; EmuError names `what`. A global is taken only with `data` (an argument, not a code location)."""
        name, offset = func_offset(spec, what, EmuError)
        if name.startswith("0x") and "+" not in spec:
            try:
                return int(name, 16)
            except ValueError:
                raise EmuError(f"{what} {spec!r}: the offset is not a number (write FUNC+0x9 or FUNC+9)") from None
        if name not in self.symbols:
            near = sorted(n for n in self.symbols if n.endswith("." + name.rsplit(".", 1)[-1]))[:5]
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise EmuError(f"{what} {spec!r}: no function{' or global' if data else ''} {name!r} in the binary's "
                          f"symbol table{hint}")
        addr, size = self.symbols[name]
        if size and offset >= size:
            raise EmuError(f"{what} {spec!r}: offset {offset:#x} is past the end of {name} (size {size:#x})")
        if data and not any(s.flags & 1 and s.vaddr <= addr < s.vaddr + s.memsz for s in self.segments):  # PF_X
            return addr + offset                     # a global (data or bss): its address, any offset in it
        starts = [i.address - addr for i in capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
                  .disasm(self.text_bytes(addr, size), addr)]
        if size and offset not in starts:
            some = ", ".join(hex(o) for o in starts[:12]) + (" ..." if len(starts) > 12 else "")
            raise EmuError(f"{what} {spec!r}: not an instruction boundary of {name} (boundaries: {some})")
        return addr + offset

    def func_at(self, pc: int) -> tuple[str, int] | None:
        """(function name, offset) of the .symtab function containing pc, or None."""
        i = bisect.bisect_right(self._func_starts, pc) - 1
        if i >= 0 and pc < self._func_ends[i]:
            return self._func_names[i], pc - self._func_starts[i]
        return None

    def describe(self, pc: int) -> str:
        f = self.func_at(pc)
        return f"{f[0]}+{f[1]:#x}" if f else f"{pc:#x}"

    def text_bytes(self, addr: int, n: int) -> bytes:
        for s in self.segments:
            if s.vaddr <= addr < s.vaddr + len(s.data):
                off = addr - s.vaddr
                return s.data[off:off + n]
        return b""

    def functions(self):
        """(start address, code bytes) of each .symtab function, in address order."""
        for start, end in zip(self._func_starts, self._func_ends):
            yield start, self.text_bytes(start, end - start)

    def check_level(self, level) -> None:
        """EmuError when the binary needs a higher CPU level than `level` (core/cpulevel.CpuLevel): a real
        CPU of that level stops it at start-up (runtime/asm_amd64.s:276-330 needs_feature check)."""
        if self.goamd64 is not None and self.goamd64 > level.number:
            raise EmuError(f"{self.path}: built with GOAMD64=v{self.goamd64}, which needs --cpu v{self.goamd64} "
                           f"(preemu's CPU is {level.name}; at v3/v4 it runs the AVX instructions itself)")

    def find_insns(self, mnemonics: tuple[str, ...]) -> list[tuple[int, int]]:
        """(address, length) of each instruction with one of these mnemonics, disassembling linearly
        only the .symtab functions whose bytes contain a candidate encoding (RDTSC 0f 31, RDTSCP 0f 01 f9)."""
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        found = []
        for start, end in zip(self._func_starts, self._func_ends):
            code = self.text_bytes(start, end - start)
            if any(_ENCODINGS[m] in code for m in mnemonics):
                found += [(i.address, i.size) for i in md.disasm(code, start) if i.mnemonic in mnemonics]
        return found


_ENCODINGS = {"rdtsc": b"\x0f\x31", "rdtscp": b"\x0f\x01\xf9"}
_GOAMD64 = re.compile(rb"\bGOAMD64=v(\d)")


def load(path: str) -> Image:
    """Read a static x86-64 ELF executable; raise EmuError naming the problem."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise EmuError(f"{path}: cannot open: {e.strerror}") from None
    with f:
        try:
            return _load(f, path)
        except (ELFError, struct.error, ValueError) as e:      # a file cut short or damaged past its header
            raise EmuError(f"{path}: a truncated or damaged ELF file ({e})") from None


def _load(f, path: str) -> Image:
    try:
        elf = ELFFile(f)
    except ELFError as e:
        raise EmuError(f"{path}: not an ELF file ({e})") from None
    if elf["e_machine"] != "EM_X86_64" or elf.elfclass != 64:
        raise EmuError(f"{path}: not an x86-64 executable (machine {elf['e_machine']})")
    interp = [ph.get_interp_name() for ph in elf.iter_segments() if ph["p_type"] == "PT_INTERP"]
    if elf["e_type"] == "ET_DYN":          # a PIE: Go links one with an interpreter even with CGO_ENABLED=0
        raise EmuError(f"{path}: a position-independent executable (PIE, e_type ET_DYN"
                       f"{', loaded by ' + interp[0] if interp else ''}); preemu runs static executables at their "
                       "link addresses: rebuild it with `go build -buildmode=exe`, which makes a static non-PIE binary")
    if elf["e_type"] != "ET_EXEC":
        raise EmuError(f"{path}: not an executable (e_type {elf['e_type']}): preemu runs a static executable")
    if interp:
        raise EmuError(f"{path}: dynamically linked (it needs the loader {interp[0]}); preemu runs static "
                       "executables: rebuild it with CGO_ENABLED=0 (cgo or an external link is what makes a Go "
                       "program dynamic)")
    segs = []
    for ph in elf.iter_segments():
        if ph["p_type"] == "PT_LOAD":
            segs.append(Segment(ph["p_vaddr"], ph["p_memsz"], ph.data(), ph["p_flags"]))
    if not segs:
        raise EmuError(f"{path}: no PT_LOAD segment")
    syms: dict[str, tuple[int, int]] = {}
    funcs: list[tuple[int, int, str]] = []
    symtab = elf.get_section_by_name(".symtab")
    if symtab is not None:
        for name, info, _shndx, value, size in iter_symbols(symtab.data(), elf.get_section(symtab["sh_link"]).data()):
            if value:
                syms[name] = (value, size)
                if info & 0xF == STT_FUNC:
                    funcs.append((value, size, name))
    goamd64 = None
    bi = elf.get_section_by_name(".go.buildinfo")
    if bi is not None:
        m = _GOAMD64.search(bi.data())
        if m:
            goamd64 = int(m.group(1))
    img = Image(path, elf["e_entry"], elf["e_phoff"], elf["e_phnum"], elf["e_phentsize"], segs, syms, goamd64,
                bi is not None or "runtime.main" in syms)
    funcs.sort()
    img._func_starts = [a for a, _, _ in funcs]
    img._func_ends = [a + max(n, 1) for a, n, _ in funcs]
    img._func_names = [name for _, _, name in funcs]
    return img

