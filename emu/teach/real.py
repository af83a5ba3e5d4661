"""`preemu explain` of Go input: one preemption told from the real program, with that run's addresses and values.

The program runs to F's call as the real-program sweep runs it (gsweep.RealSweep: runtime init, package
init, the snapshot at the N-th call), then from the snapshot to boundary k of F's goroutine G, where the
request is made (preemptone's, as the sweep makes it; with --gc the runtime's own stopTheWorld request,
realgc.py). preemu then watches, without changing anything, what the real runtime does:
- the delivery: the rt_sigframe the kernel model builds on the M's signal stack (gsignal), part by part
  (sigframe.py: pretcode, ucontext with uc_stack and uc_mcontext, the FP state pointer, siginfo);
- runtime.sighandler -> doSigPreempt (a code hook at its entry): wantAsyncPreempt and isAsyncSafePoint with
  the g/m/p state it reads, preemu's oracle beside them (safepoint.py, runtime/preempt.go:369-444);
- pushCall's edit of the saved RIP/RSP in the ucontext (read back at rt_sigreturn, before it is loaded);
- rt_sigreturn, asyncPreempt's frame at its CALL to asyncPreempt2 (the real bytes, each slot named after
  the instruction that stored it), the path the injection was seen to take (asyncPreempt2 -> gopreempt_m
  or preemptPark -> schedule, how long G was away and on which thread it came back; a stub that skips it
  fails a check), the RET with every register compared;
- with --gc, the runtime's own cycle's scan of G (realgc.Scan) and what it freed.
The steps are explain.Step records in an explain.Story, so the text, JSON and HTML front ends render them
as they render the model world's stories; the story adds the signal stack as a second window. Here: the
recorder, the run to boundary k, the request and the end; the signal path is told by realsignal.py and
the resume by realresume.py (mixins of the teller), from what realrecord.py captured.
`--at FILE:LINE` and `FUNC+OFF` name a boundary as realat.py finds it; each word of G's stack is labelled from
the step at which it takes its role (story.label_steps: no pushCall word before pushCall).
Left out: --force-unsafe and --nested-signals (the runtime decides here), scheduler details of what ran while
G was away (counts and times only).
"""
from __future__ import annotations

import os

from unicorn import x86_const as X

from . import realat, story as E
from .realrecord import ALL, NAMES, Recorder, regs
from .realresume import _ResumeSteps
from .realsignal import _SignalSteps
from ..core.errors import EmuError
from ..check.verify import Check
from ..drive import gsweep, realsweep, references

WINDOW_ABOVE = 10                # words of G's stack shown above the interrupted RSP


def explain(path: str, func: str, at: str, *, call: int = 1, registers=None, args=(), env=(), gc: bool = False,
            async_preemption: bool = True, stub: str | None = None, budget: int = 20_000_000,
            test: tuple = (), cpu: str = "v1") -> E.Story:
    """Tell one preemption of `func` at boundary `at` of its `call`-th call, in its real program (`stub`: a .s
    asyncPreempt loaded over the binary's, as `preemu sweep --stub` loads it)."""
    env = list(env) if async_preemption else realsweep.with_godebug(list(env), "asyncpreemptoff=1")
    spec = realsweep.RealSpec(os.path.abspath(path), func, call, realsweep.check_registers(registers),
                              None if stub is None else os.path.abspath(stub),
                              tuple((realsweep.test_argv(path, *test) if test else realsweep.default_argv(path))
                                    + list(args)), tuple(env), 1, "scan" if gc else False, test, cpu=cpu)
    from ..engine.interrupt import ctrl_c
    built: list = []
    with ctrl_c(lambda: built[0].p if built else None):    # Ctrl-C ends the story between two slices (the boot's too)
        sw = spec.build()
        built.append(sw)
        where = realat.resolve(sw, at, budget)      # a number, FILE:LINE or FUNC+OFF (one run to F's return)
        k = where.k
        ref = references.establish(sw, budget, spec.seed)
        if not 0 <= k < ref.boundaries:
            raise EmuError(f"--at {k}: {sw.func}'s goroutine runs {ref.boundaries:,} instructions from its entry to "
                           f"its return (boundaries 0 to {ref.boundaries - 1})")
        return _Teller(sw, ref, where, path, gc).tell()


def _unstable_note(u) -> str:
    """What the uninterrupted runs disagreed on (references.py), so the check did not compare it."""
    n = u.count if u is not None else 0
    return (f" (not compared: {n} value(s) that differ between {u.references} uninterrupted runs with the runtime's "
            "random state drawn anew and the clock's rate varied)") if n else ""


class _Teller(_SignalSteps, _ResumeSteps):
    """Tells one preemption of the real program: the run to boundary k, the request and the end here; the
    signal path (realsignal.py) and the resume (realresume.py) from mixins."""

    def __init__(self, sw, ref, where: realat.Where, path: str, gc: bool):
        self.sw, self.ref, self.k, self.where, self.path, self.gc = sw, ref, where.k, where, path, gc
        self.steps: list[E.Step] = []

    # --- reading -------------------------------------------------------------------------------------
    def _g_window(self) -> list[str]:
        p = self.sw.p
        lo, hi = self.stack
        return [f"{p.read_u64(a):#018x}" if lo <= a < hi else "unmapped"
                for a in (self.top - 8 * i for i in range(self.nwords))]

    def _add(self, phase, short, title, text, pc, regs_, rsp, table=None, checks=(), sig: list[str] | None = None,
             mp="", window: list[str] | None = None):
        s = E.add_step(self.steps, phase, short, title, text, pc, [], regs_,
                       window if window is not None else self.steps[-1].stack, rsp, mp or self.mp, table, checks)
        s.sigstack = sig if sig is not None else (self.steps[-2].sigstack if len(self.steps) > 1 else [])
        return s

    # --- the story -------------------------------------------------------------------------------------
    def tell(self) -> E.Story:
        """Run to boundary k, make the request, watch the signal and the resume, run on to the end."""
        sw = self.sw
        clock = sw._arm()
        rec = Recorder(sw, self._g_window)
        resumed = self._watch_resume(rec, clock)
        regs0 = self._to_boundary(clock)
        pc, rsp = int(regs0["RIP"], 16), int(regs0["RSP"], 16)
        pt = self._request_step(clock, regs0, pc, rsp)
        sw.p.run_until(lambda: bool(resumed) or sw.returned is not None or
                       (pt.event.outcome not in ("pending", "merged") and pt.event.outcome != "injected"))
        rec.close()
        self._signal_steps(rec, pt, pc, rsp)
        if pt.event.outcome == "injected" and resumed:
            self._resume_steps(rec, pt, resumed[0], pc, rsp)
        self._end_step(sw._finish(clock))
        return self._story(pt, pc)

    def _watch_resume(self, rec: Recorder, clock) -> list:
        """Listen as the sweep listens; the list gets (resume, registers, window, time) when G first resumes."""
        sw = self.sw
        listener = gsweep._Listener(sw, clock)
        sw.p.watch.listener = listener
        resumed = []
        real_resumed = listener.on_resumed

        def on_resumed(r):
            claimed = real_resumed(r)
            if r.g == sw.g and not resumed:
                rec.done = True
                resumed.append((r, regs(ALL(sw.p.uc), sw.p), self._g_window(), sw.p.now()))
            return claimed
        listener.on_resumed = on_resumed
        return resumed

    def _to_boundary(self, clock) -> dict[str, str]:
        """Run G to boundary k (the story's stack window there) and tell where it is; its registers."""
        sw, k = self.sw, self.k
        clock.stop_at = k
        sw.p.run_until(lambda: sw.returned is not None or clock.ready is not None)
        if clock.ready is None:
            raise EmuError(f"{sw.func} returned before boundary {k} in this run")
        t = sw.p.threads[clock.ready]
        ctx_vals = [t.ctx.reg_read(getattr(X, f"UC_X86_REG_{n}") if n != "RFLAGS" else X.UC_X86_REG_EFLAGS)
                    for n in NAMES]
        regs0 = regs(ctx_vals, sw.p)           # the engine still holds t's vector state (its slice just ended)
        pc, rsp = int(regs0["RIP"], 16), int(regs0["RSP"], 16)
        self.stack = (sw._g("stack.lo"), sw._g("stack.hi"))
        self.top = min(self.stack[1] - 8, rsp + 8 * WINDOW_ABOVE)
        self.nwords = WINDOW_ABOVE + 1 + (self._stub_frame_size() + 32) // 8
        self.mp = f"thread {t.tid}"
        prog = sw.prog
        insn = prog.insn_at(pc) if prog else None
        where = insn.where if insn else sw.image.describe(pc)
        text = ([self.where.sentence()] if self.where.what else []) + \
               [f"{sw.func}'s goroutine has run {k:,} of its {self.ref.boundaries:,} instructions; the next is "
                f"`{insn.text if insn else '?'}` at {where}" + (f" (inlined {insn.inline})" if insn and insn.inline
                                                                 else "") + ".",
                "Everything here is the real program: its runtime initialised, its package init done, the "
                "registers those of this run."]
        self._add("goroutine", "the goroutine", f"The goroutine at {self.where.phrase()}: "
                  f"{insn.text if insn else hex(pc)}",
                  text, pc, regs0, rsp, window=self._g_window())
        return regs0

    def _request_step(self, clock, regs0: dict[str, str], pc: int, rsp: int):
        """Make the request (preemptone's, or the GC's) and tell the fields it wrote; the pending signal."""
        sw, k = self.sw, self.k
        fields = self._request_fields()
        before = {n: v for n, v in fields()}
        pt = sw._deliver(clock, k)
        after = {n: v for n, v in fields()}
        if self.gc:
            text = ["The runtime's GC cycle is due (realgc.py: memstats.last_gc_nanotime made old, forcegcperiod "
                    "1 ms); this thread was kept off the CPU until the runtime itself asked it to stop the "
                    "goroutine: stopTheWorldWithSema -> preemptall -> preemptone -> preemptM -> tgkill(SIGURG)."]
        else:
            text = ["preemu asks as sysmon's retake would, through preemptone (runtime/proc.go:6917-6942): "
                    "gp.preempt and gp.stackguard0 = stackPreempt (the cooperative request), pp.preempt, then "
                    "preemptM (signal_unix.go:369): m.signalPending 0 -> 1 and tgkill(pid, tid, SIGURG)."]
        rows = [[n, before.get(n, "-"), after.get(n, "-")] for n in after]
        self._add("request", "the request", "Who asks: " + ("the GC" if self.gc else "preemptone"), text, pc,
                  regs0, rsp, {"title": "fields written", "columns": ["field", "before", "after"], "rows": rows})
        return pt

    def _end_step(self, ending) -> None:
        """The program's ending, the function's results and (with --gc) the freed objects, against the
        uninterrupted run."""
        sw = self.sw
        diff = references.ending_diff(self.ref, ending)
        checks = [Check("the program ended as uninterrupted", not diff,
                        "; ".join(f"{w}: {a} -> {b}" for w, a, b in diff) or
                        f"exit status {ending.exit_code}, the same output" + _unstable_note(self.ref.unstable))]
        if sw.gc is not None:
            uaf = sw.gc.uaf
            checks.append(Check("nothing the cycle freed is used afterwards", not uaf,
                                "; ".join(f"a {u.access} of {u.addr:#x} at {sw.image.describe(u.pc)}, in the object at "
                                          f"{u.obj.addr:#x} ({u.obj.size} bytes) freed by the cycle at boundary "
                                          f"{u.obj.boundary}" for u in uaf[:2]) or
                                f"{sw.gc.freed_total} object(s) freed, none touched before being reallocated"))
        if sw.returned is not None:
            _, results, _ = sw.returned
            same = not references.results_diff(self.ref, results)
            checks.append(Check(f"{sw.func} returned what it returns uninterrupted", same,
                                ", ".join(f"{n} = {v}" for n, v in results.items()) or "no results"))
        last = self.steps[-1]
        self._add("end", "the end", "After the preemption", [f"{sw.func} ran on to its return and the program to "
                  "its exit; both are compared with the uninterrupted run."], last.pc,
                  last.regs, last.rsp, checks=checks)

    def _stub_frame_size(self) -> int:
        """asyncPreempt's deepest SP delta (its frame, from the binary's pcsp table)."""
        try:
            return max(i.sp_delta for i in self.sw.prog.get_func("runtime.asyncPreempt").insns) or 0x180
        except (AttributeError, KeyError, ValueError):
            return 0x180

    def _request_fields(self):
        """A reader of the fields preemptone and preemptM write, as (name, value) pairs."""
        sw, p = self.sw, self.sw.p
        mt, ptab = p.structs.m, p.structs.p

        def read():
            out = [("g.preempt", str(sw._g("preempt"))), ("g.stackguard0", f"{sw._g('stackguard0'):#x}")]
            m, pp = sw._m_and_p()
            if pp:
                out.append(("p.preempt", str(p.read(pp + ptab["preempt"].offset, 1)[0])))
            if m:
                out.append(("m.signalPending", str(int.from_bytes(p.read(m + mt["signalPending"].offset, 4),
                                                                  "little"))))
            return out
        return read

    def _story(self, pt, pc: int) -> E.Story:
        sw = self.sw
        roles = {int(self.steps[0].regs["RSP"], 16): ("interrupted SP", ""), **getattr(self, "roles", {})}
        labels = E.label_steps(self.steps, self.top, self.nwords, roles)
        code = {}
        if sw.prog is not None:
            for name in (sw.func, "runtime.asyncPreempt"):
                try:
                    f = sw.prog.get_func(name)
                except KeyError:
                    continue
                code[name] = {"goname": f.goname, "start": f"{f.start:#x}", "insns": [
                    {"pc": f"{i.addr:#x}", "off": i.addr - f.start, "text": i.text, "line": i.line,
                     "file": os.path.relpath(i.file) if os.path.isabs(i.file) else i.file,
                     "source": i.source.strip(), "unsafe": i.unsafe} for i in f.insns]}
        verdict = "injected" if pt.event.outcome == "injected" else "refused"
        return E.Story(self.path, sw.func, "real program", self.k, pc, verdict, pt.event.oracle or pt.event.outcome,
                       self.gc, self.steps, code, self.top, labels, self.ref.boundaries,
                       sigstack_top=getattr(self, "sig_top", 0), sigstack_labels=getattr(self, "sig_labels", []))
