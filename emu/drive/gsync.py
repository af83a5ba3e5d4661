"""--gc at the goroutine's synchronous safe points: a GC cycle while G is stopped at a call, every frame precise.

An asynchronous preemption scans the interrupted frame (and asyncPreempt's saved registers) conservatively
(runtime/mgcmark.go:1079-1106), so a stale copy of a pointer in a dead register or slot keeps its object alive,
and a hidden-pointer bug (a uintptr that is the object's only reference across a safe point) shows or not
according to which registers the compiler left behind. At a synchronous safe point no frame is conservative:
the runtime stops G in a function's prologue, where the stack check (`CMPQ SP, 16(R14)`) finds stackguard0 ==
stackPreempt and calls morestack (cmd/internal/obj/x86/obj6.go stacksplit; runtime/asm_amd64.s morestack),
and newstack (stack.go:1110-1146) parks G with gopreempt_m, or preemptPark when suspendG asked for it
(gp.preemptStop). Every frame is then at a call, described by its stack map.

What preemu does, as preemptone's synchronous half would (proc.go:6931-6942 writes gp.stackguard0 =
stackPreempt): at each call site of F's package that G executes (F and the functions of F's package it calls
directly, transitively: where a user's pointers live), the first time G executes it and no cycle is running,
preemu sets G's stackguard0 to stackPreempt just before a call whose callee checks its stack. The callee's
prologue then enters runtime.morestack; preemu stops the process there (G has executed that many
instructions: the point's boundary) and makes a cycle due as at an asynchronous point (realgc.py). The
runtime's own stop request (preemptall, or suspendG in the concurrent mode) sends SIGURG, which lands in
morestack, an assembly function, where the handler declines (isAsyncSafePoint: no locals map,
preempt.go:447); morestack goes on to newstack, which parks G. A call to one of the runtime's allocation
entries (ALLOCATORS) is an "allocation" point, any other a "call" point: a cycle that natively starts in
mallocgc (its heap trigger, malloc.go's gcTrigger{kind: gcTriggerHeap}) scans the same frames, F's at the call.

A site G reaches while a cycle is running (the concurrent mode's cycles are long) waits for another chain
from the snapshot (realsweep.run_shard's rounds); in the concurrent mode G is then kept from its work until the
cycle ends (grequest._wait_out_cycle), so that what it freed is freed before G reads it.

Left out: call sites outside F's package (the runtime's own calls, other packages': their frames are
precise at every async point that lands in their callees too); a call site's later executions (one cycle
per site, at its first execution); calls whose target cannot be read before the call (none in Go's amd64
code: direct, register and memory-indirect calls are all read); the cycle through the runtime's heap
trigger itself (the allocation's prologue is used instead: the frames scanned are the same).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import capstone
from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from ..core import gostructs as gs
from ..goruntime.realgc import GC_OFF
from ..linux.regbatch import read_reg

#: the runtime's allocation entries a compiled Go function calls (runtime/malloc.go, slice.go, map*.go,
#: string.go, iface.go): a call to one is an "allocation" point
ALLOCATORS = frozenset(f"runtime.{n}" for n in (
    "mallocgc", "newobject", "newarray", "makeslice", "makeslicecopy", "growslice", "makemap", "makemap_small",
    "makechan", "concatstring2", "concatstring3", "concatstring4", "concatstring5", "concatstrings",
    "slicebytetostring", "stringtoslicebyte", "stringtoslicerune", "slicerunetostring", "intstring",
    "convT", "convTnoptr", "convTstring", "convTslice", "convT64", "convT32", "convT16", "mapassign",
    "mapassign_fast32", "mapassign_fast64", "mapassign_fast64ptr", "mapassign_faststr", "rawstring",
    "newproc", "makeBucketArray", "growWork"))

_STACK_CHECK = re.compile(r"qword ptr \[r14 \+ 0x10\]")          # g.stackguard0 (g in R14, ABIInternal)


@dataclass
class SyncStop:
    """G stopped in runtime.morestack, entered from the prologue of `callee`, called at `site`."""
    boundary: int
    site: int                     # the CALL instruction's address
    callee: str
    kind: str                     # "call" or "allocation"


def kind_of(callee: str) -> str:
    """"allocation" for the runtime's allocation entries (Go 1.26+ calls mallocgc's size-specialized variants,
    runtime.mallocgcSmallScanNoHeaderSC2 and the like, directly: malloc_generated.go), else "call"."""
    return "allocation" if callee in ALLOCATORS or callee.startswith("runtime.mallocgc") else "call"


def package_of(func: str) -> str:
    """The package path of a Go symbol: everything before the first dot after the last slash."""
    slash = func.rfind("/")
    dot = func.find(".", slash + 1)
    return func[:dot] if dot >= 0 else func


class SyncPoints:
    """The call sites of F's package that G executes, each a synchronous GC point once (see the module doc).
    Hooks: one on each call site, one on runtime.morestack; `take()` gives the stop the chain then serves."""

    def __init__(self, p, g: int, func: str, gc) -> None:
        self.p, self.g, self.gc = p, g, gc
        self.image = p.image
        self._md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._md.detail = True
        self._checks: dict[int, bool] = {}
        self.sites = self._call_sites(func)          # CALL address -> (operand kind, value)
        syms = self.image.symbols
        self.morestack = syms.get("runtime.morestack.abi0", syms.get("runtime.morestack", (0, 0)))[0]   # assembly: ABI0
        self.done: set[int] = set()                  # sites that had their cycle (over the sweep's chains)
        self.waiting: set[int] = set()               # sites G reached while a cycle was running (a later chain's)
        self.reached: set[int] = set()               # sites G executed (a call of a function that checks its stack)
        self.armed: tuple[int, int] | None = None    # (site, callee entry) while G heads for morestack
        self.stop: SyncStop | None = None
        self.clock = None
        self._hooks: list = []

    # --- static: the sites -------------------------------------------------------------------------------
    def _call_sites(self, func: str) -> dict[int, tuple]:
        """Every CALL in F and in the functions of F's package F reaches by direct calls."""
        pkg = package_of(func)
        syms = self.image.symbols
        todo, seen, out = [func], set(), {}
        while todo:
            name = todo.pop()
            if name in seen or name not in syms:
                continue
            seen.add(name)
            addr, size = syms[name]
            for i in self._md.disasm(self.image.text_bytes(addr, size), addr):
                if i.mnemonic != "call":
                    continue
                op = i.operands[0]
                if op.type == capstone.x86.X86_OP_IMM:
                    out[i.address] = ("imm", op.imm)
                    callee = self.image.func_at(op.imm)
                    if callee and package_of(callee[0]) == pkg:
                        todo.append(callee[0])
                elif op.type == capstone.x86.X86_OP_REG:
                    out[i.address] = ("reg", i.reg_name(op.reg))
                elif op.type == capstone.x86.X86_OP_MEM and op.mem.base and not op.mem.index \
                        and op.mem.base != capstone.x86.X86_REG_RIP:
                    out[i.address] = ("mem", (i.reg_name(op.mem.base), op.mem.disp))
        return out

    def checks_stack(self, entry: int) -> bool:
        """Whether the function at `entry` starts with the stack check (obj6.go stacksplit): a compare
        against g.stackguard0 in its first four instructions."""
        ok = self._checks.get(entry)
        if ok is None:                      # (text_bytes is empty outside the text: no check there)
            first4 = itertools.islice(self._md.disasm(self.image.text_bytes(entry, 32), entry), 4)
            ok = self._checks[entry] = any(_STACK_CHECK.search(i.op_str) for i in first4)
        return ok

    # --- a chain ---------------------------------------------------------------------------------------
    def begin(self, clock) -> None:
        """A chain starts: hook the sites not yet served and morestack."""
        self.clock, self.armed, self.stop = clock, None, None
        uc = self.p.uc
        for a in self.sites:
            if a not in self.done:
                self._hooks.append(uc.hook_add(UC_HOOK_CODE, self._on_call, None, a, a))
                uc.ctl_remove_cache(a, a + 1)
        if self.morestack and self._hooks:
            self._hooks.append(uc.hook_add(UC_HOOK_CODE, self._on_morestack, None, self.morestack, self.morestack))
            uc.ctl_remove_cache(self.morestack, self.morestack + 1)

    def end(self) -> None:
        for h in self._hooks:
            self.p.uc.hook_del(h)
        self._hooks = []
        self.armed = self.stop = self.clock = None

    def take(self) -> SyncStop | None:
        s, self.stop = self.stop, None
        return s

    def _is_g(self) -> bool:
        c = self.clock
        return (c is not None and c.counting()
                and self.p.read_u64(read_reg(self.p.uc, X.UC_X86_REG_FS_BASE) - 8) == self.g)

    def _target(self, uc, how: tuple) -> int:
        kind, v = how
        if kind == "imm":
            return v
        if kind == "reg":
            return read_reg(uc, getattr(X, f"UC_X86_REG_{v.upper()}"))
        base, disp = v
        return self.p.read_u64((read_reg(uc, getattr(X, f"UC_X86_REG_{base.upper()}")) + disp) & (1 << 64) - 1)

    def _on_call(self, uc, addr, size, _) -> None:
        if (self.armed is not None or self.stop is not None or addr in self.done or self.p.counter.stopping(addr)
                or not self._is_g()):
            return
        target = self._target(uc, self.sites[addr])
        if not self.checks_stack(target):
            return
        self.reached.add(addr)
        if self.gc.cycle is not None or self.gc.concurrent and self.gc.phase() != GC_OFF and self.gc.scanned_this_cycle():
            self.waiting.add(addr)          # G's stack was scanned in the running cycle: a later chain's site
            return
        self.armed = (addr, target)
        f = self.p.structs.g["stackguard0"]
        self.p.write(self.g + f.offset, gs.STACK_PREEMPT.to_bytes(f.size, "little"))

    def _on_morestack(self, uc, addr, size, _) -> None:
        if self.armed is None or self.p.counter.stopping(addr) or not self._is_g():
            return
        site, _target = self.armed
        self.armed = None
        self.done.add(site)
        callee = (self.image.func_at(self.p.read_u64(read_reg(uc, X.UC_X86_REG_RSP))) or ("?", 0))[0]
        clock, counter = self.clock, self.p.counter
        k = clock.boundary_at(addr)
        self.stop = SyncStop(k, site, callee, kind_of(callee))
        clock.stop_at = k                   # slice_end sees G's count at k: ready, as at a chosen boundary
        counter.stop_here(False)            # before morestack's first instruction runs
