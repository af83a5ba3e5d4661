"""Text and JSON renderings of an explain Story (the step list built by emu/teach/story.py)."""
from __future__ import annotations

from collections import OrderedDict

from .. import __version__
from .story import REG_ORDER, Story
from ..output.fit import fields, fit
from ..output.fit import table as fit_table
from ..output.report import SCHEMAS

_VERDICT = {"injected": "injected: an async safe point", "refused": "refused by Go",
            "forced": "FORCED (--force-unsafe) although Go refuses"}


def _table(t: dict, indent: str = "    ") -> list[str]:
    return [f"{indent}{t['title']}:"] + fit_table(t["columns"], t["rows"], indent + "  ")


def _code_context(story: Story, pc: int, before: int = 3, after: int = 2) -> list[str]:
    for name, f in story.code.items():
        insns = f["insns"]
        idx = next((k for k, i in enumerate(insns) if int(i["pc"], 16) == pc), None)
        if idx is None:
            continue
        out = []
        for i in insns[max(0, idx - before):idx + after + 1]:
            mark = ">" if int(i["pc"], 16) == pc else " "
            out.append(f"    {mark} {i['pc']}  {name}+{i['off']:#x}  {i['file']}:{i['line']:<4} {i['text']}"
                       + ("  [unsafe]" if i["unsafe"] else ""))
        return out
    return []


def _registers(regs: dict[str, str], flags: str) -> list[str]:
    gp = [n for n in REG_ORDER if not n.startswith("XMM")]
    xmm = [n for n in REG_ORDER if n.startswith("XMM")]
    out = []
    for names, per in ((gp, 4), (xmm, 2)):
        for k in range(0, len(names), per):
            out.append("    " + "  ".join(f"{n:>6} {regs[n]}" for n in names[k:k + per]))
    out[(len(gp) - 1) // 4] += f"  [{flags}]"
    wide = [n for n in regs if n not in REG_ORDER]          # --cpu v3/v4: Y0-15, or Z0-31 and K0-7
    for names, per in (([n for n in wide if n[0] == "Y"], 1), ([n for n in wide if n[0] == "Z"], 1),
                       ([n for n in wide if n[0] == "K"], 4)):
        for k in range(0, len(names), per):
            out.append("    " + "  ".join(f"{n:>6} {regs[n]}" for n in names[k:k + per]))
    return out


def render_text(story: Story) -> str:
    where = f"{story.unit} {story.at}" + (f" of {story.boundaries}" if story.unit == "boundary" else "")
    L = fields([f"preemu explain: {story.file}", f"func {story.func}", where, f"pc {story.pc:#x}",
                f"layout {story.layout}"] + (["with GC"] if story.gc else []))
    L += [f"verdict: {_VERDICT[story.verdict]} ({story.reason})", ""]
    prev = None
    n = len(story.steps)
    for k, s in enumerate(story.steps, 1):
        L += fields([f"[{k}/{n}] {s.title}", f"({s.mp}, pc {s.pc:#x})"], indent=4, sep="    ")
        L += [f"    {t}" for t in s.text]
        if s.phase == "goroutine":
            L += _code_context(story, s.pc)
            L.append("    registers:")
            L += _registers(s.regs, s.flags)
        if s.table and s.phase == "compare":        # the terminal shows only what differs
            differ = [r for r in s.table["rows"] if r[-1] != "same"]
            L.append(f"    {len(s.table['rows'])} registers compared with the interrupted state: "
                     + (f"{len(differ)} differ{'s' if len(differ) == 1 else ''}" if differ else "all equal"))
            if differ:
                L += _table({**s.table, "rows": differ})
        elif s.table:
            L += _table(s.table)
        if prev is not None and s.changed and s.phase not in ("compare",):
            if len(s.changed) <= 6:
                L.append("    changed: " + ", ".join(f"{r} {prev.regs[r]} -> {s.regs[r]}" for r in s.changed))
            else:
                L.append(f"    changed: {len(s.changed)} registers ({' '.join(s.changed)})")
        for i in s.stack_changed[:8]:
            addr = story.stack_top - 8 * i
            label = (s.stack_labels or story.stack_labels)[i]     # the roles taken by this step
            L.append(f"    stack [{addr:#x}] {prev.stack[i] if prev else '?'} -> {s.stack[i]}"
                     + (f"  {label}" if label else ""))
        if len(s.stack_changed) > 8:
            L.append(f"    ... and {len(s.stack_changed) - 8} more stack words")
        for c in s.checks:
            L.append(f"    [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}")
        L.append("")
        prev = s
    checks = story.checks
    held = sum(c.ok for c in checks)
    if story.ok:
        L.append(f"OK: {held} of {len(checks)} checks hold.")
    else:
        L.append(f"FAIL: {len(checks) - held} of {len(checks)} checks failed:")
        L += [f"  {c.name}: {c.detail}" for c in checks if not c.ok]
    return "\n".join(fit(L)) + "\n"


def to_json(story: Story) -> dict:
    d = OrderedDict(tool="preemu", version=__version__, schema=SCHEMAS["explain"], command="explain")
    d.update(story.to_json())
    return d
