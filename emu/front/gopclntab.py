"""The pclntab of a Go binary: the function table, the pc-value tables and file:line.

Mirrors the runtime's own readers of the linker's tables (Go 1.27.3):
  * pcHeader / _func / ftab:  runtime/symtab.go:376-450 (with moduledata's table slices), 579-582,
    695-717, 757-762, 922-953; runtime/runtime2.go:1074-1115 (the _func record); writer
    cmd/link/internal/ld/pcln.go:254-288, 817-925.
  * pc-value tables:  pcvalue/step/readvarint, runtime/symtab.go:1012-1143, 1284-1321.
  * file:line:  funcfile/funcline1, runtime/symtab.go:1168-1203.
with internal/abi/symtab.go's constants (PCDATA/FUNCDATA indices, FuncFlag, FuncID, UnsafePoint).

PclntabMixin is the part of GoBinary (gobinary.py) that reads these tables: opening reads the pcHeader
and the fixed-size _func headers of every function (names and pc-table ends included); a pc-value table
is decoded on first request and cached. It uses what GoBinary reads first (moduledata, section_at, the
symbols) and the cache GoBinary.__init__ makes. Left out: several text sections (textsectmap with more
than one entry) and the runtime's own AIX/PPC64 special cases.
"""
from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass
from typing import NamedTuple

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
PTR_SIZE = 8
FUNC_HEADER_SIZE = 44   # cmd/link/internal/ld/pcln.go:22


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


class PclntabMixin:
    """GoBinary's function table and pc-value tables: functions by pc and by name, SP deltas, PCDATA,
    file:line."""

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
