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
  the instruction that stored it), asyncPreempt2 -> gopreempt_m -> schedule (how long G was away and on
  which thread it came back), the RET with every register compared;
- with --gc, the runtime's own cycle's scan of G (realgc.Scan) and what it freed.
The steps are explain.Step records in an explain.Story, so the text, JSON and HTML front ends render them
as they render the model world's stories; the story adds the signal stack as a second window.
Left out: --force-unsafe and --nested-signals (the runtime decides here), --at FUNC+OFF or line:N (a
boundary number is asked for), scheduler details of what ran while G was away (counts and times only).
"""
from __future__ import annotations

import os
import re
import struct

from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from . import story as E
from ..core import regs as R
from ..core.errors import EmuError
from ..check.verify import Check
from ..drive import gsweep, realsweep
from ..linux import sigframe
from ..linux.regbatch import RegBatch
from ..linux.watch import FLAGS_MASK

_ALL = RegBatch([r.uc_id for r in R.GP_REGS] + [X.UC_X86_REG_RBP, X.UC_X86_REG_RSP, X.UC_X86_REG_RIP,
                                                X.UC_X86_REG_EFLAGS] + [r.uc_id for r in R.XMM_REGS],
                wide=[r.uc_id for r in R.XMM_REGS])
_NAMES = [r.name for r in R.GP_REGS] + ["RBP", "RSP", "RIP", "RFLAGS"] + [r.name for r in R.XMM_REGS]
_STORE = re.compile(r"^(?:mov|movups|movdqu|movaps) (?:qword|xmmword) ptr \[rsp(?: \+ (0x[0-9a-f]+|\d+))?\], (\w+)$")
WINDOW_ABOVE = 10                # words of G's stack shown above the interrupted RSP
SIG_WORDS = sigframe.FRAME_SIZE // 8


def _regs(values) -> dict[str, str]:
    d = dict(zip(_NAMES, values))
    return {n: E.fmt_reg(n, d[n]) for n in E.REG_ORDER}


class _Recorder:
    """What happens to one signal, captured from hooks and the watch (nothing is changed)."""

    def __init__(self, sw: gsweep.RealSweep, window):
        self.sw, self.p, self.window = sw, sw.p, window     # window(): G's stack window's words now
        self.delivered = self.handler_regs = self.dsp = self.sigret = self.stub_frame = self.resumed = None
        self.at_ret: dict | None = None
        self.done = False                               # G has resumed: stop recording
        p = sw.p
        w = p.watch
        real_delivered, real_sigreturn = w.delivered, w.sigreturn

        def delivered(ev, t, frame):
            real_delivered(ev, t, frame)
            if self.delivered is None and ev is not None and ev.sig == gsweep.SIGURG:
                self.delivered = (t.tid, frame, ev)
                self.handler_regs = _regs(_ALL(p.uc))
                self.sig_bytes = p.read(frame.frame, sigframe.FRAME_SIZE)
                self.win_delivered = self.window()

        def sigreturn(t, frame, restored):
            if self.delivered is not None and frame is self.delivered[1] and self.sigret is None:
                self.sigret = (restored, p.read(frame.frame, sigframe.FRAME_SIZE), _regs(_ALL(p.uc)), self.window())
            real_sigreturn(t, frame, restored)
        w.delivered, w.sigreturn = delivered, sigreturn
        dsp = p.image.symbols.get("runtime.doSigPreempt", (None, 0))[0]
        self._hooks = []
        if dsp is not None:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_dsp, None, dsp, dsp))
            p.uc.ctl_remove_cache(dsp, dsp + 1)
        if sw._stub_code is not None:            # a --stub loaded over the binary's: its own instructions
            import capstone
            ap = p.image.symbol("runtime.asyncPreempt.abi0")
            md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
            self.stub_insns = [_Loaded(a, f"{mn} {ops}".strip(), mn, ops)
                               for a, _, mn, ops in md.disasm_lite(sw._stub_code[1], ap)]
        else:
            self.stub_insns = [i for i in sw.prog.get_func("runtime.asyncPreempt").insns] if sw.prog else []
        self.ran: list[tuple[int, int]] = []           # (thread, g) made current while G was away
        from ..linux.gclock import g_store_sites
        self._sites = {a: (reg, imm) for a, reg, imm in g_store_sites(p.image)}
        for a in self._sites:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_g_store, None, a, a))
            p.uc.ctl_remove_cache(a, a + 1)
        call = next((i.addr for i in self.stub_insns if i.mnemonic == "call"), None)
        if call is not None:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_stub_call, None, call, call))
            p.uc.ctl_remove_cache(call, call + 1)

    def _on_g_store(self, uc, addr, size, _):
        if self.sigret is None or self.done or self.p.counter.stopping(addr):
            return
        reg, imm = self._sites[addr]
        g = imm if reg is None else uc.reg_read(reg)
        t = self.p.cur
        if g and (not self.ran or self.ran[-1] != (t.tid, g)):
            self.ran.append((t.tid, g))

    def _on_dsp(self, uc, addr, size, _):
        if self.dsp is None and self.delivered is not None and not self.p.counter.stopping(addr):
            gp = uc.reg_read(X.UC_X86_REG_RAX)          # doSigPreempt(gp, ctxt): ABIInternal's first argument
            o = self.p.watch.oracle
            state = None if o is None else (o.sched_state(gp), self.p.read_u64(o.headroom_addr))
            self.dsp = (_regs(_ALL(uc)), gp, state, self.window())

    def _on_stub_call(self, uc, addr, size, _):
        if self.stub_frame is None and self.sigret is not None and not self.p.counter.stopping(addr):
            rsp = uc.reg_read(X.UC_X86_REG_RSP)
            self.stub_frame = (_regs(_ALL(uc)), rsp, addr, self.window())

    def close(self):
        for h in self._hooks:
            self.p.uc.hook_del(h)


class _Loaded:
    """An instruction of a --stub loaded over runtime.asyncPreempt (no pclntab entry: no SP delta)."""

    def __init__(self, addr, text, mnemonic, op_str):
        self.addr, self.text, self.mnemonic, self.op_str, self.sp_delta = addr, text, mnemonic, op_str, None


def _slot_names(insns, call_pc: int, frame_rsp: int) -> dict[int, str]:
    """asyncPreempt's frame, by address: each store to [rsp + off] and each PUSH before the CALL, named after
    what it saves (a PUSH's slot from the binary's SP delta there), and the word pushCall pushed."""
    at_call = next((i.sp_delta for i in insns if i.addr == call_pc), None)
    out = {}
    if at_call is not None:
        entry_sp = frame_rsp + at_call            # RSP at the stub's entry: pushCall's word is there
        out[entry_sp] = "return address (pushCall): the interrupted PC"
    for i in insns:
        if i.addr >= call_pc:
            break
        m = _STORE.match(i.text)
        if m:
            out[frame_rsp + int(m.group(1) or "0", 0)] = f"asyncPreempt frame: saved {m.group(2).upper()}"
        elif at_call is not None and i.mnemonic in ("push", "pushfq"):
            what = "RFLAGS" if i.mnemonic == "pushfq" else i.op_str.upper()
            out[entry_sp - i.sp_delta - 8] = f"asyncPreempt frame: saved {what}"
    return out


def explain(path: str, func: str, at: str, *, call: int = 1, registers=None, args=(), env=(), gc: bool = False,
            async_preemption: bool = True, stub: str | None = None, budget: int = 20_000_000) -> E.Story:
    """Tell one preemption of `func` at boundary `at` of its `call`-th call, in its real program (`stub`: a .s
    asyncPreempt loaded over the binary's, as `preemu sweep --stub` loads it)."""
    try:
        k = int(at, 0)
    except (TypeError, ValueError):
        raise EmuError(f"--at {at!r}: for Go input give a boundary number of {func}'s goroutine (0 is its first "
                       "instruction); `preemu sweep --table` lists the PCs") from None
    env = list(env) if async_preemption else realsweep.with_godebug(list(env), "asyncpreemptoff=1")
    spec = realsweep.RealSpec(os.path.abspath(path), func, call, realsweep.check_registers(registers),
                              None if stub is None else os.path.abspath(stub),
                              tuple(realsweep.default_argv(path) + list(args)), tuple(env), 1, gc)
    sw = spec.build()
    ref = sw.reference(budget)
    if not 0 <= k < ref.boundaries:
        raise EmuError(f"--at {k}: {sw.func}'s goroutine runs {ref.boundaries:,} instructions from its entry to its "
                       f"return (boundaries 0 to {ref.boundaries - 1:,})")
    return _Teller(sw, ref, k, path, gc).tell()


class _Teller:
    def __init__(self, sw, ref, k: int, path: str, gc: bool):
        self.sw, self.ref, self.k, self.path, self.gc = sw, ref, k, path, gc
        self.steps: list[E.Step] = []

    # --- reading -------------------------------------------------------------------------------------
    def _g_window(self) -> list[str]:
        p = self.sw.p
        lo, hi = self.stack
        return [f"{p.read_u64(a):#018x}" if lo <= a < hi else "unmapped"
                for a in (self.top - 8 * i for i in range(self.nwords))]

    def _sig_window(self, data: bytes) -> list[str]:
        return [f"{struct.unpack_from('<Q', data, 8 * i)[0]:#018x}" for i in reversed(range(SIG_WORDS))]

    def _add(self, phase, short, title, text, pc, regs_, rsp, table=None, checks=(), sig: list[str] | None = None,
             mp="", window: list[str] | None = None):
        s = E.add_step(self.steps, phase, short, title, text, pc, [], regs_,
                       window if window is not None else self.steps[-1].stack, rsp, mp or self.mp, table, checks)
        s.sigstack = sig if sig is not None else (self.steps[-2].sigstack if len(self.steps) > 1 else [])
        return s

    # --- the story -------------------------------------------------------------------------------------
    def tell(self) -> E.Story:
        sw, k = self.sw, self.k
        clock = sw._arm()
        rec = _Recorder(sw, self._g_window)
        listener = gsweep._Listener(sw, clock)
        sw.p.watch.listener = listener
        resumed = []
        real_resumed = listener.on_resumed

        def on_resumed(r):
            real_resumed(r)
            if r.g == sw.g and not resumed:
                rec.done = True
                resumed.append((r, _regs(_ALL(sw.p.uc)), self._g_window(), sw.p.now()))
        listener.on_resumed = on_resumed
        clock.stop_at = k
        sw.p.run_until(lambda: sw.returned is not None or clock.ready is not None)
        if clock.ready is None:
            raise EmuError(f"{sw.func} returned before boundary {k} in this run")
        t = sw.p.threads[clock.ready]
        ctx_vals = [t.ctx.reg_read(getattr(X, f"UC_X86_REG_{n}") if n != "RFLAGS" else X.UC_X86_REG_EFLAGS)
                    for n in _NAMES]
        regs0 = _regs(ctx_vals)
        pc, rsp = int(regs0["RIP"], 16), int(regs0["RSP"], 16)
        self.stack = (sw._g("stack.lo"), sw._g("stack.hi"))
        self.top = min(self.stack[1] - 8, rsp + 8 * WINDOW_ABOVE)
        self.nwords = WINDOW_ABOVE + 1 + (self._stub_frame_size() + 32) // 8
        self.mp = f"thread {t.tid}"
        prog = sw.prog
        insn = prog.insn_at(pc) if prog else None
        where = insn.where if insn else sw.image.describe(pc)
        text = [f"{sw.func}'s goroutine has run {k:,} of its {self.ref.boundaries:,} instructions; the next is "
                f"`{insn.text if insn else '?'}` at {where}" + (f" (inlined {insn.inline})" if insn and insn.inline
                                                                 else "") + ".",
                "Everything here is the real program: its runtime initialised, its package init done, the "
                "registers those of this run."]
        self._add("goroutine", "the goroutine", f"The goroutine at boundary {k}: {insn.text if insn else hex(pc)}",
                  text, pc, regs0, rsp, window=self._g_window())
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
        sw.p.run_until(lambda: bool(resumed) or sw.returned is not None or
                       (pt.event.outcome not in ("pending", "merged") and pt.event.outcome != "injected"))
        rec.close()
        self._signal_steps(rec, pt, pc, rsp)
        if pt.event.outcome == "injected" and resumed:
            self._resume_steps(rec, pt, resumed[0], pc, rsp)
        ending = sw._finish(clock)
        checks = [Check("the program ended as uninterrupted", not self.ref.ending.diff(ending),
                        "; ".join(f"{w}: {a} -> {b}" for w, a, b in self.ref.ending.diff(ending)) or
                        f"exit status {ending.exit_code}, the same output")]
        if sw.gc is not None:
            uaf = sw.gc.uaf
            checks.append(Check("nothing the cycle freed is used afterwards", not uaf,
                                "; ".join(f"a {u.access} of {u.addr:#x} at {sw.image.describe(u.pc)}, in the object at "
                                          f"{u.obj.addr:#x} ({u.obj.size} bytes) freed by the cycle at boundary "
                                          f"{u.obj.boundary}" for u in uaf[:2]) or
                                f"{sw.gc.freed_total} object(s) freed, none touched before being reallocated"))
        if sw.returned is not None:
            _, results, _ = sw.returned
            same = results == self.ref.results
            checks.append(Check(f"{sw.func} returned what it returns uninterrupted", same,
                                ", ".join(f"{n} = {v}" for n, v in results.items()) or "no results"))
        last = self.steps[-1]
        self._add("end", "the end", "After the preemption", [f"{sw.func} ran on to its return and the program to "
                  "its exit; both are compared with the uninterrupted run."], last.pc,
                  last.regs, last.rsp, checks=checks)
        return self._story(pt, pc)

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

    def _signal_steps(self, rec: _Recorder, pt, pc: int, rsp: int) -> None:
        sw = self.sw
        if rec.delivered is None:
            raise EmuError(f"the signal for boundary {self.k} was never delivered (the program ended first)")
        tid, frame, ev = rec.delivered
        b = rec.sig_bytes
        F = frame.frame
        q = lambda off: struct.unpack_from("<Q", b, off)[0]                       # noqa: E731
        mc = lambda n: q(sigframe.greg_offset(n))                                 # noqa: E731
        restorer = q(sigframe.PRETCODE)
        rows = [["pretcode (the handler's return address)", f"{F + sigframe.PRETCODE:#x}",
                 f"{restorer:#x} {sw.image.describe(restorer)}"],
                ["ucontext.uc_flags", f"{F + sigframe.UC_FLAGS:#x}", f"{q(sigframe.UC_FLAGS):#x}"],
                ["ucontext.uc_stack (ss_sp, ss_size): the M's gsignal stack", f"{F + sigframe.UC_STACK:#x}",
                 f"{q(sigframe.UC_STACK):#x}, {q(sigframe.UC_STACK + 16):#x}"],
                ["uc_mcontext.rip (interrupted PC)", f"{F + sigframe.greg_offset('RIP'):#x}", f"{mc('RIP'):#x}"],
                ["uc_mcontext.rsp (interrupted SP)", f"{F + sigframe.greg_offset('RSP'):#x}", f"{mc('RSP'):#x}"],
                ["uc_mcontext.eflags", f"{F + sigframe.greg_offset('EFLAGS'):#x}",
                 f"{mc('EFLAGS'):#x} [{R.describe_flags(mc('EFLAGS'))}]"],
                ["uc_mcontext.fpstate (FXSAVE image)", f"{F + sigframe.FPSTATE_PTR:#x}", f"{q(sigframe.FPSTATE_PTR):#x}"],
                ["uc_sigmask", f"{F + sigframe.UC_SIGMASK:#x}", f"{q(sigframe.UC_SIGMASK):#x}"],
                ["siginfo (si_signo, si_code)", f"{F + sigframe.SIGINFO:#x}",
                 f"{struct.unpack_from('<i', b, sigframe.SIGINFO)[0]} (SIGURG), "
                 f"{struct.unpack_from('<i', b, sigframe.SIGINFO + 8)[0]} (SI_TKILL)"]]
        self.sig_top = F + sigframe.FRAME_SIZE - 8
        self.sig_labels = self._sig_labels(F)
        sig_before = self._sig_window(b)
        hr = rec.handler_regs
        self._add("signal", "delivery", f"tgkill and delivery: the rt_sigframe on thread {tid}'s signal stack",
                  [f"The kernel model takes SIGURG on thread {tid} before it runs again and builds the rt_sigframe "
                   "below the signal stack's top (sigaltstack: the M's gsignal), as arch/x86/kernel/signal.c does, "
                   "then enters the handler runtime.sigtramp with RDI = 23, RSI = &siginfo, RDX = &ucontext.",
                   f"The frame is at {F:#x}; the interrupted registers are saved in its uc_mcontext."],
                  int(hr["RIP"], 16), hr, int(hr["RSP"], 16),
                  {"title": "rt_sigframe", "columns": ["part", "address", "value"], "rows": rows}, sig=sig_before,
                  mp=f"thread {tid}", window=rec.win_delivered)
        if rec.dsp is not None and rec.dsp[2] is not None:
            dregs, gp, (st, headroom), win = rec.dsp
            table_rows, reason = E.check_rows(sw.prog, st, pc, rsp, headroom, False)
            decided = "injected" if pt.event.outcome == "injected" else "declined"
            agree = (reason == "safe") == (decided == "injected")
            self._add("handler", "doSigPreempt",
                      "sighandler -> doSigPreempt: the runtime decides",
                      ["runtime.sigtrampgo -> sighandler sees sig == sigPreempt and debug.asyncpreemptoff == 0 "
                       "(signal_unix.go:691) and calls doSigPreempt(gp, ctxt) (:342): wantAsyncPreempt, then "
                       "isAsyncSafePoint at the saved PC and SP, with the g/m/p state read here.",
                       f"preemu's oracle says {reason!r}; the runtime {decided}."],
                      int(dregs["RIP"], 16), dregs, int(dregs["RSP"], 16),
                      {"title": "isAsyncSafePoint's checks (values read now)", "columns": E.CHECK_COLUMNS,
                       "rows": table_rows},
                      [Check("the runtime and preemu's oracle agree", agree,
                             f"oracle {reason}, runtime {decided}")], mp=f"thread {tid}", window=win)
        if rec.sigret is None:
            return
        restored, b2, sregs, win = rec.sigret
        new_rip, new_rsp = struct.unpack_from("<Q", b2, sigframe.greg_offset("RIP"))[0], \
            struct.unpack_from("<Q", b2, sigframe.greg_offset("RSP"))[0]
        injected = pt.event.outcome == "injected"
        pushed = sw.p.read_u64(new_rsp) if injected else None
        rows = [["uc_mcontext.rip", f"{mc('RIP'):#x}", f"{new_rip:#x} {sw.image.describe(new_rip)}"],
                ["uc_mcontext.rsp", f"{mc('RSP'):#x}", f"{new_rsp:#x}"]]
        if injected:
            rows.append([f"[{new_rsp:#x}] (pushed)", "-", f"{pushed:#x} (the interrupted PC)"])
        self._add("pushCall", "pushCall",
                  "pushCall edits the saved context" if injected else "The handler leaves the context alone",
                  (["doSigPreempt -> ctxt.pushCall(abi.FuncPCABI0(asyncPreempt), pc) (signal_amd64.go:80-89): "
                    "it writes the interrupted PC one word below the saved SP, lowers the saved SP by 8 and sets the "
                    "saved PC to asyncPreempt, in the ucontext, so rt_sigreturn \"calls\" asyncPreempt."]
                   if injected else ["The runtime declined: the ucontext is as the kernel saved it, and "
                                     "rt_sigreturn resumes the interrupted instruction."]),
                  int(sregs["RIP"], 16), sregs, int(sregs["RSP"], 16),
                  {"title": "the ucontext before and after the handler", "columns": ["word", "before", "after"],
                   "rows": rows}, sig=self._sig_window(b2), mp=f"thread {tid}", window=win)
        self._add("sigreturn", "rt_sigreturn", "rt_sigreturn loads the (edited) context",
                  [f"The handler returns through the restorer to rt_sigreturn (syscall 15): the registers come "
                   f"from the frame; RIP = {new_rip:#x} ({sw.image.describe(new_rip)}), RSP = {new_rsp:#x}."],
                  new_rip, sregs, new_rsp, mp=f"thread {tid}", window=win)

    def _sig_labels(self, F: int) -> list[str]:
        names = {sigframe.PRETCODE: "pretcode", sigframe.UC_FLAGS: "uc_flags", sigframe.UC_LINK: "uc_link",
                 sigframe.UC_STACK: "uc_stack.ss_sp", sigframe.UC_STACK + 8: "uc_stack.ss_flags",
                 sigframe.UC_STACK + 16: "uc_stack.ss_size", sigframe.FPSTATE_PTR: "fpstate",
                 sigframe.UC_SIGMASK: "uc_sigmask", sigframe.SIGINFO: "siginfo (signo, errno)",
                 sigframe.SIGINFO + 8: "siginfo (code, pad)", sigframe.SIGINFO + 16: "siginfo (pid, uid)"}
        for n in sigframe.GREGS:
            names[sigframe.greg_offset(n)] = f"mcontext.{n.lower()}"
        return [names.get(off, "") for off in reversed(range(0, sigframe.FRAME_SIZE, 8))]

    def _resume_steps(self, rec: _Recorder, pt, resumed, pc: int, rsp: int) -> None:
        sw = self.sw
        r, rregs, rwin, now = resumed
        if rec.stub_frame is not None:
            fregs, frsp, call, win = rec.stub_frame
            slots = _slot_names(rec.stub_insns, call, frsp)
            self.labels_extra = slots
            words = dict(zip((self.top - 8 * i for i in range(self.nwords)), win))
            saved = [[name.split("saved ")[1] if "saved " in name else name.split(":")[0], f"{a:#x}", words.get(a, "?")]
                     for a, name in sorted(slots.items())]
            self._add("stub", "asyncPreempt", "asyncPreempt builds its frame",
                      [f"{'The stub loaded over' if sw._stub_code else 'The binary' + chr(39) + 's'} runtime.asyncPreempt runs on the goroutine's stack: it saves the flags and every "
                       f"general register in a frame of its own (generated by mkpreempt.go), then calls "
                       f"asyncPreempt2. At its CALL, RSP = {frsp:#x}."],
                      call, fregs, frsp, {"title": "asyncPreempt's save slots (the real bytes, read at its CALL)",
                                          "columns": ["register", "slot", "value"], "rows": saved}, window=win)
        away_ns = now - pt.event.delivered_ns if pt.event.delivered_ns else 0
        self._add("asyncPreempt2", "asyncPreempt2",
                  "asyncPreempt2 -> gopreempt_m -> schedule, and back",
                  [("asyncPreempt2 sets gp.asyncSafePoint and, since the GC asked (gp.preemptStop is not set: "
                    "stopTheWorld's preemptone), mcall(gopreempt_m): the goroutine goes to the global run queue; "
                    "the world stops, the GC cycle runs, and the goroutine is scheduled again."
                    if self.gc else
                    "asyncPreempt2 sets gp.asyncSafePoint and mcall(gopreempt_m) (preempt.go:317): "
                    "goschedImpl puts the goroutine on the global run queue and schedule() runs on g0."),
                   f"It resumed on thread {r.resume_tid} after {away_ns:,} ns of virtual time "
                   f"(thread {pt.tid} was interrupted).",
                   "What ran in the meantime (each change of the TLS g slot, in order): " + self._who_ran(rec) + "."],
                  int(rregs["RIP"], 16), rregs, int(rregs["RSP"], 16), window=rwin)
        if self.gc:
            self._gc_step()
        rows, diffs = [], 0
        for n in E.REG_ORDER:
            if n in ("RIP", "RSP"):
                continue
            a = r._regs.get(n if n != "RFLAGS" else "EFLAGS") if not n.startswith("XMM") else \
                int.from_bytes(r._xmm[16 * int(n[3:]):16 * int(n[3:]) + 16], "little")
            v = int(rregs[n], 16)
            if n == "RFLAGS":                       # what user code can observe (watch.FLAGS_MASK)
                a, v = a & FLAGS_MASK, v & FLAGS_MASK
            same = a == v
            diffs += not same
            rows.append([n, E.fmt_reg(n, a), E.fmt_reg(n, v), "same" if same else "DIFFERS"])
        checks = [Check("every register and the flags come back", diffs == 0,
                        "all equal" if not diffs else f"{diffs} differ"),
                  Check("the RET goes back to the interrupted instruction with its SP",
                        not any(d.startswith("RSP") or d.startswith("return address") for d in r.resume_diffs),
                        f"RET to {pc:#x} with RSP {rsp:#x}")]
        self._add("compare", "RET", "asyncPreempt restores and returns",
                  ["The stub reloads every register and the flags from its frame and returns to the interrupted PC "
                   "(the word pushCall pushed); preemu compares each register with the interrupted state."],
                  int(rregs["RIP"], 16), rregs, int(rregs["RSP"], 16),
                  {"title": "registers: interrupted vs at asyncPreempt's RET",
                   "columns": ["register", "interrupted", "at the RET", ""], "rows": rows}, checks)

    def _who_ran(self, rec: _Recorder) -> str:
        """The goroutines made current while G was away, named: G, an M's g0 (the scheduler), goroutine N."""
        p, sw = self.sw.p, self.sw
        gf, mf = p.structs.g, p.structs.m
        names = []
        for tid, g in rec.ran:
            if g == sw.g:
                what = f"{sw.func}'s goroutine"
            else:
                try:
                    m = p.read_u64(g + gf["m"].offset)
                    if m and p.read_u64(m + mf["gsignal"].offset) == g:
                        continue                      # the signal handler's own g
                    if m and p.read_u64(m + mf["g0"].offset) == g:
                        what = "g0 (schedule)"
                    else:
                        what = f"goroutine {p.read_u64(g + gf['goid'].offset)}"
                except Exception:
                    what = f"g {g:#x}"
            entry = f"thread {tid}: {what}"
            if not names or names[-1] != entry:
                names.append(entry)
        if len(names) > 12:
            names = names[:6] + [f"... {len(names) - 12} more ..."] + names[-6:]
        return " -> ".join(names) or "nothing else"

    def _gc_step(self) -> None:
        g = self.sw.gc
        scan = next((s for s in g.scans if s.boundary == self.k), g.scans[0] if g.scans else None)
        if scan is None:
            return
        freed = [o for o in g.freed.values() if o.boundary == self.k]
        last = self.steps[-1]
        self._add("gc", "the GC's scan", "The GC cycle scans the goroutine where it was parked",
                  [f"runtime.scanstack met the goroutine {scan.status} with asyncSafePoint = {scan.async_safe_point}: "
                   "asyncPreempt's frame and the frame it interrupted are scanned conservatively (every word that "
                   "points into the heap keeps its object), the others with their stack maps (mgcmark.go).",
                   f"The cycle (GC cycles now {g.cycles}) freed {len(freed)} object(s); preemu watches them."],
                  last.pc, last.regs, last.rsp,
                  {"title": "frames scanstack visited", "columns": ["function", "scanned"],
                   "rows": [list(f) for f in scan.frames]})

    def _story(self, pt, pc: int) -> E.Story:
        sw = self.sw
        labels = []
        extra = getattr(self, "labels_extra", {})
        for i in range(self.nwords):
            a = self.top - 8 * i
            labels.append(extra.get(a, "interrupted SP" if a == int(self.steps[0].regs["RSP"], 16) else ""))
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
