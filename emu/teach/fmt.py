"""How every explain story writes a register value and a code location (story, its mixins and real use it).

A register as the fixed-width hex a Step carries (XMM 128 bits wide), the order the renderers list
registers in, and a PC as `func+off: insn  (file:line)` with the source path as the user sees it.
Mirrors no Go source; pure formatting: the values come from the run.
"""
from __future__ import annotations

import os

from ..core import regs


def fmt_reg(name: str, v: int) -> str:
    r = regs.lookup(name)
    if r.kind == "xmm":
        return f"{v:#034x}"
    return f"{v:#018x}"


REG_ORDER = [r.name for r in regs.GP_REGS] + ["RBP", "RSP", "RIP", "RFLAGS"] + [r.name for r in regs.XMM_REGS]


def _rel(path: str) -> str:
    """A source path as the user sees it: relative to the working directory when that is shorter."""
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return rel if len(rel) < len(path) else path


def describe_pc(prog, pc: int) -> str:
    """'func+off: insn  (file:line)', with the file as the user sees it."""
    f, i = prog.func_for(pc), prog.insn_at(pc)
    if f is None:
        return f"{pc:#x} (no function)"
    return f"{f.name}+{pc - f.start:#x}" + (f": {i.text}  ({_rel(i.file)}:{i.line})" if i is not None else "")
