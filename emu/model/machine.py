"""The sole owner of the Unicorn engine: memory, registers, hooks and runs with instruction budgets.

Models one x86-64 CPU (an M's thread) in a Go-like address space (memmap). Runtime sentinels
(asyncPreempt2, goexit, morestack) trap with INT3 into one interrupt hook; the only code hooks
are scoped to the stub's RET instructions (sweeps only). All hooks are installed before the first
emu_start (Unicorn #2200: hooks added after translation may never
fire). Normal runs use `count=` budgets; no per-instruction Python hook exists outside opt-in
tracing. Every UcError becomes a Fault here (faults.py).

Here: building the machine, the registers and contexts through the C fast path, and runs. The
mixins hold the rest: hostmem.py (mapping and host memory), hooks.py (the Unicorn hooks and the
STOP_* reasons), chainrun.py (a run and the register work around it in one call into the engine, for
the sweep), faults.py (Fault and how each failure becomes one).
"""
from __future__ import annotations

import ctypes
from typing import Callable

import unicorn
import unicorn.x86_const as X
from unicorn.unicorn_py3.unicorn import uclib as _uclib

from ..core import dump, memmap, regs
from ..engine.capi import save_context, unconverted
from ..engine.pagetable import PageTable
from . import rtcode
from .chainrun import ChainedRunsMixin
from .faults import FaultMixin, GuestFaultInHook
from .hooks import STOP_COUNT, HooksMixin
from .hostmem import HostMemoryMixin
from ..core.program import Program
from ..core.structref import StructRef

_emu_start = unconverted(_uclib.uc_emu_start)
_reg_read, _reg_write = unconverted(_uclib.uc_reg_read), unconverted(_uclib.uc_reg_write)
_reg_read_batch = unconverted(_uclib.uc_reg_read_batch)
_ZERO64 = ctypes.c_uint64(0)
_PORTABLE_EXTRA = ("FS_BASE", "GS_BASE", "MXCSR", "FPCW", "FPSW")


class Machine(HostMemoryMixin, HooksMixin, ChainedRunsMixin, FaultMixin):
    """One emulated CPU with the whole guest address space mapped."""

    def __init__(self, program: Program, stub: Program, layout_name: str,
                 on_async_preempt2: Callable[["Machine"], bool] | None = None,
                 on_morestack: Callable[["Machine"], bool] | None = None, stub_ret_hooks: bool = True):
        self.program = program
        self.stub = stub
        self.runtime = rtcode.runtime_program(layout_name)
        self.all = program.merged(stub).merged(self.runtime)
        self.uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        self.pages = PageTable(self.uc)      # stores run at full speed (engine/pagetable.py)
        self._init_fast_path()
        self.traps = dict(program.image.traps)     # runtime functions preemu does not model: reaching one is an error
        self.text = program.image.text
        self._map_image(program)
        self._mapped_stacks: set[int] = set()
        self.on_async_preempt2 = on_async_preempt2
        self.on_morestack = on_morestack
        self.stop_reason = STOP_COUNT
        self.write_barrier_calls = 0
        self.async_preempt2_calls = 0      # how often a stub reached asyncPreempt2 (a stub must call it)
        # trap_handler(machine, sentinel name) -> None (go on) | "stop" | "park"; overrides the
        # on_* callbacks (the scheduler uses it). "park" saves the context in self.parked.
        self.trap_handler: Callable[["Machine", str], str | None] | None = None
        self.on_newobject: Callable[[int], int] | None = None      # runtime.newobject: size -> pointer
        # mallocgc / Go's newobject: (size, *abi.Type or 0) -> pointer (a real Go binary's allocations)
        self.on_alloc: Callable[[int, int], int] | None = None
        # makeslice, growslice, ... of a real Go binary: (name, [RAX, RBX, RCX, RDI, RSI, R8, R9]) -> results
        self.on_go_call: Callable[[str, list[int]], tuple[int, ...]] | None = None
        self.parked: tuple[str, object] | None = None
        self.stub_ret_armed = False
        stub_func = stub.funcs[0]
        self.stub_entry = stub.symbol("asyncPreempt") if stub.has_func("asyncPreempt") else stub_func.start
        self.stub_rets = [i.addr for f in stub.funcs for i in f.insns if i.mnemonic.startswith("ret")]
        self.stub_ret_set = frozenset(self.stub_rets)
        #: sweep.Sweeper's counted stub run: (instructions to the asyncPreempt2 sentinel, from past its
        #: INT3 to the RET), learned from this machine's first stub run; None: not yet; False: never
        self.stub_counts: tuple[int, int] | None | bool = None
        self.uc.hook_add(unicorn.UC_HOOK_INTR, self._hook_intr)
        if stub_ret_hooks:   # only sweeps need them; each code hook slows count= runs (see rtcode)
            for a in self.stub_rets:
                self.uc.hook_add(unicorn.UC_HOOK_CODE, self._hook_stub_ret, begin=a, end=a)
        self._trace_hook = None
        self._heap_hook = self._heap_hook_fn = None      # see heap_watch
        self.describe_address: Callable[[int], str | None] | None = None   # set by the owner of the stacks

    def _init_fast_path(self) -> None:
        """The hot path calls Unicorn's C API directly through ctypes with preallocated buffers: the
        Python binding's per-call conversions (buffer allocation, register class lookup) cost 2-4x
        the call itself. Relies on the pinned unicorn 2.1.4 binding (uclib, Uc._uch, _hook_exception)."""
        self._h = self.uc._uch
        self._host: dict[int, list] = {}       # chunk -> [(base, end, host buffer, ctypes anchor)]
        self._u64_views: dict[int, object] = {}    # addr -> field_view(addr, 8) (read_u64/write_u64)
        self._structs: dict[tuple[int, int], StructRef] = {}    # (base, id(field table)) -> StructRef
        self._u64 = ctypes.c_uint64()
        self._u64_ref = ctypes.byref(self._u64)
        self._begin, self._count = ctypes.c_uint64(), ctypes.c_size_t()     # uc_emu_start's arguments
        self.in_slice = self.interrupted = self.interrupt_raises = False    # Ctrl-C (engine/interrupt.py)
        self._rbuf = ctypes.create_string_buffer(4096)
        self._rbuf_addr = ctypes.addressof(self._rbuf)
        # one batched read fills a dump record, and RIP
        n = len(regs.DUMPED) + 1
        self._dump_n = n
        self._dump_ids = (ctypes.c_int32 * n)(*[r.uc_id for r in regs.DUMPED], regs.RIP.uc_id)
        self._dump_buf = ctypes.create_string_buffer(dump.SIZE)
        self._dump_rip = ctypes.c_uint64()
        self._dump_addr = base = ctypes.addressof(self._dump_buf)
        self._dump_ptrs = (ctypes.c_void_p * n)(*[base + dump.OFFSETS[r.name] for r in regs.DUMPED],
                                                 ctypes.addressof(self._dump_rip))
        self._init_chained_runs()

    def stop(self) -> None:
        """Stop the run in progress (from inside a hook): run() returns before the next block."""
        _uclib.uc_emu_stop(self._h)

    # --- registers ------------------------------------------------------------------------
    def _reg64(self, uc_id: int) -> int:
        st = _reg_read(self._h, uc_id, self._u64_ref)
        if st:
            raise unicorn.UcError(st)
        return self._u64.value

    def _set_reg64(self, uc_id: int, value: int) -> None:
        self._u64.value = value & 0xFFFF_FFFF_FFFF_FFFF
        st = _reg_write(self._h, uc_id, self._u64_ref)
        if st:
            raise unicorn.UcError(st)

    def reg(self, name: str) -> int:
        r = regs.lookup(name)
        return self._reg64(r.uc_id) if r.size == 8 else self.uc.reg_read(r.uc_id)

    def set_reg(self, name: str, value: int) -> None:
        r = regs.lookup(name)
        if r.size == 8:
            self._set_reg64(r.uc_id, value)
        else:
            self.uc.reg_write(r.uc_id, value & ((1 << (8 * r.size)) - 1))

    @property
    def pc(self) -> int:
        return self._reg64(X.UC_X86_REG_RIP)

    def rsp(self) -> int:
        return self._reg64(X.UC_X86_REG_RSP)

    def set_rsp(self, value: int) -> None:
        self._set_reg64(X.UC_X86_REG_RSP, value)

    def set_rip(self, value: int) -> None:
        self._set_reg64(X.UC_X86_REG_RIP, value)

    def set_fs_base(self, value: int) -> None:
        """Load FS_BASE (an M's TLS); inside async_preempt2_here, the next chained run loads it."""
        if self._fs_deferred:
            self._fs_pending = value
        else:
            self._set_reg64(X.UC_X86_REG_FS_BASE, value)

    def save_context(self, into=None):
        """Return the CPU context; with `into` (an earlier context), overwrite that one instead of
        allocating (the sweep keeps one per run)."""
        return save_context(self.uc, into)

    def restore_context(self, ctx) -> None:
        self.uc.context_restore(ctx)

    def cpu_state(self) -> dict:
        """The CPU state as plain data (picklable, unlike a Unicorn context): every dumped register,
        RIP, the FS/GS bases and the SSE/x87 control words. x87 data registers are left out (as
        everywhere in preemu)."""
        d = self.dump_state()
        out = {"raw": d.raw, "RIP": d.rip}
        for name in _PORTABLE_EXTRA:
            out[name] = self.uc.reg_read(getattr(X, f"UC_X86_REG_{name}"))
        return out

    def set_cpu_state(self, state: dict) -> None:
        """Load a cpu_state() (taken on a machine built the same way, maybe in another process)."""
        rec = dump.RegState(state["raw"], state["RIP"])
        for r in regs.DUMPED:
            self.set_reg(r.name, rec.get(r.name))
        for name in _PORTABLE_EXTRA:
            self.uc.reg_write(getattr(X, f"UC_X86_REG_{name}"), state[name])
        self.set_reg("RIP", rec.rip)

    def run_parkable(self, begin: int, count: int) -> tuple[int, tuple[str, object] | None]:
        """Run exactly `count` instructions; if a trap parks the G, return how many it ran first.

        Returns (instructions the G executed, (sentinel, saved context) or None).
        """
        self.parked = None
        self.run(begin, count)
        if self.parked is None:
            return count, None
        spins = 2 * self.read_u64(memmap.SPIN_COUNTER)
        if self.pc != memmap.PARK_SPIN:
            spins -= 1                                    # stopped on the JMP: one INC not yet paired
        return count - spins, self.parked

    def dump_state(self) -> dump.RegState:
        """Return every dumped register plus RIP (one batched register read into the dump record)."""
        st = _reg_read_batch(self._h, self._dump_ids, self._dump_ptrs, self._dump_n)
        if st:
            raise unicorn.UcError(st)
        return dump.RegState(self._dump_buf.raw, self._dump_rip.value)     # .raw: the whole record, fast

    # --- running --------------------------------------------------------------------------
    def run(self, begin: int, count: int) -> str:
        """Run from `begin` for at most `count` instructions; return why it stopped.

        Raises Fault (with the PC and its disassembly) when the guest faults.

        One of preemu's four run loops, and the one two others are built on: this is a single engine run
        of the model world (`count=` budget, sentinel stops). Scheduler.run (model/sched.py) calls it once
        per M and quantum (run_parkable) and teach/story.py's narrator once per told step, so they share it and its
        fault handling. linux/process.py's Process.run_until cannot: it drives a different Unicorn, with a
        kernel underneath (syscall hooks, exact per-block counting, threads instead of goroutines).
        """
        if self._fs_pending is not None:
            self.flush_fs_base()
        self._begin.value, self._count.value = begin, count
        return self._engine_run(_emu_start, self._h, self._begin, _ZERO64, _ZERO64, self._count)

    def _engine_run(self, fn, *args) -> str:
        """Call `fn(*args)`, a C function that runs the engine (uc_emu_start, or a call chain holding
        it) and returns 0 or a uc_err in its low 32 bits; return why the run stopped, or raise the Fault."""
        self.stop_reason = STOP_COUNT
        self._unexpected_interrupt = None
        uc = self.uc
        try:
            uc._hook_exception = None        # what Uc.emu_start does, minus its wrapper's cost
            self.in_slice = True
            try:
                st = fn(*args)
            finally:
                self.in_slice = False
            if self.interrupted:             # Ctrl-C during the run (engine/interrupt.py): raised here, not
                self.interrupted = self.interrupt_raises = False        # in a hook, where ctypes drops it
                raise KeyboardInterrupt
            if st:
                raise unicorn.UcError(st & 0xFFFF_FFFF)
            if uc._hook_exception is not None:
                raise uc._hook_exception
        except GuestFaultInHook as e:
            raise self._fault_in_hook(e) from None
        except unicorn.UcError as e:
            raise self._engine_fault(e) from None
        if self._unexpected_interrupt is not None:
            raise self._interrupt_fault()
        return self.stop_reason

