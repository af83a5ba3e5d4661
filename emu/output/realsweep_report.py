"""What `preemu sweep` prints for a Go function swept in its real program (gsweep.RealSweepResult): text
and JSON (schema preemu/sweep-real/1, in the sweep family: the same violation objects and refusal
counts, plus the program's reference ending and F's results)."""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any

from .. import __version__
from .fit import elide, fields, fit
from .report import REASONS, failure_lines

SCHEMA = "preemu/sweep-real/1"
#: points from which a full sweep's report suggests --each-pc (about 10 s of CPU at today's speed)
LONG_SWEEP = 30_000


def _ordinal(n: int) -> str:
    """2nd, 3rd, 11th, 71st: English ordinals, for "every 71st boundary"."""
    if 10 <= n % 100 <= 20:
        return f"{n:,}th"
    return f"{n:,}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


@dataclasses.dataclass
class RealSweepReport:
    """What `preemu sweep` of Go input prints (the Python API's result for Go input)."""
    result: Any = dataclasses.field(repr=False)         # realsweep.RealSweepResult
    source: str = ""                                    # the program, as shown
    stub: str | None = None                             # the user's stub file, or None (the binary's own)
    sweeper: Any = dataclasses.field(default=None, repr=False)     # gsweep.RealSweep (for describing PCs)
    stub_program = None                                 # (SARIF: no stub line to blame in a binary's own stub)

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def violations(self):
        return self.result.violations

    @property
    def violation_count(self) -> int:
        return self.result.violation_count

    def to_json(self) -> dict:
        r = self.result
        return OrderedDict(
            tool="preemu", version=__version__, schema=SCHEMA, command="sweep", engine="real-program",
            file=r.source, func=r.func, call=r.call, entered=r.entered, stub=r.stub, seed=r.seed,
            **({"test": {"kind": r.test[0], "name": r.test[1]}} if r.test else {}),
            boundaries=r.boundaries, points_tried=r.points, points_reached=r.reached, injected=r.injected,
            refused=dict(sorted(r.refused.items())), violation_count=r.violation_count,
            violations=[v.to_json() for v in r.violations],
            results=r.results,
            reference={"exit_code": r.ending.exit_code, "stdout": r.ending.stdout.decode(errors="replace"),
                       "stderr": r.ending.stderr.decode(errors="replace"), "stop_reason": r.ending.reason},
            to_exit=[{"boundary": k, "ok": ok, "detail": d} for k, ok, d in r.to_exit],
            violation_groups=[{"kind": k, "what": w, "count": n} for (k, w), n in r.violation_groups.items()],
            other_preemptions=r.other_preemptions, shards=r.shards, points_alone=getattr(r, "alone", 0),
            points=[{"pc": f"{pc:#x}", "verdicts": dict(c)} for pc, c in sorted(r.per_pc.items())],
            cpu_seconds=round(r.cpu, 3), us_per_point=round(1e6 * r.cpu / max(1, r.points), 1),
            oracle=r.oracle_note or "on", **({"gc": r.gc} if r.gc is not None else {}),
            nondeterministic=r.nondeterministic, injection_paths=dict(sorted((r.paths or {}).items())),
            **({"each_pc": r.each_pc} if getattr(r, "each_pc", None) else {}),
            **({"schedules": r.schedules.to_json()} if getattr(r, "schedules", None) is not None else {}), ok=r.ok)

    def render(self, table: bool = False) -> str:
        r = self.result
        sw = self.sweeper
        describe = None if sw is None else (lambda pc: sw.prog.describe_pc(pc) if sw.prog else sw.image.describe(pc))
        L = fields([f"preemu sweep: {r.source}", f"func {r.func}", _how(r), f"stub {r.stub}", "real program",
                    f"seed {r.seed}"]) + [""]
        L.append(f"  boundaries         {r.boundaries:>9,}   instructions of {r.func}'s goroutine from its entry to its "
                 "return (callees and the runtime included)")
        if r.gc is not None:
            step = r.gc.get("step", 1)
            swept = r.gc.get("swept_boundaries")
            L.append(f"  points tried       {r.points:>9,}   " + (f"every {_ordinal(step)}" if step > 1 else "every") +
                     " boundary of the swept run, up to its return (each cycle changes what the goroutine runs "
                     "next: boundary numbers below are the swept run's)")
            if swept and swept > r.boundaries:
                L.append(f"  swept run          {swept:>9,}   boundaries with the cycles' work in the goroutine (--max-points "
                         f"sets the step from the reference's {r.boundaries:,}, so more points are tried)")
        elif getattr(r, "each_pc", None):
            e = r.each_pc
            L.append(f"  points tried       {r.points:>9,}   the first boundary of each distinct PC (--each-pc"
                     + (", capped by --max-points)" if e.get("capped", r.points < e["distinct"]) else ")"))
            L.append(f"  distinct PCs       {e['distinct']:>9,}   executed by {r.func}'s goroutine; {e['decided']:,} "
                     "decided at a point")
            if "reference" in e:
                left = e["reference"] - e["reference_decided"]
                L.append(f"  reference PCs      {e['reference']:>9,}   those of the uninterrupted run (the promise: each "
                         "decided once): " + ("every one decided" if not left else f"{left:,} NOT decided")
                         + (f"; {e['rounds']:,} more pass(es) for those the first did not reach" if e["rounds"] else ""))
                L.append(f"  beyond them        {e['beyond']:>9,}   PCs decided that the uninterrupted run does not "
                         "execute: only injections led the goroutine there")
        else:
            L.append(f"  points tried       {r.points:>9,}" + ("   (capped by --max-points)" if r.points < r.boundaries
                                                                 else ""))
        if r.shards > 1:
            L.append(f"  shards             {r.shards:>9,}   chains of up to 2,000 points, each from the snapshot")
        if getattr(r, "alone", 0) and r.points > r.alone:
            L.append(f"  points alone       {r.alone:>9,}   with no earlier injection in their run (each chain's first, "
                     "the to-exit runs);")
            L.append(f"                                 the other {r.points - r.alone:,} after earlier injections "
                     "(--to-exit N: N more alone)")
        if r.reached < r.points:
            L.append(f"  points reached     {r.reached:>9,}   {r.func} returned sooner in the swept run (other "
                     "goroutines ran in another order)")
        L += injected_lines(r)
        L.append(f"  refused            {sum(r.refused.values()):>9,}   the runtime declined (reason: preemu's oracle, "
                 "which agreed at every signal unless a violation says otherwise)")
        for reason, n in sorted(r.refused.items()):
            L.append(f"    {reason:<16} {n:>9,}   {REASONS.get(reason, '')}".rstrip())
        if r.other_preemptions:
            L.append(f"  other preemptions  {r.other_preemptions:>9,}   the runtime's own (sysmon, GC), also checked")
        if r.gc is not None:
            L += gc_lines(r)
        L.append(f"  violations         {r.violation_count:>9,}")
        L.append(f"  speed              {r.points / r.cpu if r.cpu else 0:>9,.0f}   verified points per second of CPU "
                 "(program start, reference and to-exit runs included)")
        res = elide([f"{k} = {v}" for k, v in r.results.items()], 2 * 120 - 40) or f"(none: {r.func} returns nothing)"
        L.append(f"  results            {res}")
        out = r.ending.stdout.decode(errors="replace").strip().splitlines()
        L.append(f"  program ended      exit status {r.ending.exit_code}, {len(out)} line(s) of output"
                 + (f", last: {out[-1][:60]!r}" if out else ""))
        ok_exits = sum(1 for _, ok, _ in r.to_exit if ok)
        if r.to_exit:
            L.append(f"  to-exit runs       {ok_exits:>3} of {len(r.to_exit)}   one injection (at boundary "
                     + ", ".join(str(k) for k, _, _ in r.to_exit) + "), then on to the exit: same output and status")
        L += nondeterministic_lines(r.nondeterministic)
        if getattr(r, "schedules", None) is not None:
            L += r.schedules.lines()
        if table:
            L.append("")
            L.append(f"  {'pc':<10} {'where':<48} verdicts")
            for pc, c in sorted(r.per_pc.items()):
                where = describe(pc) if describe else f"{pc:#x}"
                L.append(f"  {pc:#010x} {where[:48]:<48} " + ", ".join(f"{k} {n}" for k, n in sorted(c.items())))
        if not getattr(r, "each_pc", None) and r.points >= LONG_SWEEP and r.gc is None:
            L.append(f"  hint               a sweep of {r.points:,} points is long: --each-pc decides each distinct PC "
                     "of the goroutine once, at its first occurrence")
        L.append("")
        L += verdict(r)
        return "\n".join(fit(L)) + "\n"

    def summary(self) -> str:
        return "\n".join(fit(verdict(self.result))) + "\n"


def nondeterministic_keys(nd: dict) -> list[str]:
    """The keys the uninterrupted runs disagreed on, as the report names them."""
    if not nd:
        return []
    outs = [f"{w} line(s) {', '.join(str(i + 1) for i in ix[:6])}{' ...' if len(ix) > 6 else ''}"
            if ix != "all" else f"all of {w}" for w, ix in nd["output"].items()]
    return [f"result {k}" for k in nd["results"]] + list(nd["globals"]) + outs + (
        ["the exit status"] if nd["exit_code"] else [])


def nondeterministic_lines(nd: dict | None) -> list[str]:
    """What differed between the uninterrupted runs (references.py), when anything did: not compared."""
    if not nd:
        return []
    keys = nondeterministic_keys(nd)
    shared = nd.get("shared", [])
    out = []
    if keys:
        shown = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        gcs, held = nd.get("gc_references", 0), nd.get("held_references", 0)
        out += [f"  nondeterministic   {len(keys):>9,}   differ between {nd['references']} runs without preemption (the "
                "runtime's random state drawn anew, the clock's rate varied"
                + (f", the function's thread descheduled in {held}" if held else "")
                + (f", a GC cycle during the function in {gcs}" if gcs else "") + "), so not compared:",
                f"                                 {shown}"]
    gc_only = nd.get("gc_only", [])
    if gc_only:
        shown = ", ".join(gc_only[:6]) + (f" and {len(gc_only) - 6} more" if len(gc_only) > 6 else "")
        out += [f"  GC-dependent       {len(gc_only):>9,}   of those, differ only in runs with a GC cycle: a finalizer, "
                "sync.Pool or weak pointer,",
                "                                 or a GC bug the use-after-free watch missed (a stale pointer read "
                f"after reuse): {shown}"]
    if shared:
        shown = ", ".join(shared[:6]) + (f" and {len(shared) - 6} more" if len(shared) > 6 else "")
        out += [f"  shared globals     {len(shared):>9,}   other goroutines wrote them while the function ran, so they are "
                "compared at the program's end only:",
                f"                                 {shown}"]
    return out


#: each path an injection was seen to take (watch.PATHS), as the report words it
_PATH_TEXT = {"descheduled": "asyncPreempt2 -> off the CPU (goschedImpl or preemptPark) -> schedule -> back at RET",
              "no-asyncPreempt2": "the stub returned without entering asyncPreempt2",
              "not-descheduled": "asyncPreempt2 entered, never descheduled, back at RET"}


def injected_lines(r) -> list[str]:
    """The injections, and the path each was seen to take (watch.py's hooks on asyncPreempt2, goschedImpl,
    preemptPark and asyncPreempt's RET; r.paths): the chain is claimed only for the injections that took it."""
    L = [f"  injected           {r.injected:>9,}   the runtime's sighandler accepted: pushCall -> asyncPreempt"]
    paths = getattr(r, "paths", None)
    if paths is None:
        return L
    for path in ("descheduled", "no-asyncPreempt2", "not-descheduled"):
        if paths.get(path):
            L.append(f"    {path:<16} {paths[path]:>9,}   {_PATH_TEXT[path]}")
    gone = r.injected - sum(paths.values())
    if gone > 0:
        L.append(f"    {'not resumed':<16} {gone:>9,}   never back at asyncPreempt's RET while the chain ran")
    return L


def gc_lines(r) -> list[str]:
    """--gc: the runtime's own cycles, read back from it."""
    g = r.gc
    if g.get("mode") == "concurrent":
        return _concurrent_gc_lines(r, g)
    L = ["  GC mode                 scan   GODEBUG=gcstoptheworld=2: the goroutine stays parked through each cycle "
         "(no write barrier or assist of its own runs during mark)",
         f"  GC cycles          {g['cycles']:>9,}   the runtime's own (memstats.numgc), one per injection "
         f"({g['injections']:,} injections in the chains){_at_calls(g)}",
         f"  G scanned parked   {g['scans_at_injection']:>9,}   scanstack met {r.func}'s goroutine runnable at the "
         "injection, asyncSafePoint set",
         f"  objects freed      {g['freed']:>9,}   by those cycles, then watched until reallocated"]
    return L + _sync_lines(g) + _survivor_lines(g) + _sample_lines(g)


def _survivor_lines(g) -> list[str]:
    """Objects a stale word kept at an injection's cycle and a later cycle freed (realgc.Survivor)."""
    n = g.get("kept_by_stale_words", 0)
    if not n:
        return []
    L = [f"  kept by stale words {n:>8,}   objects a conservatively scanned word (a saved register, a slot of the "
         "interrupted frame) pointed to when an injection's cycle kept them, and a later cycle freed: where the program "
         "still uses one, a hidden-pointer bug did not fire at that point because of the word"]
    for sv in g.get("survivors", [])[:3]:
        L.append(f"    {sv['object']} ({sv['size']} bytes{', ' + sv['type'] if sv['type'] else ''}): kept at "
                 f"boundary {sv['kept_at']:,} by {sv['word']}, freed at {sv['freed_at']:,}")
    return L


def _at_calls(g) -> str:
    n = sum(v for k, v in g.get("cycles_by_kind", {}).items() if k != "async")
    return f", and {n:,} at calls" if n else ""


def _sync_lines(g) -> list[str]:
    """The call-site chain (emu/drive/gsync.py), when it ran."""
    if g.get("points", "all") == "async":
        return []
    kinds = g.get("cycles_by_kind", {})
    by = ", ".join(f"{n:,} {_STOPPED_BY.get(p, p)}" for p, n in sorted(g.get("sync_stopped_by", {}).items(),
                                                                     key=lambda kv: -kv[1]))
    left = g.get("sync_waiting", 0)
    return [f"  GC at calls        {g.get('sync_points', 0):>9,}   cycles with the goroutine stopped in a callee's prologue "
            f"(morestack: every frame precise): {kinds.get('allocation', 0):,} at allocations, {kinds.get('call', 0):,} "
            f"at other calls ({by or 'no scan'})",
            f"  call sites         {g.get('sync_reached', 0):>9,}   of the package's code reached by the goroutine, of "
            f"{g.get('sync_sites', 0):,} in it" + (f"; {left:,} got no cycle (one was running each time)" if left else "")]


def _concurrent_gc_lines(r, g) -> list[str]:
    by = g.get("stopped_by", {})
    paths = ", ".join(f"{n:,} {_STOPPED_BY.get(p, p)}" for p, n in sorted(by.items(), key=lambda kv: -kv[1]))
    L = ["  GC mode           concurrent   the runtime's default cycle: a mark worker's suspendG stops the goroutine "
         "at the point for its stack scan, and it runs on during mark",
         f"  GC cycles          {g['cycles']:>9,}   the runtime's own (memstats.numgc), made due at points where no "
         f"cycle was running (the others got preemptone's request){_at_calls(g)}",
         f"  G scanned parked   {g['scans_at_injection']:>9,}   scanstack met {r.func}'s goroutine parked at the "
         f"point, asyncSafePoint set ({paths or 'none'})",
         f"  G during mark      {g.get('mark_instructions', 0):>9,}   instructions of the goroutine while the write "
         f"barrier was on: {g.get('write_barriers', 0):,} write barrier(s), {g.get('bulk_barriers', 0):,} bulk, "
         f"{g.get('assists', 0):,} mark assist(s)",
         f"  objects freed      {g['freed']:>9,}   unmarked at mark termination, then watched: "
         f"{g.get('quarantined', 0):,} kept out of reuse (quarantined), the rest until reallocated"]
    if g.get("unasked"):
        L.append(f"  not scanned at     {g['unasked']:>9,}   point(s) where the cycle in progress never asked to stop the "
                 "goroutine (it holds the cycle up itself, e.g. inside runtime.GC): preemptone's request there")
    return L + _sync_lines(g) + _survivor_lines(g) + _sample_lines(g)


_STOPPED_BY = {"preemptPark": "preemptPark -> _Gpreempted", "gopreempt_m": "gopreempt_m -> _Grunnable"}


def _sample_lines(g) -> list[str]:
    if not g.get("sample"):
        return []
    sm = g["sample"]
    frames = ", ".join(f"{name} ({how})" for name, how in sm["frames"])
    return [f"  scan at {sm['boundary']:<10,} {frames}"]


def _how(r) -> str:
    if r.entered == "entered":
        return "entered on the main goroutine after init"
    how = f"call {r.call}" if r.call > 1 else "first call"
    test = getattr(r, "test", ())
    return f"{how} during {'benchmark ' if test[0] == 'bench' else ''}{test[1]}" if test else how


def _compared(r) -> str:
    """What the OK line's comparison left out: the keys the legitimate runs disagreed on, the shared globals."""
    nd = getattr(r, "nondeterministic", None) or {}
    skipped = len(nondeterministic_keys(nd)) + len(nd.get("shared", []))
    if not skipped:
        return "."
    return (f"\n    at every key its {nd['references']} legitimate runs agreed on ({skipped:,} not compared at the "
            "function's return: listed above).")


def _schedules_hint(r) -> list[str]:
    """Under an OK with other goroutines at work beside F (keys they changed are listed above) and no --schedules:
    what the sweep did not try, and the option that does (a check-then-act between goroutines needs another one in
    the middle of F's call, which only a schedule other than the runs' own gives: bench/verdicts' lookup, connFor)."""
    nd = getattr(r, "nondeterministic", None) or {}
    if getattr(r, "schedules", None) is not None or not (nd.get("shared") or nd.get("globals")):
        return []
    return ["    Other goroutines ran beside it; only the orders these runs took were tried: --schedules N runs the",
            "    first chain again under N PCT schedules of every thread, where a race between goroutines shows."]


def verdict(r) -> list[str]:
    if getattr(r, "vacuous", False):
        why = ", ".join(f"{k} {n:,}" for k, n in sorted(r.refused.items(), key=lambda kv: -kv[1])[:3])
        return [f"FAIL: nothing was injected: the runtime refused all {r.points:,} point(s) ({why}), as preemu's "
                "oracle predicted,",
                "    so nothing the stub saves or restores was tested (preemption never lands in assembly or with "
                "asyncpreemptoff=1):",
                f"    sweep a function {r.func} calls, or the Go code around it."]
    if r.ok and not r.injected and r.gc is not None:      # --gc-points sync: the cycles at calls were the checks
        n = r.gc.get("sync_points", 0)
        return [f"OK: no injection (--gc-points sync): at {n:,} call site(s) the runtime's cycle stopped the goroutine in "
                "a callee's",
                "    prologue and scanned every frame precisely; nothing it freed was used afterwards, and "
                f"{r.func}'s results",
                "    and the program's output equal the uninterrupted run" + _compared(r)]
    if r.ok:
        return (["OK: the runtime's decision matched preemu's oracle at every signal; every injection came back with",
                 f"    the 14 GPRs, RBP, RFLAGS and {getattr(r, 'vector', 'XMM0-15')} bit-exact and the stack at and above "
                 "the interrupted RSP",
                 f"    untouched; {r.func}'s results and the program's output equal the uninterrupted run"
                 + _compared(r)]
                + ([f"    {r.vector_note}"] if getattr(r, "vector_note", "") else [])
                + _schedules_hint(r)
                + ([("    The runtime's concurrent GC scanned the goroutine at the points it ran at"
                     if r.gc.get("mode") == "concurrent" else "    The runtime's GC ran at every injection")
                    + (" and at the call sites" if r.gc.get("points", "all") != "async" else "")
                    + "; nothing it freed was used afterwards."] if r.gc is not None else []))
    return failure_lines(r.violations, r.violation_count, r.violation_groups)
