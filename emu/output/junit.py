"""JUnit XML for CI dashboards: `--junit-xml FILE` on sweep, run and check-stub.

One <testsuite name="preemu ..."> with one <testcase> per corpus loop (check-stub), per scenario
(run) or per swept function (sweep). A failing case carries a <failure> whose message is the first
violation and whose text is the violation summary preemu prints. The format is the one Jenkins,
GitLab and GitHub test reporters read (the Ant JUnit schema's testsuite/testcase/failure).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass


@dataclass
class Case:
    classname: str
    name: str
    seconds: float
    failure: str | None = None      # one-line message
    text: str = ""                  # the summary preemu prints


def _first(violations) -> str:
    v = violations[0]
    return f"{v.kind} {v.what}: expected {v.expected}, actual {v.actual} ({v.where})"


def cases(rep) -> tuple[str, list[Case]]:
    """(suite name, test cases) of an api SweepReport, ScenarioReport or checkstub.StubReport."""
    kind = type(rep).__name__
    if kind == "StubReport":
        out = []
        for r in rep.results:
            one = rep.only(r.scenario)
            out.append(Case(f"preemu.check-stub.{rep.layout}", r.scenario, r.elapsed,
                            None if one.ok else f"{r.violation_count} violation(s); first: {_first(r.violations)}",
                            one.summary()))
        return f"preemu check-stub {rep.stub}", out
    if kind == "ScenarioReport":
        fail = None
        if not rep.ok:
            bad = rep.failed_checks
            fail = "; ".join(f"{c.name}: {c.detail}" for c in bad[:3])
            if rep.violations:
                fail += f"; first violation: {_first(rep.violations)}"
        return f"preemu run {rep.scenario.path}", [Case("preemu.run", rep.name, rep.elapsed, fail, rep.summary())]
    if kind == "ManySweepReport":
        out = []
        for f in rep.result.functions:
            r = f.report
            if r is None:                        # matched, not called: no case (a function the test never runs)
                if f.status == "error":
                    out.append(Case(f"preemu.sweep.{rep.result.source}", f.func, 0.0, f"not swept: {f.note}", f.note))
                continue
            out.append(Case(f"preemu.sweep.{rep.result.source}", r.result.func, r.result.elapsed,
                            None if r.ok else f"{r.violation_count} violation(s); first: {_first(r.violations)}",
                            r.summary()))
        return f"preemu sweep {rep.result.source} --func {rep.result.pattern}", out
    if kind == "RealSweepReport":
        fail = None if rep.ok else f"{rep.violation_count} violation(s); first: {_first(rep.violations)}"
        return f"preemu sweep {rep.source}", [Case(f"preemu.sweep.{rep.source}", rep.result.func,
                                                   rep.result.elapsed, fail, rep.summary())]
    if kind == "SweepReport":
        fail = None if rep.ok else f"{rep.violation_count} violation(s); first: {_first(rep.violations)}"
        return f"preemu sweep {rep.source}", [Case(f"preemu.sweep.{rep.source}", rep.result.entry,
                                                   rep.result.elapsed, fail, rep.summary())]
    raise TypeError(f"no JUnit form for {kind}")


def from_report(rep) -> ET.ElementTree:
    """The JUnit XML document of a report."""
    suite_name, cs = cases(rep)
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(cs)),
                       failures=str(sum(c.failure is not None for c in cs)), errors="0", skipped="0",
                       time=f"{sum(c.seconds for c in cs):.3f}")
    for c in cs:
        tc = ET.SubElement(suite, "testcase", classname=c.classname, name=c.name, time=f"{c.seconds:.3f}")
        if c.failure is not None:
            f = ET.SubElement(tc, "failure", message=c.failure, type="preemu.violation")
            f.text = c.text
        else:
            ET.SubElement(tc, "system-out").text = c.text
    root = ET.Element("testsuites", name="preemu", tests=suite.get("tests"), failures=suite.get("failures"),
                      errors="0", time=suite.get("time"))
    root.append(suite)
    ET.indent(root)
    return ET.ElementTree(root)


def write(path: str, tree: ET.ElementTree) -> None:
    tree.write(path, encoding="utf-8", xml_declaration=True)
