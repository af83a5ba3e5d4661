"""One preemption episode, step by step: request, signal(s), and how the goroutine is finally stopped.

Where a sweep asks "is it correct to preempt here?" at every boundary, an episode follows Go's own
sequence once (FACTS.md §1.3, §2.3, §4.3): at boundary `at` sysmon's preemptone sets gp.preempt,
stackguard0 = stackPreempt and (with async preemption on) pp.preempt and sends SIGURG. The
handler runs doSigPreempt. If the PC is not an async safe point the request *stays pending*:
sysmon re-sends the signal every `retry` instructions (one signal in flight per M) and the next
function prologue sees stackguard0 == stackPreempt and preempts cooperatively through morestack.
With async preemption off (Go 1.13, GODEBUG=asyncpreemptoff=1) only the prologue path exists, so
a call-free loop is never stopped.

`force_unsafe` injects even where the oracle refuses, to show why Go refuses (the damage is
detected: needless stack growth, a missed write barrier, a fault below stack.lo, clobbered data
below SP). `gc_during_preemption` turns the write barrier on while the goroutine is off CPU, as a
GC mark phase starting then would.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..check import inject, verify
from ..core import memmap
from ..model.gmp import World
from ..model.faults import Fault
from ..model.hooks import STOP_STUB_RET
from ..core.program import func_offset, tests_write_barrier
from ..check.safepoint import REASONS
from .sweeper import Reference, final_violations, run_reference, stub_budget


@dataclass
class Event:
    boundary: int
    pc: int
    kind: str
    text: str


@dataclass
class Episode:
    at: int
    async_preemption: bool
    outcome: str                   # async | cooperative | finished | not-preempted | faulted
    preempted_at: int | None
    events: list[Event] = field(default_factory=list)
    violations: list[verify.Violation] = field(default_factory=list)
    signals: int = 0
    reference: Reference | None = None

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def latency(self) -> int | None:
        return None if self.preempted_at is None else self.preempted_at - self.at


def _wb_range_end(prog, pc: int) -> int | None:
    """If pc is inside an unsafe range that tests the write-barrier flag, return the range's end PC."""
    insn = prog.insn_at(pc)
    run = prog.unsafe_run(pc) if insn is not None and insn.unsafe else None
    if run is None or not tests_write_barrier(run[0]):
        return None
    return run[1].addr + run[1].size


#: sysmon's re-send cadence: while the request stays pending, retake calls preemptone on every sysmon
#: tick; the shortest tick is usleep(20) (proc.go:6550-6557), 20,000 instructions at 1 ns each.
SYSMON_TICK_INSNS = 20_000
#: the default re-send interval of an episode: sysmon's cadence compressed, so that a short loop is
#: still signalled again before it returns; the output says so.
DEFAULT_RETRY = 50


def run_episode(world: World, at: int, async_preemption: bool = True, retry: int = DEFAULT_RETRY,
                max_wait: int = 100_000, force_unsafe: bool = False, signal_delay: int = 0,
                gc_during_preemption: bool = False) -> Episode:
    """Request a preemption at boundary `at` and follow it until the goroutine is stopped.

    The request (_request); then one instruction at a time, a signal whenever one is due (_signal: injected,
    _async_preempt, or refused and sent again `retry` instructions later), watching for stack growth, the
    prologue's cooperative preemption and goexit; then on to goexit and the comparison (_finish)."""
    ref = run_reference(world)
    w, m, prog = world, world.machine, world.machine.all
    ep = Episode(at, async_preemption, "not-preempted", None, reference=ref)
    say = lambda pos, kind, text: ep.events.append(Event(pos, m.pc, kind, text))  # noqa: E731
    _request(w, ep, ref, say)
    pos = at
    next_signal = pos + signal_delay if async_preemption else None
    coop0 = w.cooperative_preemptions
    grow0 = len(w.stack_moves)
    explained: set[str] = set()
    while pos < at + max_wait:
        if next_signal is not None and pos >= next_signal:
            _signal(w, ep, pos, say, explained, retry, force_unsafe, gc_during_preemption)
            if ep.outcome == "faulted":
                return ep
            if ep.outcome == "async":
                break
            next_signal = pos + retry            # refused: the request stays pending
        try:
            m.run(m.pc, 1)
        except Fault as f:
            ep.violations.append(verify.violation_maker(prog, pos, f.pc)(
                "final-state", "control flow", "no fault", f.error, f"the goroutine faulted at {f.where}"))
            ep.outcome = "faulted"
            return ep
        pos += 1
        if len(w.stack_moves) > grow0:
            grow0 = len(w.stack_moves)
            lo, hi, nlo, nhi = w.stack_moves[-1]
            say(pos, "stack-growth", f"newstack: copystack {hi - lo} -> {nhi - nlo} bytes, "
                f"[{lo:#x}, {hi:#x}) -> [{nlo:#x}, {nhi:#x})")
        if w.cooperative_preemptions > coop0:
            say(pos, "cooperative", "prologue saw stackguard0 == stackPreempt: morestack_noctxt -> newstack -> "
                "gopreempt_m (cooperative preemption); execute() resumes the G in its prologue")
            ep.outcome, ep.preempted_at = "cooperative", pos
            break
        if m.pc == memmap.GOEXIT:
            say(pos, "goexit", "the goroutine returned before anything preempted it")
            ep.outcome = "finished"
            break
    else:
        say(pos, "starved", f"still running {max_wait} instructions after the request: nothing can stop this loop "
            "(no prologue runs and async preemption is " + ("refused here" if async_preemption else "off") + ")")
    w.withdraw_request()
    m.write(memmap.WRITE_BARRIER_FLAG, bytes(4))       # any GC mark phase is over
    _finish(ep, w, ref, pos)
    return ep


def _request(w: World, ep: Episode, ref: Reference, say) -> None:
    """Run the goroutine to boundary ep.at and make the request there, as sysmon's preemptone does."""
    m = w.machine
    w.reset()
    if ep.at >= ref.boundaries:
        raise ValueError(f"--at {ep.at}: the goroutine ends after {ref.boundaries} instructions")
    if ep.at:
        m.run(m.pc, ep.at)
    w.preempt_one(signal=ep.async_preemption)
    say(ep.at, "request", "sysmon: preemptone -> gp.preempt = true, stackguard0 = stackPreempt"
        + (", pp.preempt = true, SIGURG sent to M0" if ep.async_preemption else " (async preemption off: no signal)"))


def _signal(w: World, ep: Episode, pos: int, say, explained: set[str], retry: int, force_unsafe: bool,
            gc_during_preemption: bool) -> None:
    """SIGURG at boundary `pos`: doSigPreempt decides. Injected (or forced): the stub runs (_async_preempt;
    ep.outcome becomes "async" or "faulted"). Refused: the ack; the request stays pending and sysmon will
    send the signal again (ep.outcome unchanged)."""
    m, prog = w.machine, w.machine.all
    pc = m.pc
    before = m.dump_state()
    s = before.get("RSP")
    st = w.sched_state()
    ep.signals += 1
    v = inject.do_sig_preempt(w.sigctx, prog, st, pc, s, w.headroom, m.stub_entry, w.ack)
    forced = False
    if not v.ok and force_unsafe and v.reason != "no-request":
        inject.push_call(w.sigctx, m.stub_entry, pc)
        forced = True
    if v.ok or forced:
        say(pos, "inject", f"signal at {prog.describe_pc(pc)}: " + (
            "async safe point" if v.ok else f"FORCED although unsafe ({v.reason}: {REASONS[v.reason]})")
            + f"; pushCall: [{s - 8:#x}] = {pc:#x}, RSP {s:#x} -> {s - 8:#x}, RIP = asyncPreempt")
        _async_preempt(w, ep, pos, pc, before, say, forced, gc_during_preemption)
        return
    if v.reason in explained:
        say(pos, "refuse", f"signal at {prog.describe_pc(pc)}: refused ({v.reason}); still pending")
    else:
        explained.add(v.reason)
        say(pos, "refuse", f"signal at {prog.describe_pc(pc)}: refused ({v.reason}: {REASONS[v.reason]}); "
            "ack: preemptGen += 1, signalPending = 0; the request stays pending and sysmon "
            f"re-sends the signal every {retry:,} instructions{_cadence(retry)}")
    w.resend_signal()


def _async_preempt(w: World, ep: Episode, pos: int, pc: int, before, say, forced: bool,
                   gc_during_preemption: bool) -> None:
    """The injected call: the stub runs to its RET (asyncPreempt2 deschedules the G meanwhile), the registers
    must come back, and the G resumes at pc. A forced injection inside a write-barrier window with a GC
    turning the barrier on is stepped through (_check_write_barrier). Sets ep.outcome: async or faulted."""
    m, prog = w.machine, w.machine.all
    wb_end = _wb_range_end(prog, pc) if (forced and gc_during_preemption) else None
    if gc_during_preemption:
        w.on_preempted = lambda: m.write(memmap.WRITE_BARRIER_FLAG, b"\x01\x00\x00\x00")
    calls0 = m.write_barrier_calls
    m.stub_ret_armed = True
    try:
        reason = m.run(m.stub_entry, stub_budget(w.layout.name))
    except Fault as f:
        m.stub_ret_armed = False
        w.on_preempted = None
        ep.violations.append(verify.violation_maker(prog, pos, pc)(
            "stub-fault", f.reg or f"{f.pc:#x}", "no fault", f.error, f"the stub faulted at {f.where}"))
        say(pos, "fault", f"the stub faulted at {f.where}: {f.error}")
        ep.outcome = "faulted"
        return
    m.stub_ret_armed = False
    w.on_preempted = None
    say(pos, "async-preempt", "asyncPreempt saved the registers; asyncPreempt2 -> mcall(gopreempt_m): "
        "the G is descheduled; execute() resumes it (gp.preempt = false, stackguard0 reset)"
        + ("; meanwhile a GC mark phase turned the write barrier on" if gc_during_preemption else ""))
    if reason != STOP_STUB_RET:
        ep.violations.append(verify.violation_maker(prog, pos, pc)(
            "stub-budget", "asyncPreempt", "RET", f"stopped: {reason}"))
        ep.outcome = "faulted"
        return
    after = m.dump_state()
    ep.violations += verify.compare_registers(before, after, before.raw, after.raw,
                                              verify.violation_maker(prog, pos, pc))
    m.run(m.pc, 1)
    say(pos, "resume", f"the stub returned to {prog.describe_pc(m.pc)} with every register restored"
        if not ep.violations else "the stub returned, but registers differ")
    ep.outcome, ep.preempted_at = "async", pos
    if wb_end is not None:
        _check_write_barrier(ep, w, prog, pos, pc, wb_end, calls0)


def resolve_at(world: World, spec: str) -> int:
    """Turn `--at` into a boundary: a number, `line:N` or `func+0xOFF` (first time that PC runs)."""
    from .sweeper import first_boundaries
    spec = spec.strip()
    if spec.isdigit():
        return int(spec)
    prog = world.program
    pc = None
    if spec.startswith("line:"):
        try:
            line = int(spec[5:])
        except ValueError:
            raise ValueError(f"--at {spec!r}: write line:N") from None
        pc = next((i.addr for i in prog.iter_insns() if i.line == line), None)
        if pc is None:
            raise ValueError(f"--at {spec!r}: no instruction on line {line}")
    else:
        name = spec.partition("+")[0]
        if not prog.has_func(name):
            raise ValueError(f"--at {spec!r}: expected a boundary number, line:N or FUNC+OFFSET")
        f = prog.get_func(name)
        pc = f.start + func_offset(spec)[1]
        if not f.start <= pc < f.end:
            raise ValueError(f"--at {spec!r}: the offset is past the end of {name} ({f.end - f.start:#x} bytes)")
        if prog.insn_at(pc) is None:
            near = ", ".join(f"{i.addr - f.start:#x}" for i in f.insns[:12]) + (" ..." if len(f.insns) > 12 else "")
            raise ValueError(f"--at {spec!r}: {pc:#x} is not the start of an instruction of {name} "
                             f"(its offsets: {near})")
    ref = run_reference(world)
    first = first_boundaries(world, ref.boundaries)
    if pc not in first:
        raise ValueError(f"--at {spec!r}: that instruction never runs in this goroutine")
    return first[pc]


def _check_write_barrier(ep: Episode, w: World, prog, pos: int, pc: int, end: int, calls0: int) -> None:
    """Step through the rest of the write-barrier window: a pointer store without a barrier call while
    the barrier is on is the torn sequence Go's unsafe marking prevents."""
    m = w.machine
    last_store = None
    for _ in range(64):
        if m.pc == end or prog.insn_at(m.pc) is None:
            break
        i = prog.insn_at(m.pc)
        if i.mnemonic == "mov" and i.op_str.startswith("qword ptr ["):
            last_store = i
        m.run(m.pc, 1)
    if last_store is not None and m.write_barrier_calls == calls0:
        ep.violations.append(verify.Violation(
            "missed-write-barrier", f"{last_store.addr:#x}", "gcWriteBarrier2 before the pointer store",
            "store without barrier", pos, pc, *verify.insn_where(prog, pc),
            f"`{last_store.text}` ({last_store.where}) stored a pointer while the write barrier was on, but the "
            "flag had been tested before the preemption: the GC never sees the old or new pointer"))
        ep.events.append(Event(pos, last_store.addr, "violation", ep.violations[-1].detail))
    m.write(memmap.WRITE_BARRIER_FLAG, bytes(4))     # the mark phase ends; the run goes on as before


def _finish(ep: Episode, w: World, ref: Reference, pos: int) -> None:
    """Run to goexit and compare with the uninterrupted run; report needless stack growth."""
    m = w.machine
    moves = len(w.stack_moves)
    faulted = None
    if m.pc != memmap.GOEXIT:
        try:
            m.run(m.pc, max(ref.boundaries * 4, 1_000_000))
        except Fault as f:
            faulted = f
    for lo, hi, nlo, nhi in w.stack_moves[moves:]:
        ep.events.append(Event(pos, m.pc, "stack-growth", f"later, newstack: copystack {hi - lo} -> {nhi - nlo} "
                                                          f"bytes, [{lo:#x}, {hi:#x}) -> [{nlo:#x}, {nhi:#x})"))
    for pc, sp, guard in w.needless_growths:
        ep.violations.append(verify.Violation(
            "needless-stack-growth", "stack", "no growth", f"grown with SP {sp:#x} above stackguard0 {guard:#x}",
            pos, pc, *verify.insn_where(m.all, pc),
            "the prologue branched on flags computed against stackPreempt before the preemption; after "
            "resume stackguard0 was reset, so newstack took it for a real overflow (golang/go#35470)"))
        ep.events.append(Event(pos, pc, "violation", ep.violations[-1].detail))
    if faulted is not None:
        ep.violations.append(verify.Violation("final-state", "control flow", "no fault", faulted.error, pos,
                                              faulted.pc, *verify.insn_where(m.all, faulted.pc),
                                              "the goroutine faulted after the episode"))
        return
    final = m.dump_state() if m.pc == memmap.GOEXIT else None
    ep.violations += final_violations(w, final, ref, pos)


def _cadence(retry: int) -> str:
    """Say how the re-send interval relates to sysmon's timing."""
    if retry == SYSMON_TICK_INSNS:
        return " (sysmon's 20 us tick at 1 ns per instruction)"
    return f" (compressed: sysmon's tick is 20 us-10 ms, {SYSMON_TICK_INSNS:,}+ instructions at 1 ns each)" \
        if retry < SYSMON_TICK_INSNS else ""
