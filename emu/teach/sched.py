"""`preemu explain` of a scheduler scenario: one SIGURG in a run of several goroutines, as a Story.

The sweep World has one goroutine, so its explain (emu/teach/story.py) can only say "no other G is
runnable". Here the real Scheduler (emu/model/sched.py) runs the scenario and an onlooker (its `observer`)
records, at the N-th signal it delivers: the scheduler's state and the sysmon decision that sent the
signal, the interrupted goroutine's registers and instruction, isAsyncSafePoint's checks (the same
table as explain.py builds), pushCall's one write; then, for an injection, the stub's saved frame when
the goroutine parks in asyncPreempt2, which goroutine the M runs instead, and where and when the
preempted one runs again, up to the stub's RET back to the interrupted PC, where every register is
compared with the interrupted state. The run stops there.

Mirrors: runtime/proc.go:6917 preemptone and sysmon's retake, signal_unix.go:342 doSigPreempt,
preempt.go:390 isAsyncSafePoint, signal_amd64.go:80 pushCall, preempt.go:317 asyncPreempt2 ->
gopreempt_m -> goschedImpl (globrunqput) -> schedule(). Left out: the stub is not single-stepped
(its frame is shown once, when the goroutine parks), and GC (`--gc`) is the sweep World's.
"""
from __future__ import annotations

import unicorn

from ..core import memmap
from .story import (
    CHECK_COLUMNS, REG_ORDER, Check, Step, Story, _RecordingSigctxt, add_step, check_rows, code_listing, describe_pc,
    fmt_reg, label_steps, read_window, regs_of, signal_text, stack_window)
from ..core.errors import EmuError
from ..core.layout import RESUME_PC_OFFSET, SAVED_BP_OFFSET, SAVED_FLAGS_OFFSET


class _Onlooker:
    """The Scheduler's observer: records the N-th delivery (or the first injection) and what follows."""

    def __init__(self, sched, nth: int | None):
        self.s, self.m = sched, sched.machine
        self.nth, self.count = nth, 0
        self.target = None            # the G the chosen signal landed on
        self.rec = None               # the recording sigctxt of that delivery
        self.at: dict = {}            # what was seen, by moment
        self.done = False
        self._hook = None

    # --- the Scheduler's calls ---------------------------------------------------------------
    def deliver(self, m, g, t, st, sigctx):
        if self.target is not None or self.done:
            return sigctx
        self.count += 1
        if self.nth is not None and self.count != self.nth:
            return sigctx
        mm = self.m
        self.target, self.rec = g, _RecordingSigctxt(sigctx)
        pc, rsp = mm.pc, mm.reg("RSP")
        insn = self.s.prog.insn_at(pc)
        self.frame_size = insn.sp_delta if insn is not None else 0
        self.top, self.nwords = stack_window(rsp, self.frame_size, self.s.layout, g.stack_lo, g.stack_hi)
        self.at["deliver"] = dict(t=t, m=m.idx, p=m.p.idx, st=st, pc=pc, rsp=rsp, regs=regs_of(self.m),
                                  table=self._sched_table(), why=self._why(g), n=self.count, stack=self._stack())
        return self.rec

    def delivered(self, m, g, t, verdict):
        if g is not self.target or "verdict" in self.at:
            return
        self.at["verdict"] = verdict
        if self.nth is None and not verdict.ok:          # default: the first signal that injects
            self.target, self.rec = None, None
            del self.at["deliver"], self.at["verdict"]
            return
        if not verdict.ok:
            self._finish()
        else:
            self.at["pushed"] = dict(regs=regs_of(self.m), rsp=self.m.reg("RSP"), pc=self.m.pc, stack=self._stack())

    def trapped(self, m, g, name, t):
        if g is self.target and "verdict" in self.at and name == "asyncPreempt2" and "trap" not in self.at:
            d = self.at["deliver"]
            self.at["trap"] = dict(t=t, m=m.idx, p=m.p.idx, frame=self._frame(d["rsp"]), stack=self._stack())

    def executed(self, m, g, t):
        if "trap" not in self.at or self.done:
            return
        if g is not self.target:
            if "next" not in self.at and m.idx == self.at["trap"]["m"]:
                self.at["next"] = dict(t=t, m=m.idx, p=m.p.idx, g=g.name)
            return
        if "resume" not in self.at:
            self.at["resume"] = dict(t=t, m=m.idx, p=m.p.idx, table=self._sched_table())
            self._arm_return_hook()

    # --- the return to the interrupted PC --------------------------------------------------------
    def _arm_return_hook(self) -> None:
        d = self.at["deliver"]
        pc, rsp = d["pc"], d["rsp"]

        def on_code(uc, address, size, user):
            if self.done or self.s._running is not self.target or self.m.reg("RSP") != rsp:
                return
            self.at["returned"] = dict(regs=regs_of(self.m), stack=self._stack())
            self._finish()
            uc.emu_stop()

        mm = self.m
        self._hook = mm.uc.hook_add(unicorn.UC_HOOK_CODE, on_code, begin=pc, end=pc)
        mm.uc.ctl_flush_tb()          # blocks translated before the hook must see it (Unicorn #2200)

    def _finish(self) -> None:
        self.done = True
        self.s.stop_requested = True

    # --- state capture ---------------------------------------------------------------------------
    def _stack(self) -> list[str]:
        return read_window(self.m, self.top, self.nwords, self.target.stack_lo, self.target.stack_hi)

    def labels(self, steps: list[Step]) -> list[str]:
        """Name the window's words: the interrupted frame, the resume PC, the stub's save slots, each from the
        step at which it takes that role (label_steps)."""
        d = self.at["deliver"]
        s, lay = d["rsp"], self.s.layout
        roles = {s + RESUME_PC_OFFSET: ("resume PC (pushCall)", "pushCall"),
                 s + SAVED_BP_OFFSET: ("saved RBP (PUSHQ BP)", "stub"),
                 s + SAVED_FLAGS_OFFSET: ("saved RFLAGS (PUSHFQ)", "stub")}
        ret_slot = s + self.frame_size
        for a in range(s, ret_slot, 8):
            roles[a] = (f"interrupted frame, SP+{a - s}", "")
        roles[ret_slot] = ("return address: goexit" if self.m.read_u64(ret_slot) == memmap.GOEXIT else
                           "return address (caller)", "")
        base = lay.save_area_base(s)
        for sl in lay.stack_slots:
            roles[base + sl.offset] = (f"{sl.reg.go_name} ({sl.offset}(SP))", "stub")
            if sl.reg.size == 16:
                roles[base + sl.offset + 8] = (f"{sl.reg.go_name} high ({sl.offset}(SP))", "stub")
        roles[base - 8] = ("return into asyncPreempt (CALL)", "stub")
        return label_steps(steps, self.top, self.nwords, roles)

    def _sched_table(self) -> dict:
        s = self.s
        rows = []
        for m in s.ms:
            p = m.p
            rows.append([f"M{m.idx}", f"P{p.idx}", m.curg.name if m.curg else "- (g0: scheduler or idle)",
                         p.runnext.name if p.runnext else "-", " ".join(g.name for g in p.runq) or "-"])
        return {"title": f"Ms and Ps (global run queue: {' '.join(g.name for g in s.global_q) or 'empty'})",
                "columns": ["M", "P", "running", "runnext", "local run queue"], "rows": rows}

    def _why(self, g) -> str:
        """The decision that sent this signal: the last preemptone (sysmon's retake) or suspendG (a GC's
        stack scan) for g, and how long g had been running then."""
        for e in reversed(self.s.events):
            if e.get("g") == g.name and e["kind"] in ("preemptone", "suspendG"):
                what = ("retake: it had run longer than forcePreemptNS (10 ms), so preemptone" if e["kind"] ==
                        "preemptone" else "a GC wants to scan its stack: suspendG")
                return f"{what} at t = {e['t'] / 1e6:.3f} ms"
        return "a signal sent earlier and still pending"

    def _frame(self, s: int) -> list[list[str]]:
        """The stub's frame as it parks: each save slot and what it holds now."""
        lay = self.s.layout
        mm = self.m
        rows = [[f"S-{-RESUME_PC_OFFSET}", f"{s + RESUME_PC_OFFSET:#x}", "resume PC (pushCall)",
                 f"{mm.read_u64(s + RESUME_PC_OFFSET):#018x}"],
                [f"S-{-SAVED_BP_OFFSET}", f"{s + SAVED_BP_OFFSET:#x}", "saved RBP (PUSHQ BP)",
                 f"{mm.read_u64(s + SAVED_BP_OFFSET):#018x}"],
                [f"S-{-SAVED_FLAGS_OFFSET}", f"{s + SAVED_FLAGS_OFFSET:#x}", "saved RFLAGS (PUSHFQ)",
                 f"{mm.read_u64(s + SAVED_FLAGS_OFFSET):#018x}"]]
        base = lay.save_area_base(s)
        for sl in lay.stack_slots:
            a = base + sl.offset
            rows.append([f"S-{s - a}", f"{a:#x}", f"{sl.reg.go_name}  {sl.offset}(SP)",
                         fmt_reg(sl.reg.name, int.from_bytes(mm.read(a, sl.reg.size), "little"))])
        return rows


def explain_scenario(sc, nth: int | None = None, source: str | None = None) -> Story:
    """Run the scheduler scenario `sc` and tell its `nth` SIGURG (default: the first one injected)."""
    from ..drive import scenario
    s = scenario.build_sched(sc)
    o = s.observer = _Onlooker(s, nth)
    s.run(*scenario.sched_limits(sc))
    if "verdict" not in o.at:
        what = f"there is no signal {nth}" if nth is not None else "none was injected"
        off = "" if sc.async_preemption else " (asynchronous preemption is off: sysmon sends none)"
        raise EmuError(f"{source or sc.path}: the run delivered {o.count} signal(s) to goroutines in "
                       f"{sc.duration_ms:g} ms of virtual time{off}; {what}")
    return _story(s, o, source or str(sc.path), sc)


def _story(s, o: _Onlooker, source: str, sc) -> Story:
    prog = s.prog
    d, v = o.at["deliver"], o.at["verdict"]
    g = o.target
    pc, rsp = d["pc"], d["rsp"]
    mp = f"M{d['m']}/P{d['p']}"
    steps: list[Step] = []

    def step(phase, short, title, text, regs_, at_pc, mp_, rsp_, stack, table=None, checks=()):
        add_step(steps, phase, short, title, text, at_pc, (), regs_, stack, rsp_, mp_, table, checks)

    step("scheduler", "scheduler", f"The scheduler at t = {d['t'] / 1e6:.3f} ms: signal {d['n']} goes to {mp}, "
         f"running {g.name}", [
        f"{len(s.gs)} goroutine(s) on {len(s.ps)} P(s). sysmon decided to preempt {g.name} ({d['why']}); "
        f"preemptM sends SIGURG to M{d['m']}, whose current goroutine is {g.name}.",
        "The signal lands between two instructions of whatever the M is running at that moment."],
        d["regs"], pc, mp, rsp, d["stack"], table=d["table"])
    f = prog.func_for(pc)
    insn = prog.insn_at(pc)
    step("goroutine", "goroutine", f"{g.name} is about to execute {describe_pc(prog, pc)}", [
        f"{g.name} runs {f.name if f else '?'}; RSP = S = {rsp:#x}; its stack is "
        f"[{d['st'].stack_lo:#x}, {d['st'].stack_hi:#x}).",
        "Every register below is live: whatever happens next must give all of them back bit for bit."]
        + ([f"{insn.mnemonic.upper()} is interrupted between two iterations."] if insn is not None and insn.is_rep
           else []), d["regs"], pc, mp, rsp, d["stack"])
    rows, reason = check_rows(prog, d["st"], pc, rsp, s.headroom, not sc.async_preemption)
    assert reason == v.reason, (reason, v.reason)          # one oracle: the table's and the handler's
    step("signal", "isAsyncSafePoint", "SIGURG arrives: isAsyncSafePoint", signal_text(prog, f"M{d['m']}", pc, reason),
         d["regs"], pc, mp, rsp, d["stack"], table={"title": "the handler's checks, in Go's order", "columns": CHECK_COLUMNS,
                                        "rows": rows})
    if not v.ok:
        step("ack", "refused", "Refused: the handler only acknowledges", [
            "doSigPreempt acknowledges (m.preemptGen += 1, m.signalPending = 0); the context is not touched, "
            f"so {g.name} goes on at the same PC.",
            "The request stays pending: sysmon sends the signal again later, and a function prologue would "
            "preempt cooperatively."], d["regs"], pc, mp, rsp, d["stack"])
        return _finish(s, o, source, sc, steps, "refused", reason)
    store = next(op for op in o.rec.ops if op[0] == "store")
    pushed = o.at["pushed"]
    step("pushCall", "pushCall", "pushCall: make it look like a call", [
        "sigctxt.pushCall (runtime/signal_amd64.go:80) makes exactly one memory write:",
        f"  [{store[1]:#x}] = {store[2]:#x}  (the resume PC, at S-8)",
        f"  RSP {rsp:#x} -> {pushed['rsp']:#x},  RIP {pc:#x} -> {pushed['pc']:#x} (asyncPreempt)"],
        pushed["regs"], pushed["pc"], mp, pushed["rsp"], pushed["stack"])
    tr = o.at.get("trap")
    if tr is None:
        return _finish(s, o, source, sc, steps, "injected", reason, incomplete="the goroutine never reached "
                       "asyncPreempt2 before the run ended")
    nxt = o.at.get("next")
    step("stub", "asyncPreempt saves", f"asyncPreempt saved every register; {g.name} parks in asyncPreempt2", [
        f"t = {tr['t'] / 1e6:.3f} ms: the stub built its frame below S and called asyncPreempt2 "
        "(runtime/preempt.go:317) -> mcall(gopreempt_m): goschedImpl puts "
        f"{g.name} on the global run queue (_Grunning -> _Grunnable) and M{tr['m']} calls schedule().",
        (f"schedule() on M{nxt['m']}/P{nxt['p']} picks {nxt['g']} (t = {nxt['t'] / 1e6:.3f} ms)." if nxt else
         f"M{tr['m']} found nothing else to run before {g.name} ran again.")],
        pushed["regs"], pushed["pc"], f"M{tr['m']}/P{tr['p']}", pushed["rsp"], tr["stack"],
        table={"title": f"the asyncPreempt frame ({s.layout.name} layout), S = {rsp:#x}",
               "columns": ["slot", "address", "holds", "value"], "rows": tr["frame"]})
    res = o.at.get("resume")
    back = o.at.get("returned")
    if res is None or back is None:
        return _finish(s, o, source, sc, steps, "injected", reason, incomplete=f"{g.name} did not run again "
                       "before the run ended")
    wait = res["t"] - tr["t"]
    moved = "on another M and P" if (res["m"], res["p"]) != (tr["m"], tr["p"]) else "on the same M and P"
    differ = [[n, d["regs"][n], back["regs"][n]] for n in REG_ORDER if d["regs"][n] != back["regs"][n]]
    step("compare", "resume", f"t = {res['t'] / 1e6:.3f} ms: {g.name} runs again on M{res['m']}/P{res['p']}", [
        f"After {wait:,.0f} ns off CPU, schedule() found {g.name} and execute() resumed it {moved}; "
        "asyncPreempt2 returned into the stub, which reloaded every register from its frame and RET "
        f"to {pc:#x} with RSP = S."],
        back["regs"], pc, f"M{res['m']}/P{res['p']}", rsp, back["stack"],
        table={"title": "registers at the return vs at the signal", "columns": ["register", "interrupted", "after RET",
                                                                                  "same?"],
               "rows": [[n, d["regs"][n], back["regs"][n], "same" if d["regs"][n] == back["regs"][n] else "DIFFERS"]
                        for n in REG_ORDER]},
        checks=[Check("registers bit-exact after the RET", not differ,
                      "every register as interrupted" if not differ else
                      f"{', '.join(r[0] for r in differ)} changed")])
    return _finish(s, o, source, sc, steps, "injected", reason)


def _finish(s, o, source: str, sc, steps: list[Step], verdict: str, reason: str, incomplete: str = "") -> Story:
    if incomplete:
        steps[-1].checks.append(Check("the preemption completes", False, incomplete))
    d = o.at["deliver"]
    pc = d["pc"]
    f = s.prog.func_for(pc)
    return Story(source, f"{o.target.name} ({f.name if f else '?'})", s.layout.name, d["n"], pc, verdict, reason,
                 False, steps, code_listing(s.prog, steps), o.top, o.labels(steps), o.count, unit="signal")
