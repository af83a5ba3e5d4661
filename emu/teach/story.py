"""`preemu explain`: one preemption of one goroutine at one instruction, as a list of steps (data).

Builds the story from a real run of the same machinery the sweep uses: the World (preemptone's
request, the acknowledgement, asyncPreempt2 with its migration and GC), inject.sighandler_sigurg
(doSigPreempt and pushCall, observed through a recording sigctxt), safepoint.safe_point_checks
(isAsyncSafePoint's checks in Go's order), the stub single-stepped, verify's comparisons, and the
sweep's reference run and final-state check. Each Step carries everything a front end shows (the
narrative, the PC, every register with the ones that changed, the stack words with labels, a
table, the oracle checks decided there); the text, JSON and HTML renderers only format it, so
they never disagree.

Mirrors in order: runtime/proc.go:6917 preemptone, signal_unix.go:369 preemptM, signal_unix.go:342
doSigPreempt, preempt.go:369 wantAsyncPreempt, preempt.go:390 isAsyncSafePoint, signal_amd64.go:80
pushCall, the generated asyncPreempt (mkpreempt.go), preempt.go:317 asyncPreempt2 and
mgcmark.go:904 scanstack. The stub's part, from its entry to its RET, is told by stubsteps.py (a
mixin of the narrator); fmt.py writes the registers and PCs. Left out: scheduler scenarios (other
goroutines running in between; the sweep World has one G, which resumes on the other M/P).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..check import inject
from ..core import memmap, regs
from .fmt import REG_ORDER, _rel, describe_pc, fmt_reg
from .notes import CHECK_QUESTIONS, WHY, WHY_UNSAFE, unsafe_class
from .stubsteps import _StubSteps
from ..model.gmp import World
from ..core.layout import RESUME_PC_OFFSET, SAVED_BP_OFFSET, SAVED_FLAGS_OFFSET
from ..model.faults import Fault
from ..check.safepoint import REASONS, safe_point_checks, want_async_preempt
from ..drive.sweeper import Sweeper, final_violations, run_reference
from ..check.verify import Check


@dataclass
class Step:
    phase: str                      # goroutine | request | signal | pushCall | stub | asyncPreempt2 | gc | ...
    short: str                      # a few words for a step list
    title: str
    text: list[str]
    pc: int                         # the next instruction to run (highlighted)
    executed: list[int] = field(default_factory=list)    # PCs executed in this step
    regs: dict[str, str] = field(default_factory=dict)   # every register (RIP too), formatted
    changed: list[str] = field(default_factory=list)     # registers changed since the previous step
    stack: list[str] = field(default_factory=list)       # the story's stack window, one word each
    stack_changed: list[int] = field(default_factory=list)   # indices into the window
    rsp: int = 0
    flags: str = ""                 # RFLAGS decoded ("CF ZF")
    mp: str = ""                    # "M0/P0": where the goroutine is bound at this step
    table: dict | None = None       # {"title", "columns", "rows"}
    checks: list[Check] = field(default_factory=list)
    stack_marks: dict[int, str] = field(default_factory=dict)   # window index -> note (e.g. a GC root)
    sigstack: list[str] = field(default_factory=list)   # a real-program story: the signal stack window's words
    stack_labels: list[str] = field(default_factory=list)   # the window's words named by the roles they hold at
                                                            # this step (label_steps): nothing before it happened


@dataclass
class Story:
    file: str
    func: str
    layout: str
    at: int                         # the boundary the signal lands at
    pc: int                         # the interrupted PC
    verdict: str                    # injected | refused | forced
    reason: str                     # the oracle's reason code
    gc: bool
    steps: list[Step]
    code: dict[str, dict]           # function name -> {"goname", "file", "insns": [...]}
    stack_top: int                  # address of the window's first (highest) word
    stack_labels: list[str]         # one per word of the window, high to low: every role it takes in the story
                                    # (each step's own: Step.stack_labels)
    boundaries: int                 # the goroutine's instructions from entry to goexit
    unit: str = "boundary"          # what `at` counts: a boundary of the goroutine, or (a scheduler scenario) a signal
    sigstack_top: int = 0           # a real-program story (emu/teach/real.py): the rt_sigframe's top word
    sigstack_labels: list[str] = field(default_factory=list)   # ... and one label per word, high to low

    @property
    def checks(self) -> list[Check]:
        return [c for s in self.steps for c in s.checks]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict:
        d = asdict(self)
        for s in d["steps"]:
            s["pc"] = f"{s['pc']:#x}"
            s["executed"] = [f"{p:#x}" for p in s["executed"]]
            s["rsp"] = f"{s['rsp']:#x}"
        d["pc"] = f"{self.pc:#x}"
        d["stack_top"] = f"{self.stack_top:#x}"
        d["sigstack_top"] = f"{self.sigstack_top:#x}"
        d["ok"] = self.ok
        return d


def stack_window(s: int, frame_size: int, layout, stack_lo: int, stack_hi: int) -> tuple[int, int]:
    """The story's stack window for a signal at RSP = s: its top word (the interrupted frame's return
    address, or the stack's last word) and how many words down to asyncPreempt2's frame."""
    top = min(stack_hi - 8, s + frame_size + 8)
    return top, (top - max(layout.save_area_base(s) - 32, stack_lo)) // 8 + 1


def read_window(machine, top: int, nwords: int, stack_lo: int, stack_hi: int) -> list[str]:
    """The window's words, top down, formatted ("unmapped" outside the stack)."""
    return [f"{machine.read_u64(a):#018x}" if stack_lo <= a < stack_hi else "unmapped"
            for a in (top - 8 * i for i in range(nwords))]


def add_step(steps: list[Step], phase: str, short: str, title: str, text: list[str], pc: int, executed, regs_,
             stack: list[str], rsp: int, mp: str, table=None, checks=(), marks=None) -> Step:
    """Append a Step; what changed is taken against the previous step's registers and stack."""
    prev = steps[-1] if steps else None
    changed = [n for n in REG_ORDER if prev is not None and prev.regs.get(n) != regs_[n]]
    sch = [i for i, v in enumerate(stack) if prev is not None and prev.stack[i] != v]
    s = Step(phase, short, title, text, pc, list(executed), regs_, changed, stack, sch, rsp,
             regs.describe_flags(int(regs_["RFLAGS"], 16)), mp, table, list(checks), marks or {})
    steps.append(s)
    return s


def label_steps(steps: list[Step], top: int, nwords: int, roles: dict[int, tuple[str, str]]) -> list[str]:
    """Name the window's words step by step, so that a step shows only what has happened by then. `roles`:
    address -> (label, phase), the phase of the first step at which the word holds that role ("" from the
    first step: the interrupted frame; "pushCall"; "asyncPreempt2"); a "stub" role (a save slot) from the
    first stub step before asyncPreempt2 that changes the word, or the last of them when none does (the
    value saved was already there). A role whose phase the story never reaches is left out. Sets each
    Step.stack_labels and returns the whole story's labels (every role taken)."""
    first: dict[str, int] = {}
    for k, s in enumerate(steps):
        first.setdefault(s.phase, k)
    stub = [k for k, s in enumerate(steps) if s.phase == "stub"]
    stub = [k for k in stub if k < first.get("asyncPreempt2", len(steps))] or stub    # the saves, not the restores
    since: dict[int, tuple[str, int]] = {}
    for a, (label, phase) in roles.items():
        i, off = divmod(top - a, 8)
        if off or not 0 <= i < nwords or not label:
            continue
        if not phase:
            k = 0
        elif phase == "stub":
            k = next((j for j in stub if i in steps[j].stack_changed), stub[-1]) if stub else None
        else:
            k = first.get(phase)
        if k is not None:
            since[i] = (label, k)
    for k, s in enumerate(steps):
        s.stack_labels = [since[i][0] if i in since and k >= since[i][1] else "" for i in range(nwords)]
    return [since[i][0] if i in since else "" for i in range(nwords)]


def regs_of(machine) -> dict[str, str]:
    """Every register of the machine's CPU now, formatted, in REG_ORDER."""
    st = machine.dump_state()
    out = {n: fmt_reg(n, st.values[n]) for n in st.values}
    out["RIP"] = fmt_reg("RIP", machine.pc)
    return {n: out[n] for n in REG_ORDER}


class _RecordingSigctxt:
    """A sigctxt that records what pushCall does to the interrupted context (and does it)."""

    def __init__(self, inner):
        self.inner, self.ops = inner, []

    def rsp(self) -> int:
        return self.inner.rsp()

    def set_rsp(self, value: int) -> None:
        self.ops.append(("RSP", value))
        self.inner.set_rsp(value)

    def set_rip(self, value: int) -> None:
        self.ops.append(("RIP", value))
        self.inner.set_rip(value)

    def store64(self, addr: int, value: int) -> None:
        self.ops.append(("store", addr, value))
        self.inner.store64(addr, value)


CHECK_COLUMNS = ["check", "Go source", "asks", "here", "outcome"]


def check_rows(prog, st, pc: int, s: int, headroom: int, async_off: bool) -> tuple[list[list[str]], str]:
    """sighandler's checks for a signal at (pc, RSP = s) as table rows, in Go's order up to the first
    refusal (the rest "not reached"), and the reason the oracle gives."""
    refuse = async_off and st.rules.sighandler_checks_asyncpreemptoff
    outcome = "REFUSE: asyncpreemptoff" if refuse else "pass"
    if async_off and not refuse:            # Go 1.14's sighandler ran doSigPreempt anyway (golang/go#38531)
        outcome = "pass: not checked before Go 1.15 (golang/go#38531)"
    rows = [["asyncpreemptoff", "runtime/signal_unix.go:691", "debug.asyncpreemptoff == 0",
             "GODEBUG=asyncpreemptoff=1" if async_off else "0", outcome]]
    if refuse:
        return rows, "asyncpreemptoff"
    want = want_async_preempt(st)
    rows.append(["wantAsyncPreempt", "runtime/preempt.go:369", "(gp.preempt || p.preempt) && _Grunning",
                 "yes" if want else "no", "pass" if want else "REFUSE: no-request"])
    if not want:
        return rows, "no-request"
    refused_by, seen = None, set()
    for check, refusal in safe_point_checks(prog, st, pc, s, headroom):
        seen.add(check)
        q, cite = CHECK_QUESTIONS[check]
        rows.append([check, cite, q, _observed(prog, check, st, pc, s, headroom),
                     "pass" if refusal is None else f"REFUSE: {refusal}"])
        if refusal is not None:
            refused_by = refusal
            break
    for check, (q, cite) in CHECK_QUESTIONS.items():
        if check not in seen and check != "other":
            rows.append([check, cite, q, "-", "not reached"])
    return rows, refused_by or "safe"


def _observed(prog, check: str, st, pc: int, s: int, headroom: int) -> str:
    f = prog.func_for(pc)
    insn = prog.insn_at(pc)
    if check == "curg":
        return f"curg {st.m_curg:#x}, gp {st.gp:#x}"
    if check == "canPreemptM":
        return f"p {st.m_p:#x}, locks {st.m_locks}, mallocing {st.m_mallocing}, status {st.p_status}"
    if check == "stack":
        return f"{s:#x} - {st.stack_lo:#x} = {s - st.stack_lo} vs {headroom}"
    if check == "findfunc":
        return f"{f.name} ({f.goname})" if f else "none"
    if check == "unsafePoint":
        return str(prog.unsafe_point(pc))
    if check == "asm":
        return "FuncFlagAsm" if f.asm else "Go function"
    if check == "runtime":
        return (insn.inline if insn is not None and insn.inline else None) or f.goname
    return ""


def signal_text(prog, m_name: str, pc: int, reason: str) -> list[str]:
    """The signal step's narrative: the handler runs, and the verdict with Go's reason for the rule."""
    text = [f"The kernel stops {m_name}'s thread at {pc:#x} and runs sighandler -> doSigPreempt "
            "(runtime/signal_unix.go:342). Go's checks, in Go's order:"]
    if reason == "safe":
        text.append("Every check passes: this PC is an async safe point.")
    else:
        text.append(f"REFUSED by {reason}: {REASONS[reason]}.")
        why = WHY_UNSAFE[unsafe_class(prog, pc)] if reason == "unsafe-point" else WHY.get(reason, "")
        if why:
            text.append(f"Why Go has this rule: {why}.")
    return text


class _Narrator(_StubSteps):
    """Runs one preemption on a World and records a Step after each part of it."""

    def __init__(self, world: World, at: int, force_unsafe: bool, seed: int, delay: int = 0,
                 gc_during_preemption: bool = False, async_preemption: bool = True):
        self.w, self.m = world, world.machine
        self.async_preemption = async_preemption
        self.delay = delay
        self.gc_during_preemption = gc_during_preemption
        self.clobber = Sweeper(world, seed)._clobber_table      # the sweep's asyncPreempt2 clobber values
        self.prog = self.m.all
        self.at, self.force = at, force_unsafe
        self.steps: list[Step] = []

    # --- state capture -----------------------------------------------------------------------
    def regs_now(self) -> dict[str, str]:
        return regs_of(self.m)

    def stack_now(self) -> list[str]:
        return read_window(self.m, self.top, self.nwords, self.w.stack_lo, self.w.stack_hi)

    def add(self, phase: str, title: str, text: list[str], executed=(), table=None, checks=(), short=None,
            marks=None) -> Step:
        return add_step(self.steps, phase, short or phase, title, text, self.m.pc, executed, self.regs_now(),
                        self.stack_now(), self.m.reg("RSP"), f"M{self.w.cur}/P{self.w.cur}", table, checks, marks)

    def label_stack(self, s: int, frame_size: int, injected: bool) -> list[str]:
        """Name every word of the window (the caller's frame, the interrupted frame, the stub's slots), each
        from the step at which it takes that role (label_steps); the whole story's labels."""
        lay = self.w.layout
        roles: dict[int, tuple[str, str]] = {}
        fr = self.prog.func_for(self.pc)
        ret_slot = s + frame_size
        roles[ret_slot] = ("return address (caller)" if ret_slot + 8 < self.w.stack_hi else
                           "return address: goexit", "")
        for a in range(s, ret_slot, 8):
            roles[a] = (f"{fr.name.rsplit('.', 1)[-1]} frame, SP+{a - s}", "")
        if injected:
            roles[s + RESUME_PC_OFFSET] = ("resume PC (pushCall)", "pushCall")
            roles[s + SAVED_BP_OFFSET] = ("saved RBP (PUSHQ BP)", "stub")
            roles[s + SAVED_FLAGS_OFFSET] = ("saved RFLAGS (PUSHFQ)", "stub")
            base = lay.save_area_base(s)
            for sl in lay.stack_slots:
                if sl.reg.size == 16:
                    roles[base + sl.offset + 8] = (f"{sl.reg.go_name} high ({sl.offset}(SP))", "stub")
                    roles[base + sl.offset] = (f"{sl.reg.go_name} low ({sl.offset}(SP))", "stub")
                else:
                    roles[base + sl.offset] = (f"{sl.reg.go_name} ({sl.offset}(SP))", "stub")
            roles[base - 8] = ("return into asyncPreempt (CALL)", "asyncPreempt2")
            for k in (16, 24, 32):
                roles[base - k] = ("asyncPreempt2 frame (scribbled)", "asyncPreempt2")
        return label_steps(self.steps, self.top, self.nwords, roles)

    # --- the story ---------------------------------------------------------------------------
    def run(self) -> tuple[str, str]:
        """Tell the whole preemption; returns the verdict (injected, refused, forced) and the oracle's reason.

        Not a run loop of its own: each step is the Sweeper's machine run (Machine.run) to the next point
        of interest, single-stepped only through the stub, where every instruction is a told step."""
        before, executed = self._to_boundary()
        self._goroutine_step(before, executed)
        if not self.delay:
            self._request()
        rec, v, off, gens = self._signal(before)
        if not v.ok and not self.force:
            self._refused(before, off, gens)
            return "refused", v.reason
        verdict = "injected"
        if not v.ok:
            inject.push_call(rec, self.m.stub_entry, self.pc)
            verdict = "forced"
        self._push_call_step(rec, verdict, gens)
        if self._run_stub(before, verdict == "forced"):
            self._finish(before)
        return verdict, v.reason

    def _to_boundary(self):
        """Run G1 to boundary `at`: the signal's PC and RSP = S, the frame and the story's stack window. With
        a delay, run again to the request `delay` instructions earlier, make it, and step on to `at`.
        Returns the interrupted state and the PCs run after the request."""
        w, m, prog = self.w, self.m, self.prog
        at, delay = self.at, self.delay
        w.reset()
        if at:
            m.run(m.pc, at)
        self.pc = m.pc
        s = m.reg("RSP")
        self.s = s
        insn = prog.insn_at(self.pc)
        self.frame_size = frame_size = insn.sp_delta if insn is not None else 0
        self.top, self.nwords = stack_window(s, frame_size, w.layout, w.stack_lo, w.stack_hi)
        executed = ()
        if delay:                        # run again, to the request `delay` instructions earlier
            w.reset()
            if at - delay:
                m.run(m.pc, at - delay)
            self._request()
            executed = []
            for _ in range(delay):
                executed.append(m.pc)
                m.run(m.pc, 1)
        before = m.dump_state()
        self.stack_above = m.read(s, w.stack_hi - s)
        return before, executed

    def _goroutine_step(self, before, executed) -> None:
        """The first step (after the request, with a delay): where G1 is, its frame, its live registers."""
        prog, pc, s, at, delay = self.prog, self.pc, self.s, self.at, self.delay
        insn = prog.insn_at(pc)
        f = prog.func_for(pc)
        flags = regs.describe_flags(before.get("RFLAGS"))
        self.add("goroutine", f"The goroutine runs {f.name}: boundary {at}", [
            (f"G1 ran {delay} more instruction{'s' if delay != 1 else ''} after the request. " if delay else "")
            + f"After {at} instruction{'s' if at != 1 else ''} G1 is about to execute {describe_pc(prog, pc)}.",
            f"Its frame is {self.frame_size} bytes (SP delta at this PC); RSP = S = {s:#x}; flags: {flags}.",
            "Every register below is live: whatever happens next must give all of them back bit for bit."]
            + ([f"{insn.mnemonic.upper()} is interrupted between two iterations: RCX = "
                f"{before.get('RCX')} iterations left, its pointer registers already advanced. Resuming at this PC "
                "continues it (REP is not an unsafe point, golang/go#13160)."] if insn is not None and insn.is_rep
               else []),
            executed=executed)

    def _signal(self, before):
        """The signal: doSigPreempt -> wantAsyncPreempt -> isAsyncSafePoint, told as a table, then run through
        the handler on a recording sigctxt. Returns that sigctxt, the verdict, whether async preemption is
        off, and m.preemptGen before and after."""
        w, m, prog, pc, s = self.w, self.m, self.prog, self.pc, self.s
        M = w.structs.m
        rd = self._field
        st = w.sched_state()
        off = not self.async_preemption
        rows, reason = check_rows(prog, st, pc, s, w.headroom, off)
        self.add("signal", "SIGURG arrives: isAsyncSafePoint", signal_text(prog, f"M{w.cur}", pc, reason),
                 table={"title": "the handler's checks, in Go's order", "columns": CHECK_COLUMNS, "rows": rows})
        rec = _RecordingSigctxt(w.sigctx)
        gen0 = rd(w.mp, M, "preemptGen")
        m.write(memmap.CLOBBER_TABLE, self.clobber(before.raw))
        v = inject.sighandler_sigurg(rec, prog, st, pc, s, w.headroom, m.stub_entry, w.ack, off)
        assert v.reason == reason, (v.reason, reason)          # one oracle: the handler's and the table's
        gen1 = rd(w.mp, M, "preemptGen")
        return rec, v, off, (gen0, gen1)

    def _refused(self, before, off: bool, gens: tuple[int, int]) -> None:
        """Go refused (or ignored) the signal: the context is untouched; the request is withdrawn and G1 runs on."""
        w, m = self.w, self.m
        gen0, gen1 = gens
        after = m.dump_state()
        same = not before.diff(after) and m.pc == self.pc
        self.add("ack", "Refused: the handler only acknowledges" if not off else "Ignored: no doSigPreempt", [
            f"doSigPreempt acknowledges anyway: m.preemptGen {gen0} -> {gen1}, m.signalPending = 0." if not off
            else f"sighandler skips doSigPreempt entirely (Go >= 1.15, golang/go#38531): m.preemptGen stays "
                 f"{gen1}, nothing is acknowledged.",
            "The signal context is not touched: G1 resumes at the same PC with the same registers.",
            "In Go the request stays pending: " + ("sysmon re-sends the signal later, and " if not off else "")
            + "the next function prologue sees stackguard0 == stackPreempt and preempts cooperatively "
            "(`preemu preempt` follows that).",
            "With --force-unsafe preemu injects here anyway, to show the damage."],
            checks=[Check("context untouched", same, "registers and PC as interrupted" if same else
                          "the refused signal changed the context")])
        w.withdraw_request()
        self._finish(before)

    def _push_call_step(self, rec: _RecordingSigctxt, verdict: str, gens: tuple[int, int]) -> None:
        """pushCall's one memory write and the edited RSP and RIP, as the recording sigctxt saw them."""
        m, pc, s = self.m, self.pc, self.s
        gen0, gen1 = gens
        store = next(op for op in rec.ops if op[0] == "store")
        self.add("pushCall", "pushCall: make it look like a call" + (" (FORCED)" if verdict == "forced" else ""), [
            ("--force-unsafe: preemu injects although Go refuses. " if verdict == "forced" else "")
            + "sigctxt.pushCall (runtime/signal_amd64.go:80) makes exactly one memory write:",
            f"  [{store[1]:#x}] = {store[2]:#x}  (the resume PC, at S-8)",
            f"  RSP {s:#x} -> {m.reg('RSP'):#x},  RIP {pc:#x} -> {m.pc:#x} (asyncPreempt)",
            f"then acknowledges: m.preemptGen {gen0} -> {gen1}, m.signalPending = 0. "
            "The handler returns; the thread resumes as if G1 had called asyncPreempt."])

    def _run_stub(self, before, forced: bool) -> bool:
        """Run the stub (stubsteps.py), with the write barrier turned on while G1 is off CPU when asked;
        whether it reached its RET."""
        m, pc = self.m, self.pc
        if self.gc_during_preemption:            # a GC mark phase starts while G1 is off CPU
            self.w.on_preempted = lambda: m.write(memmap.WRITE_BARRIER_FLAG, b"\x01\x00\x00\x00")
        calls0 = m.write_barrier_calls
        try:
            ok = self._stub(before, self.s, pc)
        finally:
            self.w.on_preempted = None
        if ok and self.gc_during_preemption:
            self._write_barrier_window(pc, forced, calls0)
        return ok

    def _write_barrier_window(self, pc: int, forced: bool, calls0: int) -> None:
        """With the barrier turned on during the preemption: run the rest of a write-barrier window the
        signal split (episode's check) and say whether the pointer store went through gcWriteBarrier2."""
        from ..drive import episode
        m = self.m
        end = episode._wb_range_end(self.prog, pc) if forced else None
        if end is None:
            m.write(memmap.WRITE_BARRIER_FLAG, bytes(4))
            return
        ep = episode.Episode(self.at, True, "async", self.at)
        start = m.pc
        episode._check_write_barrier(ep, self.w, self.prog, self.at, pc, end, calls0)
        bad = [v for v in ep.violations if v.kind == "missed-write-barrier"]
        self.add("write-barrier", "The write-barrier window, split by the preemption", [
            "A GC mark phase turned the write barrier on while G1 was off CPU. G1 had tested the flag before "
            "the signal (barrier off) and now finishes the window on that stale answer."],
            executed=[start], short="barrier",
            checks=[Check("pointer stores go through the write barrier", not bad,
                          bad[0].detail if bad else "gcWriteBarrier2 was called")])

    def _field(self, base: int, fields: dict, name: str) -> int:
        return int.from_bytes(self.m.read(base + fields[name].offset, fields[name].size), "little")

    def _request(self) -> None:
        """sysmon's request: preemptone and preemptM, as the World does them."""
        w = self.w
        w.preempt_one()
        G, M, P = w.structs.g, w.structs.m, w.structs.p
        rd = self._field
        self.add("request", "sysmon asks: preemptone and preemptM", [
            "sysmon saw G1 run too long (retake, forcePreemptNS = 10 ms) and calls preemptone "
            "(runtime/proc.go:6917):",
            f"  g.preempt = {rd(w.gp, G, 'preempt')} at {w.gp + G['preempt'].offset:#x}; "
            f"g.stackguard0 = {rd(w.gp, G, 'stackguard0'):#x} (stackPreempt) -- the cooperative request, "
            "seen by the next function prologue",
            f"  p.preempt = {rd(w.pp, P, 'preempt')}; preemptM (runtime/signal_unix.go:369): "
            f"m.signalPending = {rd(w.mp, M, 'signalPending')}, tgkill(M{w.cur}, SIGURG) -- the asynchronous one"],
            table={"title": "g, m and p after the request", "columns": ["struct", "field", "address", "value"],
                   "rows": [["g (G1)", "preempt", f"{w.gp + G['preempt'].offset:#x}", str(rd(w.gp, G, 'preempt'))],
                            ["g (G1)", "stackguard0", f"{w.gp + G['stackguard0'].offset:#x}",
                             f"{rd(w.gp, G, 'stackguard0'):#x}"],
                            [f"p (P{w.cur})", "preempt", f"{w.pp + P['preempt'].offset:#x}",
                             str(rd(w.pp, P, 'preempt'))],
                            [f"m (M{w.cur})", "signalPending", f"{w.mp + M['signalPending'].offset:#x}",
                             str(rd(w.mp, M, 'signalPending'))]]})

    def _finish(self, before) -> None:
        """Run to goexit and compare with the uninterrupted run (registers, memory, heap, stack growth)."""
        w, m = self.w, self.m
        rest = self.ref.boundaries - self.at
        try:
            m.run(m.pc, max(4 * self.ref.boundaries, 1_000_000))     # goexit's sentinel stops the run
            final = m.dump_state() if m.pc == memmap.GOEXIT else None
            fault = None
        except Fault as e:
            final, fault = None, e
        checks = []
        if fault is not None:
            checks.append(Check("runs to goexit", False, f"{fault.error} at {describe_pc(m.all, fault.pc)}"))
        elif final is None:
            checks.append(Check("runs to goexit", False, f"still running at {describe_pc(m.all, m.pc)}"))
        else:
            fv = final_violations(w, final, self.ref, self.at)
            regs_bad = [v for v in fv if v.what in regs.BY_NAME]
            mem_bad = [v for v in fv if v not in regs_bad]
            checks.append(Check("final registers equal the uninterrupted run", not regs_bad,
                                "equal" if not regs_bad else "; ".join(f"{v.what}: expected {v.expected}, got "
                                                                       f"{v.actual}" for v in regs_bad[:4])))
            checks.append(Check("final memory equals the uninterrupted run", not mem_bad,
                                "equal" if not mem_bad else "; ".join(f"{v.what}: expected {v.expected}, got "
                                                                      f"{v.actual}" for v in mem_bad[:2])))
        for gpc, gsp, guard in w.needless_growths:
            checks.append(Check("no needless stack growth", False,
                                f"morestack from {gpc:#x} grew the stack with SP {gsp:#x} above stackguard0 "
                                f"{guard:#x}: the prologue branched on stale flags (golang/go#35470)"))
        if w.gc_enabled:
            uaf = w.uaf
            checks.append(Check("no use of freed objects", not uaf, "none" if not uaf else "; ".join(
                f"{kind} of freed object {base:#x} at {addr:#x} by pc {apc:#x}" for base, _, kind, addr, apc, _ in uaf)))
        self.add("end", "G1 runs on to goexit", [
            f"The rest of the run: {rest} more instructions from boundary {self.at} "
            f"({self.ref.boundaries} in all), then the final state is compared with an uninterrupted run."],
            checks=checks)




def explain(world: World, at: int, source: str, func: str, force_unsafe: bool = False, seed: int = 1,
            signal_delay: int = 0, gc_during_preemption: bool = False, async_preemption: bool = True) -> Story:
    """Tell one preemption at boundary `at` of the goroutine in `world`, step by step; sysmon's request
    comes `signal_delay` instructions before the signal (as in `preempt --signal-delay`)."""
    ref = run_reference(world)
    if at >= ref.boundaries:
        raise ValueError(f"--at {at}: the goroutine ends after {ref.boundaries} instructions")
    if not 0 <= signal_delay <= at:
        raise ValueError(f"--signal-delay {signal_delay}: the request must come at or after the goroutine's start "
                         f"(boundary {at} - {signal_delay})")
    n = _Narrator(world, at, force_unsafe, seed, signal_delay, gc_during_preemption, async_preemption)
    n.ref = ref
    verdict, reason = n.run()
    labels = n.label_stack(n.s, n.frame_size, verdict != "refused")
    code = code_listing(world.machine.all, n.steps)
    return Story(source, func, world.layout.name, at, n.pc, verdict, reason, world.gc_enabled, n.steps, code,
                 n.top, labels, ref.boundaries)


def code_listing(prog, steps: list[Step]) -> dict[str, dict]:
    """The disassembly of every function a step points at, with source lines."""
    names: list[str] = []
    for s in steps:
        for p in [s.pc] + s.executed:
            f = prog.func_for(p)
            if f is not None and f.name not in names and f.name not in ("dumper",):
                names.append(f.name)
    out = {}
    for name in names:
        f = prog.get_func(name)
        out[name] = {"goname": f.goname, "start": f"{f.start:#x}", "insns": [
            {"pc": f"{i.addr:#x}", "off": i.addr - f.start, "text": i.text, "line": i.line, "file": _rel(i.file),
             "source": i.source.strip(), "unsafe": i.unsafe} for i in f.insns]}
    return out
