"""Signal delivery: doSigPreempt and sigctxt.pushCall (mirrors runtime/signal_unix.go, signal_amd64.go).

Works over a narrow CPU-context protocol (rsp, set_rsp, set_rip, store64), like Go's sigctxt.
pushCall makes exactly one 8-byte store of the resume PC at RSP-8, RSP -= 8 and RIP = target;
nothing else changes. The acknowledgement (m.preemptGen += 1, m.signalPending = 0) happens
whether or not the call was injected.
"""
from __future__ import annotations

from typing import Callable, Protocol

from .safepoint import SchedState, Verdict, is_async_safe_point, want_async_preempt


class SigContext(Protocol):
    def rsp(self) -> int: ...
    def set_rsp(self, value: int) -> None: ...
    def set_rip(self, value: int) -> None: ...
    def store64(self, addr: int, value: int) -> None: ...


def push_call(ctx: SigContext, target_pc: int, resume_pc: int) -> None:
    """sigctxt.pushCall on amd64: make the interrupted code look like it called target_pc."""
    sp = ctx.rsp() - 8
    ctx.store64(sp, resume_pc)
    ctx.set_rsp(sp)
    ctx.set_rip(target_pc)


def do_sig_preempt(ctx: SigContext, prog, st: SchedState, pc: int, sp: int, headroom: int,
                   stub_entry: int, ack: Callable[[], None]) -> Verdict:
    """doSigPreempt: inject asyncPreempt if wanted and safe; always acknowledge."""
    if want_async_preempt(st):
        v = is_async_safe_point(prog, st, pc, sp, headroom)
        if v.ok:
            push_call(ctx, stub_entry, v.resume_pc)
    else:
        v = Verdict(False, "no-request")
    ack()
    return v


def sighandler_sigurg(ctx: SigContext, prog, st: SchedState, pc: int, sp: int, headroom: int, stub_entry: int,
                      ack: Callable[[], None], async_preempt_off: bool = False) -> Verdict:
    """sighandler's SIGURG branch: with GODEBUG=asyncpreemptoff=1 doSigPreempt is skipped entirely
    (signal_unix.go:691-693, Go >= 1.15, golang/go#38531): no injection and no acknowledgement; the
    context is never rewritten. Go 1.14 ran doSigPreempt anyway, so a stray SIGURG could still
    preempt a G with a pending (cooperative) request."""
    if async_preempt_off and st.rules.sighandler_checks_asyncpreemptoff:
        return Verdict(False, "asyncpreemptoff")
    return do_sig_preempt(ctx, prog, st, pc, sp, headroom, stub_entry, ack)
