"""Sweep: deliver the preemption signal at every instruction boundary of a goroutine and verify.

Boundary k is the state after k instructions of the goroutine (each iteration of a REP string
instruction is its own instruction, as on real x86). The engine reaches boundaries with Unicorn's
exact `count=` and injects at each selected boundary in one chained run: request (preemptone) ->
doSigPreempt (oracle, pushCall, ack) -> the stub runs, traps into asyncPreempt2, which clobbers
every register -> at the stub's RET the state is dumped and compared with the interrupted state ->
RET resumes the goroutine. Refused points withdraw their request (each point is an independent
hypothetical signal; the pending-request semantics belong to the scheduler). At the end the final
registers and memory must equal an uninterrupted reference run; if they do not, the first
injection that makes them diverge is found by bisection.
"""
from __future__ import annotations

import bisect
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import unicorn

from ..front import asmfront
from ..core import dump, memmap, regs, stubgen
from ..check import inject, verify
from ..model import rtcode
from ..core import layout as L
from ..core.errors import BudgetExceeded, GuestFault
from ..model.gmp import SignalFrame, World
from ..model.faults import Fault
from ..model.hooks import STOP_COUNT, STOP_STUB_RET, STOP_TRAP

DEFAULT_BUDGET = 20_000_000
STUB_BUDGET_FACTOR = 50      # a stub's run may take 50x the reference stub's instructions
MAX_CHUNK = 1 << 20
CANARY_SIZE = 256
CANARY = bytes((0xC5 ^ i) & 0xFF for i in range(CANARY_SIZE))


@dataclass
class Reference:
    boundaries: int          # instructions executed from entry to goexit
    final: dump.RegState
    final_memory: list[tuple[int, bytes]]


@dataclass
class GcStats:
    cycles: int
    retained_conservatively: list[int]        # objects kept alive only by conservative roots
    shrink_deferred: int
    allocated: int
    retained_dead: list[int] = field(default_factory=list)   # ... and never used again: dead, yet retained
    freed_objects: list[int] = field(default_factory=list)   # the bases of the objects freed

    @property
    def freed(self) -> int:
        """Distinct objects freed."""
        return len(self.freed_objects)


def merge_gc(parts: list[GcStats]) -> GcStats | None:
    """The GC statistics of a sharded --gc sweep. Every shard starts from the reference run's heap, which
    the chain before it had already swept: an object dead by then is freed again by the shard's first GC
    and counted once (distinct objects); cycles and deferred shrinks add up; the retained sets unite."""
    if not parts:
        return None
    return GcStats(sum(g.cycles for g in parts), sorted(set().union(*(g.retained_conservatively for g in parts))),
                   sum(g.shrink_deferred for g in parts), max(g.allocated for g in parts),
                   sorted(set().union(*(g.retained_dead for g in parts))),
                   sorted(set().union(*(g.freed_objects for g in parts))))


@dataclass
class PcStats:
    pc: int
    verdicts: Counter = field(default_factory=Counter)   # reason -> count


@dataclass
class SweepResult:
    entry: str
    layout: str
    seed: int
    boundaries: int
    points: int
    injected: int
    refused: Counter
    violations: list[verify.Violation]
    violation_count: int
    elapsed: float
    per_pc: dict[int, PcStats]
    reference: Reference
    headroom: int
    uncovered_pcs: list[int]
    violation_groups: Counter = field(default_factory=Counter)   # (kind, what) -> count, over all violations
    forced: int = 0                                              # refused points injected anyway (--force-unsafe)
    gc: "GcStats | None" = None

    @property
    def points_per_second(self) -> float:
        return self.points / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def ok(self) -> bool:
        return self.violation_count == 0


def select_points(n: int, max_points: int, must: set[int] = frozenset()) -> "range | list[int]":
    """Choose the boundaries to inject at: all of them, or (when capped) exactly max_points of them:
    every boundary in `must` (the first dynamic instance of each static PC), then the first
    boundaries, the last ones, and the rest evenly spread."""
    if n <= max_points:
        return range(n)                  # a range, not a list: memory does not grow with the points
    pts = set(sorted(must)[:max_points])

    def fill(candidates) -> None:
        for c in candidates:
            if len(pts) >= max_points:
                return
            pts.add(c)

    room = max_points - len(pts)
    fill(range(room // 2))
    fill(range(n - 1, n - 1 - room // 4, -1))
    left = max_points - len(pts)
    if left > 0:
        fill(int(i * n / left) for i in range(left))
    fill(range(n))
    return sorted(pts)


@lru_cache(maxsize=None)
def stub_budget(layout_name: str) -> int:
    """The instruction budget of one stub run: STUB_BUDGET_FACTOR x what the generated (reference) stub
    of this layout executes, asyncPreempt2 and its callees included. A stub that loops ends here."""
    lay = L.get_layout(layout_name)
    ref = asmfront.assemble_text(stubgen.generate(lay), "<reference stub>", memmap.STUB_BASE, rtcode.runtime_externs())
    rt = rtcode.runtime_program(lay.name)
    n = sum(len(f.insns) for f in ref.funcs) + sum(len(f.insns) for f in rt.funcs
                                                    if f.name in ("asyncPreempt2", "xRegRestore"))
    return STUB_BUDGET_FACTOR * n


def first_boundaries(world: World, n: int) -> dict[int, int]:
    """Return {pc: first boundary at which pc executes} for the goroutine's run (opt-in block hook).

    A block hook sees each translation block's address and size; counting the program's decoded
    instructions inside it gives exact boundary numbers (each REP iteration is its own block). The run
    stops as soon as every instruction of the program has been seen (a loop's later iterations add
    nothing), so a long run whose code is all reached early costs little.
    """
    m = world.machine
    addrs = sorted(i.addr for i in world.program.iter_insns())
    first: dict[int, int] = {}
    pos = [0]
    known: dict[tuple[int, int], int] = {}      # a block seen before: its instruction count (a loop's
                                                # body is the same block every iteration)

    def on_block(addr: int, size: int) -> None:
        n = known.get((addr, size))
        if n is None:
            lo = bisect.bisect_left(addrs, addr)
            n = known[addr, size] = bisect.bisect_left(addrs, addr + size) - lo
            for j in range(n):
                first.setdefault(addrs[lo + j], pos[0] + j)
            if len(first) == len(addrs):
                m.stop()                         # nothing left to find
        pos[0] += n

    world.reset()
    h = m.add_block_hook(on_block)
    try:
        m.run(m.pc, n)
    finally:
        m.del_hook(h)
    return first


def _final_memory(world: World, rsp: int) -> list[tuple[int, bytes]]:
    out = [(a, world.machine.read(a, n)) for _, a, n in world.data_regions()]
    out.append((rsp, world.machine.read(rsp, world.stack_hi - rsp)))
    return out


def _unset_registers_hint(world) -> str:
    """For a run that never ended with no --reg given: every entry register held a random value (--seed), a
    loop's bound among them; say so rather than only 'raise the budget'."""
    if world.given_regs:
        return ""
    return ("no --reg was given, so every entry register holds a random 64-bit value from --seed (a loop bound "
            "among them would be huge): give the ones the function reads (e.g. --reg RCX=100), or raise --budget")


def run_reference(world: World, budget: int = DEFAULT_BUDGET) -> Reference:
    """Run the goroutine uninterrupted from its entry to goexit; count its boundaries exactly.

    Runs in count= chunks (doubling up to MAX_CHUNK); in the chunk that reaches goexit, a forward
    bisection (snapshot, run half, restore only if goexit was reached) finds the exact count, so
    the whole run costs at most N + 2 * MAX_CHUNK instructions of emulation.
    """
    m = world.machine
    world.reset()
    base = 0                     # instructions executed so far; goexit not yet reached
    chunk = 4096

    snapshot, restore = world.snapshot, world.restore

    def run(n: int) -> bool:
        try:
            m.run(m.pc, n)
        except Fault as f:
            raise GuestFault(f.pc, f.where, f.error) from None
        return m.pc == memmap.GOEXIT

    while True:
        step = min(chunk, budget - base)
        if step <= 0:
            if m.all.func_for(m.pc) is None:          # Unicorn may spin at an unmapped PC instead of faulting
                raise GuestFault(m.pc, m.where(m.pc), "execution left the program's code")
            raise BudgetExceeded(f"goroutine {world.program.func_for(world.entry).name}", budget, m.pc,
                                 m.all.describe_pc(m.pc), _unset_registers_hint(world))
        snap = snapshot()
        if run(step):
            restore(snap)
            break
        base += step
        chunk = min(chunk * 2, MAX_CHUNK)
    window = step                # goexit is reached within `window` instructions of `base`, not at `base`
    while window > 1:
        half = window // 2
        snap = snapshot()
        if run(half):
            restore(snap)
            window = half
        else:
            base += half
            window -= half
    assert run(1), "goexit expected"
    final = m.dump_state()
    return Reference(base + 1, final, _final_memory(world, final.values["RSP"]))


def final_violations(w: World, final, ref: Reference, last_boundary: int) -> list[verify.Violation]:
    """Compare a run's end state (None if it did not reach goexit) with the reference run."""
    if final is None:
        pc = w.machine.pc
        return [verify.violation_maker(w.machine.all, last_boundary, pc)(
            "final-state", "control flow", "goexit after the reference's boundaries", f"pc {pc:#x}",
            "the swept run did not end where the reference run ended")]
    out = []
    for name, exp, act in ref.final.diff(final):
        if name == "RIP":
            continue
        out.append(verify.Violation("final-state", name, verify.fmt_value(name, exp), verify.fmt_value(name, act),
                                    last_boundary, memmap.GOEXIT, "goexit", "-",
                                    "final register differs from the uninterrupted run"))
    def make(kind, what, exp, act, detail=""):
        return verify.Violation(kind, what, exp, act, last_boundary, memmap.GOEXIT, "goexit", "-", detail)
    for a, data in ref.final_memory:
        try:
            now = w.machine.read(a, len(data))
        except unicorn.UcError:          # the stack moved (e.g. a needless growth): RSP already differs
            continue
        out += verify.compare_memory(a, data, now, make, "final memory differs from the uninterrupted run", limit=1,
                                     kind="final-state")
    return out


# --- what a failing point of a chain reports (Sweeper._inject_points calls these only when a check fails) ---
def _fault_violation(prog, boundary: int, f: Fault, detail: str) -> verify.Violation:
    """The goroutine itself faulted, between or after the injections."""
    return verify.violation_maker(prog, boundary, f.pc)("final-state", "control flow", "no fault", f.error, detail)


def _undeliverable(prog, pc: int, s: int) -> GuestFault:
    """The signal frame could not be pushed: RSP does not point into the goroutine's stack."""
    return GuestFault(pc, prog.describe_pc(pc),
                      f"the signal handler cannot push the resume PC at RSP-8 = {s - 8:#x} "
                      f"({memmap.describe_address(s - 8)}): RSP does not point into the goroutine's stack")


def _new_pc_stats(stats: dict, pc: int) -> "PcStats":
    """The verdict counter of a PC seen for the first time."""
    ps = stats[pc] = PcStats(pc)
    return ps


def _stub_fault_violation(make, f: Fault) -> verify.Violation:
    """The stub itself faulted."""
    return make("stub-fault", f.reg or f"{f.pc:#x}", "no fault", f.error, f"the stub faulted at {f.where}")


def _no_async_preempt2(make) -> verify.Violation:
    """The stub reached its RET without calling asyncPreempt2."""
    return make("no-asyncPreempt2", "asyncPreempt2", "CALL asyncPreempt2",
                "the stub returned without calling asyncPreempt2",
                "the stub returned without calling asyncPreempt2: the goroutine was never "
                "descheduled, so nothing it saves or restores was tested")


_RESUME_DETAIL = {"RSP": "RSP after the stub's RET would differ from the interrupted RSP",
                  "RIP": "the stub's RET would not return to the interrupted PC"}


def _resume_violation(make, reg: str, expected: int, actual: int) -> verify.Violation:
    """The stub's RET would not resume the goroutine where it was interrupted (`reg`: RSP or RIP)."""
    return make("resume", reg, f"{expected:#x}", f"{actual:#x}", _RESUME_DETAIL[reg])


def _headroom_violation(make, now: bytes, canary_lo: int, floor: int, headroom: int) -> verify.Violation:
    """The stub wrote into the canary below [S-headroom, S), the stack the oracle lets it use."""
    low = next(i for i in range(len(now)) if now[i] != CANARY[i])
    return make("headroom", f"{canary_lo + low:#x}", f"nothing below S-{headroom}",
                f"written {floor - canary_lo - low} bytes below it",
                f"the stub wrote below the asyncPreemptStack ({headroom} bytes) the oracle assumes")


class Sweeper:
    """Runs chained injection sweeps over one World."""

    def __init__(self, world: World, seed: int = 1, max_stub_insns: int | None = None):
        self.world = world
        self.m = world.machine
        # Clobber masks: asyncPreempt2 loads (interrupted value XOR mask) into every register, so
        # every register -- and every user flag, DF included -- differs from its interrupted value.
        import random
        rnd = random.Random(seed ^ 0x5EED)
        masks = {r.name: (rnd.getrandbits(8 * r.size) | 1) for r in regs.DUMPED}
        masks["RFLAGS"] = regs.USER_FLAGS_MASK
        self._mask = int.from_bytes(dump.pack(masks), "little")
        self.stub_budget = max_stub_insns or stub_budget(world.layout.name)
        self.runaway = False         # a stub run hit the budget: the chain stopped there
        # The counted stub run (see _run_stub): instructions before the asyncPreempt2 sentinel and from
        # just past its INT3 to the stub's RET, learned from the machine's first stub run (kept on the
        # machine: every shard a worker runs on it reuses them); False: never use it.
        if self.m.trap_handler is not None:
            self.m.stub_counts = False
        self.stub_fallbacks = 0      # counted stub runs that stopped elsewhere and went on with the hooks

    def _run_stub(self, begin: int, rsp: int) -> tuple[str, dump.RegState | None]:
        """Load `rsp` (pushCall's) and run the injected stub to its RET (armed), as `m.run(stub_entry,
        budget)` with the INT3 and RET hooks would, but without a callback from inside Unicorn on the
        usual path (two callbacks cost ~10 µs a point, issue #11): count= stops exactly at the
        asyncPreempt2 sentinel, Python runs the trap, count= stops exactly at the RET; each run and the
        register work around it is one call into the engine (Machine.run_pc, run_dump). The counts are
        learned from the first run, with a temporary per-instruction hook. Whenever a counted run stops
        elsewhere (a stub that takes another path), the rest of the budget runs with the hooks, so any
        stub ends exactly where the hooked run would have ended; only the speed differs. Returns why
        the run stopped and, when it was taken there, the register dump at the RET."""
        m = self.m
        counts = m.stub_counts
        if not counts:
            m.set_rsp(rsp)
            if counts is None:
                return self._learn_stub_counts(begin), None
            return m.run(begin, self.stub_budget), None
        n_pre, n_post = counts
        sentinel = memmap.ASYNC_PREEMPT2
        reason, at_pc = m.run_pc(begin, n_pre, rsp)
        left = self.stub_budget - n_pre
        if reason == STOP_COUNT and at_pc == sentinel:
            if m.async_preempt2_here():
                return STOP_TRAP, None
            reason, at = m.run_dump(sentinel + 1, n_post)     # the dump the checks need: its RIP says where
            left -= n_post + 1
            if reason == STOP_COUNT and at.rip in m.stub_ret_set:
                return STOP_STUB_RET, at
        if reason != STOP_COUNT or left <= 0:
            return reason, None
        self.stub_fallbacks += 1
        return m.run(m.pc, left), None

    def _learn_stub_counts(self, begin: int) -> str:
        m = self.m
        seen: list[int] = []
        h = m.uc.hook_add(unicorn.UC_HOOK_CODE, lambda uc, a, size, u: seen.append(a))   # after the RET hook
        try:
            reason = m.run(begin, self.stub_budget)
        finally:
            m.del_hook(h)
        sentinel = memmap.ASYNC_PREEMPT2
        m.stub_counts = False
        if reason == STOP_STUB_RET and seen.count(sentinel) == 1:
            i = seen.index(sentinel)
            m.stub_counts = (i, len(seen) - i - 1)
        return reason

    def _clobber_table(self, raw_before: bytes) -> bytes:
        return (int.from_bytes(raw_before, "little") ^ self._mask).to_bytes(dump.SIZE, "little")

    def run_chain(self, points, ref: Reference, verify_each: bool = True, stats=None,
                  force_unsafe: bool = False, canary: bool = False, async_preemption: bool = True,
                  nested_signals: bool = False, start=None, keep: int = 200):
        """Inject at each boundary in `points` (sorted) in one run; return (injected, refused, violations, final).

        The run starts at the entry, or at `start` = (boundary, portable snapshot of the reference
        run there). With force_unsafe, points the oracle refuses are injected anyway (counted in
        self.forced). `violations` is a ViolationLog keeping the first `keep`. The steps: _chain_start,
        the per-point loop _inject_points, then _run_to_goexit.
        """
        pos = self._chain_start(start)
        refused: Counter = Counter()
        violations = ViolationLog(keep)
        if nested_signals:          # each point twice: the second signal lands right after the RET
            points = (k for k in points for _ in range(2))
        injected, pos, resume = self._inject_points(points, pos, refused, violations, verify_each, stats,
                                                    force_unsafe, canary, async_preemption, nested_signals)
        if pos is None:             # the chain stopped at a fault or a runaway stub
            return injected, refused, violations, None
        return injected, refused, violations, self._run_to_goexit(ref, pos, resume, violations)

    def _chain_start(self, start) -> int:
        """Put the world where a chain starts (the entry, or `start`'s snapshot) and zero the chain's
        counters; return the boundary it starts at."""
        w = self.world
        w.reset()
        pos = 0
        if start is not None:
            pos, snap = start
            w.restore(snap)
        self.forced = 0
        self.runaway = False
        return pos

    def _inject_points(self, points, pos: int, refused: Counter, violations: "ViolationLog", verify_each: bool,
                       stats, force_unsafe: bool, canary: bool, async_preemption: bool, nested_signals: bool):
        """The chain's per-point loop: run on to boundary k, deliver SIGURG, run the stub, check, resume.
        Returns (injected, boundary reached, PC to resume at or None), or (injected, None, None) when the
        chain stopped (a fault or a runaway stub, logged). The sweep's hot loop, in one piece on purpose:
        locals hoisted, no call of its own on the usual path; only failing points call helpers."""
        w, m = self.world, self.m
        all_prog, stub_entry, headroom, frame = m.all, m.stub_entry, w.headroom, SignalFrame(m)
        stub_func, plain_rets = self._stub_shape()
        rsp_at, clobber = dump.OFFSETS["RSP"], self._clobber_table
        injected = 0
        m.prepare_chained_runs()
        ctx = m.point_context            # each point's boundary context, saved by run_dump(point=True)
        m.set_clobber_mask(self._mask.to_bytes(dump.SIZE, "little"))     # with it, the clobber table
        # (PC, RSP) the stub's RET left, not yet in the CPU: the next run loads them (the RET's effect)
        resume = None
        for k in points:
            if k > pos:
                try:
                    start, rsp = resume or (m.pc, None)
                    _, before = m.run_dump(start, k - pos, rsp, point=True)
                    clobbered = True
                except Fault as f:
                    violations.append(_fault_violation(all_prog, k, f, "the goroutine faulted after earlier injections"))
                    return injected, None, None
                pos = k
            else:
                if resume is not None:
                    m.set_rsp(resume[1])
                    m.set_rip(resume[0])
                before = m.dump_state()
                m.save_context(ctx)
                clobbered = False
            resume = None
            w.current_boundary = k
            pc = before.rip
            raw_before = before.raw
            s = int.from_bytes(raw_before[rsp_at:rsp_at + 8], "little")
            w.preempt_one()
            st = w.sched_state()
            bound = w.cur
            try:
                frame.deliver(s, pc)
                v = inject.sighandler_sigurg(frame, all_prog, st, pc, s, headroom, stub_entry, w.ack,
                                             not async_preemption)
            except unicorn.UcError:
                raise _undeliverable(all_prog, pc, s) from None
            if stats is not None:
                (stats.get(pc) or _new_pc_stats(stats, pc)).verdicts[v.reason] += 1
            if not v.ok:
                refused[v.reason] += 1
                if not force_unsafe:
                    w.withdraw_request()
                    continue
                inject.push_call(frame, stub_entry, pc)
                self.forced += 1
            else:
                injected += 1
            stub_rsp, begin = frame.sigreturn()         # RSP = S-8; the stub runs from RIP = begin
            stack_hi = w.stack_hi
            stack_before = m.read(s, stack_hi - s)
            if not clobbered:
                m.write(memmap.CLOBBER_TABLE, clobber(raw_before))
            floor = canary_lo = s - headroom             # the stub may use [floor, S) and no more
            if canary:
                canary_lo = max(w.stack_lo, floor - CANARY_SIZE)
                if floor > canary_lo:
                    m.write(canary_lo, CANARY[:floor - canary_lo])

            def make(*a, _k=k, _pc=pc):                  # built only when a check fails
                return verify.violation_maker(all_prog, _k, _pc)(*a)

            found: list[verify.Violation] = []
            calls_before = m.async_preempt2_calls
            m.stub_ret_armed = True
            try:
                after = None
                if nested_signals:
                    m.set_rsp(stub_rsp)
                    reason, nested = self._step_stub_with_signals(stub_func, refused, make)
                    found += nested
                else:
                    reason, after = self._run_stub(begin, stub_rsp)
            except Fault as f:
                reason = None
                found.append(_stub_fault_violation(make, f))
            m.stub_ret_armed = False
            if reason is not None and reason not in (STOP_STUB_RET, "nested"):
                found.append(self._runaway_violation(make))
                violations.extend(found)
                self.runaway = True
                return injected, None, None
            if reason == STOP_STUB_RET and m.async_preempt2_calls == calls_before:
                found.append(_no_async_preempt2(make))
            if not found:
                if after is None:
                    after = m.dump_state()
                raw_after = after.raw
                sp_after = int.from_bytes(raw_after[rsp_at:rsp_at + 8], "little")
                if sp_after != s - 8:
                    found.append(_resume_violation(make, "RSP", s, sp_after + 8))
                else:
                    ret_to = m.read_u64(s - 8)
                    if ret_to != pc:
                        found.append(_resume_violation(make, "RIP", pc, ret_to))
                now = m.read(canary_lo, floor - canary_lo) if floor > canary_lo else b""
                if now and now != CANARY[:len(now)]:
                    found.append(_headroom_violation(make, now, canary_lo, floor, w.headroom))
                if verify_each:
                    found += verify.compare_registers(before, after, raw_before, raw_after, make)
                    found += verify.compare_memory(s, stack_before, m.read(s, stack_hi - s), make,
                                                   "goroutine stack at or above the interrupted RSP changed")
            if found:
                violations.extend(found)
                self._undo_injection(ctx, bound, s, stack_before)
                continue
            if after.rip in plain_rets:          # the stub's RET (checked above: [S-8] = pc, RSP = S-8):
                resume = (pc, s)                 # its effect is loaded by the next run
            else:                                # RET imm16 and the like: let the CPU execute it
                m.run(after.rip, 1)
        return injected, pos, resume

    def _stub_shape(self) -> tuple:
        """The stub's asyncPreempt function and the addresses of its plain RETs (no immediate)."""
        stub = self.m.stub
        return stub.get_func("asyncPreempt"), {i.addr for f in stub.funcs for i in f.insns
                                                if i.mnemonic == "ret" and not i.op_str}

    def _runaway_violation(self, make) -> verify.Violation:
        """The violation of a stub that did not reach its RET within the stub budget."""
        m = self.m
        return make("stub-budget", "asyncPreempt", f"RET within {self.stub_budget:,} instructions",
                    f"no RET after {self.stub_budget:,} instructions (stopped at {m.all.describe_pc(m.pc)})",
                    f"the stub ran away; its budget is {STUB_BUDGET_FACTOR}x the reference stub's "
                    "instructions; the sweep stops at the first runaway")

    def _undo_injection(self, ctx, bound, s: int, stack_before: bytes) -> None:
        """Recover from a failed point: back to its boundary, as if it had never been injected."""
        w = self.world
        self.m.restore_context(ctx)
        w.bind(bound)
        self.m.write(s, stack_before)
        w.withdraw_request()

    def _run_to_goexit(self, ref: Reference, pos: int, resume, violations: "ViolationLog"):
        """After the last point: run on to the reference's end; return the final registers (None if the
        run did not end at goexit, or faulted: then a violation is logged)."""
        m = self.m
        try:
            if resume is not None:
                m.set_rsp(resume[1])
            m.run(m.pc if resume is None else resume[0], ref.boundaries - pos)
        except Fault as f:
            violations.append(_fault_violation(m.all, pos, f, "the goroutine faulted after the injections"))
            return None
        return m.dump_state() if m.pc == memmap.GOEXIT else None

    def _step_stub_with_signals(self, stub_func, refused: Counter, make) -> tuple[str, list[verify.Violation]]:
        """Run the stub one instruction at a time and deliver SIGURG at each of its boundaries: every
        one must be refused without touching anything (a second signal inside the stub).
        Returns (why the run stopped, violations)."""
        w, m = self.world, self.m
        pc = m.stub_entry
        for _ in range(self.stub_budget):
            if stub_func.start <= pc < stub_func.end:
                w.resend_signal()
                st = w.sched_state()
                v = inject.do_sig_preempt(w.sigctx, m.all, st, pc, m.reg("RSP"), w.headroom, m.stub_entry, w.ack)
                refused[f"nested:{v.reason}"] += 1
                if v.ok:
                    return "nested", [make("nested-injection", f"{pc:#x}", "refused", "injected",
                                           f"a second signal inside the stub at {m.all.describe_pc(pc)} was accepted")]
            reason = m.run(pc, 1)
            if reason == STOP_STUB_RET:
                return reason, []
            pc = m.pc
        return "budget", []

    def attribute(self, points, ref: Reference, force_unsafe: bool = False, start=None) -> int | None:
        """Return the first boundary whose injection makes the final state diverge (bisection)."""
        def diverges(prefix: int) -> bool:
            _, _, viol, final = self.run_chain(points[:prefix], ref, verify_each=False, force_unsafe=force_unsafe,
                                               start=start)
            return bool(viol) or bool(final_violations(self.world, final, ref, 0))
        lo, hi = 0, len(points)
        if not diverges(hi):
            return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if diverges(mid):
                hi = mid
            else:
                lo = mid
        return points[hi - 1]


class _Probe:
    """A violation group's (kind, what), asked as a violation is (ViolationLog.drop)."""
    def __init__(self, kind: str, what: str):
        self.kind, self.what = kind, what


class ViolationLog:
    """Violations of a run: the first `keep` in full, every one counted by (kind, what), so memory
    stays bounded however many points fail."""

    def __init__(self, keep: int = 200):
        self.keep, self.kept, self.count, self.groups = keep, [], 0, Counter()

    def append(self, v: verify.Violation) -> None:
        self.count += 1
        self.groups[(v.kind, v.what)] += 1
        if len(self.kept) < self.keep:
            self.kept.append(v)

    def extend(self, vs) -> None:
        for v in vs:
            self.append(v)

    def __bool__(self) -> bool:
        return self.count > 0

    def drop(self, gone) -> None:
        """Take back every violation v with gone(v) (the groups go whole: a group is one kind and subject)."""
        groups = {key for key in self.groups if gone(_Probe(*key))}
        for key in groups:
            self.count -= self.groups.pop(key)
        self.kept = [v for v in self.kept if (v.kind, v.what) not in groups]

    def merge(self, other: "ViolationLog") -> None:
        self.count += other.count
        self.groups.update(other.groups)
        self.kept += other.kept[:max(0, self.keep - len(self.kept))]


#: Points per shard. Fixed (not derived from the number of workers), so a sweep's result is the same
#: whether its shards run in one process, in N local processes or on a Dask cluster.
SHARD_POINTS = 10_000


def shard_plan(n_points: int, size: int | None = None) -> list[tuple[int, int]]:
    """Split point indices [0, n_points) into consecutive [start, end) shards of `size` points."""
    size = size or SHARD_POINTS
    return [(a, min(a + size, n_points)) for a in range(0, n_points, size)] or [(0, 0)]


@dataclass
class ChainOptions:
    seed: int = 1
    force_unsafe: bool = False
    canary: bool = False
    async_preemption: bool = True
    nested_signals: bool = False
    max_violations: int = 200


@dataclass
class ShardResult:
    """What one shard of a sweep found; shards merge by adding up, in shard order."""

    index: int
    points: int
    injected: int
    forced: int
    refused: Counter
    violations: ViolationLog
    per_pc: dict[int, PcStats]
    cpu_seconds: float = 0.0          # timing (process CPU time of the shard)
    gc: "GcStats | None" = None       # --gc worlds: this shard's GCs (merge_gc)
    extra: dict | None = None         # what only a real-program shard has (emu/drive/gsweep.py)


def start_states(world: World, boundaries: list[int]) -> list:
    """Run the goroutine uninterrupted once and save a portable snapshot at each boundary (sorted):
    the contexts shards start from, so no shard replays from entry."""
    m = world.machine
    world.reset()
    pos, out = 0, []
    for b in boundaries:
        if b > pos:
            m.run(m.pc, b - pos)
            pos = b
        out.append(world.portable_snapshot())
    return out


def run_shard(world: World, ref: Reference, index: int, points, start, opts: ChainOptions) -> ShardResult:
    """Inject at `points` starting from `start` ((boundary, portable snapshot) or None for the entry),
    run on to goexit and compare with the reference; attribute a final divergence to its first culprit."""
    t0 = time.process_time()
    sw = Sweeper(world, opts.seed)
    stats: dict[int, PcStats] = {}
    injected, refused, violations, final = sw.run_chain(
        points, ref, stats=stats, force_unsafe=opts.force_unsafe, canary=opts.canary,
        async_preemption=opts.async_preemption, nested_signals=opts.nested_signals, start=start,
        keep=opts.max_violations)
    forced = sw.forced
    gc = None
    if world.gc_enabled:                  # taken now: attributing a divergence below re-runs the chain
        gc = GcStats(world.gc_cycles, sorted(world.retained_conservatively), world.shrink_deferred,
                     len(world.heap.objs), world.retained_dead(),
                     sorted(o.base for o in world.heap.objs if o.freed_at is not None))
        for base, size, kind, addr, apc, freed_at in world.uaf:
            make = verify.violation_maker(world.machine.all, freed_at, apc)
            violations.append(make("use-after-free", f"object {base:#x} ({size} bytes)", "a live object",
                                   f"{kind} of freed memory at {addr:#x}",
                                   f"freed by the GC at the injection at boundary {freed_at}; accessed at pc {apc:#x}"))
    fv = [] if sw.runaway else final_violations(world, final, ref, points[-1] if len(points) else 0)
    if fv:
        culprit = sw.attribute(points, ref, opts.force_unsafe, start)
        if culprit is not None:
            for v in fv:
                v.detail += f"; first diverging injection: boundary {culprit}"
        violations.extend(fv)
    return ShardResult(index, len(points), injected, forced, refused, violations, stats, time.process_time() - t0,
                       gc)


def sweep(world: World, entry: str, seed: int = 1, max_points: int = 100_000,
          budget: int = DEFAULT_BUDGET, max_violations: int = 200, force_unsafe: bool = False,
          canary: bool = False, async_preemption: bool = True, nested_signals: bool = False,
          runner=None) -> SweepResult:
    """Inject at every boundary (capped by max_points) of the goroutine in `world` and verify each.

    The points are cut into shards of SHARD_POINTS; every shard after the first starts from a
    snapshot of the reference run at its first boundary. `runner(tasks, ref, opts)` -> ShardResults
    (in any order) runs them elsewhere (emu.drive.shards: local processes, Dask); by default they run here.
    With a world built with gc=True, a full GC runs at every injection and any later access to an
    object it freed is a use-after-free violation. A shard starts from the reference run's heap (no GC
    has run there), so its first GC frees again what the chain before it freed (merge_gc counts each
    object once), and a stale conservative root may then keep an object the chain had already freed:
    the retained sets can depend on the shard plan, and so can a failing sweep's violations and GC
    cycles (each shard that frees a live object finds its own use-after-free; a chain that faults
    stops early). The plan depends on the number of points only, never on where or how many at a
    time the shards run.
    """
    t0 = time.perf_counter()
    ref = run_reference(world, budget)
    must = set(first_boundaries(world, ref.boundaries).values()) if ref.boundaries > max_points else set()
    points = select_points(ref.boundaries, max_points, must)
    opts = ChainOptions(seed, force_unsafe, canary, async_preemption, nested_signals, max_violations)
    plan = shard_plan(len(points))
    starts = [None] + start_states(world, [points[a] for a, _ in plan[1:]])
    tasks = [(i, points[a:b], None if st is None else (points[a], st)) for i, ((a, b), st) in enumerate(zip(plan, starts))]
    if runner is None:
        results = [run_shard(world, ref, i, pts, st, opts) for i, pts, st in tasks]
    else:
        results = list(runner(tasks, ref, opts))
    return merge_shards(world, entry, ref, opts, sorted(results, key=lambda r: r.index),
                        time.perf_counter() - t0)


def merge_shards(world: World, entry: str, ref: Reference, opts: ChainOptions, results: list[ShardResult],
                 elapsed: float) -> SweepResult:
    """Add up shard results (in shard order) into one SweepResult."""
    log = ViolationLog(opts.max_violations)
    refused: Counter = Counter()
    stats: dict[int, PcStats] = {}
    injected = forced = points = 0
    for r in results:
        points += r.points
        injected += r.injected
        forced += r.forced
        refused.update(r.refused)
        log.merge(r.violations)
        for pc, ps in r.per_pc.items():
            mine = stats.get(pc)
            if mine is None:
                stats[pc] = PcStats(pc, Counter(ps.verdicts))
            else:
                mine.verdicts.update(ps.verdicts)
    gc = merge_gc([r.gc for r in results if r.gc is not None])
    seen = set(stats)
    static = [i.addr for f in world.program.funcs if any(f.start <= pc < f.end for pc in seen) for i in f.insns]
    uncovered = [pc for pc in static if pc not in seen]
    return SweepResult(entry, world.layout.name, opts.seed, ref.boundaries, points, injected, refused,
                       log.kept, log.count, elapsed, stats, ref, world.headroom, uncovered, log.groups,
                       forced, gc)
