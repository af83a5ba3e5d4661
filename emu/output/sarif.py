"""SARIF 2.1.0 for code-scanning annotations: `--sarif FILE` on sweep, run and check-stub.

One result per violation group (kind + register/flag/address), rule id = the violation kind
(verify.KINDS gives each rule its help text), located at a line of the user's .s file:

* sweep and run: the interrupted instruction of the first violating injection in the swept
  program (with --stub, the offending stub line is a related location);
* check-stub: the offending line of the stub under test (the program being checked is the stub;
  the corpus loop's interrupted instruction is a related location). For a register or the flags
  that is the last instruction between `call asyncPreempt2` and RET that writes it (a restore
  from the wrong slot, an ADD after POPFQ) or, when nothing after the call writes it, the call
  itself: the register still holds what asyncPreempt2 left in it. A fault is located at the
  faulting stub instruction, a broken resume at RET, a headroom overrun at the instruction that
  takes the stack deepest.

A scenario expectation that does not hold (other than the violation count, which the violation
results already explain) is one result with rule id "expectation" at the line of its key in the
.toml file.
"""
from __future__ import annotations

import json
import os
import re

import capstone

from .. import __version__
from . import report
from ..model import rtcode
from ..check import verify
from ..core.program import Insn, Program

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

_cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_cs.detail = True
_GP_ALIASES = {"RAX": "eax ax al ah", "RCX": "ecx cx cl ch", "RDX": "edx dx dl dh", "RBX": "ebx bx bl bh",
               "RSI": "esi si sil", "RDI": "edi di dil", "RBP": "ebp bp bpl", "RSP": "esp sp spl"}
_ALIAS = {a: r for r, names in _GP_ALIASES.items() for a in names.split() + [r.lower()]}
_ALIAS.update({f"r{n}{s}": f"R{n}" for n in range(8, 16) for s in ("", "d", "w", "b")})
_ALIAS.update({f"{p}mm{n}": f"XMM{n}" for n in range(16) for p in "xyz"})
_ALIAS.update({"rflags": "RFLAGS", "eflags": "RFLAGS", "flags": "RFLAGS"})


def _writes(prog: Program, insn: Insn) -> set[str]:
    """The registers (our names: RAX, XMM7, RFLAGS) that `insn` writes, from Capstone's detail."""
    for base, code in prog.code:
        if base <= insn.addr < base + len(code):
            raw = code[insn.addr - base:insn.addr - base + insn.size]
            for ci in _cs.disasm(raw, insn.addr):
                return {_ALIAS.get(ci.reg_name(r), ci.reg_name(r).upper()) for r in ci.regs_access()[1]}
    return set()


def _line(insn: Insn) -> tuple[str, int]:
    return insn.file, insn.line


def stub_location(stub: Program, v: verify.Violation) -> tuple[str, int] | None:
    """(file, line) in the stub of the instruction to blame for violation `v`, or None."""
    if not stub.has_func("asyncPreempt"):
        return None
    insns = list(stub.get_func("asyncPreempt").insns)
    if not insns:
        return None
    target = rtcode.runtime_externs()["asyncPreempt2"]
    call = next((i for i in insns if i.mnemonic == "call" and i.op_str == f"{target:#x}"), None)
    ret = next((i for i in reversed(insns) if i.mnemonic.startswith("ret")), insns[-1])
    if v.kind in ("register", "flags"):
        reg = "RFLAGS" if v.kind == "flags" else v.what
        after = insns[insns.index(call) + 1:] if call is not None else insns
        writers = [i for i in after if reg in _writes(stub, i) and i.addr < ret.addr]
        return _line(writers[-1] if writers else (call or ret))
    if v.kind == "stub-fault":
        files = {i.file for i in insns}
        for f, line in re.findall(r"\(([^()\s]+):(\d+)\)", v.detail):
            if f in files:
                return f, int(line)
        return _line(insns[0])
    if v.kind in ("resume", "stub-budget"):
        return _line(ret)
    if v.kind == "headroom":
        deepest = max(range(len(insns)), key=lambda k: insns[k].sp_delta)
        return _line(insns[max(deepest - 1, 0)])
    return _line(insns[0])


def _uri(path: str) -> dict:
    p = path.replace(os.sep, "/")
    if os.path.isabs(path):
        return {"uri": "file://" + p}
    return {"uri": p, "uriBaseId": "%SRCROOT%"}


def _location(file: str, line: int | None, message: str | None = None) -> dict:
    phys: dict = {"artifactLocation": _uri(file)}
    if line:
        phys["region"] = {"startLine": line}
    loc: dict = {"physicalLocation": phys}
    if message:
        loc["message"] = {"text": message}
    return loc


def _where(v: verify.Violation) -> tuple[str, int | None] | None:
    m = re.fullmatch(r"(.+):(\d+)", v.where)
    return (m.group(1), int(m.group(2))) if m else None


def _message(kind: str, what: str, n: int, v: verify.Violation, context: str) -> str:
    text = (f"{kind} {what}: {n} violation(s){context}; first at boundary {v.boundary}, pc {v.pc:#x} "
            f"`{v.insn}` ({v.where}): expected {v.expected}, actual {v.actual}")
    return text + (f"; {v.detail}." if v.detail else ".")


def _blame_note(stub: Program, v: verify.Violation, loc: tuple[str, int]) -> str:
    if v.kind not in ("register", "flags"):
        return ""
    i = next((i for i in stub.iter_insns() if (i.file, i.line) == loc), None)
    if i is None:
        return ""
    reg = "RFLAGS" if v.kind == "flags" else v.what
    if i.mnemonic == "call":
        return f" Nothing between `{i.text}` and RET writes {reg}: it keeps the value asyncPreempt2 left."
    return f" The last instruction before RET to write {reg} is `{i.text}` (line {i.line})."


def _results(rep) -> list[dict]:
    """The SARIF results of an api SweepReport, ScenarioReport or checkstub.StubReport."""
    kind = type(rep).__name__
    out = []
    if kind == "StubReport":
        for (k, what), items in rep.groups().items():
            loops = sorted({sc for sc, _ in items})
            sc, v = items[0]
            loc = stub_location(rep.stub_program, v) if rep.stub_program else None
            msg = _message(k, what, len(items), v, f" in {len(loops)} corpus loop(s) ({', '.join(loops)})")
            res = {"ruleId": k, "level": "error", "message": {"text": msg + (
                _blame_note(rep.stub_program, v, loc) if loc else "")},
                   "locations": [_location(*(loc or (rep.stub, None)))]}
            w = _where(v)
            if w:
                res["relatedLocations"] = [dict(_location(*w, f"interrupted instruction in corpus loop {sc}"), id=0)]
            out.append(res)
        return out
    if kind == "ManySweepReport":                 # each swept function's results, as its own sweep's
        return [res for r in rep.reports for res in _results(r)]
    if kind not in ("SweepReport", "ScenarioReport", "RealSweepReport"):
        raise TypeError(f"no SARIF form for {kind}")
    if kind == "ScenarioReport":
        out += _expectations(rep)
        if rep.kind != "sweep":
            return out
    res_ = rep.result
    stub_file = rep.stub if kind in ("SweepReport", "RealSweepReport") else (str(rep.scenario.stub) if rep.scenario.stub else None)
    for (k, what), vs in report.group_violations(res_.violations).items():
        v = vs[0]
        n = res_.violation_groups.get((k, what), len(vs))
        w = _where(v)
        res = {"ruleId": k, "level": "error", "message": {"text": _message(k, what, n, v, "")},
               "locations": [_location(*(w or (rep.source, None)))]}
        if stub_file and rep.stub_program is not None:
            sl = stub_location(rep.stub_program, v)
            if sl:
                res["relatedLocations"] = [dict(_location(*sl, "the stub instruction to blame"), id=0)]
        out.append(res)
    return out


#: Rules besides the violation kinds.
OTHER_RULES = {"expectation": "An expectation of the scenario file ([expect]) does not hold."}


def _expectations(rep) -> list[dict]:
    """One result per failed scenario expectation (other than the violation count), at its .toml line."""
    path = str(rep.scenario.path)
    lines = rep.scenario.path.read_text().splitlines()
    start = next((n for n, t in enumerate(lines) if re.match(r"\s*\[expect", t)), 0)
    out = []
    for c in rep.failed_checks:
        if c.name == "violations" and rep.violations:
            continue
        line = None
        for key in reversed(c.name.split(".")):
            pattern = rf"(^|[\s{{,]){re.escape(key)}\s*="
            line = next((n for n, t in enumerate(lines[start:], start + 1) if re.search(pattern, t)), None)
            if line:
                break
        out.append({"ruleId": "expectation", "level": "error",
                    "message": {"text": f"scenario {rep.name}: expectation {c.name} does not hold: {c.detail}"},
                    "locations": [_location(path, line)]})
    return out


def from_report(rep) -> dict:
    """The SARIF 2.1.0 log of a report: one run of the preemu driver with every violation kind as a rule."""
    results = _results(rep)
    table = {**verify.KINDS, **OTHER_RULES}
    ids = list(table)
    for r in results:
        r["ruleIndex"] = ids.index(r["ruleId"])
    rules = [{"id": k, "name": "".join(p.capitalize() for p in k.split("-")),
              "shortDescription": {"text": f"preemu: {k}" + (" violation" if k in verify.KINDS else "")},
              "fullDescription": {"text": text}, "help": {"text": text},
              "defaultConfiguration": {"level": "error"}} for k, text in table.items()]
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [{
        "tool": {"driver": {"name": "preemu", "version": __version__, "rules": rules}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + os.getcwd().replace(os.sep, "/") + "/"}},
        "results": results}]}


def write(path: str, log: dict) -> None:
    with open(path, "w") as f:
        json.dump(log, f, indent=1)
        f.write("\n")
