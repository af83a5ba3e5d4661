"""Parse the Go compiler's `-S` listing and `-live` report into per-instruction reference values.

Test support for tests/test_gobinary.py and the lead's agreement tests: the listing is the compiler's own
word on what it emitted, independent of the pclntab encoding that emu/front/gobinary.py decodes. Rules (the Go
binary-format notes §5, §6, §13): PCDATA values are sticky from the offset where they appear (initial -1);
zero-width pseudo-ops (TEXT, FUNCDATA, PCDATA, a NOP followed by a line at the same offset) share the next
instruction's offset. SP delta: a PUSHQ/POPQ/SUBQ $n,SP/ADDQ $n,SP counts from the next instruction, after
a RET the delta is the full frame again (cmd/internal/obj/x86/obj6.go:846-850), and the morestack stub runs
with delta 0 from the NOP that starts it (obj6.go:1082-1084). Only the ops compiled Go code uses to move SP
are modelled (no PUSHFQ, LEAQ/MOVQ to SP): assembly functions have no listing anyway.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^(?P<name>\S+) STEXT\b.* size=(?P<size>\d+) .*args=(?P<args>0x[0-9a-f]+) "
                     r"locals=(?P<locals>0x[0-9a-f]+) funcid=(?P<funcid>0x[0-9a-f]+)")
_INSN = re.compile(r"^\t0x[0-9a-f]{4,} (?P<off>\d{5,}) \((?P<pos>.*)\)\t(?P<op>\S+)(?:\t(?P<args>.*))?$")
_HEX = re.compile(r"^\t0x(?P<off>[0-9a-f]{4,})(?P<bytes>(?: [0-9a-f]{2})+)  ")
_REL = re.compile(r"^\trel (?P<off>\d+)\+(?P<size>\d+) t=")
_TEXT_FRAME = re.compile(r"\$(?P<frame>-?\d+)-(?P<args>\d+)\s*$")
PSEUDO = {"TEXT", "FUNCDATA", "PCDATA", "NOP"}    # NOP only when zero-width (see _zero_width)
#: Prefixes the assembler lists as instructions of their own (`LOCK` then `ORL SI, (AX)` one byte later);
#: the machine instruction starts at the prefix, so the two lines are merged into one Insn.
PREFIXES = {"LOCK", "REP", "REPN", "XACQUIRE", "XRELEASE"}
_SP_IMM = re.compile(r"^\$(?P<n>-?\d+), SP$")


@dataclass
class Insn:
    off: int
    op: str
    args: str
    file: str
    line: int
    pcdata: dict[int, int]      # PCDATA index -> value in force at this instruction
    sp: int                     # SP delta (bytes pushed since entry) in force at this instruction


@dataclass
class ListedFunc:
    name: str
    size: int
    args: int
    locals: int
    funcid: int
    frame: int = 0                                  # TEXT $frame-args (includes the saved RBP)
    insns: list[Insn] = field(default_factory=list)
    code: bytearray = field(default_factory=bytearray)
    relocs: list[tuple[int, int]] = field(default_factory=list)   # (offset, size) of relocated fields


def _parse_pos(pos: str) -> tuple[str, int]:
    file, _, line = pos.rpartition(":")
    return (file, int(line)) if line.isdigit() else (pos, 0)


def parse_listing(text: str) -> dict[str, list[ListedFunc]]:
    """All STEXT functions of a `-S` listing, by name (a name may be listed more than once)."""
    funcs: dict[str, list[ListedFunc]] = {}
    cur: ListedFunc | None = None
    raw: list[tuple[int, str, str, str]] = []

    def finish():
        if cur is not None:
            _simulate(cur, raw)
            funcs.setdefault(cur.name, []).append(cur)

    for ln in text.splitlines():
        m = _HEADER.match(ln)
        if m:
            finish()
            cur = ListedFunc(m["name"], int(m["size"]), int(m["args"], 16), int(m["locals"], 16),
                             int(m["funcid"], 16))
            raw = []
            continue
        if not ln.startswith("\t"):
            if cur is not None:
                finish()
            cur = None
            continue
        if cur is None:
            continue
        m = _INSN.match(ln)
        if m:
            raw.append((int(m["off"]), m["pos"], m["op"], m["args"] or ""))
            continue
        m = _HEX.match(ln)
        if m:
            cur.code += bytes.fromhex(m["bytes"].replace(" ", ""))
            continue
        m = _REL.match(ln)
        if m:
            cur.relocs.append((int(m["off"]), int(m["size"])))
    finish()
    return funcs


def _starts_morestack_stub(raw, i: int) -> bool:
    """The NOP at raw[i] starts the morestack stub: after it (and the argument spills, one per register
    argument) the first control transfer is a call of runtime.morestack*."""
    for _, _, op, args in raw[i + 1:]:
        if op in ("CALL", "RET", "JMP") or op.startswith("J"):
            return op == "CALL" and args.startswith("runtime.morestack")
    return False


def _zero_width(raw, i: int, size: int) -> bool:
    """A NOP line is a pseudo-op when the next line sits at the same offset; otherwise it is a real
    (hardware) NOP occupying bytes, e.g. the 2-byte one after a morestack call."""
    nxt = raw[i + 1][0] if i + 1 < len(raw) else size
    return nxt == raw[i][0]


def _simulate(fn: ListedFunc, raw) -> None:
    pcdata: dict[int, int] = {}
    sp = 0
    prefix: tuple[int, str] | None = None      # (offset, name) of a pending LOCK/REP line
    for i, (off, pos, op, args) in enumerate(raw):
        if op == "TEXT":
            m = _TEXT_FRAME.search(args)
            fn.frame = int(m["frame"]) if m else 0
            continue
        if op == "PCDATA":
            idx, val = (int(x.strip().lstrip("$")) for x in args.split(","))
            pcdata[idx] = val
            continue
        if op == "NOP" and _zero_width(raw, i, fn.size):
            if _starts_morestack_stub(raw, i):
                sp = 0
            continue
        if op == "FUNCDATA":
            continue
        if op in PREFIXES:
            prefix = (off, op)
            continue
        if prefix is not None:
            off, op, prefix = prefix[0], f"{prefix[1]} {op}", None
        file, line = _parse_pos(pos)
        fn.insns.append(Insn(off, op, args, file, line, dict(pcdata), sp))
        m = _SP_IMM.match(args)
        if op == "PUSHQ":
            sp += 8
        elif op == "POPQ":
            sp -= 8
        elif op == "SUBQ" and m:
            sp += int(m["n"])
        elif op == "ADDQ" and m:
            sp -= int(m["n"])
        elif op == "RET":
            sp = max(fn.frame, 0)


_LIVE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): live at (?P<what>call to (?P<callee>\S+)|entry to "
                   r"(?P<entry>\S+)):(?P<vars>.*)$")


@dataclass(frozen=True)
class LiveAt:
    file: str
    line: int
    callee: str | None      # None for "live at entry to F"
    func: str | None        # the function for an entry record
    names: frozenset[str]


def parse_live(text: str) -> list[LiveAt]:
    """`-gcflags=-live` records: 'file:line:col: live at call to F: a b' / 'live at entry to F: p'."""
    out = []
    for ln in text.splitlines():
        m = _LIVE.match(ln.strip())
        if m:
            out.append(LiveAt(m["file"], int(m["line"]), m["callee"], m["entry"], frozenset(m["vars"].split())))
    return out


_SLOT = re.compile(r"\b(?:[\w./]+\.)?(?P<name>\w+)\+(?P<off>\d+)\(SP\)")


def stack_slots(fn: ListedFunc) -> dict[int, str]:
    """SP-relative offsets of the named stack slots the listing mentions (`main.head+48(SP)` -> {48: 'head'})."""
    slots: dict[int, str] = {}
    for ins in fn.insns:
        for m in _SLOT.finditer(ins.args):
            slots.setdefault(int(m["off"]), m["name"])
    return slots


def machine_sp_deltas(decoded) -> list[int]:
    """SP delta before each of a function's capstone instructions, simulated in program order as the Go
    assembler tracks it (cmd/internal/obj/x86/obj6.go): push/pop (pushfq/popfq too) move 8 bytes,
    sub/add rsp,imm their immediate, after a ret the delta is the frame again. For assembly functions,
    which have no listing; not valid for SPWRITE functions or across a morestack stub."""
    out, sp, frame = [], 0, 0
    for i in decoded:
        out.append(sp)
        m, ops = i.mnemonic, i.op_str
        if m in ("push", "pushfq"):
            sp += 8
        elif m in ("pop", "popfq"):
            sp -= 8
        elif m in ("sub", "add") and ops.startswith("rsp, "):
            sp += int(ops[5:], 0) * (1 if m == "sub" else -1)
        elif m == "ret":
            sp = frame
        frame = max(frame, sp)
    return out
