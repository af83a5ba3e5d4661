"""The real-program sweep: a Go function preempted at every instruction boundary inside its own process.

The program runs under the whole-program engine from its real entry (runtime init, package init, main,
its goroutines). At the N-th call of F (a code hook on its entry) the whole process is snapshotted
(snapshot.py) and goroutine G, the one calling F, is followed by a GoroutineClock: F's boundaries are
G's instructions from F's entry until F returns to its caller (callees included, the runtime's too).

Reference: from the snapshot, the program runs uninterrupted; it records the number of boundaries, F's
results when it returns (where ABIInternal puts them, goabi.py over the binary's DWARF), the program's
globals F changed, and how the program ends (stdout, stderr, exit status).

The chain: from the snapshot again, at each chosen boundary k preemu makes the request as preemptone
does (runtime/proc.go:6931-6942: gp.preempt, gp.stackguard0 = stackPreempt, pp.preempt, and
preemptM's m.signalPending, signal_unix.go:376) and makes SIGURG pending for the thread G sits on,
taken before that thread runs again. The runtime's own sighandler -> doSigPreempt decides; preemu's
oracle predicts it (the watch: a disagreement is a violation). If the runtime declines, the request is
withdrawn (each point is an independent signal, as in the .s sweep). If it injects, the binary's
asyncPreempt (or --stub, loaded over it) runs; it must enter asyncPreempt2 and G must be descheduled
(gopreempt_m/goschedImpl or preemptPark: watch.py observes the path, and a stub that skips it is a
violation); G resumes, and at asyncPreempt's RET every GPR, RFLAGS and XMM0-15 must equal the interrupted
values (watch.py), and G's stack at and above the interrupted SP must be unchanged. G then runs to the
next boundary.

At F's return the swept run's results and globals must equal the reference's at every key the references
agree on (references.py; geffects.py and heapgraph.py follow them through the heap as object graphs up to a
renaming of addresses, since a goroutine resumed on another P allocates elsewhere), and after F the program
runs on to its exit with the same output and status. `to_exit` more points each get
a run of their own: one injection, then on to the exit, compared with the reference's ending.
This module is the engine of one process (setup, the reference, a chain, a single injection); grequest.py
makes and withdraws the request at each point, realsweep.py shards a sweep and merges it, geffects.py reads
what F leaves behind. With gc, at each point preemu's oracle calls safe the request is the runtime's own:
a GC cycle is made due and G's thread waits until the runtime stops G for it (realgc.py); the other points
get preemptone's request, withdrawn when declined.
"""
from __future__ import annotations

import gc
import random
from collections import Counter

from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from ..core.errors import EmuError
from ..check.verify import Violation
from ..linux import snapshot
from ..goruntime import crashtext
from ..goruntime.gclock import GoroutineClock
from ..goruntime.geffects import Effects
from ..linux.regbatch import read_reg
from . import grequest
from .grequest import Point, RequestMixin
from .runrecords import Ending, Reference, ReferenceEnded
from .gstart import Readiness, inlined_away, new_process, similar

SIGURG = grequest.SIGURG            # gsweep's name too (teach/real.py)
#: a held reference (RealSweep.held_reference): G's thread descheduled at this many boundaries of F (by
#: default), for HOLD_NS of virtual time at most in all: half of sysmon's forcePreemptNS (runtime/proc.go:6679,
#: 10 ms), so that the holds do not make sysmon preempt G
HOLDS = 3
HOLD_NS = 5_000_000
#: the uninterrupted run, from F's return to the program's end, may take this many times F's --budget of
#: instructions (a test that spins after F returns would otherwise run to the process's own budget: minutes)
TAIL_BUDGETS = 5
#: stackguard0 at or above this holds one of the runtime's special values, not a stack bound: stackPoisonMin
#: (runtime/stack.go:144, uintptrMask & -4096); stackPreempt (-1314) and stackFork (-1234) are above it
STACK_SPECIAL = (1 << 64) - 4096


class RealSweep(RequestMixin):
    """One Go function F of one program, swept inside the program's own process (the request at each
    boundary and its withdrawal: grequest.RequestMixin)."""

    def __init__(self, image, opts, func: str, call: int = 1, regs: dict | None = None, stub_code=None,
                 source_path=None, gc: bool = False, package: str | None = None, process=None,
                 gc_points: str = "all"):
        self.image, self.opts, self.call = image, opts, call
        self.gc_points = gc_points          # --gc: "all", "async" (injections only) or "sync" (calls only)
        self.package = package if package not in (None, "main") else None    # a test binary's package under test
        self.func, self.entry = self._resolve(func)
        self.regs = regs or {}
        self._source_path, self._stub_code, self._gc = source_path, stub_code, gc
        self.rebuilt = 0                    # processes built again because their snapshot could not be restored
        self._rng_layout = None             # rngstate.Layout, read when a reseeded reference first needs it
        self._boot(process)

    def _boot(self, shared=None) -> None:
        """Build the process and run it to F's call (the same every time: the program and options decide).
        `shared` (without --gc): a process another sweep's start-up ran, as new_process built it, run on from
        where it stands (Scout: stopping at a call and running on changes nothing the program does)."""
        self.gc = None                      # realgc.RealGC with --gc: the runtime's own cycle at each injection
        self.sync = None                    # gsync.SyncPoints with --gc: cycles at G's calls too
        self.p = shared if shared is not None else new_process(self.image, self.opts, self._source_path,
                                                                self._stub_code)
        self.stub = self.p.stub_name
        self.prog = self.p.watch.oracle.prog if self.p.watch.oracle is not None else None
        self._start()
        if self._gc:
            from ..goruntime.realgc import RealGC, mode_of
            self.gc = RealGC(self.p, self.g, mode_of(self._gc))
            self.gc.returned_at = lambda: self.returned[0] if self.returned is not None else None
            if self.gc_points != "async":       # the call sites' chain (realsweep.py runs it: sync_only)
                from .gsync import SyncPoints
                self.sync = SyncPoints(self.p, self.g, self.func, self.gc)

    # --- setup ----------------------------------------------------------------------------------------
    def _resolve(self, func: str) -> tuple[str, int]:
        syms = self.image.symbols
        pkgs = ([self.package, self.package + "_test"] if self.package else []) + ["main"]
        short = [f"{pkg}.{func}" for pkg in pkgs]
        if self.package and "." in func:            # ring.Max for a package whose path ends in /ring
            head, _, rest = func.partition(".")
            if self.package.rsplit("/", 1)[-1] == head:
                short.insert(0, f"{self.package}.{rest}")
        for name in (func, *short, f"{func}.abi0", *(f"{n}.abi0" for n in short)):
            if name in syms and syms[name][1] > 0:
                return name, syms[name][0]
        if (inlined := inlined_away(self.image.path, [func, *short])) is not None:
            raise EmuError(f"--func {func!r}: {inlined} has no code of its own in the program: the compiler inlined "
                           "it into every caller; sweep a caller, or put //go:noinline on the line above its func")
        raise EmuError(f"--func {func!r}: no such function in the program"
                       + (f" (did you mean {', '.join(near)}?)" if (near := similar(syms, func, package=self.package))
                          else ""))


    def _start(self) -> None:
        """Run the program to F's call (or, with --reg, to main.main's, where F is entered instead) and take
        the whole-process snapshot every run of the sweep starts from."""
        p = self.p
        at = self.image.symbol("main.main") if self.regs else self.entry
        hits = []

        def on_entry(uc, addr, size, _):
            if hits or p.counter.stopping(addr):
                return
            if not self.regs and not (self._runtime_ready() and self._count_call()):
                return
            hits.append(p.cur)
            p.counter.stop_here(False)          # stopped before it runs: not executed
        self._calls = self.early_calls = 0
        self._readiness = Readiness(p)
        h = p.uc.hook_add(UC_HOOK_CODE, on_entry, None, at, at)
        p.uc.ctl_remove_cache(at, at + 1)       # a block translated before the hook (a shared process's)
        p.run_until(lambda: bool(hits))
        p.uc.hook_del(h)
        if not hits:
            ended = Ending.of(p)
            how = (f"the program ran {p.insns:,} instructions and ended ({ended.reason}, exit status "
                   f"{ended.exit_code})" if p.error is None else f"the program stopped: {p.error}")
            if self.regs:
                raise EmuError(f"main.main was never called, so {self.func} could not be entered: {how}")
            early = (f" ({self.early_calls:,} more call(s) during the runtime's start-up or on a system stack, where "
                     "the runtime never preempts, are not counted)" if self.early_calls else "")
            if self._calls:
                raise EmuError(f"{self.func} was called {self._calls} time(s), not {self.call}{early}: {how}")
            raise EmuError(f"{self.func} was never called{early or ' '}: {how}".replace("  :", ":").replace(" :", ":"))
        t = hits[0]
        t.ctx = p.uc.context_save()
        if self.regs:
            for name, v in self.regs.items():
                t.ctx.reg_write(getattr(X, f"UC_X86_REG_{name}"), v)
            t.ctx.reg_write(X.UC_X86_REG_RIP, self.entry)
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        p.uc.context_restore(t.ctx)
        self.tid = t.tid
        self.g = p.read_u64(p.fs_base() - 8)
        self.entry_sp = read_reg(p.uc, X.UC_X86_REG_RSP)
        self.ret_addr = p.read_u64(self.entry_sp)
        self.entry_depth = self._stack_hi() - self.entry_sp
        self.effects = Effects(p, self.func, self.prog.binary if self.prog is not None else None, gc=self._gc)
        self.effects.mark_start()
        self.snap = snapshot.take(p)

    def _runtime_ready(self) -> bool:
        """Whether this call of F counts (Readiness: a call the runtime could preempt)."""
        if self._readiness():
            return True
        self.early_calls += 1
        return False

    def _count_call(self) -> bool:
        self._calls += 1
        return self._calls == self.call

    def _g(self, field: str) -> int:
        f = self.p.structs.g[field]
        return int.from_bytes(self.p.read(self.g + f.offset, f.size), "little")

    def _stack_hi(self) -> int:
        return self._g("stack.hi")

    # --- runs -------------------------------------------------------------------------------------------
    def _arm(self) -> GoroutineClock:
        if not snapshot.restorable(self.p, self.snap):
            self._boot()                    # a region the snapshot cannot map back (snapshot.py): start over
            self.rebuilt += 1
        if self.gc is not None:
            self.gc.reset()                 # its memory hooks go before the snapshot's memory comes back
        snapshot.restore(self.p, self.snap)
        clock = GoroutineClock(self.p, self.g)
        self.returned = None
        self._ret_hook = self.p.uc.hook_add(UC_HOOK_CODE, self._on_return, clock, self.ret_addr, self.ret_addr)
        self.p.uc.ctl_remove_cache(self.ret_addr, self.ret_addr + 1)   # a block translated before the hook
        return clock

    def _disarm(self, clock: GoroutineClock) -> None:
        clock.close()
        self.p.uc.hook_del(self._ret_hook)
        self.p.watch.listener = None

    def _on_return(self, uc, addr, size, clock) -> None:
        counter = self.p.counter
        if self.returned is not None or counter.stopping(addr) or clock.tid != self.p.cur.tid:
            return
        if self._stack_hi() - read_reg(uc, X.UC_X86_REG_RSP) != self.entry_depth - 8:
            return                              # a deeper (recursive) call returning here
        n = clock.boundary_at(addr)
        self.returned = (n, self.effects.results(), self.effects.changed_globals())

    def _finish(self, clock: GoroutineClock, limit: int | None = None) -> Ending:
        """Run on to the program's end; with `limit`, an EmuError if it has not ended after that many more
        instructions (of every thread)."""
        clock.stop_at = None
        start = self.p.insns
        stopped = self.p.run_until(None if limit is None else lambda: self.p.insns - start >= limit)
        self._disarm(clock)
        if stopped:
            rip = read_reg(self.p.uc, X.UC_X86_REG_RIP)
            raise EmuError(f"{self.func} returned, but the program had not ended {limit:,} instructions later (at "
                           f"{self.p.image.describe(rip)}): each run of a sweep is compared with the uninterrupted "
                           f"run's ending, so the program must end; give arguments or a test that end, or a larger "
                           f"--budget (the run after F gets {TAIL_BUDGETS} times F's)")
        return Ending.of(self.p)

    def reference(self, budget: int, reseed: int | None = None, ns_per_insn: int | None = None) -> Reference:
        """The uninterrupted run from the snapshot; with `reseed`, the runtime's random state is drawn again
        from that seed first (rngstate.reseed), and with `ns_per_insn` the virtual clock runs at that rate from
        the snapshot on (a slower or faster CPU): other legitimate runs (references.py)."""
        clock = self._arm()
        if reseed is not None:
            from ..goruntime import rngstate
            if self._rng_layout is None:
                self._rng_layout = rngstate.layout(self.image.path)
            rngstate.reseed(self.p, self._rng_layout, random.Random(reseed))
        clock.stop_at = budget
        rate = self.p.opts.ns_per_insn
        if ns_per_insn is not None:
            self.p.opts.ns_per_insn = ns_per_insn           # read at every slice's start (Process.run_until)
        try:
            self.p.run_until(lambda: self.returned is not None or clock.ready is not None)
        finally:
            self.p.opts.ns_per_insn = rate
        if self.returned is None:
            self._disarm(clock)
            if clock.ready is not None:
                raise EmuError(f"{self.func} did not return within --budget {budget:,} of its instructions "
                               f"(goroutine {self.g:#x}, at {self.p.image.describe(read_reg(self.p.uc, X.UC_X86_REG_RIP))})")
            ended = Ending.of(self.p)
            if self.p.error is None and reseed is not None:     # another legitimate run: the program's ending
                return Reference(-1, {}, {}, ended, label=f"a run with the runtime's random state drawn anew "
                                 f"(reference seed {reseed})", returned=False)
            said = crashtext.first_said(ended)
            msg = (f"{self.func} never returned: the program ended first ({ended.reason}, exit status "
                   f"{ended.exit_code}{': ' + said if said else ''}) after {clock.count:,} of its instructions")
            raise (ReferenceEnded(msg, ended) if self.p.error is None else EmuError(msg))
        n, results, globs = self.returned
        if ns_per_insn is not None:
            self.p.opts.ns_per_insn = ns_per_insn
        label = "the uninterrupted run" if reseed is None else (
            f"a run with the runtime's random state drawn anew (reference seed {reseed})"
            + (f", at {ns_per_insn} ns an instruction" if ns_per_insn is not None else ""))
        try:
            return Reference(n, results, globs, self._finish(clock, TAIL_BUDGETS * budget), label=label)
        finally:
            self.p.opts.ns_per_insn = rate

    def held_reference(self, budget: int, seed: int, boundaries: int, holds: int = HOLDS) -> Reference:
        """Another legitimate run: uninterrupted, but G's thread descheduled by the OS at `holds` boundaries of F
        drawn from `seed` among the primary reference's `boundaries` (an OS may deschedule any thread at any
        instruction), each time until no other thread is runnable (they did what they could), within HOLD_NS
        of virtual time for all the holds together. The other goroutines then get on while F is part-way, as on
        a machine where they run in parallel or first: what they legitimately change (a global under a mutex,
        a semaphore's waiters, what a channel holds) differs here as it does after a preemption
        (references.py). At about half the holds G is also asked to yield as preemptone asks when async
        preemption is off (_cooperative_request): G leaves its P at its next call's prologue (morestack ->
        gopreempt_m) and other goroutines run on its M, as they do after an injection. No signal is sent, and
        the holds together stay under sysmon's forcePreemptNS, so the runtime does not preempt G
        asynchronously for them: a reference never runs the stub under test. The globals the others wrote
        during the holds are the reference's `shared` (references.py: not compared at F's return)."""
        clock = self._arm()
        rng = random.Random(f"preemu-held-{seed}")
        p = self.p
        give_up, shared = None, set()
        held = []
        for k in sorted({rng.randrange(max(1, boundaries)) for _ in range(holds)}):
            clock.stop_at, clock.ready = k, None
            p.run_until(lambda: self.returned is not None or clock.ready is not None)
            if clock.ready is None or p.exit_code is not None or p.error is not None:
                break                       # F returned (or the program ended) first
            t = p.threads[clock.ready]
            clock.ready = None
            give_up = p.clock + HOLD_NS if give_up is None else give_up
            if p.clock >= give_up:
                break
            held.append(k)
            if rng.random() < 0.5:
                self._cooperative_request()
            shared |= self.effects.written_meanwhile(lambda: self._run_held(t, lambda: not p.runq, give_up))
        clock.stop_at = budget
        p.run_until(lambda: self.returned is not None or clock.ready is not None)
        label = (f"a run with {self.func}'s thread descheduled at boundaries {', '.join(f'{k:,}' for k in held)} "
                 f"(hold seed {seed})")
        if self.returned is None:
            self._disarm(clock)
            if p.error is None and p.exit_code is not None:     # the program ended first under this schedule
                return Reference(-1, {}, {}, Ending.of(p), shared=shared, label=label, returned=False)
            raise EmuError(f"{self.func} did not return in a reference run with its thread descheduled (a "
                           f"reference, references.py): the program {p.error or p.stop_reason or 'went on past the budget'}")
        n, results, globs = self.returned
        return Reference(n, results, globs, self._finish(clock), shared=shared, label=label)

    def _cooperative_request(self) -> None:
        """preemptone's request without its signal, as with GODEBUG=asyncpreemptoff=1 (runtime/proc.go:6931-6942:
        gp.preempt, gp.stackguard0 = stackPreempt, pp.preempt): G yields at its next function prologue that checks
        the stack. Left alone when stackguard0 already holds a special value (a request pending, stackFork)."""
        p, o = self.p, self._request_offsets()
        sg, m, _ = self._g_request()
        if sg >= STACK_SPECIAL:
            return
        p.write(self.g + o.g_preempt, o.g_one)
        p.write(self.g + o.g_stackguard0, o.stack_preempt)
        pp = p.read_u64(m + o.m_p) if m else 0
        if pp:
            p.write(pp + o.p_preempt, o.p_one)

    def gc_reference(self, budget: int, k: int | list) -> Reference:
        """--gc: another legitimate run, uninterrupted but for the runtime's own cycle made due when G reaches
        boundary k (or each boundary of a list: several cycles, as a busy heap gets; G's thread held until the
        runtime asks to stop G, as an OS may delay a thread: the signal then lands at k, or the runtime stops G
        at a later safe point or call). What a cycle changes without a bug (finalizers run, sync.Pool emptied, a
        weak pointer cleared) differs here as in a chain (references.py)."""
        clock = self._arm()
        listener = _Listener(self, clock)   # holds G's clock through the injection window; its checks unread
        self.p.watch.listener = listener
        ks = sorted(k) if isinstance(k, list) else [k]
        came, missed = 0, None
        for first in ks:
            if clock.count > first:
                continue                    # an earlier cycle's run went past it
            for k in range(first, first + 1000):    # the first boundary from there where preemu's oracle calls G safe
                clock.stop_at, clock.ready = k, None
                self.p.run_until(lambda: self.returned is not None or clock.ready is not None)
                if clock.ready is None or self._predict(clock.ready) == "safe":
                    break
            if clock.ready is None:
                break                       # F returned (or the program ended) first
            cycles = self.gc.cycles         # the schedule a chain's point gets (grequest.py)
            try:
                listener.point = self._await_concurrent(clock, k) if self.gc.concurrent else self._await_gc(clock, k)
                if self.gc.concurrent:      # G waits at k for the cycle's end, as in scan mode (and in a chain,
                    self._wait_out_cycle(clock, cycles)     # whose points keep stopping G)
            except grequest.ProgramEnded:
                break                       # the runtime crashed in the cycle: below, the run's evidence
            except grequest.NoCycle as e:
                missed = missed or e        # the runtime made no cycle here (as a chain's point it would be
                continue                    # counted): the next boundary's may come
            came += 1
        if missed and not came:
            raise missed                    # not one came: the program makes no cycles (GOGC=off?)
        clock.stop_at = budget
        self.p.run_until(lambda: self.returned is not None or clock.ready is not None)
        if self.returned is None:
            self._disarm(clock)
            ending = Ending.of(self.p)
            if self.p.error is None and self.p.exit_code is not None:     # the program ended (the runtime's crash)
                return Reference(-1, {}, {}, ending, gc_evidence=(k, list(self.gc.uaf), ending))
            raise EmuError(f"{self.func} did not return in the run with a GC cycle at boundary {k:,} (a reference "
                           f"of --gc): the program {self.p.error or self.p.stop_reason or 'went on past the budget'}")
        n, results, globs = self.returned
        ending = self._finish(clock)
        uaf = list(self.gc.uaf)                 # during F and after it, up to the exit
        evidence = (k, uaf, None) if uaf else None
        return Reference(n, results, globs, ending, gc_evidence=evidence,
                         label=f"a run with the runtime's GC cycles at boundaries {', '.join(f'{b:,}' for b in ks)}")

    # --- the chain ------------------------------------------------------------------------------------
    def chain(self, points, stats: dict, sync_only: bool = False) -> tuple:
        """Inject at each boundary of `points` (sorted) in one run from the snapshot, then run on to the exit;
        returns (listener, boundaries reached, ending). self.returned is F's (boundaries, results, globals).
        `sync_only` (--gc): no injection; a cycle at the first execution of each call site instead (gsync.py)."""
        clock = self._arm()
        listener = _Listener(self, clock)
        self.p.watch.listener = listener
        self.live = listener                    # what a Ctrl-C's partial summary reads (live_summary)
        reached = 0
        sync = self.sync if sync_only else None
        if sync_only:
            points = (1 << 62,)                 # a boundary G never reaches: only the call sites stop it
        if sync is not None:
            sync.begin(clock)
        gc.freeze()                             # the objects made before the chain (the decoded program, the
        try:                                    # snapshot) are not traversed by its collections: ~4 % a point
            for k in points:
                if clock.count > k:
                    continue                    # a synchronous point's run went past k
                stop = None
                while True:
                    clock.stop_at = k
                    self.p.run_until(lambda: self.returned is not None or clock.ready is not None)
                    stop = sync.take() if sync is not None and clock.ready is not None else None
                    if stop is None or self.returned is not None:
                        break
                    reached += 1                # a call site's synchronous point (gsync.py), at or before k
                    try:
                        listener.point = self._deliver_sync(clock, stop)
                    except grequest.ProgramEnded:
                        break
                    listener.points.append(listener.point)
                    if stop.boundary >= k:
                        break
                if stop is not None:
                    continue                    # k was the synchronous point's boundary
                if clock.ready is None or self.returned is not None:
                    break                       # F returned (or the program ended) before boundary k (or a
                    #                             --gc point's own run took G there: the point is not F's)
                reached += 1                    # (a call site's arm stays: its prologue up to morestack is unsafe)
                try:
                    listener.point = self._deliver(clock, k)
                except grequest.ProgramEnded:
                    break                       # the runtime crashed during the point's cycle: _finish's ending
                listener.points.append(listener.point)
        finally:
            gc.unfreeze()
            if sync is not None:
                sync.end()
        ending = self._finish(clock)
        for pt in listener.points:
            ev = pt.event
            verdict = "injected" if ev.outcome == "injected" else (ev.oracle or ev.outcome)
            stats.setdefault(pt.pc, Counter())[verdict] += 1
        return listener, reached, ending

    # --- one injection, then on to the exit --------------------------------------------------------------
    def single(self, k: int) -> tuple[Point | None, Ending]:
        clock = self._arm()
        listener = _Listener(self, clock)
        self.p.watch.listener = listener
        clock.stop_at = k
        self.p.run_until(lambda: self.returned is not None or clock.ready is not None)
        pt = None
        if clock.ready is not None:
            try:
                pt = listener.point = self._deliver(clock, k)
            except grequest.ProgramEnded:
                pass                            # the runtime crashed during the point's cycle: the ending says so
        return pt, self._finish(clock)

    def live_summary(self) -> str:
        """The chain in progress, in a line: points reached, injected, violations found so far."""
        lst = getattr(self, "live", None)
        if lst is None:
            return ""
        inj = sum(1 for pt in lst.points if pt.event is not None and pt.event.outcome == "injected")
        viol = len(lst.violations) + (len(self.gc.uaf) if self.gc is not None else 0)
        return (f"the chain in progress had reached {len(lst.points):,} point(s): {inj:,} injected, {viol:,} "
                "violation(s) so far" + (f", {self.gc.cycles:,} GC cycle(s)" if self.gc is not None else ""))

    def make_violation(self, kind: str, what: str, expected: str, actual: str, boundary: int, pc: int,
                       detail: str = "") -> Violation:
        insn, where = "?", self.image.describe(pc)
        if self.prog is not None:
            i = self.prog.insn_at(pc)
            if i is not None:
                insn, where = i.text, i.where
        return Violation(kind, what, expected, actual, boundary, pc, insn, where, detail)


class _Listener:
    """The watch's listener during a chain: holds G's clock through injection windows, withdraws declined
    requests, checks G's stack across each injection, and turns the resume check into Violations. `paths`
    counts the injections at the chain's points by the path the watch saw them take (watch.PATHS)."""

    def __init__(self, sw: RealSweep, clock: GoroutineClock):
        self.sw, self.clock = sw, clock
        self.point: Point | None = None
        self.points: list[Point] = []
        self.violations: list[Violation] = []
        self.other_injections = 0
        self.paths: Counter = Counter()

    def on_sigreturn(self, t, ev, outcome, rec) -> None:
        sw, pt = self.sw, self.point
        mine = pt is not None and ev is pt.event
        if rec is not None and rec.g == sw.g:
            self.clock.hold()
            if mine:
                hi = sw._stack_hi()
                pt.stack = (rec.sp, sw.p.read(rec.sp, hi - rec.sp))
                if sw.gc is not None:
                    sw.gc.injected(pt.boundary)
            else:
                self.other_injections += 1
        if mine and outcome != "injected" and pt.saved:     # preemu's request (a --gc cycle's is the runtime's)
            sw.withdraw(pt)

    def on_resumed(self, rec) -> bool:
        """Check the resume of the point's injection; True when its path (rec.path) was reported here."""
        sw = self.sw
        if rec.g != sw.g:
            return False
        self.clock.release(rec.ret_to)
        pt = self.point
        if pt is None or pt.stack is None or rec.pc != pt.pc or rec.sp != pt.stack[0]:
            return False
        self.paths[rec.path] += 1
        sp, before = pt.stack
        rsp = rec.ret_sp                    # read at the RET by the watch (nothing ran since)
        if rec.path == "descheduled" and not rec.found and rsp + 8 == rec.sp and rec.ret_to == rec.pc \
                and sw.p.read(sp, len(before)) == before:
            pt.stack = None                 # every check below holds: the common case, decided without them
            return True

        def make(kind, what, exp, act, detail=""):
            return sw.make_violation(kind, what, exp, act, pt.boundary, pt.pc, detail)

        def bad(*args):
            self.violations.append(make(*args))
        from ..core import regs
        from ..check import verify
        if rec.path == "no-asyncPreempt2":
            from .sweeper import _no_async_preempt2
            self.violations.append(_no_async_preempt2(make))
        elif rec.path == "not-descheduled":
            bad("not-descheduled", "schedule", "asyncPreempt2's mcall deschedules the goroutine (gopreempt_m or "
                "preemptPark)", "asyncPreempt2 was entered, and the goroutine came back without being descheduled",
                "neither goschedImpl nor preemptPark ran for it: the scheduler never ran, so nothing the stub saves "
                "or restores was tested")
        for kind, name, exp, act in rec.found:
            bad(kind, name, verify.fmt_value(name, exp), verify.fmt_value(name, act),
                "flags changed: " + regs.describe_flags(exp ^ act) if kind == "flags" else "")
        if rsp + 8 != rec.sp or sw.p.read_u64(rsp) != rec.pc:
            bad("resume", "RIP/RSP", f"RET to {rec.pc:#x} with RSP {rec.sp:#x}",
                f"RET to {sw.p.read_u64(rsp):#x} with RSP {rsp + 8:#x}")
        self.violations += verify.compare_memory(sp, before, sw.p.read(sp, len(before)), make,
                                                 "goroutine stack at or above the interrupted RSP changed", limit=1)
        pt.stack = None
        return True


