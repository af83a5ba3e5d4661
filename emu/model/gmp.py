"""G, M and P records in emulated memory, and a World: one M running one goroutine on one P.

Mirrors the runtime2.go structs at the offsets of a StructTables (a Go binary's own, from its DWARF;
else gostructs' typed Go 1.27.3 linux/amd64 table), every field reached through a StructRef, TLS as on
non-cgo linux/amd64 (FS:-8 holds the current g), and newproc's start state: the entry function
runs on its own stack with R14 = g and returns into goexit. Also models the scheduler-side effects
the sweep needs: preemptone's request (gp.preempt, stackguard0 = stackPreempt, pp.preempt,
m.signalPending), doSigPreempt's acknowledgement, and what schedule/execute do while the G is
off-CPU (clear the requests, reset stackguard0, and in the go1.27 layout xRegSave/xRegRestore);
every asynchronous preemption may resume the goroutine on a second M/P. The runtime effects on
g/m/p are module functions the Scheduler shares. Stack moves are in stack.py, the GC in gcworld.py.
Left out: more than one goroutine (that is sched.py), timers.
"""
from __future__ import annotations

import random
from typing import Callable

from ..core import gostructs as gs
from ..core import layout as L
from ..core import memmap, regs
from .gcworld import WorldGC
from .heap import Heap
from .machine import Machine
from ..core.program import Program
from ..check.safepoint import (
    G_SCHED, GO127, M_SCHED, P_SCHED, RuntimeRules, SchedState, can_preempt_m, rules_for, sched_state_of)
from .stack import copystack
from ..core.structref import StructRef, write_field

#: What other goroutines leave in a P's xRegs scratch (the stub must not rely on it)
_SCRATCH_OTHER_G, _SCRATCH_RESUMED = b"\xa5" * gs.XREGS_SIZE, b"\x5a" * gs.XREGS_SIZE

G0_SLOT = 0      # g slot of m0.g0
USER_G_SLOT = 1  # g slot of the goroutine under test
G0_SLOT_M1 = 2   # g slot of m1.g0


def sched_reader(g: StructRef, m: StructRef, p: StructRef | None) -> Callable[[], tuple[int, ...]]:
    """A function returning the raw fields doSigPreempt reads from g, m and p (None: the M has no P),
    for sched_state_of; a World keeps one per M/P pair."""
    rg, rm = g.reader(G_SCHED), m.reader(M_SCHED)
    if p is None:
        return lambda: (*rg(), *rm(), 0, 0)
    rp = p.reader(P_SCHED)
    return lambda: (*rg(), *rm(), *rp())


def read_sched_state(g: StructRef, m: StructRef, p: StructRef | None, rules: RuntimeRules = GO127) -> SchedState:
    """Read what doSigPreempt reads from g (the G the signal landed on), its m and the m's p (None:
    the M has no P), for the runtime `rules` model."""
    return sched_state_of(g.base, sched_reader(g, m, p)(), rules)


# --- runtime effects on g/m/p, shared by the single-goroutine World and the Scheduler ----------
# Each takes the structs as StructRefs (Machine.struct(addr, gostructs table)) and the TLS block of
# an M as one too (gostructs.TLS_FIELDS at its FS base).
def request_preempt(g: StructRef) -> None:
    """preemptone's cooperative request: gp.preempt = true, gp.stackguard0 = stackPreempt."""
    f = g.f
    f["preempt"][0] = 1
    f["stackguard0"][0] = gs.STACK_PREEMPT


def preempt_m(m: StructRef, p: StructRef, rules: RuntimeRules = GO127) -> bool:
    """preemptone's asynchronous request: pp.preempt = true, then preemptM (see signal_m)."""
    p.f["preempt"][0] = 1
    return signal_m(m, rules)


def signal_m(m: StructRef, rules: RuntimeRules = GO127) -> bool:
    """preemptM: the signalPending CAS 0 -> 1 (signal_unix.go:376). Returns whether a signal is sent
    (at most one is in flight per M). Go 1.14's preemptM had no signalPending and signalled every time."""
    if not rules.signal_pending:
        return True
    pending = m.f["signalPending"]
    if pending[0]:
        return False
    pending[0] = 1
    return True


def ack_sigurg(m: StructRef, rules: RuntimeRules = GO127) -> None:
    """doSigPreempt's tail: m.preemptGen += 1; m.signalPending = 0 (signal_unix.go:353-354;
    Go 1.14 only bumped preemptGen)."""
    f = m.f
    gen = f["preemptGen"]
    gen[0] = (gen[0] + 1) & ((1 << (8 * gen.itemsize)) - 1)      # a uint32 wraps
    if rules.signal_pending:
        f["signalPending"][0] = 0


def clear_preempt(g: StructRef, p: StructRef, stack_lo: int) -> None:
    """schedule()/execute(): pp.preempt = false, gp.preempt = false, stackguard0 = stack.lo + stackGuard."""
    p.f["preempt"][0] = 0
    f = g.f
    f["preempt"][0] = 0
    f["stackguard0"][0] = stack_lo + gs.STACK_GUARD


def set_curg(m: StructRef, tls: StructRef, g: StructRef) -> None:
    """execute() on an M: m.curg = gp, gp.m = m, and the M's TLS g slot (FS:-8) = gp."""
    m.f["curg"][0] = g.base
    g.f["m"][0] = m.base
    tls.f["g"][0] = g.base


def drop_curg(m: StructRef, tls: StructRef, g0: int) -> None:
    """dropg(): m.curg = nil; the M runs its g0."""
    m.f["curg"][0] = 0
    tls.f["g"][0] = g0


def xreg_save(p: StructRef, g: StructRef, block: int) -> None:
    """xRegSave: copy the P's xRegs scratch into the block; gp.xRegs.state = block."""
    p.machine.write(block, p.bytes_view("xRegs.scratch"))
    g.f["xRegs.state"][0] = block


def xreg_restore(p: StructRef, g: StructRef, block: int) -> None:
    """xRegRestore: the P the G resumes on caches its block (the stub reloads X0-X15 from it)."""
    p.f["xRegs.cache"][0] = block
    g.f["xRegs.state"][0] = 0


class MachineSigContext:
    """sigctxt over a Machine: what pushCall may touch (RSP, RIP and one 8-byte store)."""

    def __init__(self, machine: Machine):
        self.m = machine

    def rsp(self) -> int:
        return self.m.rsp()

    def set_rsp(self, value: int) -> None:
        self.m.set_rsp(value)

    def set_rip(self, value: int) -> None:
        self.m.set_rip(value)

    def store64(self, addr: int, value: int) -> None:
        self.m.write_u64(addr, value)


class SignalFrame:
    """sigctxt over the registers the kernel saved when the signal was delivered (Go's sigctxt reads
    and edits the ucontext, not the CPU): the sweep fills it from the boundary's register dump, so
    pushCall's RSP read costs nothing and its RSP/RIP edits stay in the frame until `sigreturn`
    hands them to the next run (RIP by starting it there). The one store goes to memory at once, as in Go."""

    __slots__ = ("m", "_rsp", "_rip", "_rsp_changed")

    def __init__(self, machine: Machine):
        self.m = machine

    def deliver(self, rsp: int, rip: int) -> None:
        self._rsp, self._rip, self._rsp_changed = rsp, rip, False

    def rsp(self) -> int:
        return self._rsp

    def set_rsp(self, value: int) -> None:
        self._rsp, self._rsp_changed = value, True

    def set_rip(self, value: int) -> None:
        self._rip = value

    def store64(self, addr: int, value: int) -> None:
        self.m.write_u64(addr, value)

    def sigreturn(self) -> tuple[int | None, int]:
        """rt_sigreturn, left to the caller's next run: (the RSP to load into the CPU, or None when
        pushCall did not move it; the RIP to run from). Machine.run_pc/run_dump load the RSP in the
        same call into the engine as the run."""
        return (self._rsp if self._rsp_changed else None), self._rip


def initial_registers(seed: int, layout: L.StubLayout, overrides: dict[str, int]) -> dict[str, int]:
    """Return seeded random start values for every dumped register, then apply `overrides`.

    RFLAGS gets random arithmetic flags with DF clear (the Go ABI requires DF=0 at calls); X15 is
    zero in the go1.27 layout (ABIInternal). RSP and R14 are set by the caller.
    """
    rnd = random.Random(seed)
    vals = {r.name: rnd.getrandbits(8 * r.size) for r in regs.DUMPED}
    arith = regs.USER_FLAGS_MASK & ~(1 << regs.FLAG_BITS["DF"])
    vals["RFLAGS"] = 0x2 | (rnd.getrandbits(16) & arith)
    if layout.name != "go1.14":
        vals["XMM15"] = 0
    vals.update({regs.lookup(k).name: v for k, v in overrides.items()})
    return vals


class World(WorldGC):
    """One goroutine on M0/P0, ready to run from its entry function."""

    def __init__(self, program: Program, stub: Program, layout: L.StubLayout, entry: str, seed: int = 1,
                 reg_overrides: dict[str, int] | None = None, stack_size: int = memmap.DEFAULT_STACK_SIZE,
                 stub_ret_hooks: bool = True, migrate: bool = True, gc: bool = False, scanner: str = "go",
                 arg_area: int = 8, structs: gs.StructTables | None = None, headroom: int | None = None):
        self.layout = layout
        #: g/m/p field tables: a Go binary's own (its DWARF), else the typed Go 1.27.3 ones
        self.structs = structs or gs.typed_tables()
        self.rules = rules_for(layout.name)     # the Go runtime the layout belongs to
        self.program = program
        self.machine = Machine(program, stub, layout.name, on_async_preempt2=self._on_async_preempt2,
                               on_morestack=self._on_morestack, stub_ret_hooks=stub_ret_hooks)
        self.on_preempted = None        # called while the G is off CPU (episodes: "a GC starts now")
        self.m = self.machine
        self.entry = program.symbol(entry)
        self.gp = memmap.g_addr(USER_G_SLOT)
        self.g0 = memmap.g_addr(G0_SLOT)
        # A second M/P (with its own g0 and TLS): with `migrate`, every asynchronous preemption
        # resumes the goroutine on the other M and P, as a reschedule may (FACTS.md §6 item 9).
        self.migrate = migrate
        self.mps = [(memmap.m_addr(0), memmap.p_addr(0), self.g0, memmap.tls_fs_base(0)),
                    (memmap.m_addr(1), memmap.p_addr(1), memmap.g_addr(G0_SLOT_M1), memmap.tls_fs_base(1))]
        self.migrations = 0
        mm = self.machine
        T = self.structs
        self.g = mm.struct(self.gp, T.g)
        #: per M/P pair: (m, p, the M's TLS block) as StructRefs
        self.refs = [(mm.struct(mp, T.m), mm.struct(pp, T.p), mm.struct(fs, gs.TLS_FIELDS))
                     for mp, pp, _, fs in self.mps]
        self._sched_readers = [sched_reader(self.g, m_ref, p_ref) for m_ref, p_ref, _ in self.refs]
        self._set_current(0)
        self.stack_lo, self.stack_hi = memmap.stack_bounds(USER_G_SLOT, stack_size)
        self.stack_slot_base = memmap.STACK_BASE + USER_G_SLOT * memmap.STACK_SLOT
        self.machine.map_stack(self.stack_lo, self.stack_hi)
        self.sigctx = MachineSigContext(self.machine)
        self.machine.describe_address = self._describe_address
        # asyncPreemptStack: given (a Go binary's, from its own functions) or from preemu's runtime sentinels
        self.headroom = headroom if headroom is not None else self._async_preempt_stack()
        # off-heap xRegState blocks (go1.27): two, one per P at most
        self.xreg_blocks = [memmap.XREG_BASE, memmap.XREG_BASE + memmap.XREG_SLOT]
        self._setup_structs()
        # newproc: the entry's return address is goexit; above it the caller's frame keeps the
        # argument area (Go's ABIInternal spill slots for register arguments; 8 bytes for .s input).
        self.start_sp = self.stack_hi - 8 - (arg_area + 15) // 16 * 16
        self.machine.write_u64(self.start_sp, memmap.GOEXIT)
        self.start_regs = initial_registers(seed, layout, reg_overrides or {})
        self.given_regs = frozenset(regs.lookup(k).name for k in (reg_overrides or {}))    # --reg's, named
        self.start_regs["RSP"] = self.start_sp
        if "R14" not in {regs.lookup(k).name for k in (reg_overrides or {})}:
            self.start_regs["R14"] = self.gp
        for name, v in self.start_regs.items():
            self.machine.set_reg(name, v)
        self.machine.set_reg("RIP", self.entry)
        self.stack_moves: list[tuple[int, int, int, int]] = []   # (old lo, old hi, new lo, new hi)
        # The heap; with `gc`, a full GC runs at every asynchronous preemption (asyncPreempt2 trap).
        self.heap = Heap()
        self.machine.on_newobject = self._newobject
        self.machine.on_alloc = self._alloc
        self.machine.on_go_call = self._go_call
        self.gc_enabled, self.scanner = gc, scanner
        self.current_boundary = 0
        self._clear_run_stats()
        if gc:
            self.machine.watch_heap(self._heap_access)
        self._snap0 = self.snapshot()

    # --- layout of the world --------------------------------------------------------------
    def _async_preempt_stack(self) -> int:
        from ..check.safepoint import async_preempt_stack
        rt = self.machine.runtime
        helpers = [rt.get_func("asyncPreempt2").max_sp_delta]
        if rt.has_func("xRegRestore"):
            helpers.append(rt.get_func("xRegRestore").max_sp_delta)
        return async_preempt_stack(self.machine.stub.funcs[0].max_sp_delta if not self.machine.stub.has_func(
            "asyncPreempt") else self.machine.stub.get_func("asyncPreempt").max_sp_delta, *helpers)

    def _describe_address(self, addr: int) -> str | None:
        if self.stack_lo - memmap.STACK_GUARD_SIZE <= addr < self.stack_lo:
            return f"guard page: {self.stack_lo - addr} bytes below stack.lo {self.stack_lo:#x}"
        if self.stack_lo <= addr < self.stack_hi:
            return "goroutine stack"
        return None

    def writable_regions(self) -> list[tuple[int, int]]:
        """Memory that a run may change and reset() restores."""
        out = [(self.stack_lo, self.stack_hi - self.stack_lo), (memmap.g_addr(0), 3 * memmap.G_SLOT),
               (memmap.M_BASE, 2 * memmap.M_SLOT), (memmap.P_BASE, 2 * memmap.P_SLOT),
               (memmap.TLS_BASE, 2 * memmap.PAGE), (memmap.RAND_STATE, 8),
               (self.xreg_blocks[0], len(self.xreg_blocks) * memmap.XREG_SLOT)]
        if self.program.data:
            lo = min(d.addr for d in self.program.data)
            hi = max(d.addr + d.size for d in self.program.data)
            out.append((lo, hi - lo))
        base, used = self.heap.used
        if used:
            out.append((base, used))
        return out

    def data_regions(self) -> list[tuple[str, int, int]]:
        return [(d.name, d.addr, d.size) for d in self.program.data]

    def _wf(self, base: int, fields: dict, name: str, value: int) -> None:
        write_field(self.machine, base, fields, name, value)

    def _setup_structs(self) -> None:
        G, M, P = self.structs.g, self.structs.m, self.structs.p
        # g0 stays _Gidle (FACTS.md §2.4): a SIGURG landing on it fails wantAsyncPreempt
        for g, (lo, hi), status in ((self.g0, (0, 0), gs.G_IDLE), (self.gp, (self.stack_lo, self.stack_hi),
                                                                   gs.G_RUNNING)):
            self._wf(g, G, "stack.lo", lo)
            self._wf(g, G, "stack.hi", hi)
            self._wf(g, G, "stackguard0", lo + gs.STACK_GUARD if lo else 0)
            self._wf(g, G, "m", self.mp)
            self._wf(g, G, "atomicstatus", status)
        self._wf(self.gp, G, "goid", 1)
        for i, (mp, pp, g0, fs) in enumerate(self.mps):
            self._wf(mp, M, "g0", g0)
            self._wf(mp, M, "p", pp)
            self._wf(mp, M, "procid", i + 1)
            self._wf(pp, P, "id", i)
            self._wf(pp, P, "status", gs.P_RUNNING)
            self._wf(pp, P, "m", mp)
            self._wf(g0, G, "m", mp)
            self._wf(g0, G, "atomicstatus", gs.G_IDLE)
            self.machine.write_u64(fs - 8, g0)
        self.bind(0)

    def bind(self, i: int) -> None:
        """execute() on M i / P i: the goroutine becomes its curg (the other M runs its g0)."""
        old_m, _, old_tls = self.refs[self.cur]
        drop_curg(old_m, old_tls, self.mps[self.cur][2])
        fs = self._set_current(i)
        set_curg(self.m_ref, self.refs[i][2], self.g)
        self.machine.set_fs_base(fs)

    def _set_current(self, i: int) -> int:
        """The goroutine's M and P are now pair i (addresses and StructRefs); returns that M's FS base."""
        self.cur = i
        self.mp, self.pp, _, fs = self.mps[i]
        self.m_ref, self.p_ref, _ = self.refs[i]
        self._sched_read = self._sched_readers[i]
        return fs

    def snapshot(self):
        """Capture registers, writable memory and the stack's place (it may move when it grows)."""
        m = self.machine
        return (m.save_context(), (self.stack_lo, self.stack_hi),
                [(a, m.read(a, n)) for a, n in self.writable_regions()],
                len(self.stack_moves), self.cur, self.heap.snapshot())

    def portable_snapshot(self):
        """snapshot() as plain data (registers by name, not a Unicorn context): a world built the
        same way in another process can restore() it."""
        m = self.machine
        return (m.cpu_state(), (self.stack_lo, self.stack_hi),
                [(a, m.read(a, n)) for a, n in self.writable_regions()],
                list(self.stack_moves), self.cur, self.heap.snapshot())

    def restore(self, snap) -> None:
        """Return to a snapshot (or a portable one), re-mapping the stack if it has moved since."""
        ctx, (lo, hi), mem, moves, cur, heap = snap
        m = self.machine
        if self.heap.next > heap[0]:                  # objects allocated since: back to zeroed arena
            m.write(heap[0], bytes(self.heap.next - heap[0]))
        self.heap.restore(heap)
        self._sync_heap_watch()
        if (lo, hi) != (self.stack_lo, self.stack_hi):
            m.unmap_stack(self.stack_lo, self.stack_hi)
            m.map_stack(lo, hi)
            self.stack_lo, self.stack_hi = lo, hi
        if isinstance(moves, list):
            self.stack_moves[:] = moves
        else:
            del self.stack_moves[moves:]
        if isinstance(ctx, dict):
            m.set_cpu_state(ctx)
        else:
            m.restore_context(ctx)
        for a, data in mem:
            m.write(a, data)
        m.set_fs_base(self._set_current(cur))

    def _clear_run_stats(self) -> None:
        """What one run observes: preemptions, stack growths, GC statistics, use-after-free accesses."""
        self.cooperative_preemptions = 0
        self.needless_growths: list[tuple[int, int, int]] = []     # (pc, sp, stackguard0)
        self.gc_cycles = self.shrink_deferred = self.shrinks = 0
        self.retained_conservatively: set[int] = set()
        self.uaf: list[tuple] = []      # (obj base, size, access, addr, pc, boundary of the freeing GC)
        self._uaf_seen: set[int] = set()
        self._last_access: dict[int, int] = {}   # object -> number of GCs before its last access
        self._cons_at: dict[int, int] = {}       # object -> last GC that kept it only conservatively

    def reset(self) -> None:
        """Return to the start state: registers at the entry, writable memory as at creation."""
        self._clear_run_stats()
        self.restore(self._snap0)

    # --- newstack / copystack ---------------------------------------------------------------
    def grow_stack(self) -> None:
        """newstack's growth path: copystack to a stack twice the size."""
        lo, hi = self.stack_lo, self.stack_hi
        self.stack_lo, self.stack_hi = copystack(self.machine, self.g, lo, hi, self.stack_slot_base,
                                                 binary=getattr(self.program, "binary", None))
        self.stack_moves.append((lo, hi, self.stack_lo, self.stack_hi))

    # --- scheduler-side effects -----------------------------------------------------------
    def sched_state(self) -> SchedState:
        """Read what doSigPreempt reads from g, m and p."""
        return sched_state_of(self.gp, self._sched_read(), self.rules)

    def preempt_one(self, signal: bool = True) -> None:
        """preemptone: the cooperative request (gp.preempt, stackguard0 = stackPreempt) and, with
        async preemption on, the asynchronous one (pp.preempt) and preemptM's signal."""
        request_preempt(self.g)
        if signal:
            preempt_m(self.m_ref, self.p_ref, self.rules)

    def resend_signal(self) -> None:
        """preemptM again (sysmon's next tick, suspendG's retry): signalPending CAS 0 -> 1."""
        preempt_m(self.m_ref, self.p_ref, self.rules)

    def withdraw_request(self) -> None:
        """Clear the requests as execute() would (the sweep treats points as independent)."""
        clear_preempt(self.g, self.p_ref, self.stack_lo)

    def ack(self) -> None:
        """doSigPreempt's tail: m.preemptGen += 1; m.signalPending = 0."""
        ack_sigurg(self.m_ref, self.rules)

    def _on_morestack(self, machine: Machine) -> bool:
        """newstack: stackguard0 == stackPreempt means a cooperative preemption (gopreempt_m, then
        execute() resets the guard and the G resumes in the prologue's spill block); anything else
        is a stack growth: copystack to a stack twice the size."""
        g = self.g
        guard = g.get("stackguard0")
        if guard == gs.STACK_PREEMPT and can_preempt_m(self.sched_state()) is not None:
            # newstack (stack.go:1122-1129): not while the M holds locks, mallocs or has preemption off:
            # the guard goes back and the G runs on; gp.preempt stays set for its next prologue
            g.set("stackguard0", self.stack_lo + gs.STACK_GUARD)
            return False
        if guard == gs.STACK_PREEMPT:
            self.cooperative_preemptions += 1
            if g.get("preemptShrink"):
                self._shrinkstack()                       # newstack: the shrink deferred by the GC
            self.withdraw_request()
            return False
        # A real growth request. The caller's SP (above morestack's return address) must be below
        # the guard; otherwise the prologue branched on stale flags (golang/go#35470).
        caller_sp = machine.reg("RSP") + 8
        if caller_sp > guard:
            ret = machine.read_u64(caller_sp - 8)
            self.needless_growths.append((ret, caller_sp, guard))
        self.grow_stack()
        return False

    def _on_async_preempt2(self, machine: Machine) -> bool:
        """asyncPreempt2 trap: mcall(gopreempt_m) -> schedule() -> execute(gp) with no other G to run.

        gp.asyncSafePoint is set from the trap until after xRegRestore, as asyncPreempt2 does
        (runtime/preempt.go:317-343)."""
        g = self.g
        safe_point = g.f["asyncSafePoint"]
        safe_point[0] = 1
        if self.on_preempted is not None:
            self.on_preempted()
        if self.layout.xreg_slots:
            # xRegSave: take this P's cached block (or allocate one), copy scratch into it.
            cache = self.p_ref.f["xRegs.cache"]
            block = cache[0]
            if block == 0:
                used = {p.get("xRegs.cache") for _, p, _ in self.refs}
                block = next(b for b in self.xreg_blocks if b not in used)
            cache[0] = 0
            xreg_save(self.p_ref, g, block)
            self.p_ref.bytes_view("xRegs.scratch")[:] = _SCRATCH_OTHER_G      # reused by other Gs
        if self.gc_enabled:                             # a GC cycle while the G is off CPU
            self.run_gc(machine)
        if self.migrate:                                # schedule() elsewhere; execute() on the other M/P
            self.bind(1 - self.cur)
            self.migrations += 1
        if self.layout.xreg_slots:
            # xRegRestore: the P we resume on caches the G's block (its old one is freed).
            self.p_ref.bytes_view("xRegs.scratch")[:] = _SCRATCH_RESUMED
            xreg_restore(self.p_ref, g, block)
        safe_point[0] = 0
        self.withdraw_request()
        return False
