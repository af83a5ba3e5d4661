"""Signals in an emulated process: sending, delivery onto the thread's stack, rt_sigreturn, and the
synchronous SIGSEGV a page fault raises and the SIGTRAP of an int3 (any other fault of the engine ends the run).

SignalDelivery is a mixin of process.Process (it uses the process's engine, threads, sigactions and
watch). It mirrors kernel/signal.c (complete_signal's choice of a thread, the merging of a pending
standard signal, force_sig_info_to_task, the default actions, EINTR/SA_RESTART for an interrupted
wait), arch/x86/kernel/signal.c (handle_signal: SA_ONSTACK, SA_NODEFER, the handler's mask) and
arch/x86/mm/fault.c (a fault on an unmapped address: SEGV_MAPERR with si_addr, trapno, err and cr2; an
instruction fetch from a page mapped without PROT_EXEC: SEGV_ACCERR) and arch/x86/kernel/traps.c (an int3 in
user mode: do_int3_user's do_trap(X86_TRAP_BP, SIGTRAP) forces SIGTRAP with SI_KERNEL, RIP past the int3).
When a pending signal is taken (at the start of a slice, or at --signal-at's PC) is process.py's run
loop; the frame's bytes are sigframe.py's. Job control as kernel/signal.c prepare_signal has it for a
process: a stop signal with its default action (SIGSTOP always; SIGTSTP, SIGTTIN, SIGTTOU while SIG_DFL)
stops the whole process at once (Process.job_stopped: the process table runs none of its threads; a thread
waiting in a syscall goes on waiting, as the kernel restarts the call after SIGCONT) and drops a pending
SIGCONT; SIGCONT resumes it whatever its action and drops pending stop signals; a signal whose action is to
ignore it and that the thread does not block is dropped when sent (sig_ignored), interrupting nothing.
Left out: real-time signal queues (a standard signal pending twice is merged), the parent's
CLD_STOPPED/CLD_CONTINUED notice and WSTOPPED/WCONTINUED reports, orphaned groups' stop signals, core dumps.
"""
from __future__ import annotations

import struct

import functools

from unicorn import UcError
from unicorn import unicorn_const as UCC
from unicorn import x86_const as X

from ..core.errors import GuestFault
from .regbatch import read_reg
from ..engine.faultaddr import failed_address
from .sigframe import (PF_INSTR, PF_PROT, PF_USER, PF_WRITE, SEGV_ACCERR, SEGV_MAPERR, SI_KERNEL, SI_TKILL, X86_TRAP_BP,
                       X86_TRAP_PF, SigInfo,
                       init_handler_fpu, restore_rt_frame, setup_rt_frame)
from .sys_signal import UNBLOCKABLE
from .sysabi import EINTR, ESRCH
from .threads import BLOCKED, EXITED, Thread

SA_ONSTACK, SA_RESTART, SA_NODEFER = 0x08000000, 0x10000000, 0x40000000
SIG_DFL, SIG_IGN = 0, 1
DEFAULT_IGNORED = {17, 18, 23, 28}     # SIGCHLD, SIGCONT, SIGURG, SIGWINCH: default action is ignore
SIGCONT, STOP_SIGNALS = 18, (19, 20, 21, 22)    # SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
SIGNAL_NAMES = {23: "SIGURG", 11: "SIGSEGV", 5: "SIGTRAP", 6: "SIGABRT", 2: "SIGINT", 9: "SIGKILL", 13: "SIGPIPE", 15: "SIGTERM"}


@functools.lru_cache(maxsize=64)
def _tkill_info(sig: int, pid: int, uid: int) -> SigInfo:
    """A tgkill's siginfo (immutable: one per signal and sender, not one per delivery)."""
    return SigInfo(sig, pid=pid, uid=uid)


class SignalDelivery:
    """Sending a signal to a thread, delivering it (a handler's frame, or the default action), returning
    from a handler, and turning a fault on an unmapped page into the faulting thread's SIGSEGV (any other
    engine fault into the GuestFault that ends the run)."""

    def signal_target(self, sig: int) -> Thread:
        """The thread a process-directed signal goes to: the first live one, in tid order (the main thread
        first), that does not block it; the main thread when all do (complete_signal, kernel/signal.c)."""
        live = [t for _, t in sorted(self.threads.items()) if t.state != EXITED]
        return next((t for t in live if not t.sigmask & (1 << (sig - 1))), self.threads.get(self.pid, live[0]))

    def send_signal(self, sender: Thread, tid: int, sig: int, code: int = SI_TKILL, info: SigInfo | None = None) -> int:
        """Send `sig` to thread `tid`: siginfo's si_code is `code`, SI_TKILL for tkill/tgkill, SI_USER for kill
        (kernel/signal.c: prepare_kill_siginfo and do_tkill), with the sender's pid and uid; or `info` as it is
        (another process's signal: SIGCHLD's CLD_EXITED, a kill from the parent)."""
        t = self.threads.get(tid)
        if t is None or t.state == EXITED:
            return -ESRCH
        if sig == 0:
            return 0
        ev = self.watch.sent(sig, sender.tid, tid)
        done = self._job_control(sig, t)
        if done:
            ev.outcome = done
            return 0
        if info is not None:
            ev.info = info
        elif code != SI_TKILL:
            ev.info = SigInfo(sig, code=code, pid=self.pid, uid=self.uid)
        if sig in t.pending:
            ev.outcome = "merged"           # a standard signal already pending is not queued twice
            return 0
        t.pending[sig] = ev
        t.signal_countdown = self.opts.signal_delay
        if t is sender:
            self._stop_slice = True          # taken on the way back to user mode
        elif t.state == BLOCKED and not t.sigmask & (1 << (sig - 1)):
            self._interrupt(t, sig)
        return 0

    def _job_control(self, sig: int, t: Thread) -> str | None:
        """prepare_signal's part before queueing: SIGCONT resumes and drops pending stops, a stop signal drops a
        pending SIGCONT and, with its default action, stops the process (not queued: "stopped"); a signal the
        thread does not block and whose action is to ignore it is dropped ("ignored"); None: queue it."""
        handler = self.sigactions.get(sig, (SIG_DFL, 0, 0, 0))[0]
        if sig == SIGCONT:
            self.job_stopped = False
            for x in self.threads.values():
                for s in STOP_SIGNALS:
                    x.pending.pop(s, None)
        elif sig in STOP_SIGNALS:
            for x in self.threads.values():
                x.pending.pop(SIGCONT, None)
            if handler == SIG_DFL or sig == STOP_SIGNALS[0]:
                self.job_stopped = True
                self._stop_slice = True
                return "stopped"
        blocked = t.sigmask & (1 << (sig - 1))
        if not blocked and (handler == SIG_IGN or handler == SIG_DFL and sig in DEFAULT_IGNORED):
            return "ignored"
        return None

    def _interrupt(self, t: Thread, sig: int) -> None:
        """A signal arrives while t waits: restart the call (SA_RESTART futex wait) or fail it with EINTR."""
        t.signal_countdown = 0
        if t.wait.kind in ("vfork", "fifo"):  # a vfork parent waits killable only (kernel/fork.c wait_for_vfork_done);
            return                            # a FIFO open is not interrupted here (fifo.py)
        flags = self.sigactions.get(sig, (0, 0, 0, 0))[1]
        if t.wait.restart and flags & SA_RESTART and t.wait.nr >= 0:
            rip = t.ctx.reg_read(X.UC_X86_REG_RIP)
            self.wake(t, t.wait.nr)
            t.ctx.reg_write(X.UC_X86_REG_RIP, rip - 2)
        else:
            w = t.wait
            if w.kind == "sleep" and w.rem:   # kernel/time/hrtimer.c do_nanosleep: the time left, to *rem
                left = max(0, w.deadline - self.now())
                self.write(w.rem, struct.pack("<qq", left // 10**9, left % 10**9))
            # pipe_write, splice, sendfile: what went in
            self.wake(t, w.count if w.kind in ("pipe-write", "splice") and w.count else -EINTR)

    def _force_sig(self, t: Thread, sig: int) -> None:
        """force_sig_info_to_task (kernel/signal.c): a synchronous fault the thread blocks or ignores
        cannot be left pending or dropped; its action is reset to SIG_DFL and it is unblocked, so it kills."""
        bit = 1 << (sig - 1)
        handler, flags, restorer, mask = self.sigactions.get(sig, (SIG_DFL, 0, 0, 0))
        if t.sigmask & bit or handler == SIG_IGN:
            self.sigactions[sig] = (SIG_DFL, flags, restorer, mask)
            t.sigmask &= ~bit
        t.pending[sig].forced = True

    def _deliver(self, t: Thread, sig: int) -> None:
        ev = t.pending.pop(sig)
        handler, flags, restorer, mask = self.sigactions.get(sig, (SIG_DFL, 0, 0, 0))
        if handler == SIG_IGN or (handler == SIG_DFL and sig in DEFAULT_IGNORED):
            ev.outcome = "ignored"
            return
        if handler == SIG_DFL:
            ev.outcome = "fatal"          # a fault _force_sig reset to SIG_DFL lands here too
            self.exit_code = 128 + sig
            self.killed_by = sig          # a parent's wait sees WIFSIGNALED (proctable.py)
            self.stop_reason = f"killed by signal {sig} ({SIGNAL_NAMES.get(sig, '?')})" + \
                (f": {ev.fault}" if ev.fault else "")
            return
        rsp = read_reg(self.uc, X.UC_X86_REG_RSP)
        alt = t.altstack if flags & SA_ONSTACK else None
        on_alt = t.altstack is not None and t.altstack[0] <= rsp - 128 < t.altstack[0] + t.altstack[1]
        info = ev.info or _tkill_info(sig, self.pid, self.uid)
        xsave = (self.level.xcr0, self.avx.kregs()) if self.avx is not None else None
        frame = setup_rt_frame(self.uc, info, handler, restorer, t.sigmask, alt, on_alt, xsave)
        if self.avx is not None:            # the handler starts from Linux's init FPU state (sigframe.py)
            init_handler_fpu(self.uc, self.level.xcr0)
            self.avx.set_kregs(())
        t.sigmask |= mask | (0 if flags & SA_NODEFER else 1 << (sig - 1))
        t.frames.append(frame)
        self.watch.delivered(ev, t, frame)

    def request_sigreturn(self, t: Thread) -> None:
        self._after_stop = self._finish_sigreturn
        self._stop_slice = True

    def _finish_sigreturn(self, t: Thread) -> None:
        rsp = read_reg(self.uc, X.UC_X86_REG_RSP)
        frame = t.frames.pop() if t.frames and t.frames[-1].ucontext == rsp else None
        restored = restore_rt_frame(self.uc, self.level.xcr0 if self.avx is not None else 0)
        if self.avx is not None:
            self.avx.set_kregs(restored.kregs)      # () after a bad frame: the FPU's init state
        t.sigmask = restored.sigmask & ~UNBLOCKABLE
        if restored.bad:                    # badframe: signal_fault -> force_sig(SIGSEGV) (signal_64.c)
            ev = self.watch.sent(11, t.tid, t.tid)
            ev.info = SigInfo(11, SI_KERNEL)
            ev.fault = f"rt_sigreturn: {restored.bad}"
            t.pending[11] = ev
            self._force_sig(t, 11)
        if frame is None:
            self.watch.violation("sigreturn-frame", f"rt_sigreturn in thread {t.tid} with ucontext {rsp:#x}, "
                                 "which is not the frame preemu delivered last")
        else:
            self.watch.sigreturn(t, frame, restored)

    # --- the engine's faults: an unmapped page is the thread's SIGSEGV, anything else ends the run --------
    def _page_fault(self, t: Thread, e: UcError, addr: int | None = None) -> bool:
        """An access to an unmapped page, or an instruction fetch from a page mapped without PROT_EXEC, becomes
        a synchronous SIGSEGV for the thread, as the kernel's page fault handler does (arch/x86/mm/fault.c:
        force_sig_fault with SEGV_MAPERR, SEGV_ACCERR for a fetch from a present NX page or a store to a present
        read-only one): True if one was
        raised. The address is faultaddr.py's (a fetch's is where RIP stands), or `addr` when the caller knows it
        (an access of preemu's vector unit, engine/avxmem.py)."""
        if e.errno == UCC.UC_ERR_FETCH_PROT:   # the page is there, but not executable
            code, err = SEGV_ACCERR, PF_PROT | PF_INSTR
        elif e.errno == UCC.UC_ERR_WRITE_PROT:  # the page is there, but read-only
            code, err = SEGV_ACCERR, PF_PROT | PF_WRITE
        elif e.errno == UCC.UC_ERR_FETCH_UNMAPPED:
            code, err = SEGV_MAPERR, PF_INSTR
        elif e.errno in (UCC.UC_ERR_READ_UNMAPPED, UCC.UC_ERR_WRITE_UNMAPPED):
            code, err = SEGV_MAPERR, PF_WRITE if e.errno == UCC.UC_ERR_WRITE_UNMAPPED else 0
        else:
            return False
        pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        if addr is None:
            addr = failed_address(self.uc, e.errno, self.mem.pages.last_fill(), self.mem.is_writable)
        if 11 in t.pending:                    # a SIGSEGV (a tgkill, blocked) is already pending: the fault's
            if t.pending[11].forced:           # own is not queued twice, but the pending one is forced, and
                return False                   # kills. (Forced already: it was not taken; fail, do not loop.)
            self._force_sig(t, 11)
            self.runq.appendleft(t)
            return True
        ev = self.watch.sent(11, t.tid, t.tid)
        ev.info = SigInfo(11, code, addr=addr, trapno=X86_TRAP_PF, err=PF_USER | err)
        what = {0: "read of", PF_WRITE: "write to", PF_INSTR: "fetch from"}[err & ~PF_PROT]
        how = ("read-only" if err & PF_WRITE else "non-executable") if err & PF_PROT else "unmapped"
        ev.fault = f"{what} {how} address {addr:#x} at {self._where(pc)}"
        t.pending[11] = ev
        self._force_sig(t, 11)
        self.runq.appendleft(t)                # the faulting thread takes its signal before anything else runs
        return True

    def _trap(self, t: Thread, intno: int) -> bool:
        """An exception the engine raised (intno): an int3 becomes the thread's forced SIGTRAP, as do_int3_user
        does (arch/x86/kernel/traps.c: do_trap(X86_TRAP_BP, SIGTRAP, ..., NULL) -> force_sig: SI_KERNEL, no
        address; RIP already past the int3, where Go's crash report shows PC): True if one was raised. Any
        other exception (a divide error, a #UD) is not modelled: False, and it ends the run. A page fault of an
        instruction preemu's vector unit ran (cpuhooks._on_intr) is the engine's own page fault (_page_fault)."""
        if intno == X86_TRAP_PF and self.avx is not None and self.avx.fault is not None:
            f, self.avx.fault = self.avx.fault, None
            return self._page_fault(t, UcError(f.errno), f.addr)
        if intno != X86_TRAP_BP or 5 in t.pending:     # a SIGTRAP already pending: not queued twice
            return False
        ev = self.watch.sent(5, t.tid, t.tid)
        ev.info = SigInfo(5, SI_KERNEL, trapno=X86_TRAP_BP)
        ev.fault = f"int3 at {self._where(read_reg(self.uc, X.UC_X86_REG_RIP) - 1)}"
        t.pending[5] = ev
        self._force_sig(t, 5)
        self.runq.appendleft(t)
        return True

    def _guest_fault(self, e: UcError) -> Exception:
        pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        detail = str(e)
        if e.errno == UCC.UC_ERR_INSN_INVALID:
            detail += (" (a VEX/AVX instruction? preemu's CPU has no AVX at --cpu v1/v2; --cpu v3 or v4 runs them)"
                       if self.avx is None else "")
        return GuestFault(pc, self._where(pc), detail)
