"""Verifiers: compare the state after the stub returns with the interrupted state (emu/FACTS.md §6 items 6-9).

At the stub's RET: every GPR, RBP, RFLAGS and XMM0-15 (at --cpu v3 the whole Y0-15, at v4 Z0-31 and K0-7:
vector_diffs) must equal the interrupted values bit for bit, RSP must be S-8 with the resume PC at [S-8] (so RET lands on the interrupted PC with RSP = S),
and memory at and above S must be unchanged. The final state of a swept run must equal the
reference run. Each violation names the register or address, expected and actual values, the
boundary, and the PC with its disassembly and source line.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..core import dump, regs


#: Every violation kind, with what it means (the help text of SARIF rules and of reports).
KINDS: dict[str, str] = {
    "register": "A general-purpose or XMM register differed after the asyncPreempt stub returned: the stub did "
                "not save it, restored it from the wrong slot, or clobbered it after restoring it.",
    "flags": "RFLAGS differed after the stub returned: the stub must save the flags (PUSHFQ) before anything "
             "that changes them (ADJSP) and restore them (POPFQ) after the last instruction that changes them.",
    "resume": "The stub's RET would not resume the goroutine at the interrupted PC with the interrupted RSP: "
              "its frame is unbalanced or it overwrote the resume PC pushed by sigctxt.pushCall.",
    "memory": "The goroutine's stack at or above the interrupted RSP changed across the stub: the stub may only "
              "use the asyncPreemptStack bytes below it.",
    "headroom": "The stub wrote below S - asyncPreemptStack, the headroom isAsyncSafePoint checks before it "
                "injects: the stub uses more stack than its frame declares.",
    "stub-fault": "The emulated CPU faulted while the stub ran (an unmapped access, a bad POPFQ value setting TF, "
                  "an unexpected interrupt).",
    "stub-budget": "The stub did not return within its instruction budget.",
    "no-asyncPreempt2": "The stub returned without calling asyncPreempt2: it never lets the scheduler run, so "
                        "the preemption it was injected for never happens.",
    "not-descheduled": "In a real program, the stub entered asyncPreempt2 but the goroutine came back without "
                       "being descheduled (neither gopreempt_m's goschedImpl nor preemptPark ran for it on g0): the "
                       "scheduler never ran, so nothing the stub saves or restores was tested.",
    "final-state": "The goroutine did not end as the uninterrupted reference run did (registers, memory or "
                   "control flow); the first injection that makes it diverge is named.",
    "use-after-free": "The goroutine accessed an object that a GC at an injection point freed: the stack scan "
                      "missed a live pointer.",
    "nested-injection": "A second SIGURG delivered inside the stub was accepted; isAsyncSafePoint must refuse it "
                        "(the stub is assembly, runtime code).",
    "missed-write-barrier": "A pointer store ran with the write barrier enabled but without gcWriteBarrier: an "
                            "injection inside a write-barrier sequence (forced where Go refuses).",
    "needless-stack-growth": "The stack grew although SP was above stackguard0: an injection between the prologue's "
                             "compare and its branch (forced where Go refuses, golang/go#35470).",
    "oracle-disagrees": "In a real program, the runtime's own sighandler injected where preemu's oracle refuses, or "
                        "declined where it would inject: the oracle (or the runtime) is wrong about this PC.",
    "context-modified": "In a real program, the signal handler changed registers of the interrupted context other than "
                        "RIP and RSP (pushCall edits only those two).",
    "sigreturn-frame": "In a real program, rt_sigreturn ran on a frame that is not the one delivered last.",
    "unmatched-return": "In a real program, asyncPreempt returned on a goroutine that was never injected.",
    "schedule": "In a real program, legitimate runs without any injection (other random seeds, the function's "
                "thread descheduled, a GC cycle at another time) ended differently, one of them with a failing "
                "exit status: the program fails under some schedule (a data race, a check-then-act, a misuse of "
                "sync.Pool), whatever preemption does.",
    "pct-schedule": "In a real program swept with --schedules, the sweep's first chain ran again with every thread "
                    "under a PCT schedule and the program then failed, where the uninterrupted run does not: a "
                    "failure that needs another thread stopped at the right moment (the change points name where) "
                    "while the function sits at its points; replay it with --schedule SEED.",
}


@dataclass
class Check:
    """A named yes/no with its detail: a scenario's expectation, or one of explain's checks."""
    name: str
    ok: bool
    detail: str


@dataclass
class Violation:
    kind: str            # a key of KINDS
    what: str            # register name, address, or short subject
    expected: str
    actual: str
    boundary: int        # the injection boundary (instructions executed before the signal)
    pc: int
    insn: str            # disassembly of the interrupted instruction
    where: str           # source file:line of the interrupted instruction
    detail: str = ""
    #: structured facts behind `actual` (JSON-ready), e.g. {"crash": crashtext.Crash.to_json()}; left out of
    #: to_json when None, so a violation without them has the nine keys it always had
    facts: dict | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        d["pc"] = f"{self.pc:#x}"
        if self.facts is None:
            del d["facts"]
        return d

    def describe(self) -> str:
        head = f"{self.kind} {self.what}: expected {self.expected}, got {self.actual}"
        tail = f" at boundary {self.boundary}, pc {self.pc:#x} `{self.insn}` ({self.where})"
        return head + tail + (f" -- {self.detail}" if self.detail else "")


def insn_where(prog, pc: int) -> tuple[str, str]:
    """Return (disassembly, file:line) of the instruction at pc, or ("?", a description of pc)."""
    i = prog.insn_at(pc)
    return (i.text, i.where) if i is not None else ("?", prog.describe_pc(pc))


def violation_maker(prog, boundary: int, pc: int):
    """Return make(kind, what, expected, actual, detail="") -> Violation for one injection point."""
    insn, where = insn_where(prog, pc)

    def make(kind: str, what: str, expected: str, actual: str, detail: str = "") -> Violation:
        return Violation(kind, what, expected, actual, boundary, pc, insn, where, detail)
    return make


def fmt_value(name: str, v: int) -> str:
    width = _WIDE.get(name[:1]) if name[1:].isdigit() else None
    if width:                                    # Y0-15, Z0-31, K0-7 (the --cpu level's registers)
        return f"{v:#0{2 + 2 * width}x}"
    r = regs.lookup(name)
    if r.kind == "xmm":
        return f"{v:#034x}"
    if r.kind == "flags":
        return f"{v:#x} [{regs.describe_flags(v)}]"
    return f"{v:#018x}"


_RSP_AT = dump.OFFSETS["RSP"]
_WIDE = {"Y": 32, "Z": 64, "K": 8}


def vector_diffs(level, before: list[int], after: list[int], k_before, k_after) -> list[tuple[str, int, int]]:
    """(name, expected, actual) for every vector register of `level` and every opmask register that differs:
    `level` is the state compared (core/cpulevel.VectorState: what the running stub saves, goruntime/stubsaves.py; a
    CpuLevel names all its level has): whole Y0-15, or Z0-31 and K0-7 (the XMM bits included, so a lost
    restore is named once, by the wider register)."""
    out = [(name, b, a) for name, b, a in zip(level.vector_names(), before, after) if b != a]
    kb, ka = tuple(k_before) or (0,) * 8, tuple(k_after) or (0,) * 8
    out += [(name, b, a) for name, b, a in zip(level.mask_names(), kb, ka) if b != a]
    return out


def compare_registers(before: dump.RegState, after: dump.RegState, raw_before: bytes, raw_after: bytes,
                      make) -> list[Violation]:
    """Return violations for every register (RSP and RIP excluded) that changed across the stub."""
    o = _RSP_AT
    if raw_before[:o] == raw_after[:o] and raw_before[o + 8:] == raw_after[o + 8:]:
        return []
    out = []
    for r in regs.DUMPED:
        if r.kind == "sp":
            continue
        b, a = before.values[r.name], after.values[r.name]
        if b != a:
            kind = "flags" if r.kind == "flags" else "register"
            detail = ""
            if r.kind == "flags":
                changed = b ^ a
                detail = "flags changed: " + regs.describe_flags(changed)
            out.append(make(kind, r.name, fmt_value(r.name, b), fmt_value(r.name, a), detail))
    return out


def compare_memory(base: int, before: bytes, after: bytes, make, detail: str, limit: int = 4,
                   kind: str = "memory") -> list[Violation]:
    """Return violations for the first `limit` changed 8-byte words between two images of [base, ...)."""
    if before == after:
        return []
    out = []
    for off in range(0, len(before), 8):
        b, a = before[off:off + 8], after[off:off + 8]
        if b != a:
            out.append(make(kind, f"{base + off:#x}", "0x" + b[::-1].hex(), "0x" + a[::-1].hex(), detail))
            if len(out) >= limit:
                break
    return out
