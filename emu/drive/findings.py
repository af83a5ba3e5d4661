"""What a real-program sweep finds beyond its points' own checks (realsweep.py calls these): the uses of freed
memory a --gc run recorded, as violations; the confirmation runs when a chain differs at a key the references
agreed on; the legitimate runs that failed (a schedule finding: the program fails without any injection); and
the GC bugs --gc's reference runs hit by themselves (references.py says what each reference varies).

Mirrors nothing in Go: these are preemu's verdict rules (docs/explanation/references.md states them and their
limits).
"""
from __future__ import annotations

from . import references
from . import sweeper as S
from ..check.verify import Violation
from ..goruntime import crashtext
from .gsweep import RealSweep
from .runrecords import Reference


def global_name(eff, key) -> str:
    """A global's name in a report: its key when it is a name already, else its symbol (or its address)."""
    return key if isinstance(key, str) else (eff.symbol_of(key) or f"{key:#x}")


def gc_violations(sw: RealSweep, uaf=None) -> list[Violation]:
    """Each use of an object the cycle at an injection freed (realgc.UseAfterFree; `uaf`: those of another run
    than the last) as a Violation."""
    out = []
    kept = {sv.obj.addr: sv for sv in sw.gc.survivors}
    for u in sw.gc.uaf if uaf is None else uaf:
        o = u.obj
        what = f"object {o.addr:#x} ({o.size} bytes{', ' + o.type if o.type else ''})"
        sv = kept.get(o.addr)
        earlier = (f"; at boundary {sv.kept_at} a conservatively scanned word ({sv.word}) had pointed to it, and "
                   "that cycle kept it" if sv is not None and sv.obj is o else "")
        out.append(sw.make_violation("use-after-free", what, f"untouched: the GC at boundary {o.boundary} freed it",
                                     f"a {u.access} of {u.addr:#x} (offset {u.addr - o.addr})", o.boundary, u.pc,
                                     f"the runtime's GC at the point at boundary {o.boundary} found no pointer "
                                     f"to it and freed it; the program then used it (thread {u.tid}){earlier}"))
    return out


def confirm(sw: RealSweep, ref: Reference, budget: int, seed: int, log: S.ViolationLog) -> None:
    """A chain differed at a key the references agreed on: run up to references.CONFIRM more legitimate runs
    (reseeded and held in turns; with --gc, twice as many, a third of them with a cycle at a seeded boundary), and
    drop the final-state violations at keys one of them varies at too (then listed as nondeterministic) or at
    globals other goroutines wrote while F ran (listed as shared)."""
    u = ref.unstable
    keys = {references.key_of(what) for kind, what in log.groups if kind == "final-state"} - {None}
    if not keys:
        return

    def names():
        return {global_name(sw.effects, g) for g in u.globals}

    def settled(key) -> bool:
        return references.is_unstable(u, key, names()) or (key[0] == "global" and u.is_shared(sw.effects, key[1]))
    kinds = 3 if sw.gc is not None else 2
    for i in range(references.CONFIRM * (kinds - 1)):
        if all(settled(k) for k in keys):
            break
        kind, j = i % kinds, i // kinds
        if kind == 0:
            references.add_run(u, ref, references.other_run(sw, budget, seed, references.REFERENCES + j))
        elif kind == 1:
            references.add_run(u, ref, references.held_run(sw, budget, seed, references.HELD_REFERENCES + j,
                                                           ref.boundaries))
            u.held_runs += 1
        else:
            references.add_gc_run(ref, references.gc_run(sw, budget, seed, references.GC_REFERENCES + j,
                                                         ref.boundaries))
    gone = names()
    log.drop(lambda v: v.kind == "final-state" and (k := references.key_of(v.what)) is not None
             and (references.is_unstable(u, k, gone) or (k[0] == "global" and u.is_shared(sw.effects, k[1]))))


def schedule_findings(sw: RealSweep, ref: Reference, test: str | None = None) -> list[Violation]:
    """The legitimate runs (no injection) that ended with a failing status where another ended otherwise:
    the program fails under some schedule (references.failing_schedules). Under `--test`, a test that failed in
    every legitimate run is a finding too: the program fails by itself, before preemption changes anything."""
    out = []
    u = ref.unstable
    codes = ", ".join(str(c) for c in sorted(u.endings, key=str))
    for label, e in references.failing_schedules(u):
        said = crashtext.first_said(e)
        out.append(sw.make_violation("schedule", "program exit status", f"one ending in every legitimate run "
                                     f"(they ended with statuses {codes})", f"exit status {e.exit_code}"
                                     + (f": {said[:100]!r}" if said else ""), 0, sw.entry,
                                     f"in {label}, without any injection: the program fails under that schedule"))
    e = ref.ending
    if test and not out and e is not None and e.exit_code not in (0, None):
        said = crashtext.first_said(e)
        out.append(sw.make_violation("schedule", "program exit status", f"{test} passes",
                                     f"exit status {e.exit_code}" + (f": {said[:100]!r}" if said else ""), 0,
                                     sw.entry, f"in every legitimate run, without any injection, {test} failed: "
                                     "the test fails by itself"))
    return out


def reference_findings(sw: RealSweep, ref: Reference) -> list[Violation]:
    """The GC bugs --gc's reference runs found with one of the runtime's cycles and no injection at all
    (Reference.gc_evidence): each use of freed memory, and the runtime's crash with its own message."""
    out = []
    for k, uaf, crashed in ref.findings:
        for v in gc_violations(sw, uaf):
            v.detail += f" (in a run with the runtime's own cycle at boundary {k:,} and no injection)"
            out.append(v)
        if crashed is not None:
            v = crashtext.crash_violation(sw, crashed, k, sw.entry, f"a run with the runtime's own GC cycle at "
                                          f"boundary {k:,} and no injection: the program crashed")
            out.append(v or sw.make_violation("final-state", "control flow", f"{sw.func} returns",
                                              "the program ended first", k, sw.entry,
                                              f"a run with the runtime's own GC cycle at boundary {k:,}: "
                                              f"{crashed.reason}, exit status {crashed.exit_code}"))
    return out
