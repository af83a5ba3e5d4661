"""The GC side of a World: allocation, a full GC at an asynchronous preemption, the use-after-free
watch, and the stack shrink that the GC must defer (mirrors mgcmark.go scanstack's shrink/defer and
stack.go isShrinkStackSafe/shrinkstack). Mixed into gmp.World, whose fields it uses.
"""
from __future__ import annotations

from ..core import gostructs as gs
from . import gcscan, goslice
from ..core import memmap
from .faults import GuestFaultInHook
from .machine import Machine
from ..core.program import decode_type
from .stack import copystack
from .unwind import UnwindError, unwind


_U64 = (1 << 64) - 1


def would_shrink(lo: int, hi: int, sp: int) -> bool:
    """shrinkstack's test (stack.go:1313-1328): the half is at least fixedStack and
    used = hi - sp + stackNosplit is below a quarter of the stack."""
    return (hi - lo) // 2 >= gs.FIXED_STACK and hi - sp + gs.STACK_NOSPLIT < (hi - lo) // 4


class WorldGC:
    """Allocation and GC for a World (uses its machine, heap, g and stack fields)."""

    _gc_globals: list[tuple[int, int]] | None = None      # run_gc's global roots, listed at the first GC
    _slices: goslice.SliceRuntime | None = None            # the slice runtime, made at its first call

    def _newobject(self, rax: int) -> int:
        """runtime.newobject(typ): RAX is a `;@type` descriptor's address (size and pointer words) or,
        for an untyped object, a size."""
        typ = next((decode_type(d.init) for d in self.program.data if d.addr == rax), None)
        size, words = typ if typ is not None else (rax, None)
        return self._heap_alloc("runtime.newobject", size, words)

    def _alloc(self, size: int | None, typ: int) -> int:
        """mallocgc(size, typ, needzero) / newobject(typ) of a real Go binary: size None = typ.Size_;
        typ nil is a pointer-free (noscan) object, as in mallocgc."""
        t = self.program.binary.go_type(typ) if typ else None
        return self._alloc_typed("runtime.mallocgc", t.size if size is None else size, t)

    def _alloc_typed(self, call: str, size: int, t) -> int:
        """An object of `size` bytes holding elements of GoType `t` (None: no pointers). heapSetType's
        tiling (mbitmap.go:34-47): word w is a pointer iff r = 8w mod Size_ < PtrBytes and the type's
        mask has bit r/8."""
        words: tuple[int, ...] = ()
        if t is not None and t.size and t.ptrbytes:
            mask = set(t.ptr_words)
            words = tuple(w for w in range(size // 8)
                          if (8 * w) % t.size < t.ptrbytes and (8 * w) % t.size // 8 in mask)
        return self._heap_alloc(call, size, words)

    def _go_call(self, name: str, args: list[int]) -> tuple[int, ...]:
        """runtime.makeslice, growslice, ... (goslice.py) and runtime.rand of a real Go binary."""
        if name == "rand":
            return (self._rand(),)
        rt = self._slices
        if rt is None:
            binary = self.program.binary
            zerobase = binary.symbol("runtime.zerobase")
            rt = self._slices = goslice.SliceRuntime(
                goslice.SizeClasses.from_binary(binary), binary.go_type,
                self._alloc_typed, self.machine.read, self.machine.write, zerobase[0] if zerobase else 0,
                self._copy_access)
        return rt.call(name, args)

    def _heap_alloc(self, call: str, size: int, words) -> int:
        """Allocate for the runtime function `call` (a full arena is a guest fault naming it) and watch
        the heap from its first object on."""
        try:
            obj = self.heap.alloc(size, words)
        except MemoryError as e:
            raise GuestFaultInHook(f"{call}({size}): {e}") from None
        self._sync_heap_watch()
        return obj

    def _copy_access(self, kind: str, addr: int) -> None:
        """A copy made by the slice runtime touches the heap as the guest's own accesses do (the heap watch
        sees those): use-after-free and last use, at the PC of the CALL (5 bytes before the return address)."""
        if self.gc_enabled and self.heap.base <= addr < self.heap.next:
            m = self.machine
            ret = m.read_u64(m.reg("RSP"))
            self._heap_access(kind, addr, ret - 5 if m.read(ret - 5, 1) == b"\xe8" else ret)

    def _rand(self) -> int:
        """runtime.rand (rand.go): Go draws from the running M's chacha8 state, seeded at random when the
        process starts, so no value is promised. Here one splitmix64 generator in preemu's memory serves
        every M: a goroutine resumed on the other M after a preemption draws what it would have drawn
        uninterrupted (map seeds, iteration starts), so runs stay deterministic and comparable."""
        m = self.machine
        state = (m.read_u64(memmap.RAND_STATE) + 0x9E3779B97F4A7C15) & _U64
        m.write_u64(memmap.RAND_STATE, state)
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _U64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _U64
        return z ^ (z >> 31)

    def _sync_heap_watch(self) -> None:
        """GC mode watches heap accesses (use-after-free, last use) exactly while the heap holds objects:
        from the first allocation of a run, and from a snapshot taken after one (Machine.heap_watch)."""
        if self.gc_enabled:
            self.machine.heap_watch(self.heap.next > self.heap.base)

    def _heap_access(self, kind: str, addr: int, pc: int) -> None:
        o = self.heap.find(addr)
        if o is not None:
            self._last_access[o.base] = self.gc_cycles
        if o is not None and o.freed_at is not None and o.base not in self._uaf_seen:
            self._uaf_seen.add(o.base)
            self.uaf.append((o.base, o.size, kind, addr, pc, o.freed_at))

    def retained_dead(self) -> list[int]:
        """Objects a conservative scan kept alive although the program never touched them again."""
        return sorted(b for b, c in self._cons_at.items() if self._last_access.get(b, -1) < c)

    def _shrinkstack(self) -> None:
        """shrinkstack (runtime/stack.go:1286): halve the stack unless the half would be below
        fixedStack (:1317) or `used` -- everything down to SP plus stackNosplit (:1326) -- is at
        least a quarter of it."""
        self.g.set("preemptShrink", 0)
        lo, hi = self.stack_lo, self.stack_hi
        if not would_shrink(lo, hi, self.machine.reg("RSP")):
            return
        self.stack_lo, self.stack_hi = copystack(self.machine, self.g, lo, hi, self.stack_slot_base, (hi - lo) // 2,
                                                 getattr(self.program, "binary", None))
        self.stack_moves.append((lo, hi, self.stack_lo, self.stack_hi))
        self.shrinks += 1

    def run_gc(self, machine: Machine) -> None:
        """A full GC while the goroutine sits in asyncPreempt2: scan its stack, mark, sweep.

        Stack shrinking is refused while gp.asyncSafePoint is set (isShrinkStackSafe; the World sets
        it from the asyncPreempt2 trap until after xRegRestore) and deferred through gp.preemptShrink
        to the next synchronous preemption.
        """
        try:
            frames = unwind(machine.all, machine.read_u64, machine.rsp(), machine.pc)
        except UnwindError as e:
            raise GuestFaultInHook(f"GC stack scan cannot unwind: {e}") from None
        xregs = None
        g = self.g.f
        if self.layout.xreg_slots:
            block = g["xRegs.state"][0]
            xregs = (block, gs.XREGS_SIZE) if block else None
        globals_ = self._gc_globals
        if globals_ is None:          # the data/bss pointer words: fixed for the program, thousands in a Go binary
            globals_ = self._gc_globals = ([(d.addr, d.size) for d in self.program.data if d.ptrs]
                                           + list(self.program.image.gc_roots))
        res = gcscan.scan(machine.read, self.heap, machine.all, frames, self.stack_lo, self.stack_hi, globals_,
                          xregs, self.scanner)
        freed = gcscan.sweep_heap(self.heap, res.marked, machine.write, self.current_boundary)
        self.last_gc = (frames, res, freed)          # what `preemu explain` shows of this cycle
        self.gc_cycles += 1
        self.retained_conservatively |= res.conservative_only
        for b in res.conservative_only:
            self._cons_at[b] = self.gc_cycles       # kept alive only conservatively by GC number gc_cycles
        # scanstack (mgcmark.go:944-950): isShrinkStackSafe is false while asyncSafePoint is set
        # (stack.go:1245), so the shrink is deferred -- preemptShrink is set whether or not
        # shrinkstack would then find anything to shrink.
        if g["asyncSafePoint"][0]:
            g["preemptShrink"][0] = 1
            self.shrink_deferred += 1
        else:
            self._shrinkstack()
