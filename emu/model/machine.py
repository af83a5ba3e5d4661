"""The sole owner of the Unicorn engine: memory, registers, hooks and runs with instruction budgets.

Models one x86-64 CPU (an M's thread) in a Go-like address space (memmap). Runtime sentinels
(asyncPreempt2, goexit, morestack) trap with INT3 into one interrupt hook; the only code hooks
are scoped to the stub's RET instructions (sweeps only). All hooks are installed before the first
emu_start (Unicorn #2200: hooks added after translation may never
fire). Normal runs use `count=` budgets; no per-instruction Python hook exists outside opt-in
tracing. Every UcError is translated here.
"""
from __future__ import annotations

import ctypes
import mmap
from dataclasses import dataclass
from functools import partial
from typing import Callable

import unicorn
import unicorn.x86_const as X
from unicorn.unicorn_py3.unicorn import uclib as _uclib

from ..core import dump, memmap, regs
from . import rtcode
from ..core.errors import EmuError
from ..core.program import Program
from ..core.structref import SlowField, StructRef

#: The program's own regions (its text and data) and preemu's code regions stay in Unicorn-owned
#: memory (writes there invalidate translations); preemu's data regions and the stacks are host
#: memory shared with Python (uc_mem_map_ptr), so reading or writing g/m/p, stacks and the heap
#: costs a slice, not an engine call.
CODE_REGIONS = (memmap.STUB, memmap.RT)


def _unconverted(fn):
    """`fn` (a uclib function) called with no per-argument conversion: ctypes' argtypes path looks up
    and calls `from_param` for every argument, which costs more than the call itself (uc_reg_write
    0.84 -> 0.35 µs, uc_emu_start 1.2 -> 0.6 µs measured, issue #11). Callers pass ctypes objects
    for every 64-bit or pointer argument; a plain Python int goes as a C int."""
    return ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.cast(fn, ctypes.c_void_p).value)


_emu_start = _unconverted(_uclib.uc_emu_start)
_reg_read, _reg_write = _unconverted(_uclib.uc_reg_read), _unconverted(_uclib.uc_reg_write)
_reg_read_batch, _context_save = _unconverted(_uclib.uc_reg_read_batch), _unconverted(_uclib.uc_context_save)
_ZERO64 = ctypes.c_uint64(0)
_PORTABLE_EXTRA = ("FS_BASE", "GS_BASE", "MXCSR", "FPCW", "FPSW")
_UINT_FMT = {1: "B", 2: "H", 4: "I", 8: "Q"}    # memoryview.cast formats (native = little-endian here)
_CHUNK = 20                 # host-backed regions are found by address >> _CHUNK (1 MiB chunks)

STOP_COUNT = "count"        # the instruction budget ran out (or the exact count was reached)
STOP_GOEXIT = "goexit"      # the goroutine returned into goexit
STOP_STUB_RET = "stub-ret"  # the stub is about to execute its RET (armed one-shot)
STOP_TRAP = "trap"          # a sentinel hook asked to stop (scheduler trap)

#: INT3 sentinels in the runtime text, by address
SENTINELS = {memmap.GOEXIT: "goexit", memmap.ASYNC_PREEMPT2: "asyncPreempt2", memmap.MORESTACK: "morestack",
             memmap.NANOSLEEP: "nanosleep", memmap.NEWOBJECT: "newobject", memmap.MALLOCGC: "mallocgc",
             memmap.GO_NEWOBJECT: "gonewobject"}
SENTINELS.update({a: "gcWriteBarrier" for a in memmap.GC_WRITE_BARRIER.values()})
#: INT3 entries of the runtime functions computed in Python (on_go_call), by address
GO_CALL_AT = {a: name for name, a in memmap.GO_CALLS.items()}
#: ABIInternal's integer argument registers (and, from the first, its result registers)
INT_ARGS = (X.UC_X86_REG_RAX, X.UC_X86_REG_RBX, X.UC_X86_REG_RCX, X.UC_X86_REG_RDI, X.UC_X86_REG_RSI,
            X.UC_X86_REG_R8, X.UC_X86_REG_R9)


#: x86 exception vectors a guest instruction can raise
_EXCEPTIONS = {0: "divide error (#DE: division by zero or quotient overflow)", 3: "breakpoint (INT3)",
               4: "overflow (#OF)", 5: "bound range exceeded (#BR)", 6: "invalid opcode (#UD)",
               13: "general protection fault (#GP)", 17: "alignment check (#AC)"}


class GuestFaultInHook(Exception):
    """Raised inside a hook; Unicorn re-raises it from emu_start and run() reports it as a Fault."""


@dataclass
class Fault(Exception):
    """The guest faulted: Unicorn's error, the PC, where it was, and the register to blame if known."""

    pc: int
    error: str
    where: str
    reg: str | None = None

    def __str__(self) -> str:
        return f"{self.error} at {self.where}"


class Machine:
    """One emulated CPU with the whole guest address space mapped."""

    def __init__(self, program: Program, stub: Program, layout_name: str,
                 on_async_preempt2: Callable[["Machine"], bool] | None = None,
                 on_morestack: Callable[["Machine"], bool] | None = None, stub_ret_hooks: bool = True):
        self.program = program
        self.stub = stub
        self.runtime = rtcode.runtime_program(layout_name)
        self.all = program.merged(stub).merged(self.runtime)
        self.uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
        self._init_fast_path()
        img = program.image
        # The program's regions first, then preemu's: mapping in the other order changes how many
        # instructions a REP MOVSB between two watched heap objects counts (a Unicorn 2.1.4 quirk seen
        # in gc_ptr_interior), so keep this order.
        for base, size in img.regions:
            self.uc.mem_map(base, size)
        for r in memmap.RUNTIME_REGIONS:
            if r in CODE_REGIONS:
                self.uc.mem_map(r.base, r.size)
            else:
                self._map_host(r.base, r.size)
        for addr, code in self.all.code:
            self.uc.mem_write(addr, code)
        for d in program.data:
            self.uc.mem_write(d.addr, d.init)
        for addr, patch in img.patches:
            self.uc.mem_write(addr, patch)
        self.traps = dict(img.traps)     # runtime functions preemu does not model: reaching one is an error
        for addr in self.traps:
            self.uc.mem_write(addr, b"\xcc")
        self.text = img.text
        lo, hi = memmap.page_down(img.text[0]), memmap.page_up(img.text[1])
        for base, end in ((lo, hi), (memmap.STUB.base, memmap.STUB.end), (memmap.RT.base, memmap.RT.end)):
            self.uc.mem_protect(base, end - base, unicorn.UC_PROT_READ | unicorn.UC_PROT_EXEC)   # code is read-only
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
        self._bad_access: tuple[str, int] | None = None
        self.describe_address: Callable[[int], str | None] | None = None   # set by the owner of the stacks
        self.uc.hook_add(unicorn.UC_HOOK_MEM_INVALID, self._hook_bad_access)

    def _map_host(self, base: int, size: int) -> None:
        """Map [base, base+size) onto a host buffer Python reads and writes directly."""
        buf = mmap.mmap(-1, size)
        anchor = ctypes.c_char.from_buffer(buf)
        st = _uclib.uc_mem_map_ptr(self._h, base, size, unicorn.UC_PROT_ALL, ctypes.addressof(anchor))
        if st:
            del anchor
            raise unicorn.UcError(st)
        entry = (base, base + size, buf, anchor)
        for c in range(base >> _CHUNK, ((base + size - 1) >> _CHUNK) + 1):
            self._host.setdefault(c, []).append(entry)

    def _unmap_host(self, base: int, size: int) -> None:
        st = _uclib.uc_mem_unmap(self._h, base, size)
        if st:
            raise unicorn.UcError(st)
        self._u64_views.clear()
        self._structs.clear()
        for c in range(base >> _CHUNK, ((base + size - 1) >> _CHUNK) + 1):
            self._host[c] = [e for e in self._host[c] if e[0] != base]

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

    # --- hooks (tiny; they run inside emu_start) -------------------------------------------
    def _hook_intr(self, uc, intno, user_data):
        at = self._reg64(X.UC_X86_REG_RIP) - 1          # INT3 traps after the instruction
        name = SENTINELS.get(at) if intno == 3 else None
        if name is None and intno == 3 and at in GO_CALL_AT:
            if self.on_go_call is None:
                raise GuestFaultInHook(f"runtime.{GO_CALL_AT[at]} called but this world has no heap")
            results = self.on_go_call(GO_CALL_AT[at], [uc.reg_read(r) for r in INT_ARGS])
            for r, v in zip(INT_ARGS, results):
                uc.reg_write(r, v)
            return
        if name is None and intno == 3 and at in self.traps:
            raise GuestFaultInHook(f"the goroutine called {self.traps[at]}, runtime code that needs the Go runtime's "
                                   f"own state; preemu models allocation, the slice runtime, runtime.rand, write "
                                   f"barriers, morestack and asyncPreempt2, and runs the runtime code that needs none "
                                   f"(maps, strings, convT*: gofront.PLAIN_RUNTIME) (return address "
                                   f"{self.read_u64(uc.reg_read(X.UC_X86_REG_RSP)):#x})")
        if name is None:
            self.stop_reason = STOP_TRAP
            self._bad_access = None
            self._unexpected_interrupt = (intno, at)
            _uclib.uc_emu_stop(self._h)
            return
        if name == "gcWriteBarrier":
            self.write_barrier_calls += 1
            return
        if name == "asyncPreempt2":
            self.async_preempt2_calls += 1
        if name in ("mallocgc", "gonewobject"):
            if self.on_alloc is None:
                raise GuestFaultInHook(f"runtime.{name} called but this world has no heap")
            if name == "mallocgc":
                size, typ = uc.reg_read(X.UC_X86_REG_RAX), uc.reg_read(X.UC_X86_REG_RBX)
            else:
                size, typ = None, uc.reg_read(X.UC_X86_REG_RAX)
            uc.reg_write(X.UC_X86_REG_RAX, self.on_alloc(size, typ))
            return
        if name == "newobject":
            if self.on_newobject is None:
                raise GuestFaultInHook("newobject called but this world has no heap")
            size = uc.reg_read(X.UC_X86_REG_RAX)
            uc.reg_write(X.UC_X86_REG_RAX, self.on_newobject(size))
            return
        if self.trap_handler is not None:
            action = self.trap_handler(self, name)
        elif name == "goexit":
            action = "stop"
        elif name == "asyncPreempt2":
            action = "stop" if self.on_async_preempt2 is not None and self.on_async_preempt2(self) else None
        elif name == "morestack":
            action = "stop" if self.on_morestack is not None and self.on_morestack(self) else None
        else:
            action = "stop"
        if action == "park":
            # Keep the G's state, then idle in the counted spin loop until the budget runs out.
            self.parked = (name, uc.context_save())
            uc.mem_write(memmap.SPIN_COUNTER, bytes(8))
            uc.reg_write(X.UC_X86_REG_RIP, memmap.PARK_SPIN)
        elif action == "stop":
            self.stop_reason = STOP_GOEXIT if name == "goexit" else STOP_TRAP
            if name == "goexit":
                uc.reg_write(X.UC_X86_REG_RIP, at)      # stay on goexit: running again stops again
            _uclib.uc_emu_stop(self._h)

    def async_preempt2_here(self) -> bool:
        """What the INT3 hook does at the asyncPreempt2 sentinel, called from Python by a run that
        stopped exactly there (Sweeper's counted stub run: no callback from inside Unicorn). Returns
        True when the owner asked to stop (the hook's STOP_TRAP). A GuestFaultInHook becomes a Fault
        naming the PC, as in run()."""
        assert self.trap_handler is None, "only a World's own asyncPreempt2 model can run outside the hook"
        self.async_preempt2_calls += 1
        try:
            return bool(self.on_async_preempt2 is not None and self.on_async_preempt2(self))
        except GuestFaultInHook as e:
            pc = self.pc
            raise Fault(pc, str(e), self.where(pc)) from None

    def _hook_stub_ret(self, uc, address, size, user_data):
        if self.stub_ret_armed:
            self.stub_ret_armed = False
            self.stop_reason = STOP_STUB_RET
            _uclib.uc_emu_stop(self._h)

    def _hook_bad_access(self, uc, access, address, size, value, user_data):
        kind = {unicorn.UC_MEM_READ_UNMAPPED: "reading", unicorn.UC_MEM_WRITE_UNMAPPED: "writing",
                unicorn.UC_MEM_FETCH_UNMAPPED: "fetching",
                unicorn.UC_MEM_WRITE_PROT: "writing read-only code (self-modifying code is not supported) at",
                unicorn.UC_MEM_FETCH_PROT: "executing non-code memory at"}.get(access, "accessing")
        self._bad_access = (kind, address)
        return False

    # --- memory ---------------------------------------------------------------------------
    def map_stack(self, lo: int, hi: int) -> None:
        """Map [lo, hi) read/write, up to the end of hi's page (lo is page-aligned: memmap.stack_bounds);
        the page below lo stays unmapped (the guard page)."""
        if lo in self._mapped_stacks:
            return
        self._map_host(lo, memmap.page_up(hi) - lo)
        self._mapped_stacks.add(lo)

    def unmap_stack(self, lo: int, hi: int) -> None:
        self._unmap_host(lo, memmap.page_up(hi) - lo)
        self._mapped_stacks.discard(lo)

    def read(self, addr: int, size: int) -> bytes:
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + size <= end:
                return buf[addr - base:addr - base + size]
        if size > len(self._rbuf):
            self._rbuf = ctypes.create_string_buffer(size)
            self._rbuf_addr = ctypes.addressof(self._rbuf)
        st = _uclib.uc_mem_read(self._h, addr, self._rbuf, size)
        if st:
            raise unicorn.UcError(st, addr, size)
        return ctypes.string_at(self._rbuf_addr, size)

    def write(self, addr: int, data: bytes) -> None:
        n = len(data)
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + n <= end:
                buf[addr - base:addr - base + n] = data
                return
        st = _uclib.uc_mem_write(self._h, addr, bytes(data), len(data))
        if st:
            raise unicorn.UcError(st, addr, len(data))

    def _host_slot(self, addr: int, size: int):
        """(host buffer, offset) holding [addr, addr+size), or None when it is not host memory."""
        for base, end, buf, _ in self._host.get(addr >> _CHUNK, ()):
            if base <= addr and addr + size <= end:
                return buf, addr - base
        return None

    def field_view(self, addr: int, size: int):
        """An object whose [0] reads and writes the `size`-byte unsigned integer at addr: a typed
        memoryview of host memory (x86-64 hosts are little-endian, like the guest), else a slow proxy."""
        slot = self._host_slot(addr, size)
        if slot is None:
            return SlowField(self, addr, size)
        buf, off = slot
        return memoryview(buf)[off:off + size].cast(_UINT_FMT[size])

    def byte_view(self, addr: int, size: int) -> memoryview:
        """A writable memoryview of [addr, addr+size) in host memory (an EmuError for memory Unicorn
        holds itself: only preemu's own regions are viewed this way)."""
        slot = self._host_slot(addr, size)
        if slot is None:
            raise EmuError(f"{addr:#x}+{size}: not host-mapped memory")
        buf, off = slot
        return memoryview(buf)[off:off + size]

    def unpacker(self, addr: int, st: struct.Struct, size: int) -> Callable[[], tuple]:
        """A function unpacking `st` from the `size` bytes at addr (bound to host memory when it is)."""
        slot = self._host_slot(addr, size)
        if slot is None:
            return lambda: st.unpack(self.read(addr, size))
        return partial(st.unpack_from, *slot)

    def struct(self, base: int, fields: dict) -> StructRef:
        """The struct at `base` laid out as the gostructs table `fields` (one StructRef per pair)."""
        key = (base, id(fields))
        ref = self._structs.get(key)
        if ref is None or ref.fields is not fields:        # (an id may be reused by a newer table)
            ref = self._structs[key] = StructRef(self, base, fields)
        return ref

    def _u64_view(self, addr: int):
        """field_view(addr, 8), kept per address (the sweep reads and writes the same few slots)."""
        v = self._u64_views.get(addr)
        if v is None:
            v = self._u64_views[addr] = self.field_view(addr, 8)
        return v

    def stop(self) -> None:
        """Stop the run in progress (from inside a hook): run() returns before the next block."""
        _uclib.uc_emu_stop(self._h)

    def read_u64(self, addr: int) -> int:
        return self._u64_view(addr)[0]

    def write_u64(self, addr: int, value: int) -> None:
        self._u64_view(addr)[0] = value & 0xFFFF_FFFF_FFFF_FFFF

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
        self._set_reg64(X.UC_X86_REG_FS_BASE, value)

    def save_context(self, into=None):
        """Return the CPU context; with `into` (an earlier context), overwrite that one instead of
        allocating (the sweep keeps one per run)."""
        if into is None:
            return self.uc.context_save()
        st = _context_save(self._h, into.context)
        if st:
            raise unicorn.UcError(st)
        return into

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
    def where(self, pc: int) -> str:
        """describe_pc, and for a PC outside every function, how control got there if we can tell."""
        if self.all.func_for(pc) is not None:
            return self.all.describe_pc(pc)
        for f in self.all.funcs:
            if f.end == pc and f.insns:
                last = f.insns[-1]
                return (f"{pc:#x}, just past the end of {f.name}: execution fell off the end of the function "
                        f"after `{last.text}` ({last.where}); end it with RET or JMP")
        return f"{pc:#x}, outside any function"

    def run(self, begin: int, count: int) -> str:
        """Run from `begin` for at most `count` instructions; return why it stopped.

        Raises Fault (with the PC and its disassembly) when the guest faults.
        """
        self.stop_reason = STOP_COUNT
        self._bad_access = None
        self._unexpected_interrupt = None
        uc = self.uc
        try:
            uc._hook_exception = None        # what Uc.emu_start does, minus its wrapper's cost
            self._begin.value, self._count.value = begin, count
            st = _emu_start(self._h, self._begin, _ZERO64, _ZERO64, self._count)
            if st:
                raise unicorn.UcError(st)
            if uc._hook_exception is not None:
                raise uc._hook_exception
        except GuestFaultInHook as e:
            pc = self.pc
            raise Fault(pc, str(e), self.where(pc)) from None
        except unicorn.UcError as e:
            pc = self.pc
            msg = str(e)
            if self._bad_access is not None:
                kind, addr = self._bad_access
                where = self.describe_address(addr) if self.describe_address else None
                msg += f" {kind} {addr:#x} ({where or memmap.describe_address(addr)})"
            raise Fault(pc, msg, self.where(pc)) from None
        if self._unexpected_interrupt is not None:
            intno, at = self._unexpected_interrupt
            if intno == 1:       # #DB: the trap flag is set, which only a bad POPFQ does here
                pc = self.pc
                raise Fault(pc, "single-step trap: RFLAGS has TF set (a POPFQ loaded a wrong RFLAGS value)",
                            self.where(pc), reg="RFLAGS")
            if intno != 3:       # a fault: RIP still points at the faulting instruction
                at = self.pc
            raise Fault(at, f"{_EXCEPTIONS.get(intno, f'interrupt {intno}')} in guest code", self.where(at))
        return self.stop_reason

    def watch_heap(self, on_access: Callable[[str, int, int], None]) -> None:
        """Call on_access(kind, address, pc) for every guest read/write of the heap arena while the watch
        is on (GC mode: the World turns it on at the first allocation, see heap_watch)."""
        def hook(uc, access, address, size, value, user_data):
            on_access("write" if access == unicorn.UC_MEM_WRITE else "read", address, uc.reg_read(X.UC_X86_REG_RIP))
        self._heap_hook_fn = hook

    def heap_watch(self, on: bool) -> None:
        """Turn the heap watch on or off. A memory hook sends every guest load and store through
        Unicorn's slow path, wherever it points (~3-8 µs a sweep point), so it is on only while the heap
        holds objects: with none, no access can reach one. Turning it on flushes the translation cache:
        code that already ran does not see a memory hook added later (test_engine_pins). Called from
        inside the allocation trap too, where the INT3 has ended its block. Turning it off does not
        flush: Unicorn 2.1.4 drops a deleted hook only when the next run ends, so that run is slow anyway."""
        if on == (self._heap_hook is not None):
            return
        if on:
            self._heap_hook = self.uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE,
                                               self._heap_hook_fn, begin=memmap.HEAP_BASE, end=memmap.HEAP.end - 1)
            self.uc.ctl_flush_tb()
        else:
            self.uc.hook_del(self._heap_hook)
            self._heap_hook = None

    def add_block_hook(self, on_block: Callable[[int, int], None]) -> int:
        """Opt-in: call on_block(address, size) at every translation block in user text (~1 µs each).

        The translation cache is flushed so already-translated code sees the hook (Unicorn #2200).
        """
        h = self.uc.hook_add(unicorn.UC_HOOK_BLOCK, lambda uc, a, s, u: on_block(a, s),
                             begin=self.text[0], end=self.text[1] - 1)
        self.uc.ctl_flush_tb()
        return h

    def del_hook(self, handle: int) -> None:
        self.uc.hook_del(handle)
        self.uc.ctl_flush_tb()

    def trace(self, on_insn: Callable[[int], None] | None) -> None:
        """Opt-in per-instruction hook over user text (slow: ~1 µs per instruction)."""
        if self._trace_hook is not None:
            self.uc.hook_del(self._trace_hook)
            self._trace_hook = None
        if on_insn is not None:
            self._trace_hook = self.uc.hook_add(unicorn.UC_HOOK_CODE, lambda uc, a, s, u: on_insn(a),
                                                begin=self.text[0], end=self.text[1] - 1)
        self.uc.ctl_flush_tb()
