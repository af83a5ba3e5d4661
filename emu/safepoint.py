"""The safe-point oracle: wantAsyncPreempt and isAsyncSafePoint (mirrors runtime/preempt.go, Go 1.27, amd64).

A pure function of (program metadata, G/M/P state, pc, sp): no Unicorn import, no memory access.
Checks run in Go's order and each refusal carries a stable reason code (REASONS). amd64 only
ever emits Safe (-1) and Unsafe (-2) UnsafePoint values, so the resume PC is always the
interrupted PC; the restart cases (arm64/mips/loong64) are left out, as is the
goexperiment.RuntimeSecret check (off by default).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import gostructs as gs
from .program import Program

#: reason code -> what Go's check means
REASONS = {
    "safe": "an async safe point: inject the call to asyncPreempt",
    "asyncpreemptoff": "GODEBUG=asyncpreemptoff=1: sighandler ignores SIGURG, the context is not touched",
    "no-request": "wantAsyncPreempt: neither gp.preempt nor p.preempt is set, or the G is not _Grunning",
    "not-curg": "the signal landed while g0/gsignal (not the user G) runs on this M: mp.curg != gp",
    "no-p": "the M has no P",
    "m-locks": "the M holds runtime locks (m.locks > 0)",
    "m-mallocing": "the M is inside malloc (m.mallocing != 0)",
    "m-preemptoff": "preemption is turned off on this M (m.preemptoff != \"\")",
    "p-not-running": "the M's P is not _Prunning",
    "g-syscall": "the current G is in a system call (or there is none)",
    "stack-headroom": "too little stack below SP for the injected call (sp - stack.lo < asyncPreemptStack)",
    "no-func": "the PC is in no known Go function (findfunc fails)",
    "unsafe-point": "the compiler or assembler marked this PC unsafe (PCDATA_UnsafePoint == -2)",
    "asm-func": "an assembly function (FuncFlagAsm / no locals pointer map)",
    "runtime-func": "the innermost (possibly inlined) function is runtime., internal/runtime/ or reflect. code",
}

RUNTIME_PREFIXES = ("runtime.", "internal/runtime/", "reflect.")


@dataclass(frozen=True)
class SchedState:
    """The slice of g, m and p that doSigPreempt reads (facts §2.3-2.5)."""

    gp: int                  # address of the signalled G
    g_status: int
    g_preempt: bool
    stack_lo: int
    stack_hi: int
    m_curg: int
    m_p: int                 # 0 if no P
    m_locks: int
    m_mallocing: int
    m_preemptoff: int        # length of the m.preemptoff string; non-zero means set
    p_status: int
    p_preempt: bool


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    resume_pc: int = 0

    def __bool__(self) -> bool:
        return self.ok


def want_async_preempt(st: SchedState) -> bool:
    """wantAsyncPreempt: a preemption request exists and the G is running."""
    requested = st.g_preempt or (st.m_p != 0 and st.p_preempt)
    return requested and (st.g_status & ~gs.G_SCAN) == gs.G_RUNNING


def can_preempt_m(st: SchedState) -> str | None:
    """canPreemptM: return None if the M may be preempted, else the refusal reason."""
    if st.m_locks != 0:
        return "m-locks"
    if st.m_mallocing != 0:
        return "m-mallocing"
    if st.m_preemptoff != 0:
        return "m-preemptoff"
    if st.p_status != gs.P_RUNNING:
        return "p-not-running"
    if st.m_curg == 0 or (st.g_status & ~gs.G_SCAN) == gs.G_SYSCALL:
        return "g-syscall"
    return None


def async_preempt_stack(stub_max_sp_delta: int, *helper_max_sp_deltas: int) -> int:
    """asyncPreemptStack as preempt.go init computes it: the frames' max SP deltas + 8 words."""
    return stub_max_sp_delta + sum(helper_max_sp_deltas) + 8 * gs.PTR_SIZE


def safe_point_checks(prog: Program, st: SchedState, pc: int, sp: int, headroom: int):
    """Yield (check, refusal) for isAsyncSafePoint's checks in Go's order (runtime/preempt.go:390-480):
    refusal is None when the check passes, else the reason code. Go returns at the first refusal, so
    must the caller (later checks may assume earlier ones passed). `preemu explain` shows each step;
    is_async_safe_point only wants the first refusal."""
    # 1. Only user Gs can have safe points; the signal may land on g0 or gsignal.
    yield "curg", None if st.m_curg == st.gp else "not-curg"
    # 2. The M must be preemptible and own a running P.
    if st.m_p == 0:
        yield "canPreemptM", "no-p"
        return
    yield "canPreemptM", can_preempt_m(st)
    # 3. Room on the stack for the injected call (no red zone below SP; stub + helpers + 8 words).
    yield "stack", "stack-headroom" if sp < st.stack_lo or sp - st.stack_lo < headroom else None
    # 5. The PC must be in Go code.
    f = prog.func_for(pc)
    yield "findfunc", None if f is not None else "no-func"
    # 7. Compiler/assembler-marked unsafe points (prologue window, write barriers, nosplit, ...).
    yield "unsafePoint", "unsafe-point" if prog.unsafe_point(pc) == gs.UNSAFE_POINT_UNSAFE else None
    # 8. Assembly functions have no register maps and may do anything.
    yield "asm", "asm-func" if f.asm else None
    # 9. Runtime and reflect code is never async-preempted, even when inlined into user code.
    insn = prog.insn_at(pc)
    name = (insn.inline if insn is not None and insn.inline else None) or f.goname
    yield "runtime", "runtime-func" if name.startswith(RUNTIME_PREFIXES) else None


def is_async_safe_point(prog: Program, st: SchedState, pc: int, sp: int, headroom: int) -> Verdict:
    """isAsyncSafePoint(gp, pc, sp, lr): may the signal handler inject asyncPreempt at pc?"""
    for _, refusal in safe_point_checks(prog, st, pc, sp, headroom):
        if refusal is not None:
            return Verdict(False, refusal)
    # 10. amd64: resume exactly where we were.
    return Verdict(True, "safe", pc)
