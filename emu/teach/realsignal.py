"""The signal path of a real-program story: the delivery, the runtime's decision, pushCall and rt_sigreturn.

A mixin of real._Teller, told from what realrecord.Recorder captured (nothing is changed): the rt_sigframe the
kernel model built on the M's signal stack, part by part (sigframe.py: pretcode, ucontext with uc_stack
and uc_mcontext, the FP state pointer, siginfo), and the signal stack as the story's second window;
sighandler -> doSigPreempt with the g/m/p state it read and preemu's oracle beside it; pushCall's edit of
the saved RIP/RSP in the ucontext; rt_sigreturn loading it. Mirrors arch/x86/kernel/signal.c's frame,
runtime/signal_unix.go:342 doSigPreempt, runtime/preempt.go:369-444 and runtime/signal_amd64.go:80
pushCall. Left out: the stub, the trip through schedule and the RET (realresume.py).
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from . import story as E
from ..check.verify import Check
from ..core import regs as R
from ..core.errors import EmuError
from ..linux import sigframe

if TYPE_CHECKING:
    from .realrecord import Recorder

SIG_WORDS = sigframe.FRAME_SIZE // 8


class _SignalSteps:
    """The signal's steps; uses the teller's sweep (sw), boundary (k) and _add()."""

    def _signal_steps(self, rec: Recorder, pt, pc: int, rsp: int) -> None:
        if rec.delivered is None:
            raise EmuError(f"the signal for boundary {self.k} was never delivered (the program ended first)")
        tid, frame, ev = rec.delivered
        self._delivery_step(rec, tid, frame.frame)
        if rec.dsp is not None and rec.dsp[2] is not None:
            self._handler_step(rec, pt, pc, rsp, tid)
        if rec.sigret is None:
            return
        self._context_steps(rec, pt, tid)

    def _delivery_step(self, rec: Recorder, tid: int, F: int) -> None:
        """The rt_sigframe at F, part by part, and the handler's entry registers."""
        sw = self.sw
        b = rec.sig_bytes
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

    def _handler_step(self, rec: Recorder, pt, pc: int, rsp: int, tid: int) -> None:
        """sighandler -> doSigPreempt: isAsyncSafePoint's checks with the state read at its entry."""
        sw = self.sw
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

    def _context_steps(self, rec: Recorder, pt, tid: int) -> None:
        """The ucontext before and after the handler (pushCall's edit, if it injected), then rt_sigreturn."""
        sw = self.sw
        mc = lambda n: struct.unpack_from("<Q", rec.sig_bytes, sigframe.greg_offset(n))[0]   # noqa: E731
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

    def _sig_window(self, data: bytes) -> list[str]:
        return [f"{struct.unpack_from('<Q', data, 8 * i)[0]:#018x}" for i in reversed(range(SIG_WORDS))]
