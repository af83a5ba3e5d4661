"""`preemu check-stub`: run anyone's asyncPreempt over the regression corpus, and mutation testing.

The corpus is every sweep scenario in scenarios/ that expects no violations (not forced). Each is
swept at every boundary (capped) with the user's stub; every asynchronous preemption resumes the
goroutine on the other M and P (different FS base, different p.xRegs), and the stub must also stay
within the headroom the oracle assumes (a canary below S - asyncPreemptStack) and write nothing
at or above the resume-PC slot. A full GC (stack scan through the stub's frame, mark, sweep) runs at
every injection point, so a stub that breaks the scan (or a frame it builds) shows up as a
use-after-free.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import layout as L
from . import loader, mutants, paths, scenario, sweep
from .errors import AsmError, EmuError

SCENARIOS = paths.SCENARIOS_DIR
#: The quick corpus used for mutants: together they keep every register and flag live.
MUTANT_CORPUS = ("xmm_loop", "adc_chain", "r14_scratch", "rep_copy")


@dataclass
class CorpusResult:
    scenario: str
    entry: str
    boundaries: int
    points: int
    injected: int
    refused: dict
    violations: list
    violation_count: int


@dataclass
class StubReport:
    stub: str
    layout: str
    headroom: int
    stub_max_sp_delta: int
    results: list[CorpusResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.violation_count == 0 for r in self.results)


def _rel(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def corpus(names: tuple[str, ...] | None = None) -> list:
    """The sweep scenarios that define the regression corpus."""
    out = []
    for p in sorted(SCENARIOS.glob("*.toml")):
        sc = scenario.load(p)
        if isinstance(sc, scenario.SchedScenario) or sc.expect.get("violations", 0) != 0 or sc.stub is not None:
            continue
        if names is None or sc.name in names:
            out.append(sc)
    return out


def check(stub_path: str | Path, layout_name: str, max_points: int = 2000,
          names: tuple[str, ...] | None = None, seed: int = 1, on_report=None) -> StubReport:
    """Sweep the corpus with the stub at `stub_path` in the `layout_name` world.

    on_report(report) is called as soon as the report exists (it fills as the corpus runs), so a
    caller interrupted half-way can still show what is done."""
    lay = L.get_layout(layout_name)
    rep = None
    for sc in corpus(names):
        program = loader.load_program(_rel(sc.asm))
        world = loader.build_world(program, sc.entry, lay.name, stub_path, seed, sc.registers, gc=True)
        if rep is None:
            rep = StubReport(str(stub_path), lay.name, world.headroom,
                             world.machine.stub.get_func("asyncPreempt").max_sp_delta)
            if on_report is not None:
                on_report(rep)
        res = sweep.sweep(world, sc.entry, seed, min(max_points, sc.max_points), sc.budget, canary=True,
                          async_preemption=sc.async_preemption, nested_signals=sc.nested_signals)
        rep.results.append(CorpusResult(sc.name, sc.entry, res.boundaries, res.points, res.injected,
                                        dict(res.refused), res.violations, res.violation_count))
    if rep is None:
        raise EmuError("the regression corpus is empty (no sweep scenarios found)")
    return rep


@dataclass
class MutantResult:
    mutant: mutants.Mutant
    caught: bool
    diagnosed: bool
    named: list[str]

    @property
    def killed(self) -> bool:
        """A mutant counts only when it is caught AND the diagnosis names what it broke."""
        return self.caught and self.diagnosed


def mutation_score(results: list[MutantResult]) -> tuple[int, int]:
    """(killed, total): the one definition used by the report, the JSON and the exit code."""
    return sum(r.killed for r in results), len(results)


def _named(violations) -> set[str]:
    out = set()
    for v in violations:
        out.add(v.what)
        out.add(v.kind)
    return out


def run_mutants(layout_name: str, max_points: int = 150, mutant_list=None) -> list[MutantResult]:
    """Check every generated mutant (or `mutant_list`) against the quick corpus; report caught and
    correctly diagnosed."""
    lay = L.get_layout(layout_name)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for mu in (mutants.generate(lay) if mutant_list is None else mutant_list):
            path = Path(tmp) / f"{mu.name}.s"
            path.write_text(mu.text)
            try:
                rep = check(path, lay.name, max_points, MUTANT_CORPUS)
                viol = [v for r in rep.results for v in r.violations]
            except AsmError as e:
                raise AssertionError(f"mutant {mu.name} does not assemble: {e}") from None
            named = _named(viol)
            out.append(MutantResult(mu, bool(viol), mu.expect <= named, sorted(named - {
                "register", "flags", "memory", "resume", "final-state"})))
    return out
