"""The program model: functions, instructions and the metadata Go keeps in PCDATA/FUNCDATA.

Mirrors what runtime/symtab.go exposes to the preemption code: findfunc(pc), the function's
name and flags (FuncFlagAsm, nosplit), the UnsafePoint PCDATA value at a PC, the SP delta at a PC
(pcsp), and the innermost inlined function at a PC (the inline tree). Today it is filled from .s
files by asmfront; the same model is meant to be filled from a real Go binary's pclntab.
Immutable once built.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from . import gostructs, memmap

TYPE_MAGIC = b"GOTYPE\0\0"      # first 8 bytes of a `;@type` descriptor in the data region


def encode_type(size: int, ptr_offsets) -> bytes:
    """A `;@type` descriptor (a stand-in for abi.Type: Size_ and the GCData pointer mask)."""
    mask = 0
    for off in ptr_offsets:
        mask |= 1 << (off // 8)
    nbytes = max(1, ((size + 7) // 8 + 7) // 8)
    return TYPE_MAGIC + size.to_bytes(8, "little") + mask.to_bytes(nbytes, "little")


def decode_type(init: bytes) -> tuple[int, tuple[int, ...]] | None:
    """(size, pointer word indices) of a `;@type` descriptor, or None if `init` is not one."""
    if not init.startswith(TYPE_MAGIC) or len(init) < 17:
        return None
    size, mask = int.from_bytes(init[8:16], "little"), int.from_bytes(init[16:], "little")
    return size, tuple(w for w in range((size + 7) // 8) if (mask >> w) & 1)


@dataclass(frozen=True)
class Insn:
    addr: int
    size: int
    mnemonic: str
    op_str: str
    file: str
    line: int
    source: str          # the source text of the line (comment stripped)
    func: str            # symbol of the containing function
    sp_delta: int        # bytes below the function's entry SP (excluding the return address), before this insn
    unsafe: bool         # PCDATA_UnsafePoint == -2 here
    inline: str | None = None   # Go name of the innermost inlined function covering this PC, if any
    ptr_slots: tuple[int, ...] | None = None   # call sites: stack map (SP offsets holding live pointers)

    @property
    def text(self) -> str:
        return f"{self.mnemonic} {self.op_str}".strip()

    @property
    def is_rep(self) -> bool:
        return self.mnemonic.startswith(("rep ", "repe ", "repne ", "repz ", "repnz "))

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Func:
    name: str            # assembler symbol
    goname: str          # the name Go's findfunc would report (e.g. "main.spin", "runtime.memmove")
    start: int
    end: int
    asm: bool            # FuncFlagAsm / no locals pointer map: never an async safe point
    nosplit: bool        # //go:nosplit: the compiler marks the whole function unsafe
    insns: tuple[Insn, ...]
    obj6_pcs: frozenset[int] = frozenset()   # .s input: PCs obj6.go emits (prologue, post-morestack):
    #                                          safe even where the compiler marks every other PC unsafe

    @property
    def max_sp_delta(self) -> int:
        """funcMaxSPDelta: the largest value of the function's pcsp table."""
        return max((i.sp_delta for i in self.insns), default=0)


@dataclass(frozen=True)
class DataSym:
    name: str
    addr: int
    size: int
    init: bytes
    ptrs: bool = False       # a global whose words the GC scans as pointers (precisely)


@dataclass(frozen=True)
class Image:
    """Where a program lives in memory beyond its code blocks (a real Go binary brings its own).

    regions: (base, size) to map for the program (page-aligned); text: the [lo, hi) range of its
    code (opt-in block/trace hooks are scoped to it); patches: (address, bytes) written after
    loading (jumps from runtime entry points into preemu's sentinels); traps: address -> name of
    runtime functions that must not be reached (INT3: a clear error naming the function);
    gc_roots: (address, size) of global words the GC scans precisely as pointers.
    """

    regions: tuple[tuple[int, int], ...]
    text: tuple[int, int]
    patches: tuple[tuple[int, bytes], ...] = ()
    traps: tuple[tuple[int, str], ...] = ()
    gc_roots: tuple[tuple[int, int], ...] = ()
    describe: str = ""                      # e.g. "Go binary prog (Go 1.27.3)"


def asm_image() -> Image:
    """The image of a program assembled from .s files: preemu's user text and data regions."""
    return Image(tuple((r.base, r.size) for r in memmap.USER_REGIONS), (memmap.TEXT.base, memmap.TEXT.end))


@dataclass
class Program:
    """A set of functions (and data buffers) at fixed addresses."""

    funcs: list[Func] = field(default_factory=list)
    data: list[DataSym] = field(default_factory=list)
    code: list[tuple[int, bytes]] = field(default_factory=list)   # (address, machine code) blocks to load
    image: Image = field(default_factory=asm_image)

    def __post_init__(self) -> None:
        self._reindex()

    def _reindex(self) -> None:
        self.funcs.sort(key=lambda f: f.start)
        self._starts = [f.start for f in self.funcs]
        self._insns = {i.addr: i for f in self.funcs for i in f.insns}
        self._by_name = {f.name: f for f in self.funcs}
        #: safepoint.is_async_safe_point's per-PC verdicts of its static checks (reset with the index)
        self.verdict_cache: dict = {}
        #: unwind's per-(frame kind, PC) steps, from the function tables alone (reset with the index)
        self.unwind_cache: dict = {}

    def merged(self, other: "Program") -> "Program":
        """Return a new Program holding this one's functions and `other`'s."""
        clash = set(self._by_name) & set(other._by_name)
        if clash:
            raise ValueError(f"symbols defined twice: {', '.join(sorted(clash))}")
        return Program(self.funcs + other.funcs, self.data + other.data, self.code + other.code, self.image)

    # --- findfunc and friends -------------------------------------------------------------
    def func_for(self, pc: int) -> Func | None:
        """findfunc: return the function containing pc, or None."""
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0 and pc < self.funcs[i].end:
            return self.funcs[i]
        return None

    def insn_at(self, pc: int) -> Insn | None:
        return self._insns.get(pc)

    def get_func(self, name: str) -> Func:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(name) from None

    def has_func(self, name: str) -> bool:
        return name in self._by_name

    def symbol(self, name: str) -> int:
        """Return the address of a function or data symbol."""
        if name in self._by_name:
            return self._by_name[name].start
        for d in self.data:
            if d.name == name:
                return d.addr
        raise KeyError(name)

    def unsafe_point(self, pc: int) -> int:
        """pcdatavalue(PCDATA_UnsafePoint): -2 when pc is marked unsafe, else -1 (safe)."""
        i = self._insns.get(pc)
        return gostructs.UNSAFE_POINT_UNSAFE if i is not None and i.unsafe else gostructs.UNSAFE_POINT_SAFE

    def unsafe_run(self, pc: int) -> tuple[Insn | None, Insn] | None:
        """The run of consecutive unsafe instructions pc belongs to, within its function: (the
        instruction just before the run, or None at the function's start; the run's last instruction).
        A pc that is not itself unsafe is a run of its own. None when pc is no instruction of a function."""
        f = self.func_for(pc)
        insns = f.insns if f is not None else ()
        idx = bisect.bisect_left(insns, pc, key=_insn_addr)
        if idx == len(insns) or insns[idx].addr != pc:
            return None
        start = end = idx
        if insns[idx].unsafe:
            while start > 0 and insns[start - 1].unsafe:
                start -= 1
            while end + 1 < len(insns) and insns[end + 1].unsafe:
                end += 1
        return (insns[start - 1] if start > 0 else None), insns[end]

    def describe_pc(self, pc: int) -> str:
        """Return 'func+off: insn  (file:line)' for reports."""
        f = self.func_for(pc)
        i = self._insns.get(pc)
        if f is None:
            return f"{pc:#x} (no function)"
        s = f"{f.name}+{pc - f.start:#x}"
        if i is not None:
            s += f": {i.text}  ({i.where})"
        return s

    def iter_insns(self):
        for f in self.funcs:
            yield from f.insns


def _insn_addr(insn: Insn) -> int:
    return insn.addr


def tests_write_barrier(insn: Insn | None) -> bool:
    """Whether insn is the CMP of the write-barrier flag that guards an unsafe run (a `.s` program names
    runtime.writeBarrier or its address; a Go binary's line says so in its source)."""
    if insn is None or insn.mnemonic != "cmp":
        return False
    flag = f"{memmap.WRITE_BARRIER_FLAG:#x}"
    return flag in insn.op_str or flag in insn.source or "writeBarrier" in insn.source


def func_offset(spec: str, what: str = "--at", error=ValueError) -> tuple[str, int]:
    """FUNC+OFF (decimal or 0x hex) or FUNC -> (FUNC, OFF); `error` names `what` when OFF is not a number.
    One syntax for every option that takes a code location (--at, --signal-at, --reg's symbols)."""
    name, plus, off = spec.partition("+")
    try:
        return name, int(off, 0) if plus else 0
    except ValueError:
        raise error(f"{what} {spec!r}: the offset {off!r} is not a number (write {name}+0x9 or {name}+9)") from None
