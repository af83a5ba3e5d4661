"""What `preemu sweep PROG --func PATTERN` prints: one table of every matched function (boundaries, injected,
refused by reason, violations, CPU, verdict), then the failures of each function that failed, in text and JSON
(schema preemu/sweep-many/1: a `functions` list whose swept entries are each function's preemu/sweep-real/1
object). JUnit and SARIF take one entry per function (junit.py, sarif.py)."""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

from .. import __version__
from .fit import fit

SCHEMA = "preemu/sweep-many/1"


def _refused(res) -> str:
    top = sorted(res.refused.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {n:,}" for k, n in top[:3]) + (" ..." if len(top) > 3 else "")


@dataclasses.dataclass
class ManySweepReport:
    """A pattern sweep's result (manysweep.ManyResult) as people and programs read it."""
    result: Any = dataclasses.field(repr=False)

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def reports(self) -> list:
        return [f.report for f in self.result.functions if f.report is not None]

    @property
    def violation_count(self) -> int:
        return sum(r.violation_count for r in self.reports)

    def to_json(self) -> dict:
        r = self.result
        return OrderedDict(
            tool="preemu", version=__version__, schema=SCHEMA, command="sweep", engine="real-program", file=r.source,
            pattern=r.pattern, **({"test": {"kind": r.test[0], "name": r.test[1]}} if r.test else {}),
            functions=[{"func": f.func, "status": f.status, **({"note": f.note} if f.note else {}),
                        **({"sweep": f.report.to_json()} if f.report is not None else {})} for f in r.functions],
            matched=len(r.functions), swept=len(self.reports),
            failed=sum(1 for x in self.reports if not x.ok), violation_count=self.violation_count,
            cpu_seconds=round(r.cpu, 3), ok=r.ok)

    def render(self, table: bool = False) -> str:
        r = self.result
        during = f"  during {'benchmark ' if r.test[0] == 'bench' else ''}{r.test[1]}" if r.test else ""
        L = [f"preemu sweep: {r.source}  --func {r.pattern!r}{during}  {len(r.functions)} function(s) matched, "
             f"{len(self.reports)} swept", ""]
        w = max([len(f.short) for f in r.functions] + [8])
        L.append(f"  {'function':<{w}}  {'boundaries':>10}  {'injected':>8}  {'violations':>10}  {'cpu s':>6}  "
                 "verdict  refused (most)")
        for f in r.functions:
            if f.report is None:
                L.append(f"  {f.short:<{w}}  {'-':>10}  {'-':>8}  {'-':>10}  {'-':>6}  {f.status}")
                continue
            x = f.report.result
            L.append(f"  {f.short:<{w}}  {x.boundaries:>10,}  {x.injected:>8,}  {x.violation_count:>10,}  "
                     f"{x.cpu:>6.1f}  {'OK' if x.ok else 'FAIL':<7}  {_refused(x)}".rstrip())
        L.append("")
        bad = [f for f in r.functions if f.report is not None and not f.report.ok]
        errors = [f for f in r.functions if f.status == "error"]
        for f in bad:
            L.append(f"--- {f.func}")
            L += f.report.summary().rstrip("\n").splitlines()
            L.append("")
        for f in errors:
            L.append(f"--- {f.func}: not swept: {f.note}")
        if not r.swept and not errors:
            L.append(f"FAIL: nothing was tested: none of the {len(r.functions)} function(s) matched was called by "
                     "the run (see the table); try another --call, --test or program arguments")
        elif r.ok:
            L.append(f"OK: every one of the {len(self.reports)} function(s) the run called held at every injection "
                     "(results, globals and output equal the uninterrupted runs)")
        else:
            why = ([f"{len(bad)} of {len(self.reports)} swept function(s) failed"] if bad else []) + \
                ([f"{len(errors)} matched function(s) could not be swept (each said why above)"] if errors else [])
            L.append("FAIL: " + "; ".join(why))
        return "\n".join(fit(L)) + "\n"

    def summary(self) -> str:
        return self.render().split("\n\n", 1)[-1]
