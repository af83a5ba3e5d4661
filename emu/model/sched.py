"""G/M/P scheduler, sysmon and virtual time: goroutine starvation before Go 1.14 and its cure.

Mirrors runtime/proc.go (schedule, findRunnable, execute, runqput/runqget, globrunqput/globrunqget,
stealWork, checkTimers, sysmon, retake, preemptone), signal_unix.go (preemptM, doSigPreempt) and
preempt.go (asyncPreempt2 -> gopreempt_m; xRegSave/xRegRestore in the go1.27 layout).

Virtual time is an instruction count (ns_per_insn, default 1 ns) and nothing reads the wall clock.
All Ms are one Unicorn CPU with one saved context per running G, stepped from one host thread in
rounds of `quantum` ns: each round, sysmon runs the iterations that are due, then every M executes
exactly its share of instructions. When a G traps mid-round (sleep, exit, preemption) the CPU idles
in a counted spin loop, which tells exactly how many instructions the G ran (Machine.run_parkable).
A signal sent by sysmon reaches its M at a seeded-random instruction of the next round.

A GC cycle (every gc_every_ns) stands in for markroot's stack jobs: suspendG sets preemptStop and
signals each running goroutine; it parks in preemptPark (_Gpreempted), is "scanned" (the scan
itself is the GC issue's) and resumeG readies it.

The go1.14 layout selects Go 1.14's scheduler where it differs in what a scenario observes
(RuntimeRules: shouldStealTimers, runqsteal before the timers, sysmon's idle reset).

Left out: syscalls and handoffp, spinning Ms and wakep (there is one M per P), the mark phase
itself, netpoll, LockOSThread, the deep-sleep path of sysmon.
"""
from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field

from ..core import gostructs as gs
from ..core import memmap
from ..core.errors import EmuError
from .gcsuspend import GcSuspend
from .gmp import MachineSigContext, clear_preempt, drop_curg, initial_registers, set_curg, xreg_restore
from ..core.layout import StubLayout
from .faults import Fault
from .machine import Machine
from ..core.program import Program
from ..check.safepoint import async_preempt_stack, rules_for
from .schedrecords import G, GoSpec, M, P
from .schedtrap import Traps
from .steal import Stealing
from ..core.structref import write_field
from .sysmon import Sysmon

GLOBAL_QUEUE_EVERY = 61              # schedule(): check the global run queue every 61 schedticks
RUNQ_SIZE = 256


@dataclass
class SchedResult:
    duration_ns: int
    gomaxprocs: int
    async_preemption: bool
    ns_per_insn: float
    goroutines: list[G]
    signals_sent: int
    signals_refused: Counter
    signals_injected: int
    events: list[dict]
    starvation_ns: int
    finished: bool
    gc_cycles: int = 0
    gc_waits_ns: list = field(default_factory=list)      # suspendG: request -> goroutine parked (ns)
    gc_blocked: dict = field(default_factory=dict)       # goroutine -> ns its suspension was still pending

    @property
    def latencies_ns(self) -> list[int]:
        return sorted(l for g in self.goroutines for l in g.latencies)

    def percentile(self, q: float) -> float | None:
        lat = self.latencies_ns
        if not lat:
            return None
        k = max(0, min(len(lat) - 1, -(-int(q * len(lat) * 1000) // 1000) - 1))   # nearest rank
        return lat[k] / 1e6

    @property
    def starved(self) -> list[G]:
        return [g for g in self.goroutines if g.max_wait > self.starvation_ns]

    @property
    def preemptions(self) -> dict:
        return {"async": sum(g.preempt_async for g in self.goroutines),
                "cooperative": sum(g.preempt_coop for g in self.goroutines)}

    def cpu_share(self, g: G) -> float:
        total = self.duration_ns * self.gomaxprocs
        return g.cpu_insns * self.ns_per_insn / total if total else 0.0


class Scheduler:
    """GOMAXPROCS Ps, one M per P, sysmon, and the goroutines of one program.

    Here: setup (newproc), the run queues and timers, findRunnable's own-P half, execute, and the
    loop that steps every M one round at a time. Collaborators, each an object with its own state that works on
    this one's Ps, Ms and Gs, hold the rest: `stealing` (steal.py: work stealing), `traps` (schedtrap.py: what a
    G's trap does), `suspender` (gcsuspend.py: the GC's suspendG/resumeG, its cycles' state) and `sysmon`
    (sysmon.py: sysmon's sleep, retake and the preemption signal)."""

    def __init__(self, program: Program, stub: Program, layout: StubLayout, specs: list[GoSpec],
                 gomaxprocs: int = 1, async_preemption: bool = True, ns_per_insn: float = 1.0, seed: int = 1,
                 quantum_ns: int = 20_000, stack_size: int = memmap.DEFAULT_STACK_SIZE):
        if not 1 <= gomaxprocs <= memmap.MAX_PS:
            raise EmuError(f"gomaxprocs must be 1..{memmap.MAX_PS}")
        if not specs or len(specs) > memmap.MAX_GS - memmap.MAX_MS:
            raise EmuError(f"between 1 and {memmap.MAX_GS - memmap.MAX_MS} goroutines")
        if ns_per_insn <= 0 or quantum_ns < ns_per_insn:
            raise EmuError("ns_per_insn must be positive and the quantum at least one instruction")
        self.layout = layout
        self.rules = rules_for(layout.name)
        self.async_preemption = async_preemption
        self.ns = ns_per_insn
        self.quantum_insns = int(quantum_ns / ns_per_insn)
        self.quantum_ns = self.quantum_insns * ns_per_insn
        self.rnd = random.Random(seed)
        self.machine = Machine(program, stub, layout.name, stub_ret_hooks=False)
        self.stealing = Stealing(self)          # findRunnable's stealing half (steal.py)
        self.sysmon = Sysmon(self)              # sysmon, retake and the preemption signal (sysmon.py)
        self.traps = Traps(self)                # what a G's trap does (schedtrap.py)
        self.suspender = GcSuspend(self)        # the GC's suspendG/resumeG (gcsuspend.py)
        self.machine.trap_handler = self.traps.on_trap
        self.sigctx = MachineSigContext(self.machine)
        #: an onlooker (explain): deliver(m, g, t, st, sigctx) -> sigctx, delivered(m, g, t, verdict),
        #: trapped(m, g, name, t) and executed(m, g, t); it may set stop_requested to end the run
        self.observer = None
        self.stop_requested = False
        self.prog = self.machine.all
        rt = self.machine.runtime
        helpers = [rt.get_func("asyncPreempt2").max_sp_delta]
        if rt.has_func("xRegRestore"):
            helpers.append(rt.get_func("xRegRestore").max_sp_delta)
        self.headroom = async_preempt_stack(stub.get_func("asyncPreempt").max_sp_delta, *helpers)
        self.stub_entry = stub.symbol("asyncPreempt")
        self.events: list[dict] = []
        self.global_q: deque[G] = deque()
        self.signals_sent = 0
        self.signals_injected = 0
        self.refused: Counter = Counter()
        mm = self.machine
        self.ps = [P(i, memmap.p_addr(i), ref=mm.struct(memmap.p_addr(i), gs.P_FIELDS)) for i in range(gomaxprocs)]
        self.ms = []
        for i, p in enumerate(self.ps):
            m = M(i, memmap.m_addr(i), memmap.g_addr(i), memmap.tls_fs_base(i), p,
                  ref=mm.struct(memmap.m_addr(i), gs.M_FIELDS), tls=mm.struct(memmap.tls_fs_base(i), gs.TLS_FIELDS))
            p.m = m
            self.ms.append(m)
            self._setup_m(m)
        self.gs: list[G] = []
        for j, spec in enumerate(specs):
            self.gs.append(self._newproc(j, spec, seed, stack_size))
        self._loaded: G | None = None
        self._running: G | None = None
        self._running_m: M | None = None
        self.on_round = None                 # callable(scheduler) after every round (progress), or None
        self._trap_time = 0
        self.now = 0

    # --- setup ------------------------------------------------------------------------------
    def _setup_m(self, m: M) -> None:
        mm, G_, M_, P_ = self.machine, gs.G_FIELDS, gs.M_FIELDS, gs.P_FIELDS
        write_field(mm, m.g0, G_, "m", m.addr)
        write_field(mm, m.g0, G_, "atomicstatus", gs.G_IDLE)   # g0 is never _Grunning (FACTS.md §2.4)
        write_field(mm, m.addr, M_, "g0", m.g0)
        write_field(mm, m.addr, M_, "p", m.p.addr)
        write_field(mm, m.addr, M_, "procid", m.idx + 1)
        write_field(mm, m.p.addr, P_, "id", m.p.idx)
        write_field(mm, m.p.addr, P_, "status", gs.P_RUNNING)
        write_field(mm, m.p.addr, P_, "m", m.addr)
        mm.write_u64(m.fs_base - 8, m.g0)

    @staticmethod
    def register_seed(seed: int, j: int) -> int:
        """The seed of goroutine j's start registers (a World with this seed starts identically)."""
        return seed * 1000 + j

    def _newproc(self, j: int, spec: GoSpec, seed: int, stack_size: int) -> G:
        mm, G_ = self.machine, gs.G_FIELDS
        if not self.prog.has_func(spec.entry):
            raise EmuError(f"goroutine {spec.name!r}: no function {spec.entry!r}")
        slot = memmap.MAX_MS + j
        lo, hi = memmap.stack_bounds(slot, stack_size)
        mm.map_stack(lo, hi)
        g = G(j, spec.name, memmap.g_addr(slot), slot, lo, hi, xreg_block=memmap.XREG_BASE + j * memmap.XREG_SLOT,
              ref=mm.struct(memmap.g_addr(slot), G_))
        write_field(mm, g.addr, G_, "stack.lo", lo)
        write_field(mm, g.addr, G_, "stack.hi", hi)
        write_field(mm, g.addr, G_, "stackguard0", lo + gs.STACK_GUARD)
        write_field(mm, g.addr, G_, "atomicstatus", gs.G_RUNNABLE)
        write_field(mm, g.addr, G_, "goid", j + 1)
        sp = hi - 16
        mm.write_u64(sp, memmap.GOEXIT)
        vals = initial_registers(self.register_seed(seed, j), self.layout, spec.registers)
        vals.update(RSP=sp)
        if "R14" not in {k.upper() for k in spec.registers}:
            vals["R14"] = g.addr
        for name, v in vals.items():
            mm.set_reg(name, v)
        mm.set_reg("RIP", self.prog.symbol(spec.entry))
        g.ctx = mm.save_context()
        self._runqput(self.ps[0], g, True)                  # newproc: runqput(pp, newg, true)
        return g

    # --- trace ------------------------------------------------------------------------------
    def _ev(self, kind: str, t: float, track: str, **args) -> None:
        self.events.append({"kind": kind, "t": t, "track": track, **args})

    # --- run queues (proc.go) -----------------------------------------------------------------
    def _runqput(self, p: P, g: G, next_: bool) -> None:
        if next_:
            old, p.runnext = p.runnext, g
            if old is None:
                return
            g = old
        if len(p.runq) < RUNQ_SIZE:
            p.runq.append(g)
            return
        half = [p.runq.popleft() for _ in range(RUNQ_SIZE // 2)]   # runqputslow
        self.global_q.extend(half + [g])

    def _runqget(self, p: P) -> tuple[G | None, bool]:
        if p.runnext is not None:
            g, p.runnext = p.runnext, None
            return g, True                                  # inherits the time slice
        if p.runq:
            return p.runq.popleft(), False
        return None, False

    def _globrunqget(self, p: P, max_: int) -> G | None:
        if not self.global_q:
            return None
        n = min(len(self.global_q), len(self.global_q) // len(self.ps) + 1)
        if max_ > 0:
            n = min(n, max_)
        n = min(n, RUNQ_SIZE // 2)
        g = self.global_q.popleft()
        for _ in range(n - 1):
            self._runqput(p, self.global_q.popleft(), False)
        return g

    def _check_timers(self, p: P, into: P, t: float) -> bool:
        due = sorted((d, g.idx, g) for d, g in p.timers if d <= t)
        if not due:
            return False
        p.timers = [(d, g) for d, g in p.timers if d > t]
        for d, _, g in due:                                  # ready(gp): runqput(current P, gp, next=true)
            g.status, g.wake_deadline, g.runnable_since = "runnable", d, d
            self._runqput(into, g, True)
            self._ev("ready", t, f"M{into.m.idx}", g=g.name, late_ms=(t - d) / 1e6)
        return True

    def _find_runnable(self, m: M, t: float) -> tuple[G | None, bool]:
        p = m.p
        self._check_timers(p, p, t)
        if p.schedtick % GLOBAL_QUEUE_EVERY == 0 and self.global_q:
            g = self._globrunqget(p, 1)
            if g is not None:
                return g, False
        g, inherit = self._runqget(p)
        if g is not None:
            return g, inherit
        g = self._globrunqget(p, 0)
        if g is not None:
            return g, False
        return self.stealing.work(p, t)

    # --- execute: a G on an M, and off it again -------------------------------------------
    def _execute(self, m: M, g: G, inherit: bool, t: float) -> None:
        mm, G_, P_ = self.machine, gs.G_FIELDS, gs.P_FIELDS
        p = m.p
        if not inherit:
            p.schedtick += 1
            write_field(mm, p.addr, P_, "schedtick", p.schedtick)
        clear_preempt(g.ref, p.ref, g.stack_lo)               # schedule() clears pp.preempt, execute() gp's
        write_field(mm, g.addr, G_, "atomicstatus", gs.G_RUNNING)
        set_curg(m.ref, m.tls, g.ref)
        if g.runnable_since is not None:
            g.max_wait = max(g.max_wait, int(t - g.runnable_since))
            g.runnable_since = None
        if g.wake_deadline is not None:
            g.latencies.append(int(t - g.wake_deadline))
            g.wake_deadline = None
        if g.xregs_saved:                                    # xRegRestore on whichever P we resume on
            xreg_restore(p.ref, g.ref, g.xreg_block)
            g.xregs_saved = False
        g.status = "running"
        m.curg = g
        m.slice_start = t
        self._ev("run", t, f"M{m.idx}", g=g.name, p=p.idx, inherit=inherit)
        if self.observer is not None:
            self.observer.executed(m, g, t)

    def _load(self, m: M, g: G) -> None:
        if self._loaded is g:
            return
        mm = self.machine
        if self._loaded is not None and self._loaded.status == "running":
            self._loaded.ctx = mm.save_context()
        mm.restore_context(g.ctx)
        mm.set_fs_base(m.fs_base)
        self._loaded = g

    def _drop(self, m: M, t: float, why: str) -> None:
        g = m.curg
        self._ev("slice", m.slice_start, f"M{m.idx}", g=g.name, end=t, why=why)
        drop_curg(m.ref, m.tls, m.g0)
        m.curg = None
        if self._loaded is g:
            self._loaded = None

    # --- the loop -----------------------------------------------------------------------------
    def _run_m(self, m: M, start: float) -> None:
        mm = self.machine
        off = 0
        budget = self.quantum_insns
        while off < budget:
            t = start + off * self.ns
            if m.curg is None:
                g, inherit = self._find_runnable(m, t)
                if g is None:
                    break                                    # idle for the rest of the round
                self._execute(m, g, inherit, t)
            g = m.curg
            self._load(m, g)
            if m.signal_at is not None and m.signal_at <= off:
                self.sysmon.deliver(m, t)
                continue
            stop = budget if m.signal_at is None else min(budget, m.signal_at)
            self._running, self._running_m = g, m
            try:
                n, parked = mm.run_parkable(mm.pc, stop - off)
            except Fault as f:
                raise EmuError(f"goroutine {g.name} faulted at {f.where}: {f.error}") from None
            finally:
                self._running = self._running_m = None
            g.cpu_insns += n
            off += n
            if parked is not None:
                self.traps.after(m, g, parked[0], parked[1], start + off * self.ns)
                self._loaded = None
        if m.signal_at is not None and m.curg is None:
            self.sysmon.deliver(m, start + min(m.signal_at, budget) * self.ns)

    def run(self, duration_ns: int, starvation_ns: int = 50_000_000, gc_every_ns: int = 0) -> SchedResult:
        """Run until `duration_ns` of virtual time has passed or every goroutine has exited.

        A goroutine that waited more than `starvation_ns` to run is reported as starved. With
        `gc_every_ns`, a GC cycle asks to suspend (stack-scan) every goroutine that often.

        The model scheduler's loop over virtual time: sysmon ticks, timers and the GC's requests between
        quanta, each M's share of a quantum one Machine.run (through run_parkable: the loop it shares). It is not Process.run_until's loop: here
        preemu plays Go's scheduler (G, M, P), there the binary's own scheduler runs inside the guest and
        preemu plays only the kernel's threads.
        """
        self.suspender.every_ns = gc_every_ns
        self.suspender.next_ns = gc_every_ns
        finished = False
        while self.now < duration_ns and not self.stop_requested:
            end = self.now + self.quantum_ns
            while self.sysmon.next_ns <= self.now:
                self.sysmon.tick(self.sysmon.next_ns)
            gc = self.suspender
            if gc.every_ns and gc.next_ns <= self.now:
                gc.cycle(self.now)
                gc.next_ns = self.now + gc.every_ns
            for g in list(gc.suspending):
                gc.resend(g, self.now)
            for m in self.ms:
                self._run_m(m, self.now)
            self.now = end
            if self.on_round is not None:
                self.on_round(self)
            if all(g.status == "dead" for g in self.gs):
                finished = True
                break
            if self.sysmon.all_idle():
                nxt = min((d for p in self.ps for d, _ in p.timers), default=None)
                if nxt is None:
                    raise EmuError("deadlock: every goroutine is asleep and no timer is pending")
                if nxt > self.now:                            # all Ps idle: jump to the next timer
                    self.now = min(duration_ns, self.quantum_ns * -(-nxt // self.quantum_ns))
        for m in self.ms:
            if m.curg is not None:
                self._ev("slice", m.slice_start, f"M{m.idx}", g=m.curg.name, end=self.now, why="end")
        end = self.now
        for g in self.gs:                                    # still waiting to run at the end
            since = g.runnable_since
            if since is None and g.status == "waiting":
                since = min((d for p in self.ps for d, h in p.timers if h is g), default=None)
                since = since if since is not None and since <= end else None
            if since is not None and g.status != "running":
                g.max_wait = max(g.max_wait, int(end - since))
        blocked = {g.name: int(end - t0) for g, t0 in self.suspender.suspending.items()}
        return SchedResult(int(end), len(self.ps), self.async_preemption, self.ns, self.gs, self.signals_sent,
                           self.refused, self.signals_injected, self.events, starvation_ns, finished,
                           self.suspender.cycles, sorted(self.suspender.waits), blocked)
