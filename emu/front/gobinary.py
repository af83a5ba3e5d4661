"""Read a Go 1.20+ linux/amd64 ELF binary: sections, symbols, moduledata and the pclntab.

Mirrors the runtime's own readers of the linker's tables (Go 1.27.3):
  * pcHeader / moduledata / _func / ftab:  runtime/symtab.go:376-450, 579-582, 695-717, 757-762, 922-953;
    runtime/runtime2.go:1074-1115 (the _func record); writer cmd/link/internal/ld/pcln.go:254-288, 817-925.
  * pc-value tables:  pcvalue/step/readvarint, runtime/symtab.go:1012-1143, 1284-1321.
  * file:line:  funcfile/funcline1, runtime/symtab.go:1168-1203.
  * funcdata:  runtime/symtab.go:1265-1281 (stored directly at moduledata.gofunc + off).
  * stack maps and frame geometry:  stackmapdata symtab.go:1323-1338; stkframe.getStackMap
    runtime/stkframe.go:94-240; frame fp/varp/argp runtime/traceback.go:327-411; scan mgcmark.go:1135-1143.
  * inline tree:  runtime/symtabinl.go:13-19, 67-138.
  * abi.Type, GC masks:  internal/abi/type.go:21-46, 270-275, 573-587; runtime/type.go:87-144, 198-256.
  * data/bss GC programs:  runGCProg, runtime/mbitmap.go:1536-1640; symtab.go:550-555.

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
from typing import Callable, NamedTuple

from elftools.elf.constants import SH_FLAGS
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from .elfsym import SHN_UNDEF, STT_FUNC, STT_NOTYPE, STT_OBJECT, iter_symbols
from . import goreleases
from ..core.errors import EmuError

# internal/abi/symtab.go:23-25, 34
GO120_PCLNTAB_MAGIC = 0xFFFFFFF1
# internal/abi/symtab.go:107-122 (PCDATA and FUNCDATA table indices)
PCDATA_UnsafePoint, PCDATA_StackMapIndex, PCDATA_InlTreeIndex, PCDATA_ArgLiveIndex = 0, 1, 2, 3
FUNCDATA_ArgsPointerMaps, FUNCDATA_LocalsPointerMaps, FUNCDATA_StackObjects, FUNCDATA_InlTree = 0, 1, 2, 3
# internal/abi/symtab.go:47-59 (FuncFlag)
FUNC_FLAG_TOP_FRAME, FUNC_FLAG_SPWRITE, FUNC_FLAG_ASM = 1, 2, 4
# internal/abi/symtab.go:72-95 (FuncID): ABI wrappers and other compiler wrappers
FUNCID_ASYNC_PREEMPT, FUNCID_WRAPPER = 3, 23
# internal/abi/symtab.go:102
ARGS_SIZE_UNKNOWN = -0x80000000
# internal/abi/symtab.go:125-139 (UnsafePoint values)
UNSAFE_POINT_SAFE, UNSAFE_POINT_UNSAFE = -1, -2
# internal/abi/type.go:102-127 (TFlag) and 50-80 (Kind)
TFLAG_EXTRA_STAR, TFLAG_GC_MASK_ON_DEMAND = 0x2, 0x10
KIND_ARRAY, KIND_STRUCT = 17, 25
KIND_MASK, KIND_GC_PROG = 0x1F, 0x40         # internal/abi/type.go (KindGCProg: Go <= 1.23)
PTR_SIZE = 8
FUNC_HEADER_SIZE = 44   # cmd/link/internal/ld/pcln.go:22

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


@dataclass(frozen=True)
class GoFunc:
    """One `_func` record (runtime/runtime2.go:1074-1115) with its pc range resolved."""
    index: int          # position in ftab
    name: str
    entry: int
    end: int            # end of the pc tables (= the real code size); ftab's next entry includes padding
    args: int           # argument+result bytes, or ARGS_SIZE_UNKNOWN
    deferreturn: int
    funcid: int
    flag: int
    startline: int
    pcsp: int           # offsets into pctab (0 = no table)
    pcfile: int
    pcln: int
    npcdata: int
    nfuncdata: int
    cu_offset: int
    func_off: int       # offset of the _func record from the start of functab

    @property
    def is_asm(self) -> bool:
        return bool(self.flag & FUNC_FLAG_ASM)

    @property
    def size(self) -> int:
        return self.end - self.entry


class PCRange(NamedTuple):
    start: int          # absolute pc, inclusive
    end: int            # exclusive
    value: int


class LineRange(NamedTuple):
    start: int
    end: int
    file: str
    line: int


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


def _uvarint(data: bytes, p: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, p
        shift += 7


def decode_pcvalue(data: bytes, p: int, entry: int, quantum: int = 1) -> list[PCRange]:
    """Decode one pc-value table starting at data[p] (runtime/symtab.go:1284-1321): value starts at -1,
    each pair is (zigzag value delta, pc delta * quantum); a 0 value delta ends it except in the first pair."""
    out: list[PCRange] = []
    pc, val, first = entry, -1, True
    while True:
        uv = data[p]
        if uv == 0 and not first:
            return out
        if uv & 0x80:
            uv, p = _uvarint(data, p)
        else:
            p += 1
        val += -((uv + 1) >> 1) if uv & 1 else uv >> 1
        pcd = data[p]
        if pcd & 0x80:
            pcd, p = _uvarint(data, p)
        else:
            p += 1
        out.append(PCRange(pc, pc + pcd * quantum, val))
        pc += pcd * quantum
        first = False


def _pctable_end(data: bytes, p: int, entry: int) -> int:
    """The pc at which a table ends, without building its ranges (cheap enough for every function)."""
    pc, first = entry, True
    while True:
        uv = data[p]
        if uv == 0 and not first:
            return pc
        _, p = _uvarint(data, p)
        pcd, p = _uvarint(data, p)
        pc += pcd
        first = False


def value_at(ranges: list[PCRange], pc: int, default: int = -1) -> int:
    """The value a decoded table gives at pc (default outside every range)."""
    i = bisect.bisect_right(ranges, pc, key=lambda r: r.start) - 1
    if i >= 0 and ranges[i].start <= pc < ranges[i].end:
        return ranges[i].value
    return default


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


class GoBinary:
    """A parsed Go ELF binary; use GoBinary.open(path)."""

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
        elf = ELFFile(io.BytesIO(self.raw))
        if elf["e_machine"] != "EM_X86_64" or elf.elfclass != 64:
            raise EmuError(f"{self.path}: not a linux/amd64 binary ({elf['e_machine']})")
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
            raise EmuError(f"{self.path}: no .go.module section: not a Go 1.20+ binary")
        info = self.sections.get(".go.buildinfo")
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

    # ---- pclntab ---------------------------------------------------------------------------------
    def _read_pclntab(self) -> None:
        md = self.moduledata
        sec = self.section_at(md["pcHeader"])
        if sec is None:
            raise EmuError(f"{self.path}: pcHeader {md['pcHeader']:#x} is outside the file")
        self._pcln = sec.data
        self._pcln_base = sec.addr
        hdr = md["pcHeader"] - sec.addr
        magic, pad1, pad2, min_lc, ptr_size, nfunc = struct.unpack_from("<IBBBBQ", self._pcln, hdr)
        if magic != GO120_PCLNTAB_MAGIC:
            raise EmuError(f"{self.path}: pclntab magic {magic:#x} is not Go 1.20+'s {GO120_PCLNTAB_MAGIC:#x}")
        if pad1 or pad2 or min_lc != 1 or ptr_size != PTR_SIZE:
            raise EmuError(f"{self.path}: pclntab header is not amd64's (minLC {min_lc}, ptrSize {ptr_size})")
        self.quantum = min_lc
        self.nfunc = nfunc
        rel = lambda name: md[name] - self._pcln_base   # noqa: E731 - offsets inside .gopclntab's bytes
        self._funcnametab, self._cutab, self._filetab = rel("funcnametab"), rel("cutab"), rel("filetab")
        self._pctab, self._functab = rel("pctab"), rel("pclntable")
        self.text = md["text"]
        self.gofunc = md["gofunc"]
        self._read_funcs()

    def _read_funcs(self) -> None:
        data, ft, text = self._pcln, self._functab, self.text
        ftab = list(struct.iter_unpack("<II", data[ft:ft + 8 * (self.nfunc + 1)]))
        funcs = []
        for i in range(self.nfunc):
            entryoff, funcoff = ftab[i]
            (e2, name_off, args, deferreturn, pcsp, pcfile, pcln, npcdata, cu_off, startline, funcid, flag,
             _pad, nfuncdata) = struct.unpack_from("<IiiIIIIIIiBBBB", data, ft + funcoff)
            if e2 != entryoff:
                raise EmuError(f"{self.path}: _func {i} entry {e2:#x} disagrees with ftab {entryoff:#x}")
            # runtime/symtab.go:757-762 maps nameOff 0 to ""; the bytes there name the first function,
            # and preemu reports that real name (a sweep target needs one).
            n0 = self._funcnametab + name_off
            name = data[n0:data.index(b"\0", n0)].decode("utf-8", "replace")
            entry = text + entryoff
            padded_end = text + ftab[i + 1][0]
            end = _pctable_end(data, self._pctab + pcsp, entry) if pcsp else padded_end
            funcs.append(GoFunc(i, name, entry, end, args, deferreturn, funcid, flag, startline,
                                pcsp, pcfile, pcln, npcdata, nfuncdata, cu_off, funcoff))
        self.funcs: list[GoFunc] = funcs
        self._entries = [f.entry for f in funcs]
        self._by_name: dict[str, list[GoFunc]] = {}
        for f in funcs:
            self._by_name.setdefault(f.name, []).append(f)

    def func_for(self, pc: int) -> GoFunc | None:
        """The function whose code holds pc (None in inter-function padding or outside the text)."""
        i = bisect.bisect_right(self._entries, pc) - 1
        if i >= 0 and pc < self.funcs[i].end:
            return self.funcs[i]
        return None

    def funcs_named(self, name: str) -> list[GoFunc]:
        """Every function with this pclntab name: an ABI wrapper (funcID wrapper) shares the name of the
        function it wraps (cmd/link ABI wrappers; reference pitfall 6)."""
        return list(self._by_name.get(name, ()))

    def func_named(self, name: str) -> GoFunc | None:
        """By pclntab name (`main.sumsq`, `runtime.asyncPreempt`): the function itself, not its ABI wrapper.
        `name.abi0` picks the ABI0 body named so in .symtab (for a Go function, its ABI0 wrapper)."""
        if name.endswith(".abi0"):
            sym = self.symbols.get(name)
            f = self.func_for(sym[0]) if sym else None
            if f is not None and f.entry == sym[0]:
                return f
            name = name.removesuffix(".abi0")
        cands = self._by_name.get(name, [])
        return next((f for f in cands if f.funcid != FUNCID_WRAPPER), cands[0] if cands else None)

    # ---- pc-value tables -------------------------------------------------------------------------
    def _table(self, f: GoFunc, off: int) -> list[PCRange]:
        if off == 0:    # symtab.go:1020-1022: no table, value -1 everywhere
            return [PCRange(f.entry, f.end, -1)]
        key = (off, f.entry)
        r = self._pc_cache.get(key)
        if r is None:
            r = self._pc_cache[key] = decode_pcvalue(self._pcln, self._pctab + off, f.entry, self.quantum)
        return r

    def pcsp(self, f: GoFunc) -> list[PCRange]:
        """SP delta ranges: bytes pushed since entry incl. the saved RBP, excluding the return address."""
        return self._table(f, f.pcsp)

    def _pcdata_off(self, f: GoFunc, idx: int) -> int:
        if idx < 0 or idx >= f.npcdata:     # symtab.go:1239-1245
            return 0
        return struct.unpack_from("<I", self._pcln, self._functab + f.func_off + FUNC_HEADER_SIZE + 4 * idx)[0]

    def pcdata(self, f: GoFunc, idx: int) -> list[PCRange]:
        """PCDATA table idx (PCDATA_UnsafePoint 0, _StackMapIndex 1, _InlTreeIndex 2, ...) as ranges."""
        return self._table(f, self._pcdata_off(f, idx))

    def sp_delta(self, f: GoFunc, pc: int) -> int:
        return value_at(self.pcsp(f), pc)

    def pcdata_value(self, f: GoFunc, idx: int, pc: int) -> int:
        return value_at(self.pcdata(f, idx), pc)

    def unsafe_point(self, f: GoFunc, pc: int) -> int:
        """PCDATA_UnsafePoint at pc: -1 safe, -2 unsafe (runtime/preempt.go:443-448)."""
        return value_at(self.pcdata(f, PCDATA_UnsafePoint), pc)

    def lines(self, f: GoFunc) -> list[LineRange]:
        """(start, end, file, line) ranges covering the function (runtime/symtab.go:1190-1203)."""
        files = self._table(f, f.pcfile)
        out: list[LineRange] = []
        for start, end, line in self._table(f, f.pcln):
            pc = start
            while pc < end:     # split a line range where the file changes inside it
                fno = value_at(files, pc)
                i = bisect.bisect_right(files, pc, key=lambda r: r.start) - 1
                stop = min(end, files[i].end) if 0 <= i < len(files) and files[i].end > pc else end
                out.append(LineRange(pc, stop, self.file_name(f, fno), line))
                pc = stop
        return out

    def file_name(self, f: GoFunc, fileno: int) -> str:
        """runtime/symtab.go:1168-1179: cutab[cuOffset+fileno] indexes filetab; "?" when missing."""
        if fileno < 0:
            return "?"
        (off,) = struct.unpack_from("<I", self._pcln, self._cutab + 4 * (f.cu_offset + fileno))
        if off == 0xFFFFFFFF:
            return "?"
        p = self._filetab + off
        return self._pcln[p:self._pcln.index(b"\0", p)].decode("utf-8", "replace")

    def file_line(self, f: GoFunc, pc: int) -> tuple[str, int]:
        """(file, line) at pc, or ("?", 0) like funcline1 when a table has no value there."""
        fno = value_at(self._table(f, f.pcfile), pc)
        line = value_at(self._table(f, f.pcln), pc)
        if fno == -1 or line == -1:
            return "?", 0
        return self.file_name(f, fno), line

    # ---- funcdata: stack maps, inline tree -------------------------------------------------------
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

    # ---- types and global pointer bitmaps --------------------------------------------------------
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

    @property
    def write_barrier_flag(self) -> int | None:
        """Address of `runtime.writeBarrier` (its first field `enabled` is what compiled code tests)."""
        s = self.symbol("runtime.writeBarrier")
        return s[0] if s else None
