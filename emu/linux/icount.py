"""Exact instruction counting at block speed: a UC_HOOK_BLOCK callback written in x86-64 machine code.

Virtual time is an instruction count, so every slice must know exactly how many instructions ran.
A per-instruction callback is exact but makes the engine call out at every instruction (and walk every
code hook at each one); `emu_start(count=)` does the same internally. This counter is called once per
translated block instead. The callback (assembled with Keystone into an executable page, registered with
`uc_hook_add` through ctypes: no compiler at run time) adds the previous block's instruction count to
`executed` when the next block starts, and looks the new block's count up in a table keyed by (address,
size); a miss calls back into Python once, which decodes the block with Capstone. When the new block
would take `executed` past `limit`, it stops the engine before the block; the run loop (`Process`) then
runs that block again with `until` = the instruction where the limit falls (`tail`): Unicorn translates
the block cut short there for that one run, so a slice still ends on the exact instruction a
per-instruction counter would stop at, and no block keeps a call-out. The block being run is
remembered (address and size), so wherever the engine stops inside it (a syscall, a fault, a code hook)
the exact count is `executed` + the instructions of the block before that PC (`settle`).

Counting semantics are those of the per-instruction counter this replaces, so counts and virtual time are
unchanged: an instruction a code hook stops the engine at, or one that faults, has been counted
(`count_current`), except where the hook says otherwise (`stop_here(False)`); a REP iteration is one
instruction (QEMU ends a block after each iteration).
"""
from __future__ import annotations

import bisect
import ctypes
import functools
import mmap

from unicorn import UC_HOOK_BLOCK, UcError
from unicorn import x86_const as X
from unicorn.unicorn_py3.unicorn import uclib

from ..engine.capi import address_of
from ..engine.native import emu_start
from ..engine.native import loaded as _native_lib
from ..engine.nativehook import add_hook
from ..engine.x86decode import decoder
from .regbatch import read_reg, remove_cache, request_cache

# rdi = uc, rsi = address, edx = size, rcx = user (System V AMD64 ABI). user -> _Counter.
_CALLBACK_ASM = """
    mov rax, qword ptr [rcx + 24]
    add qword ptr [rcx], rax
    mov qword ptr [rcx + 24], 0
    mov r8, rsi
    shr r8, 5
    xor r8, rsi
    and r8, qword ptr [rcx + 56]
    shl r8, 4
    add r8, qword ptr [rcx + 48]
    cmp qword ptr [r8], rsi
    jne second
    cmp dword ptr [r8 + 8], edx
    jne second
    mov eax, dword ptr [r8 + 12]
    jmp have
second:
    cmp qword ptr [r8 + 16], rsi
    jne miss
    cmp dword ptr [r8 + 24], edx
    jne miss
    mov eax, dword ptr [r8 + 28]
have:
    mov qword ptr [rcx + 32], rsi
    mov r9d, edx
    mov qword ptr [rcx + 40], r9
    mov r9, qword ptr [rcx]
    add r9, rax
    cmp r9, qword ptr [rcx + 8]
    ja over
    mov qword ptr [rcx + 24], rax
    ret
over:
    cmp qword ptr [rcx + 72], 0
    jne tail
    mov qword ptr [rcx + 80], 1
    jmp qword ptr [rcx + 16]
tail:
    mov qword ptr [rcx + 24], rax
    ret
miss:
    push rdi
    push rcx
    push rsi
    push rdx
    sub rsp, 8
    mov rdi, rsi
    mov esi, edx
    call qword ptr [rcx + 64]
    add rsp, 8
    pop rdx
    pop rsi
    pop rcx
    pop rdi
    mov eax, eax
    jmp have
"""

TABLE_BITS = 18
#: The table is 2-way: a block's hash picks a pair of entries (the mask clears bit 0) and either may hold it.
#: Direct-mapped, two hot blocks of one loop that hash alike evicted each other at every iteration (seen:
#: 689 misses each for two of the GC's blocks in 100 cycles).
PAIR_MASK = (1 << TABLE_BITS) - 2


def pair_index(addr: int) -> int:
    """The first of the two entries block `addr` may occupy (the callback computes the same)."""
    return ((addr >> 5) ^ addr) & PAIR_MASK
_U64 = (1 << 64) - 1
_FILL = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32)


class _Counter(ctypes.Structure):
    """The callback's state; the last three fields are for the vDSO (vdso.py), which reads this page."""
    _fields_ = [("executed", ctypes.c_uint64), ("limit", ctypes.c_uint64), ("stop", ctypes.c_void_p),
                ("pending", ctypes.c_uint64), ("blk_addr", ctypes.c_uint64), ("blk_size", ctypes.c_uint64),
                ("table", ctypes.c_void_p), ("mask", ctypes.c_uint64), ("fill", ctypes.c_void_p),
                ("tail", ctypes.c_uint64), ("crossed", ctypes.c_uint64),
                ("clock_base", ctypes.c_uint64), ("ns_per_insn", ctypes.c_uint64), ("realtime_offset", ctypes.c_uint64)]


class _Entry(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("size", ctypes.c_uint32), ("count", ctypes.c_uint32)]


class InsnCounter:
    """Counts executed instructions on one Uc; `arm(n)` makes the engine stop after n more (see `tail`)."""

    UNLIMITED = (1 << 64) - 1

    def __init__(self, uc) -> None:
        self._uc = uc
        # the table (4 MiB) in pages the host kernel zeroes when first touched: a short run touches few of them
        self._table_pages = mmap.mmap(-1, ctypes.sizeof(_Entry) << TABLE_BITS)
        self._table = (_Entry * (1 << TABLE_BITS)).from_buffer(self._table_pages)
        self._fill = _FILL(self._on_miss)               # kept alive with the counter
        self._md = decoder()                            # Capstone's library (engine/x86decode.py)
        self._blocks: dict[tuple[int, int], list[int]] = {}     # (address, size) -> instruction addresses
        self._longest: dict[int, tuple[int, list[int]]] = {}   # address -> the longest block decoded there
        # the state lives alone in a page of its own, so that the vDSO can map it into the guest
        self.page = mmap.mmap(-1, mmap.PAGESIZE)
        self.page_address = ctypes.addressof(ctypes.c_char.from_buffer(self.page))
        self._c = _Counter.from_buffer(self.page)
        self._c.executed, self._c.limit = 0, self.UNLIMITED
        self._c.stop = address_of(uclib.uc_emu_stop)
        self._c.table, self._c.mask = ctypes.addressof(self._table), PAIR_MASK
        self._c.fill = address_of(self._fill)
        self._hh = add_hook(uc, UC_HOOK_BLOCK, _CALLBACK_ASM, ctypes.addressof(self._c), "the instruction counter")
        self.settled: int | None = 0
        self.armed = self.UNLIMITED
        self._stop_count_current: bool | None = None
        self._resume = False
        native = _native_lib()
        if native is not None:      # the two questions code hooks ask, in C with no Python frame (_native.c)
            head = ctypes.addressof(self._c)
            self.stopping = functools.partial(native.counter_stopping, head, self._blocks, self._insns)
            self.at = functools.partial(native.counter_at, head, self._blocks, self._insns)

    # --- blocks ---------------------------------------------------------------------------------------
    def _insns(self, addr: int, size: int) -> list[int]:
        """The addresses of the instructions of the block [addr, addr + size), decoded once. A block cut
        short (a tail, ended by the engine at an instruction of a longer block from the same address) is
        that block's prefix: derived, not decoded, and not kept (each tail cuts somewhere else)."""
        key = (addr, size)
        got = self._blocks.get(key)
        if got is None:
            longest = self._longest.get(addr)
            if longest is not None and longest[0] > size:
                whole = longest[1]
                return whole[:bisect.bisect_left(whole, addr + size)]
            code = bytes(self._uc.mem_read(addr, size))
            got = self._blocks[key] = [a for a, _, _, _ in self._md.disasm_lite(code, addr)]
            self._longest[addr] = (size, got)
        return got

    def _on_miss(self, addr: int, size: int) -> int:
        if self._c.tail:                # a block cut short for one run: keep the whole block's entry
            return len(self._insns(addr, size))
        try:                            # the engine's own count for the block it is about to run
            pc, n, tb_size = request_cache(self._uc, addr)
        except UcError:
            tb_size = -1
        if tb_size != size:
            n = len(self._insns(addr, size))
        i = pair_index(addr)
        first, second = self._table[i], self._table[i + 1]
        if first.size and not second.size:
            e = second
        else:                           # the newest in the first entry, the one it replaces in the second
            if first.size:
                second.addr, second.size, second.count = first.addr, first.size, first.count
            e = first
        e.addr, e.size, e.count = addr, size, n
        return n

    def _index(self, pc: int) -> int:
        """Instructions of the current block before `pc`."""
        c = self._c
        return bisect.bisect_left(self._insns(c.blk_addr, c.blk_size), pc)

    # --- the run loop's side -------------------------------------------------------------------------------
    def run(self, begin: int) -> int:
        """Run from `begin` until the armed limit (exactly) or until something stops the engine; return the
        instructions executed (UcError propagates, with the count settled as a fault's)."""
        uc = self._uc
        try:
            while True:
                self._resume = False
                emu_start(uc, begin, _U64, 0, 0)
                if self.crossed():           # the limit falls inside the next block: run it up to there
                    tail = self.tail()
                    if tail is not None:
                        self._run_tail(*tail)
                if not self._resume:
                    break
                c = self._c                  # a hook moved RIP out of a cut-short block (cut_after): the
                c.executed += c.pending      # blocks after it are whole, so count on from there
                c.pending = c.blk_size = c.blk_addr = 0
                begin = read_reg(uc, X.UC_X86_REG_RIP)
        except UcError:
            self.settle(read_reg(uc, X.UC_X86_REG_RIP), faulted=True)
            raise
        return self.settle(read_reg(uc, X.UC_X86_REG_RIP))

    def _run_tail(self, block: int, until: int) -> None:
        """Run `block` only up to `until`: the engine stops there when it translates the block anew (its
        cached translation is dropped first; the cut-short one is not kept). A code hook
        would do too, but its call-out stays in the block after the hook is deleted (measured: a sort ran
        at half speed after 309 of them)."""
        uc = self._uc
        remove_cache(uc, block, block + 1)
        try:
            emu_start(uc, block, until, 0, 0)  # the engine drops the cut-short translation itself as the run ends
        finally:                            # (the blocks over `until` - 1: its exits, softmmu/cpus.c; pinned in
            self.end_tail()                 # tests/test_engine_pins.py)

    def set_clock(self, base_ns: int, ns_per_insn: int, realtime_offset: int) -> None:
        """What the vDSO reads: virtual time at the slice's start, ns per instruction, the REALTIME offset."""
        c = self._c
        c.clock_base, c.ns_per_insn, c.realtime_offset = base_ns, ns_per_insn, realtime_offset & _U64

    def arm(self, limit: int) -> None:
        """Reset the count to zero and stop the engine once `limit` instructions have executed."""
        c = self._c
        c.executed, c.pending, c.crossed, c.tail, c.blk_addr, c.blk_size = 0, 0, 0, 0, 0, 0
        c.limit = self.armed = min(limit, self.UNLIMITED)
        self.settled = None
        self._stop_count_current = None

    @property
    def limit(self) -> int:
        return self._c.limit

    def lower_limit(self, n: int) -> None:
        self._c.limit = min(self._c.limit, n)

    def restore_limit(self) -> None:
        """Back to the limit the slice was armed with (a lowered one no longer applies)."""
        self._c.limit = self.armed

    def crossed(self) -> bool:
        """The engine stopped before a block that would pass the limit (the tail is still to run)."""
        return bool(self._c.crossed)

    def tail(self) -> tuple[int, int] | None:
        """After `crossed`: (block address, address of the instruction where the limit falls), or None when
        the limit falls on the block's first instruction (nothing more to run). Sets tail mode."""
        c = self._c
        c.crossed = 0
        r = c.limit - c.executed
        insns = self._insns(c.blk_addr, c.blk_size)
        if r <= 0:
            return None
        c.tail = 1
        return c.blk_addr, insns[r]

    def end_tail(self) -> None:
        self._c.tail = 0

    def stop_here(self, count_current: bool) -> None:
        """A code hook stops the engine before the instruction it runs for; count it as executed or not."""
        self._stop_count_current = count_current
        self._uc.emu_stop()

    def settle(self, pc: int, faulted: bool = False) -> int:
        """The exact count of the slice that just stopped with RIP = pc."""
        c = self._c
        if c.crossed or (c.pending == 0 and c.blk_size == 0):
            n = c.executed                   # stopped before a block
        elif faulted and not c.blk_addr <= pc < c.blk_addr + c.blk_size:
            n = c.executed + c.pending       # a fetch fault: the block ran to its jump to unmapped memory
        elif self._stop_count_current is not None or faulted:
            n = c.executed + self._index(pc) + (1 if faulted or self._stop_count_current else 0)
        else:                                # a syscall's stop (RIP past it) or the end of a block
            n = c.executed + self._index(pc)
        c.executed, c.pending = n, 0
        self.settled = n
        return n

    # --- hooks' side -----------------------------------------------------------------------------------
    def at(self, pc: int) -> int:
        """Inside a code hook for the instruction at `pc`: the count with that instruction counted."""
        return self._c.executed + self._index(pc) + 1

    def cut_after(self, pc: int) -> None:
        """A code hook for `pc` moves RIP elsewhere (emulating the instruction): the rest of the current
        block does not run, so only its instructions up to `pc` count. In a tail the run then leaves the
        block that was cut short for the limit, so it stops and `run` goes on from the new RIP."""
        self._c.pending = self._index(pc) + 1
        if self._c.tail:
            self._resume = True
            self._uc.emu_stop()

    def block_ran(self) -> None:
        """Inside an interrupt hook raised after the current block's last instruction (a single-step #DB):
        the whole block ran, wherever RIP points now (a taken jump's target)."""
        c = self._c
        c.executed += c.pending
        c.pending = c.blk_size = c.blk_addr = 0

    def block_end(self) -> int:
        """Inside a code hook: the count once the current block has run to its end."""
        return self._c.executed + self._c.pending

    def stop_before(self, pc: int) -> None:
        """Inside a block hook added after the counter's (Unicorn calls block hooks in the order added, and none
        after one that stops the engine): end the slice just before the instruction at `pc` of the block about
        to run, as when the limit falls there: the engine stops before the block and `run` runs it up to `pc`.
        In a tail (a limit fell inside the block, so this is the first call the hook gets for it) the block
        cut short is run again, cut at `pc`."""
        c = self._c
        c.limit, c.pending, c.crossed = c.executed + self._index(pc), 0, 1
        if c.tail:
            c.crossed, self._resume = 0, True
        self._uc.emu_stop()

    def stopping(self, pc: int) -> bool:
        """Inside a code hook: the engine stops before this instruction (the limit is reached)."""
        return self._c.executed + self._index(pc) >= self._c.limit

    @property
    def executed(self) -> int:
        """The count so far: settled after a slice, else at the current instruction (inside a hook)."""
        if self.settled is not None:
            return self.settled
        return self.at(read_reg(self._uc, X.UC_X86_REG_RIP))
