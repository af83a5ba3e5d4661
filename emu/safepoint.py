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


def is_async_safe_point(prog: Program, st: SchedState, pc: int, sp: int, headroom: int) -> Verdict:
    """isAsyncSafePoint(gp, pc, sp, lr): may the signal handler inject asyncPreempt at pc?"""
    # 1. Only user Gs can have safe points; the signal may land on g0 or gsignal.
    if st.m_curg != st.gp:
        return Verdict(False, "not-curg")
    # 2. The M must be preemptible and own a running P.
    if st.m_p == 0:
        return Verdict(False, "no-p")
    why = can_preempt_m(st)
    if why is not None:
        return Verdict(False, why)
    # 3. Room on the stack for the injected call (no red zone below SP; stub + helpers + 8 words).
    if sp < st.stack_lo or sp - st.stack_lo < headroom:
        return Verdict(False, "stack-headroom")
    # 5. The PC must be in Go code.
    f = prog.func_for(pc)
    if f is None:
        return Verdict(False, "no-func")
    # 7. Compiler/assembler-marked unsafe points (prologue window, write barriers, nosplit, ...).
    if prog.unsafe_point(pc) == gs.UNSAFE_POINT_UNSAFE:
        return Verdict(False, "unsafe-point")
    # 8. Assembly functions have no register maps and may do anything.
    if f.asm:
        return Verdict(False, "asm-func")
    # 9. Runtime and reflect code is never async-preempted, even when inlined into user code.
    insn = prog.insn_at(pc)
    name = (insn.inline if insn is not None and insn.inline else None) or f.goname
    if name.startswith(RUNTIME_PREFIXES):
        return Verdict(False, "runtime-func")
    # 10. amd64: resume exactly where we were.
    return Verdict(True, "safe", pc)


#: isAsyncSafePoint's checks in Go's order (runtime/preempt.go:390-480) and the refusals each can give.
#: is_async_safe_point returns at the first refusal, so its reason tells how far the checks got.
CHECK_ORDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("curg", ("not-curg",)),
    ("canPreemptM", ("no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "g-syscall")),
    ("stack", ("stack-headroom",)),
    ("findfunc", ("no-func",)),
    ("unsafePoint", ("unsafe-point",)),
    ("asm", ("asm-func",)),
    ("runtime", ("runtime-func",)),
)


def safe_point_checks(prog: Program, st: SchedState, pc: int, sp: int, headroom: int) -> list[tuple[str, str | None]]:
    """isAsyncSafePoint's checks in Go's order up to the first refusal, as [(check, None or the refusal)].

    Derived from the one oracle's verdict (`preemu explain` shows each check; sweeps call
    is_async_safe_point directly and pay nothing for this)."""
    v = is_async_safe_point(prog, st, pc, sp, headroom)
    out: list[tuple[str, str | None]] = []
    for check, reasons in CHECK_ORDER:
        if v.reason in reasons:
            return out + [(check, v.reason)]
        out.append((check, None))
    if not v.ok:                                  # a refusal this table does not know yet
        out.append(("other", v.reason))
    return out
