"""Verifiers: compare the state after the stub returns with the interrupted state (emu/FACTS.md §6 items 6-9).

At the stub's RET: every GPR, RBP, RFLAGS and XMM0-15 must equal the interrupted values bit for
bit, RSP must be S-8 with the resume PC at [S-8] (so RET lands on the interrupted PC with RSP = S),
and memory at and above S must be unchanged. The final state of a swept run must equal the
reference run. Each violation names the register or address, expected and actual values, the
boundary, and the PC with its disassembly and source line.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import dump, regs


@dataclass
class Violation:
    kind: str            # register | flags | resume | memory | stub-fault | stub-budget | no-asyncPreempt2 | final-state | ...
    what: str            # register name, address, or short subject
    expected: str
    actual: str
    boundary: int        # the injection boundary (instructions executed before the signal)
    pc: int
    insn: str            # disassembly of the interrupted instruction
    where: str           # source file:line of the interrupted instruction
    detail: str = ""

    def to_json(self) -> dict:
        d = asdict(self)
        d["pc"] = f"{self.pc:#x}"
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
    r = regs.lookup(name)
    if r.kind == "xmm":
        return f"{v:#034x}"
    if r.kind == "flags":
        return f"{v:#x} [{regs.describe_flags(v)}]"
    return f"{v:#018x}"


_RSP_AT = dump.OFFSETS["RSP"]


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
