"""`preemu disasm`: a program's instructions with their metadata and the oracle's static verdict.

For each instruction: its offset from the function entry, PC, text (branch targets symbolized),
source line, the UnsafePoint value (PCDATA_UnsafePoint: -2 unsafe, -1 safe; from the binary's
pclntab for Go input, from ;@unsafe for .s input), the SP delta, and what isAsyncSafePoint
(safepoint.py, runtime/preempt.go) says for a running G with a pending request and ample stack --
the verdict depends then on the PC alone.
"""
from __future__ import annotations

from ..core import gostructs as gs
from .loader import is_go
from ..core.program import Func, Program
from ..output.report import _symbolize
from ..check.safepoint import SchedState, is_async_safe_point

_G, _M, _P = 0x1000, 0x2000, 0x3000
#: A running user G on an M with a P, a request pending (gp.preempt, pp.preempt), a huge stack.
STATIC_STATE = SchedState(gp=_G, g_status=gs.G_RUNNING, g_preempt=True, stack_lo=0x1000_0000,
                          stack_hi=0x2000_0000, m_curg=_G, m_p=_P, m_locks=0, m_mallocing=0, m_preemptoff=0,
                          p_status=gs.P_RUNNING, p_preempt=True)
_SP = 0x1800_0000


def static_verdict(program: Program, pc: int, headroom: int = 264):
    """isAsyncSafePoint at pc for STATIC_STATE: depends on the program's metadata only."""
    return is_async_safe_point(program, STATIC_STATE, pc, _SP, headroom)


def rows(program: Program, f: Func) -> list[dict]:
    out = []
    for i in f.insns:
        v = static_verdict(program, i.addr)
        out.append({"offset": i.addr - f.start, "pc": f"{i.addr:#x}", "insn": _symbolize(i, program), "line": i.line,
                    "file": i.file, "unsafe": gs.UNSAFE_POINT_UNSAFE if i.unsafe else gs.UNSAFE_POINT_SAFE,
                    "sp_delta": i.sp_delta, "inline": i.inline, "verdict": "inject" if v.ok else "refuse",
                    "reason": v.reason})
    return out


def func_json(program: Program, f: Func) -> dict:
    return {"name": f.goname, "symbol": f.name, "start": f"{f.start:#x}", "end": f"{f.end:#x}", "asm": f.asm,
            "max_sp_delta": f.max_sp_delta, "instructions": rows(program, f)}


def render(program: Program, funcs: list[Func]) -> str:
    lines = []
    for f in funcs:
        flags = [x for x, on in (("asm", f.asm), ("nosplit", f.nosplit)) if on]
        lines.append(f"{f.name}  ({f.goname}{', ' + ', '.join(flags) if flags else ''})  "
                     f"{f.start:#x}-{f.end:#x}  max SP delta {f.max_sp_delta}")
        last = None
        for r, i in zip(rows(program, f), f.insns):
            if i.source and (i.file, i.line) != last:          # interleave the source line, as `go tool objdump -S`
                lines.append(f"  {i.file}:{i.line}  {i.source}")
            last = (i.file, i.line)
            meta = []
            if i.unsafe:
                meta.append("UNSAFE")
            if i.inline:
                meta.append(f"inline {i.inline}")
            verdict = "inject" if r["verdict"] == "inject" else f"refuse: {r['reason']}"
            lines.append(f"  +{r['offset']:<#6x} {i.addr:#x}  sp+{i.sp_delta:<4} {r['insn']:<44} ; line {i.line:<4}"
                         f" {verdict}{'  [' + ', '.join(meta) + ']' if meta else ''}")
    for d in program.data if not is_go(program) else []:
        lines.append(f"data {d.name}: {d.addr:#x}, {d.size} bytes")
    return "\n".join(lines) + "\n"
