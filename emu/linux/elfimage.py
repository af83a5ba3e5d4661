"""A static linux/amd64 Go executable as the kernel's ELF loader sees it (binfmt_elf), plus .symtab.

Mirrors what `execve` needs (PT_LOAD segments, e_entry, the program headers for AT_PHDR) and
refuses what this mode cannot run: other architectures, dynamic executables (PT_INTERP), and
(check_level) a binary built for a GOAMD64 level above the CPU's (--cpu): Go's rt0 would stop it.
Symbol names come from .symtab; function metadata (pclntab) is not read here. The headers are
front/elfheaders.py's (no pyelftools, no Capstone at start-up: `resolve` and `find_insns` load Capstone).
"""
from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field

from ..front.elfheaders import GO_BUILDINFO, PT_INTERP, PT_LOAD, ElfFormatError, ElfHeaders, NotElfError
from ..front.elfsym import STT_FUNC, iter_symbols
from ..front.goreleases import build_version
from ..core.errors import EmuError

PF_X = 1                 # a segment's executable flag (elf.h); the loader maps only these executable
PF_W = 2                 # ... and its writable flag: the loader maps only these writable


@dataclass(frozen=True)
class Segment:
    vaddr: int
    memsz: int
    data: bytes          # the FileSiz bytes; the rest of memsz is zero (bss)
    flags: int           # PF_X, PF_W=2, PF_R=4
    offset: int = 0      # p_offset: where data is in the file (/proc/self/maps, procfs.py)


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
    go_version: str = ""                          # the build version in .go.buildinfo ("go1.27.3"), or ""
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
        from ..core.program import func_offset
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
        import capstone
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

    def func_name(self, pc: int) -> str:
        """The name of the .symtab function containing pc, without an assembly function's ".abi0", or ""."""
        f = self.func_at(pc)
        return f[0].removesuffix(".abi0") if f else ""

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
        only the .symtab functions whose bytes contain a candidate encoding (RDTSC 0f 31, RDTSCP 0f 01 f9).
        The candidates are found by searching each segment's bytes once (a Go binary's functions do not
        overlap), not function by function; their disassembly (~7 ms for a hello world's runtime) is
        remembered on disk (engine/diskmemo.py) under the candidates' own addresses and bytes and the decoder."""
        from ..engine import diskmemo, x86decode
        funcs = [(self._func_starts[i], self.text_bytes(self._func_starts[i], self._func_ends[i] - self._func_starts[i]))
                 for i in sorted(self._candidates(mnemonics))]
        if not funcs:
            return []

        def scan() -> list[tuple[int, int]]:
            return [(a, n) for start, code in funcs for a, n, mn, _ in x86decode.disasm_lite(code, start)
                    if mn in mnemonics]
        k = diskmemo.key(_SITES_FORMAT, x86decode.identity(), ",".join(mnemonics),
                         *(part for start, code in funcs for part in (start, code)))
        return [(a, n) for a, n in diskmemo.remembered("insnsites", k, scan)]

    def _candidates(self, mnemonics: tuple[str, ...]) -> set[int]:
        """The indices of the functions whose bytes hold one of the mnemonics' encodings."""
        candidates = set()
        for s in self.segments:
            # only the part of the segment the functions cover (the text; not the read-only data after it)
            first = bisect.bisect_left(self._func_starts, s.vaddr)
            last = bisect.bisect_left(self._func_starts, s.vaddr + len(s.data)) - 1
            if first > last:
                continue
            lo, hi = self._func_starts[first] - s.vaddr, max(self._func_ends[first:last + 1]) - s.vaddr
            for enc in {_ENCODINGS[m] for m in mnemonics}:
                at = s.data.find(enc, lo, hi)
                while at >= 0:
                    addr = s.vaddr + at
                    i = bisect.bisect_right(self._func_starts, addr) - 1
                    if i >= 0 and addr + len(enc) <= self._func_ends[i]:
                        candidates.add(i)
                    at = s.data.find(enc, at + 1, hi)
        return candidates


_ENCODINGS = {"rdtsc": b"\x0f\x31", "rdtscp": b"\x0f\x01\xf9"}
_SITES_FORMAT = 1        # find_insns' remembered entries: [[address, length], ...]
_GOAMD64 = re.compile(rb"\bGOAMD64=v(\d)")


def load(path: str) -> Image:
    """Read a static x86-64 ELF executable; raise EmuError naming the problem."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise EmuError(f"{path}: cannot open: {e.strerror}") from None
    try:
        return _load(raw, path)
    except (ElfFormatError, struct.error) as e:      # a file cut short or damaged past its header
        raise EmuError(f"{path}: a truncated or damaged ELF file ({e})") from None


def _load(raw: bytes, path: str) -> Image:
    try:
        elf = ElfHeaders(raw)
    except NotElfError as e:
        raise EmuError(f"{path}: not an ELF file ({e})") from None
    if (why := elf.not_amd64()) is not None:
        raise EmuError(f"{path}: {why}")
    interp = [elf.interp(ph) for ph in elf.segments if ph.type == PT_INTERP]
    if elf.type in ("ET_DYN", "ET_EXEC") and elf.section(GO_BUILDINFO) is None and interp:
        raise EmuError(f"{path}: not a Go program (no {GO_BUILDINFO} section, and it is linked dynamically, "
                       f"loaded by {interp[0]}); preemu runs static Go executables")
    if elf.type == "ET_DYN":          # a PIE: Go links one with an interpreter even with CGO_ENABLED=0
        raise EmuError(f"{path}: a position-independent executable (PIE, e_type ET_DYN"
                       f"{', loaded by ' + interp[0] if interp else ''}); preemu runs static executables at their "
                       "link addresses: rebuild it with `go build -buildmode=exe`, which makes a static non-PIE binary")
    if elf.type != "ET_EXEC":
        raise EmuError(f"{path}: not an executable (e_type {elf.type}): preemu runs a static executable")
    if interp:
        raise EmuError(f"{path}: dynamically linked (it needs the loader {interp[0]}); preemu runs static "
                       "executables: rebuild it with CGO_ENABLED=0 (cgo or an external link is what makes a Go "
                       "program dynamic)")
    segs = [Segment(ph.vaddr, ph.memsz, elf.segment_data(ph), ph.flags, ph.offset) for ph in elf.segments
            if ph.type == PT_LOAD]
    if not segs:
        raise EmuError(f"{path}: no PT_LOAD segment")
    syms: dict[str, tuple[int, int]] = {}
    funcs: list[tuple[int, int, str]] = []
    symtab = elf.section(".symtab")
    if symtab is not None:
        if symtab.link >= len(elf.sections):
            raise ElfFormatError(f".symtab links to section {symtab.link}, which does not exist")
        strtab = elf.section_data(elf.sections[symtab.link])
        for name, info, _shndx, value, size in iter_symbols(elf.section_data(symtab), strtab):
            if value:
                syms[name] = (value, size)
                if info & 0xF == STT_FUNC:
                    funcs.append((value, size, name))
    goamd64, version = None, ""
    bi = elf.section(GO_BUILDINFO)
    if bi is not None:
        data = elf.section_data(bi)
        m = _GOAMD64.search(data)
        if m:
            goamd64 = int(m.group(1))
        version = build_version(data)
        if symtab is None:              # a Go program whose functions preemu cannot find by name
            raise EmuError(f"{path}: a stripped Go binary (no .symtab: built with -ldflags=-s, or strip): preemu "
                           "finds the runtime's and the program's functions by their symbols; rebuild without -s")
    img = Image(path, elf.entry, elf.phoff, elf.phnum, elf.phentsize, segs, syms, goamd64,
                bi is not None or "runtime.main" in syms, version)
    funcs.sort()
    img._func_starts = [a for a, _, _ in funcs]
    img._func_ends = [a + max(n, 1) for a, n, _ in funcs]
    img._func_names = [name for _, _, name in funcs]
    return img
