"""The safe-point oracle: wantAsyncPreempt and isAsyncSafePoint (mirrors runtime/preempt.go, amd64).

A pure function of (program metadata, G/M/P state, pc, sp): no Unicorn import, no memory access.
Checks run in Go's order (numbered as in FACTS.md §2.5) and each refusal carries a stable reason
code (REASONS). Two runtimes are
modelled (RuntimeRules; the layout name picks one): Go 1.27.3 (the default) and Go 1.14, whose
canPreemptM has four terms, whose name rule knows `runtime/internal/` instead of
`internal/runtime/`, and whose compiler treated a smaller set of packages as the runtime (emu/FACTS.md
§2). amd64 only ever emits Safe (-1) and Unsafe (-2) UnsafePoint values, so the resume PC is always
the interrupted PC; the restart cases (arm64/mips/loong64) are left out, as is the
goexperiment.RuntimeSecret check (off by default). Left out for Go 1.14: CALL sites inside nosplit
and runtime functions, which Go 1.14's liveness pass left safe (its preempt.go comment: "nosplit
functions (except at calls)"); preemu marks every PC of such a function unsafe in both versions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core import gostructs as gs

if TYPE_CHECKING:                        # annotations only: a process's start does not load the program model
    from ..core.program import Program

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



@dataclass(frozen=True)
class RuntimeRules:
    """What differs between the Go runtimes preemu models (facts: emu/FACTS.md §2)."""

    version: str                          # "go1.27" | "go1.14"
    name_prefixes: tuple[str, ...]        # isAsyncSafePoint's name rule (check 9)
    runtime_packages: frozenset[str]      # packages the compiler builds as the runtime: every PC unsafe
    runtime_package_prefixes: tuple[str, ...]
    can_preempt_m_curg: bool              # canPreemptM also requires curg != nil and not in a syscall
    signal_pending: bool                  # preemptM coalesces through m.signalPending (#37741)
    sighandler_checks_asyncpreemptoff: bool = True   # sighandler skips doSigPreempt (#38531, Go 1.15)
    # the scheduler (emu/model/sched.py), where Go 1.14's proc.go differs from Go 1.27.3's:
    steal_timers_of_running_gs: bool = True  # stealWork runs any P's timers (proc.go:3875); Go 1.14 only
    #                                          an idle P's or one whose G has a preempt request (shouldStealTimers)
    steal_timers_first: bool = True          # the last steal round checks timers before runqsteal (3875 < 3899)
    sysmon_idle_resets: bool = False         # Go 1.14's sysmon reset idle/delay whenever all Ps were idle

    def is_runtime_package(self, goname: str) -> bool:
        """Is the function called `goname` compiled as part of the runtime (base.Flag.CompilingRuntime)?"""
        pkg = package_of(goname)
        return pkg in self.runtime_packages or pkg.startswith(self.runtime_package_prefixes)


def package_of(goname: str) -> str:
    """The package path of a Go symbol name: up to the first '.' after the last '/'
    (`internal/runtime/atomic.(*Uint32).Load` -> `internal/runtime/atomic`)."""
    slash = goname.rfind("/")
    dot = goname.find(".", slash + 1)
    return goname[:dot] if dot > 0 else goname


# Go 1.27.3: runtime/preempt.go:289-291 (canPreemptM, six terms), :462-464 (name prefixes);
# the runtime packages are cmd/internal/objabi/pkgspecial.go:45-75 (runtimePkgs), which
# cmd/compile/internal/base/flag.go:217-219 turns into Flag.CompilingRuntime and
# cmd/compile/internal/liveness/plive.go:494-505,508-513 into "every point is unsafe";
# signal_unix.go:376 (preemptM's signalPending CAS) and :353-354 (doSigPreempt's acknowledgement).
GO127 = RuntimeRules(
    "go1.27", ("runtime.", "internal/runtime/", "reflect."),
    frozenset({"runtime", "internal/abi", "internal/bytealg", "internal/byteorder", "internal/chacha8rand",
               "internal/coverage/rtcov", "internal/cpu", "internal/goarch", "internal/godebugs",
               "internal/goexperiment", "internal/goos", "internal/profilerecord", "internal/strconv",
               "internal/stringslite"}),
    ("internal/runtime/",), can_preempt_m_curg=True, signal_pending=True)
# Go 1.14 (tag go1.14; read from a go1.14.6 copy of src/runtime/preempt.go and proc.go, line numbers not
# verified): the scheduler's differences are findrunnable's steal loop (runqsteal, then
# `if i > 2 && shouldStealTimers(p2)`: a P that is not _Prunning, or whose M holds no locks and whose
# running G has gp.preempt set) and sysmon's `idle = 0; delay = 20` whenever every P is idle (or a GC
# waits), where Go 1.27.3 resets them only after a syscall wake (proc.go:6575-6604);
# canPreemptM = `mp.locks == 0 && mp.mallocing == 0 && mp.preemptoff == "" && mp.p.ptr().status ==
# _Prunning`; the name rule `runtime.`, `runtime/internal/`, `reflect.`; the runtime packages are
# what cmd/go/internal/work/gc.go passed `-+` to: runtime, runtime/internal/..., internal/cpu,
# internal/bytealg; no m.signalPending (Go 1.14.0; golang/go#37741, fixed in 1.14.1); sighandler ran
# doSigPreempt even with asyncpreemptoff=1 (golang/go#38531, fixed in Go 1.15).
GO114 = RuntimeRules(
    "go1.14", ("runtime.", "runtime/internal/", "reflect."),
    frozenset({"runtime", "internal/cpu", "internal/bytealg"}), ("runtime/internal/",),
    can_preempt_m_curg=False, signal_pending=False, sighandler_checks_asyncpreemptoff=False,
    steal_timers_of_running_gs=False, steal_timers_first=False, sysmon_idle_resets=True)
RULES = {r.version: r for r in (GO127, GO114)}


def rules_for_release(release) -> RuntimeRules:
    """The rules of the runtime that built a Go binary (a goreleases.Release, Go 1.21-1.27): its name
    rule and canPreemptM terms. Binaries carry the compiler's unsafe-point marks in their PCDATA, so the
    runtime-package list (for `.s` input) is Go 1.27.3's; every one of these releases has m.signalPending
    and a sighandler that honours asyncpreemptoff."""
    if release.minor == 27:
        return GO127
    r = _RELEASE_RULES.get(release.minor)
    if r is None:
        r = _RELEASE_RULES[release.minor] = RuntimeRules(
            release.name, release.name_prefixes, GO127.runtime_packages, GO127.runtime_package_prefixes,
            can_preempt_m_curg=release.can_preempt_m_curg, signal_pending=True)
    return r


_RELEASE_RULES: dict[int, RuntimeRules] = {}


def rules_for(version: str) -> RuntimeRules:
    """The runtime rules of `version` ("go1.14" or "go1.27", the layout names)."""
    try:
        return RULES[version]
    except KeyError:
        raise KeyError(f"unknown Go runtime {version!r}; choose one of {', '.join(RULES)}") from None


@dataclass(frozen=True)
class SchedState:
    """The slice of g, m and p that doSigPreempt reads (FACTS.md §2.3-2.5)."""

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
    rules: RuntimeRules = GO127  # the runtime whose checks apply


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    resume_pc: int = 0

    def __bool__(self) -> bool:
        return self.ok


# What doSigPreempt reads (through read_sched_state), in offset order: one unpack per struct.
G_SCHED = ("stack.lo", "stack.hi", "atomicstatus", "preempt")
M_SCHED = ("curg", "p", "mallocing", "preemptoff.len", "locks")
P_SCHED = ("status", "preempt")

_SCHED_STATES: dict[tuple, SchedState] = {}     # SchedState is frozen: equal reads share one object


def sched_state_of(gp: int, raw: tuple[int, ...], rules: RuntimeRules = GO127) -> SchedState:
    """The SchedState of goroutine gp from sched_reader's fields (equal reads share one object)."""
    key = (gp, id(rules), *raw)
    st = _SCHED_STATES.get(key)
    if st is None or st.rules is not rules:
        if len(_SCHED_STATES) > 256:
            _SCHED_STATES.clear()
        lo, hi, g_status, g_preempt, curg, m_p, mallocing, preemptoff, locks, p_status, p_preempt = raw
        st = _SCHED_STATES[key] = SchedState(
            gp=gp, g_status=g_status, g_preempt=bool(g_preempt), stack_lo=lo, stack_hi=hi, m_curg=curg, m_p=m_p,
            m_locks=locks, m_mallocing=mallocing, m_preemptoff=preemptoff, p_status=p_status,
            p_preempt=bool(p_preempt), rules=rules)
    return st


def want_async_preempt(st: SchedState) -> bool:
    """wantAsyncPreempt: a preemption request exists and the G is running."""
    requested = st.g_preempt or (st.m_p != 0 and st.p_preempt)
    return requested and (st.g_status & ~gs.G_SCAN) == gs.G_RUNNING


def can_preempt_m(st: SchedState) -> str | None:
    """canPreemptM: return None if the M may be preempted, else the refusal reason.

    Go 1.27.3 runtime/preempt.go:289-291; Go 1.14 has only the first four terms."""
    if st.m_locks != 0:
        return "m-locks"
    if st.m_mallocing != 0:
        return "m-mallocing"
    if st.m_preemptoff != 0:
        return "m-preemptoff"
    if st.p_status != gs.P_RUNNING:
        return "p-not-running"
    if st.rules.can_preempt_m_curg and (st.m_curg == 0 or (st.g_status & ~gs.G_SCAN) == gs.G_SYSCALL):
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
    # 4-8 depend on the PC and the runtime's rules only: decided once per PC
    key = (pc, st.rules.version)
    v = prog.verdict_cache.get(key)
    if v is None:
        v = prog.verdict_cache[key] = _static_checks(prog, st.rules, pc)
    return v


def _static_checks(prog: Program, rules: RuntimeRules, pc: int) -> Verdict:
    """isAsyncSafePoint's checks that read only the PC's function and its tables (checks 4-8)."""
    # 4. The PC must be in Go code.
    f = prog.func_for(pc)
    if f is None:
        return Verdict(False, "no-func")
    # 5. Compiler/assembler-marked unsafe points (prologue window, write barriers, nosplit, and
    # every PC of Go code in the runtime packages), preempt.go:443-448.
    if prog.unsafe_point(pc) == gs.UNSAFE_POINT_UNSAFE or (not from_binary(prog) and compiled_as_runtime(f, rules)
                                                           and pc not in f.obj6_pcs):
        return Verdict(False, "unsafe-point")
    # 6. Assembly functions have no register maps and may do anything (preempt.go:450; Go 1.14 tested
    # `fd == nil || fd == &no_pointers_stackmap`, the same functions for our inputs).
    if f.asm:
        return Verdict(False, "asm-func")
    # 7. Runtime and reflect code is never async-preempted, even when inlined into user code
    # (preempt.go:460-464: the innermost inlined function's name).
    insn = prog.insn_at(pc)
    name = (insn.inline if insn is not None and insn.inline else None) or f.goname
    if name.startswith(rules.name_prefixes):
        return Verdict(False, "runtime-func")
    # 8. amd64: resume exactly where we were.
    return Verdict(True, "safe", pc)


def from_binary(prog) -> bool:
    """Does `prog` come from a real Go binary? Its PCDATA already holds the compiler's marks, including
    the safe PCs a runtime function has before its first PCDATA change (the prologue: pcvalue starts
    at -1), which the name rule then refuses; .s programs get the compiler's rule from
    compiled_as_runtime instead."""
    return getattr(prog, "binary", None) is not None


def compiled_as_runtime(f, rules: RuntimeRules) -> bool:
    """Did the compiler mark every PC of `f` unsafe because its package is part of the runtime?

    cmd/compile/internal/liveness/plive.go:494-505 (IsUnsafe: CompilingRuntime || NoSplit) and
    :508-513 (allUnsafe). That marks SSA values only: the prologue and post-morestack code obj6.go
    emits stays safe (Func.obj6_pcs, asmfront.obj6_emitted). Assembly functions get no compiler
    PCDATA: they are refused at check 6 (FACTS.md §2.5).
    """
    return not f.asm and rules.is_runtime_package(f.goname)


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
