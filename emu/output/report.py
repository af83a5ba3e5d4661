"""Render sweep results as text (for people) or JSON (for programs). The only module that formats.

Text output is deterministic except the one speed line; JSON carries the same facts.
"""
from __future__ import annotations

import textwrap
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING

from .. import __version__
from ..model import rtcode
from ..check.safepoint import REASONS
from .fit import WIDTH, elide, fields, fit, fit_text

if TYPE_CHECKING:
    from ..drive.sweeper import SweepResult

#: The "schema" of every --json object: a change of its keys means a new version here and a note
#: in docs/reference/json.md (tests/test_json_schema.py holds the documented keys of each version).
SCHEMAS = {
    "sweep": "preemu/sweep/1",
    "run": "preemu/run/1",                    # a sweep scenario: the sweep keys + scenario, checks
    "run-schedule": "preemu/run-schedule/1",  # a scheduler scenario
    "preempt": "preemu/preempt/1",
    "check-stub": "preemu/check-stub/1",
    "check-stub-mutants": "preemu/check-stub-mutants/1",
    "disasm": "preemu/disasm/1",
    "explain": "preemu/explain/3",            # 2 added `unit` (boundary, or signal for a scheduler scenario); 3 the
                                              # signal stack of a real-program story (sigstack_top/_labels)
    "exec": "preemu/exec/3",                  # with a scenario, also: scenario (/2: go_version, /3: processes);
                                              # with --schedule SEED, also: schedule
    "exec-schedules": "preemu/exec-schedules/1",  # exec --schedules N
    "explain-schedule": "preemu/explain-schedule/1",  # explain PROGRAM --schedule SEED (teach/schedstory.py)
}


def disasm_json(source: str, functions: list[dict]) -> dict:
    """`preemu disasm --json`: the functions as disasm.func_json renders them."""
    return OrderedDict(tool="preemu", version=__version__, schema=SCHEMAS["disasm"], command="disasm", file=source,
                       functions=functions)


def _verdict(reasons) -> tuple[str, str]:
    if set(reasons) == {"safe"}:
        return "inject", "safe"
    if "safe" in reasons:
        return "mixed", ",".join(sorted(reasons))
    return "refuse", ",".join(sorted(reasons))


def _symbolize(insn, program) -> str:
    """Return the instruction text with a branch/call target annotated with its symbol."""
    text = insn.text
    if insn.mnemonic.startswith(("call", "j")) and insn.op_str.startswith("0x"):
        try:
            target = int(insn.op_str, 16)
        except ValueError:
            return text
        names = {a: n for n, a in rtcode.runtime_externs().items()}
        names.update({f.start: f.name for f in program.funcs})
        f = program.func_for(target)
        if target in names:
            text += f" <{names[target]}>"
        elif f is not None and target == f.start:
            text += f" <{f.name}>"
        elif f is not None:
            text += f" <{f.name}+{target - f.start:#x}>"
    return text


def pc_table(res: SweepResult, program) -> list[dict]:
    """One row per static PC of the swept functions: address, instruction, verdict, reason."""
    rows = []
    for f in program.funcs:
        if not any(f.start <= pc < f.end for pc in res.per_pc):
            continue
        for i in f.insns:
            ps = res.per_pc.get(i.addr)
            if ps is None:
                verdict, reason, n = "not-reached", "", 0
            else:
                verdict, reason = _verdict(ps.verdicts)
                n = sum(ps.verdicts.values())
            rows.append({"pc": f"{i.addr:#x}", "func": f"{f.name}+{i.addr - f.start:#x}", "insn": _symbolize(i, program),
                         "line": i.line, "unsafe": i.unsafe, "verdict": verdict, "reason": reason, "hits": n})
    return rows


def to_json(res: SweepResult, program, source: str) -> dict:
    out = OrderedDict(
        tool="preemu", version=__version__, schema=SCHEMAS["sweep"], command="sweep", file=source, func=res.entry,
        layout=res.layout, runtime=res.layout, seed=res.seed, boundaries=res.boundaries, points_tried=res.points,
        injected=res.injected, refused=dict(sorted(res.refused.items())), forced=res.forced,
        violation_count=res.violation_count,
        violations=[v.to_json() for v in res.violations],
        violation_groups=[{"kind": k, "what": w, "count": n} for (k, w), n in res.violation_groups.items()], points_per_second=round(res.points_per_second, 1),
        async_preempt_stack=res.headroom, uncovered_pcs=[f"{pc:#x}" for pc in res.uncovered_pcs],
        final_registers={k: f"{v:#x}" for k, v in res.reference.final.values.items() if k != "RSP"},
        points=pc_table(res, program), ok=res.ok,
        gc=None if res.gc is None else {"cycles": res.gc.cycles, "freed": res.gc.freed, "allocated": res.gc.allocated,
                                        "conservative_only": [f"{b:#x}" for b in res.gc.retained_conservatively],
                                        "retained_conservatively": [f"{b:#x}" for b in res.gc.retained_dead],
                                        "shrink_deferred": res.gc.shrink_deferred})
    return out


def group_violations(violations):
    """{(kind, what): [violations]} in order of first appearance."""
    groups: "OrderedDict[tuple[str, str], list]" = OrderedDict()
    for v in violations:
        groups.setdefault((v.kind, v.what), []).append(v)
    return groups


def runtime_label(layout: str) -> str:
    """The Go runtime whose rules a run modelled ("runtime Go 1.14" for the go1.14 layout)."""
    return f"runtime Go {layout[2:]}"


def render_text(res: SweepResult, program, source: str, stub_desc: str, table: bool = False) -> str:
    L = fields([f"preemu sweep: {source}", f"func {res.entry}", f"stub {stub_desc}", runtime_label(res.layout),
                f"seed {res.seed}"])
    L.append("")
    L.append(f"  boundaries         {res.boundaries:>9,}   instructions from entry to goexit (each REP iteration counts)")
    L.append(f"  points tried       {res.points:>9,}" + ("   (capped by --max-points)" if res.points < res.boundaries else ""))
    L.append(f"  injected           {res.injected:>9,}   signal accepted: pushCall -> asyncPreempt -> asyncPreempt2 -> RET")
    plain = {k: v for k, v in res.refused.items() if not k.startswith("nested:")}
    nested = {k[7:]: v for k, v in res.refused.items() if k.startswith("nested:")}
    L.append(f"  refused            {sum(plain.values()):>9,}")
    for reason, n in sorted(plain.items()):
        L.append(f"    {reason:<16} {n:>9,}   {REASONS.get(reason, '')}")
    if nested:
        L.append(f"  second signals     {sum(nested.values()):>9,}   delivered inside the stub, all refused:")
        for reason, n in sorted(nested.items()):
            L.append(f"    {reason:<16} {n:>9,}   {REASONS.get(reason, '')}")
    if res.forced:
        L.append(f"  forced             {res.forced:>9,}   refused points injected anyway (--force-unsafe)")
    L.append(f"  asyncPreemptStack  {res.headroom:>9}   bytes of headroom the oracle requires below SP")
    if res.gc is not None:
        g = res.gc
        L.append(f"  GC cycles          {g.cycles:>9,}   a full GC at every injection: stack scan, mark, sweep")
        L.append(f"  objects freed      {g.freed:>9,}   of {g.allocated} allocated; freed memory is poisoned and watched")
        if g.retained_dead:
            L.append(f"  retained conservatively {len(g.retained_dead):>3}   object(s) never used again, kept only through a "
                     "conservatively scanned frame (allowed): " + " ".join(f"{b:#x}" for b in g.retained_dead[:4]))
        if g.shrink_deferred:
            L.append(f"  shrinks deferred   {g.shrink_deferred:>9,}   isShrinkStackSafe refused (asyncSafePoint): "
                     "gp.preemptShrink set")
    L.append(f"  violations         {res.violation_count:>9,}")
    L.append(f"  speed              {res.points_per_second:>9,.0f}   verified points per second")
    if res.uncovered_pcs:
        head = f"  not covered        {len(res.uncovered_pcs):>9}   static PCs never reached: "
        L.append(head + elide([f"{pc:#x}" for pc in res.uncovered_pcs], WIDTH - len(head), sep=" ",
                              more="more in --json"))
    if table:
        L.append("")
        L.append(f"  {'pc':<10} {'where':<18} {'line':>4}  {'instruction':<44} {'verdict':<11} reason")
        for row in pc_table(res, program):
            mark = "!" if row["unsafe"] else " "
            L.append(f" {mark}{row['pc']:<10} {row['func']:<18} {row['line']:>4}  {row['insn'][:44]:<44} "
                     f"{row['verdict']:<11} {row['reason']}".rstrip())
        L.append("  (! = inside a ;@unsafe range)")
    L.append("")
    L += sweep_verdict(res)
    return "\n".join(fit(L)) + "\n"


def _expected_actual(v) -> list[str]:
    """A violation's expected and actual values, and its detail, under its heading line (then, for a crash,
    what the runtime said: crash_lines)."""
    return [f"      expected {v.expected}", f"      actual   {v.actual}"] + ([f"      {v.detail}"] if v.detail else []) \
        + crash_lines((getattr(v, "facts", None) or {}).get("crash"))


def crash_lines(crash: dict | None) -> list[str]:
    """A crash's facts (emu/goruntime/crashtext.py Crash.to_json): the runtime's message, the top frames of the
    goroutine it names, and how the process ended."""
    if not crash:
        return []
    L = []
    said = [crash["message"]] + crash["context"] if crash["message"] else []
    for i, line in enumerate(said):
        L.append(f"      {'runtime' if i == 0 else '':<8} {line}")
    if crash.get("runtime_stack"):
        L.append(f"      {'frames':<8} runtime stack: " + " <- ".join(crash["runtime_stack"]))
    if crash["frames"]:
        L.append(f"      {'frames' if not crash.get('runtime_stack') else '':<8} {crash['goroutine']}: "
                 + " <- ".join(crash["frames"])
                 + (f" (created by {crash['created_by']})" if crash["created_by"] else ""))
    L.append(f"      {'ended':<8} {crash['ended']}")
    return L


def sweep_verdict(res: SweepResult) -> list[str]:
    """The closing lines of a sweep: OK, or FAIL with the first violation of each register, flag or address."""
    if res.ok:
        return ["OK: every injection came back with RIP, RSP, RBP, the 14 GPRs, RFLAGS and XMM0-15 bit-exact,",
                "    the stack at and above the interrupted RSP untouched, and the final state equal to the",
                "    uninterrupted reference run."]
    return failure_lines(res.violations, res.violation_count, res.violation_groups)


def failure_lines(violations, count: int, groups) -> list[str]:
    """FAIL with the first violation of each (kind, what) group, counted over all `count` violations
    (`groups`: (kind, what) -> count; the kept `violations` are the first ones)."""
    L = [f"FAIL: {count} violation(s)" + (f" (first {len(violations)} kept)" if len(violations) < count else "")]
    for (kind, what), vs in group_violations(violations).items():
        v = vs[0]
        n = groups.get((kind, what), len(vs))
        if kind == "schedule":                  # found by runs without any injection: no point to name
            L.append(f"  {kind} {what}: in {n} legitimate run(s) without injection")
        elif kind == "pct-schedule":            # the first chain under a schedule: its points, not one
            L.append(f"  {kind} {what}: the sweep's first chain, every thread under the schedule")
        else:
            L.append(f"  {kind} {what}: {n} injection point(s); first at boundary {v.boundary}, "
                     f"pc {v.pc:#x} `{v.insn}` ({v.where})")
        L += _expected_actual(v)
    return L


def scenario_json(res: SweepResult, program, source: str, sc, checks) -> dict:
    """`preemu run --json` for a sweep scenario: the sweep's object plus the scenario and its checks."""
    out = to_json(res, program, source)
    out.update(schema=SCHEMAS["run"], command="run", scenario=sc.name, checks=[c.__dict__ for c in checks],
               ok=all(c.ok for c in checks))
    return out


def render_scenario(res: SweepResult, program, source: str, sc, checks, stub_description: str,
                    table: bool = False) -> str:
    """`preemu run` for a sweep scenario: its description, the sweep, the expectations, PASS/FAIL."""
    ok = all(c.ok for c in checks)
    head = f"scenario {sc.name}: {sc.description}\n" + (f"  cites: {sc.cites}\n" if sc.cites else "") + "\n"
    tail = "\nexpectations\n" + "".join(f"  [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}\n" for c in checks)
    return fit_text(head) + render_text(res, program, source, stub_description, table) + fit_text(tail) + \
        f"\nscenario {sc.name}: {'PASS' if ok else 'FAIL'}\n"


_OUTCOME = {
    "async": "preempted asynchronously (signal -> asyncPreempt)",
    "cooperative": "preempted cooperatively (prologue -> morestack -> gopreempt_m)",
    "finished": "not preempted: the goroutine returned first",
    "not-preempted": "NOT preempted: the goroutine starves everything else on its P",
    "faulted": "the emulated CPU faulted",
}


def render_episode(ep, source: str, func: str, layout: str = "go1.14") -> str:
    """The step-by-step story of one preemption request."""
    L = fields([f"preemu preempt: {source}", f"func {func}", runtime_label(layout), f"request at boundary {ep.at}",
                f"async preemption {'on' if ep.async_preemption else 'off'}"]) + [""]
    for e in ep.events:
        L.append(f"  [{e.boundary:>7}] {e.kind:<13} {e.text}")
    L.append("")
    L.append(f"outcome: {_OUTCOME.get(ep.outcome, ep.outcome)}"
             + (f", {ep.latency} instruction{'s' if ep.latency != 1 else ''} after the request"
                if ep.latency is not None else ""))
    L.append(f"signals sent: {ep.signals}")
    if ep.ok:
        L.append("OK: the goroutine finished exactly as the uninterrupted run did.")
    else:
        L.append(f"FAIL: {len(ep.violations)} violation(s)")
        for v in ep.violations:
            L.append(f"  {v.describe()}")
    return "\n".join(fit(L)) + "\n"


def episode_json(ep, source: str, func: str) -> dict:
    return OrderedDict(
        tool="preemu", version=__version__, schema=SCHEMAS["preempt"], command="preempt", file=source, func=func,
        at=ep.at, async_preemption=ep.async_preemption, outcome=ep.outcome, preempted_at=ep.preempted_at,
        latency_instructions=ep.latency, signals=ep.signals,
        events=[{"boundary": e.boundary, "pc": f"{e.pc:#x}", "kind": e.kind, "text": e.text} for e in ep.events],
        violations=[v.to_json() for v in ep.violations], ok=ep.ok)


def _fmt_ms(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def sched_json(res, sc, source: str, checks) -> dict:
    lat = res.latencies_ns
    return OrderedDict(
        tool="preemu", version=__version__, schema=SCHEMAS["run-schedule"], command="run", kind="schedule", scenario=sc.name,
        file=source, seed=sc.seed, layout=sc.layout, runtime=sc.layout, gomaxprocs=res.gomaxprocs,
        async_preemption=res.async_preemption, ns_per_insn=res.ns_per_insn, duration_ms=res.duration_ns / 1e6,
        wake_latency_ms={"p50": res.percentile(0.5), "p90": res.percentile(0.9), "p99": res.percentile(0.99),
                         "max": (lat[-1] / 1e6) if lat else None, "count": len(lat)},
        starved=bool(res.starved), starved_goroutines=[g.name for g in res.starved],
        preemptions=res.preemptions,
        signals={"sent": res.signals_sent, "injected": res.signals_injected,
                 "refused": dict(sorted(res.signals_refused.items()))},
        goroutines=[{"name": g.name, "cpu_ms": g.cpu_insns * res.ns_per_insn / 1e6,
                     "cpu_share": round(res.cpu_share(g), 6), "preemptions": {"async": g.preempt_async,
                                                                              "cooperative": g.preempt_coop},
                     "wakeups": len(g.latencies), "max_wait_ms": g.max_wait / 1e6, "status": g.status}
                    for g in res.goroutines],
        gc={"cycles": res.gc_cycles, "suspended": len(res.gc_waits_ns),
            "wait_max_ms": (res.gc_waits_ns[-1] / 1e6) if res.gc_waits_ns else None,
            "blocked": {k: v / 1e6 for k, v in res.gc_blocked.items()}},
        checks=[c.__dict__ for c in checks], ok=all(c.ok for c in checks))


def render_sched(res, sc, source: str, checks) -> str:
    world = "ON (Go >= 1.14: sysmon signals SIGURG)" if res.async_preemption else \
        "OFF (Go 1.13 / asyncpreemptoff=1: prologue checks only)"
    L = [f"scenario {sc.name}: {sc.description}"] + ([f"  cites: {sc.cites}"] if sc.cites else []) + ["",
         f"preemu schedule: {source}  GOMAXPROCS={res.gomaxprocs}  stub {sc.layout}  {runtime_label(sc.layout)}  "
         f"seed {sc.seed}",
         f"  async preemption {world}",
         f"  virtual time {res.duration_ns / 1e6:.1f} ms at {res.ns_per_insn:g} ns per instruction"
         + ("; every goroutine exited" if res.finished else ""), "",
         f"  {'goroutine':<12} {'cpu ms':>9} {'share':>7} {'async':>6} {'coop':>5} {'wake-ups':>9} "
         f"{'max wait ms':>12}  status"]
    for g in res.goroutines:
        L.append(f"  {g.name:<12} {g.cpu_insns * res.ns_per_insn / 1e6:>9.3f} {100 * res.cpu_share(g):>6.1f}% "
                 f"{g.preempt_async:>6} {g.preempt_coop:>5} {len(g.latencies):>9} {g.max_wait / 1e6:>12.3f}  {g.status}")
    pre = res.preemptions
    refused = ", ".join(f"{k} {v}" for k, v in sorted(res.signals_refused.items())) or "none"
    lat = res.latencies_ns
    L += ["", f"  preemptions      async {pre['async']}, cooperative {pre['cooperative']}",
          f"  SIGURG           sent {res.signals_sent}, injected {res.signals_injected}, refused: {refused}"]
    sleeps = any(e["kind"] == "sleep" for e in res.events)
    if sleeps:
        L.append(f"  wake-up latency  p50 {_fmt_ms(res.percentile(0.5))}  p90 {_fmt_ms(res.percentile(0.9))}  "
                 f"p99 {_fmt_ms(res.percentile(0.99))}  max {_fmt_ms(lat[-1] / 1e6 if lat else None)} ms"
                 f"  ({len(lat)} wake-ups)")
        L.append("                   the real Go 1.27 runtime: p50 20.16, p90 20.32, max 40.3 ms")
    if res.gc_cycles:
        w = res.gc_waits_ns
        L.append(f"  GC stack scans   {res.gc_cycles} cycles, {len(w)} goroutines suspended; wait for the "
                 f"goroutine to stop: max {_fmt_ms(w[-1] / 1e6 if w else None)} ms")
        for name, ns in res.gc_blocked.items():
            L.append(f"  GC BLOCKED       suspendG({name}) still waiting after {ns / 1e6:.3f} ms: the GC cannot "
                     "finish its stack scans")
    if res.starved:
        for g in res.starved:
            L.append(f"  STARVED          {g.name}: waited {g.max_wait / 1e6:.3f} ms to run "
                     f"(more than {res.starvation_ns / 1e6:g} ms)")
    else:
        L.append(f"  starved          no goroutine waited more than {res.starvation_ns / 1e6:g} ms")
    if checks:
        L += ["", "expectations"] + [f"  [{'ok' if c.ok else 'FAIL'}] {c.name}: {c.detail}" for c in checks]
    L += ["", f"scenario {sc.name}: {'PASS' if all(c.ok for c in checks) else 'FAIL'}"]
    return "\n".join(fit(L)) + "\n"


def checkstub_json(rep) -> dict:
    return OrderedDict(
        tool="preemu", version=__version__, schema=SCHEMAS["check-stub"], command="check-stub", stub=rep.stub,
        layout=rep.layout, stub_max_sp_delta=rep.stub_max_sp_delta, async_preempt_stack=rep.headroom,
        corpus=[{"scenario": r.scenario, "entry": r.entry, "boundaries": r.boundaries, "points_tried": r.points,
                 "injected": r.injected, "refused": r.refused, "violation_count": r.violation_count,
                 "violations": [v.to_json() for v in r.violations]} for r in rep.results],
        ok=rep.ok)


def render_checkstub(rep, interrupted: bool = False) -> str:
    note = "  (Go 1.27.3's own stub: 264)" if rep.layout == "go1.27" else ""
    w = max([18] + [len(r.scenario) for r in rep.results])
    L = [*fields([f"preemu check-stub: {rep.stub}", f"({rep.layout} world: asyncPreempt2, g/m/p, xRegs and the "
                 f"preemption rules of Go {rep.layout[2:]})"]),
         *(textwrap.wrap(f"layout {rep.layout} {rep.layout_note}", 110, initial_indent="  ", subsequent_indent="    ")
           if getattr(rep, "layout_note", "") else []),
         f"  stub max SP delta {rep.stub_max_sp_delta} bytes -> asyncPreemptStack {rep.headroom} bytes{note}",
         "  every preemption resumes on the other M and P; a canary guards the stack below the headroom;",
         "  a full GC (stack scan, mark, sweep) runs at every injection point"]
    if any(r.scenario.startswith("go:") for r in rep.results):
        L += ["  go:NAME rows: functions of scenarios/go/stubcorpus swept inside their real program, the stub loaded",
              "  over its runtime.asyncPreempt; the runtime's own handler, asyncPreempt2 and scheduler meet it"]
    L += ["",
          f"  {'corpus loop':<{w}} {'boundaries':>10} {'points':>7} {'injected':>9} {'refused':>8} {'violations':>11}"]
    for r in rep.results:
        L.append(f"  {r.scenario:<{w}} {r.boundaries:>10,} {r.points:>7,} {r.injected:>9,} "
                 f"{sum(r.refused.values()):>8,} {r.violation_count:>11,}")
    L.append("")
    if rep.ok and interrupted:
        L.append("INTERRUPTED: no violation in the corpus loops above; the rest of the corpus did not run.")
        return "\n".join(fit(L)) + "\n"
    return "\n".join(fit(L + checkstub_verdict(rep))) + "\n"


def checkstub_verdict(rep) -> list[str]:
    """The closing lines of check-stub: PASS, or FAIL with the first example of each violated register."""
    if rep.ok:
        return ["PASS: the stub restored every register, flag and XMM register bit for bit at every point, on "
                "another M and P,",
                "      stayed within asyncPreemptStack and wrote nothing at or above the resume-PC slot."]
    if getattr(rep, "vacuous", False) and not rep.violation_count:
        refused = Counter()
        for r in rep.results:
            refused.update(r.refused)
        why = ", ".join(f"{k} {n:,}" for k, n in refused.most_common(3)) or "no point reached"
        return [f"FAIL: nothing was tested: the stub was injected at none of the corpus loops' points ({why}),",
                "      so nothing it saves or restores was checked. A frame larger than the headroom the runtime "
                "checks (asyncPreemptStack)",
                "      makes every point refused."]
    L = [f"FAIL: {rep.violation_count:,} violation(s); by register, flag or address (first example of each):"]
    for (kind, what), items in rep.groups().items():
        loops = sorted({sc for sc, _ in items})
        sc, v = items[0]
        L.append(f"  {kind} {what}: in {len(loops)} corpus loop(s) ({', '.join(loops[:4])}"
                 f"{', ...' if len(loops) > 4 else ''})")
        L.append(f"      first: {sc}, boundary {v.boundary}, pc {v.pc:#x} `{v.insn}` ({v.where})")
        L += _expected_actual(v)
    return L


def mutation_score(results) -> tuple[int, int]:
    """(killed, total) of check-stub's MutantResults: the one definition used by the report, the JSON and the
    exit code (a mutant counts only when it is caught and its diagnosis names what it broke)."""
    return sum(r.killed for r in results), len(results)


def render_mutants(results, layout: str) -> str:
    caught, _ = mutation_score(results)
    L = [f"preemu check-stub --mutants ({layout}): {len(results)} mutants of the generated stub", "",
         f"  {'mutant':<26} {'caught':<7} {'diagnosis (expected)':<22} named"]
    for r in results:
        exp = ",".join(sorted(r.mutant.expect))
        status = "yes" if r.caught else "NO"
        diag = ("ok " if r.diagnosed else "WRONG ") + f"({exp})"
        L.append(f"  {r.mutant.name:<26} {status:<7} {diag:<22} {', '.join(n for n in r.named if not n.startswith('0x'))}")
    L += ["", f"mutation score: {caught}/{len(results)} = {100 * caught / len(results):.0f}% "
              "(caught with the right register or flag named)"]
    return "\n".join(L) + "\n"


def mutants_json(results, layout: str) -> dict:
    score, _ = mutation_score(results)
    return OrderedDict(tool="preemu", version=__version__, schema=SCHEMAS["check-stub-mutants"],
                       command="check-stub --mutants",
                       layout=layout, mutants=[{"name": r.mutant.name, "description": r.mutant.description,
                                                "expect": sorted(r.mutant.expect), "caught": r.caught,
                                                "diagnosed": r.diagnosed, "named": r.named} for r in results],
                       score=score, total=len(results), ok=score == len(results))
