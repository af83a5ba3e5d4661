"""`preemu explain PROGRAM [--test NAME] --schedule SEED [--depth D]`: the story of one PCT schedule's run
(emu/linux/schedule.py), thread by thread: the decisions that mattered, what each thread did between them, and
how the program then ended. Text here; `--json` is `to_json`; the page is schedhtml.py, from the same JSON.

What it mirrors. The run is `preemu exec ... --schedule SEED --depth D` itself (drive/schedules.replay: the same
calibration, k and boot, the program's seed exec's default), with the process's slice log on (opts.trace, as
`exec --trace`: it keeps the slices and syscalls, and the run's instructions are the same, which
tests/test_explain_schedule.py checks against exec). Between two slices the run loop calls `on_slice`; there
the story notes which thread ran, how many instructions and steps (the schedule's counter only advances while
the thread that executes a step runs, so a slice's steps are that thread's), where it stopped and in which state,
and which decisions the schedule made in that slice. A change point's decision is made in the slice it ends.

The lanes are threads (the Ms), because PCT schedules threads: a goroutine runs on whichever M the Go scheduler
gives it. The chapters of the story are cut at the change points (the decisions that mattered: a thread's
priority dropped below every other's, so the others run first); fairness demotions (schedule.py's bound on a
spinner) are told where they fell, as the schedule's own bookkeeping rather than the bug's.

Left out: the goroutines each M ran (the runtime's g is not followed), the instructions between two steps (a
slice's summary is its counts and where it stopped), other processes' threads (fork/execve), and exec's other
options (--cpus, --quantum, ...): the story replays with exec's defaults, as `--schedules` found it without them.
"""
from __future__ import annotations

import os
import shlex
from collections import OrderedDict
from dataclasses import dataclass, field

from .. import __version__
from ..linux.schedule import FAIR_BUDGET
from ..output.fit import fit
from ..output.report import SCHEMAS

#: lines of a failing run's output the story quotes
FAIL_LINES = 6


@dataclass
class Segment:
    """One slice: a thread ran `insns` instructions from `start_ns` to `end_ns` (virtual, since boot)."""
    tid: int
    thread: str
    start_ns: int
    end_ns: int
    insns: int
    step0: int                 # the schedule's step count when the slice began ...
    step1: int                 # ... and when it ended
    then: str                  # the thread's state after it: runnable, blocked (futex), exited
    pc: int                    # where it stood after the slice
    where: str = ""
    decisions: list[int] = field(default_factory=list)   # indexes into Story.decisions

    def to_json(self) -> dict:
        return {"tid": self.tid, "thread": self.thread, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "instructions": self.insns, "step_from": self.step0, "step_to": self.step1, "then": self.then,
                "pc": f"{self.pc:#x}", "where": self.where, "decisions": self.decisions}


@dataclass
class Story:
    target: str
    test: tuple
    argv: list
    seed: int
    depth: int
    k: int
    steps: int
    insns: int
    virtual_ns: int
    exit_code: int | None
    why: str | None
    stdout: str
    stderr: str
    threads: list[dict]              # tid, name, in order of first appearance
    decisions: list[dict]            # the schedule's decisions, with source, time and segment
    segments: list[Segment]
    chapters: list[dict]
    failure: dict
    replay: str
    points: int = 0                  # the change points the schedule drew (partners included: linux/schedule.py)

    @property
    def ok(self) -> bool:
        return self.why is None


def _state(t) -> str:
    from ..linux.threads import BLOCKED, EXITED
    if t.state == EXITED:
        return "exited"
    if t.state == BLOCKED:
        return f"blocked ({t.wait.kind})" if t.wait is not None else "blocked"
    return "runnable"


def _open_source(file: str, root: str):
    """The source file as the line table names it (a `-trimpath` build names it by module path,
    example.com/mod/pkg/f.go): itself, or its path's tails under the program's directory `root`."""
    parts = file.split("/")
    for cand in [file] + [os.path.join(root, *parts[i:]) for i in range(len(parts))]:
        if os.path.isfile(cand):
            return open(cand, errors="replace")
    raise OSError(file)


def _source(binary, pc: int, root: str = ".") -> tuple[str, int, str]:
    """(file name, line, the line's text when the source file is readable) of pc, or ("", 0, "")."""
    try:
        f = binary.func_for(pc)
        if f is None:
            return "", 0, ""
        file, line = binary.file_line(f, pc)
    except (ValueError, IndexError, LookupError):
        return "", 0, ""
    if not line:
        return "", 0, ""
    text = ""
    try:
        with _open_source(file, root) as fh:
            for i, ln in enumerate(fh, start=1):
                if i == line:
                    text = ln.strip()
                    break
    except OSError:
        pass
    return os.path.basename(file), line, text


def replay_command(target: str, test: tuple, seed: int, depth: int, env=(), args=()) -> str:
    """The `preemu exec` command that replays this schedule (and that `--schedules` printed)."""
    argv = ["exec", target]
    if test:
        argv += [f"--{test[0]}", test[1]]
    for kv in env:
        argv += ["--env", kv]
    argv += ["--schedule", str(seed), "--depth", str(depth)]
    if args:
        argv += ["--", *args]
    return "preemu " + shlex.join(argv)


def tell(image, opts, seed: int, depth: int, package: str | None, target: str, test: tuple = (),
         env=(), args=()) -> Story:
    """Replay schedule (seed, depth) of the program with its slice log and build the story."""
    from dataclasses import replace

    from ..drive import schedules
    from ..front.gobinary import GoBinary
    from ..linux import process
    from unicorn import x86_const as X
    segs: list[Segment] = []
    names: dict[int, str] = {}
    seen_decisions = [0]
    last = {"insns": 0, "steps": 0}

    def on_slice(p) -> None:
        t, s = p.cur, p.schedule
        n = p.insns - last["insns"]
        steps = s.steps
        new = list(range(seen_decisions[0], len(s.decisions)))
        seen_decisions[0] = len(s.decisions)
        if t is not None and (n or new):
            names.setdefault(t.tid, t.name)
            end = p.slices[-1].end_ns if p.slices else p.clock
            pc = t.ctx.reg_read(X.UC_X86_REG_RIP) if t.ctx is not None else 0
            segs.append(Segment(t.tid, t.name, end - n * p.opts.ns_per_insn - p.boot_ns, end - p.boot_ns, n,
                                last["steps"], steps, _state(t), pc, decisions=new))
        last["insns"], last["steps"] = p.insns, steps

    calls = [0]

    def ctrl(p) -> None:                 # replay's first run calibrates k; the second is the story's
        calls[0] += 1
        p.on_slice = on_slice if calls[0] == 2 else None
        process.Process.run(p)

    run, k = schedules.replay(image, replace(opts, trace=True, passthrough=None), seed, depth, package, ctrl)
    p = run.proc
    binary = GoBinary.open(image.path)
    root = target if os.path.isdir(target) else os.path.dirname(os.path.abspath(target))
    decisions = []
    seg_of = {i: si for si, sg in enumerate(segs) for i in sg.decisions}
    for i, d in enumerate(run.schedule.decisions):
        file, line, text = _source(binary, d.pc, root)
        j = d.to_json()
        j.update(where=d.where + (f" ({file}:{line})" if line else ""), file=file, line=line, source=text, segment=seg_of.get(i),
                 time_ns=segs[seg_of[i]].end_ns if i in seg_of else None)
        decisions.append(j)
    for sg in segs:
        file, line, _ = _source(binary, sg.pc, root)
        sg.where = "" if sg.then == "exited" else p.image.describe(sg.pc) + (f" ({file}:{line})" if line else "")
    threads = [{"tid": tid, "name": nm} for tid, nm in names.items()]
    return Story(target, tuple(test), list(opts.argv), seed, depth, k, run.schedule.steps, run.insns,
                 run.virtual_ns, run.exit_code, run.why, run.stdout, run.stderr, threads, decisions, segs,
                 _chapters(segs, decisions), _failure(run, p, names), replay_command(target, test, seed, depth,
                                                                                     env, args),
                 len(run.schedule.change))


def _chapters(segs: list[Segment], decisions: list[dict]) -> list[dict]:
    """The run cut at the change points: per chapter, per thread, what it did (slices, instructions, steps, how
    its last slice ended) and the fairness demotions that fell in it."""
    cuts = [d["segment"] for d in decisions if d["kind"] == "change-point" and d["segment"] is not None]
    bounds = [-1, *cuts, len(segs) - 1]
    out = []
    for c in range(len(bounds) - 1):
        lo, hi = bounds[c] + 1, bounds[c + 1]
        part = segs[lo:hi + 1]
        if not part:
            continue
        per: "OrderedDict[int, dict]" = OrderedDict()
        for sg in part:
            a = per.setdefault(sg.tid, {"tid": sg.tid, "thread": sg.thread, "slices": 0, "instructions": 0,
                                        "steps": 0})
            a["slices"] += 1
            a["instructions"] += sg.insns
            a["steps"] += sg.step1 - sg.step0
            a["then"], a["where"] = sg.then, sg.where
        fair = [i for sg in part for i in sg.decisions if decisions[i]["kind"] == "fair-demotion"]
        ends = next((i for i in part[-1].decisions if decisions[i]["kind"] == "change-point"), None) \
            if c < len(cuts) else None
        out.append({"from_ns": min(sg.start_ns for sg in part), "to_ns": max(sg.end_ns for sg in part), "step_from": part[0].step0,
                    "step_to": part[-1].step1, "segments": [lo, hi], "threads": list(per.values()),
                    "fair_demotions": fair, "ends_with": ends})
    return out


def _failure(run, p, names: dict[int, str]) -> dict:
    """How the run ended: why (schedules.failure), the exit, which thread ended the process, the output's
    failing lines."""
    ender = next(((t, tid) for t, tid, nm, _a, _r in reversed(p.syscall_log) if nm in ("exit_group", "exit")),
                 None)
    text = (run.stdout + "\n" + run.stderr).splitlines()
    marks = ("--- FAIL", "panic:", "fatal error:", "FAIL")
    first = next((i for i, ln in enumerate(text) if ln.lstrip().startswith(marks)), None)
    lines = [ln for ln in text[first:first + FAIL_LINES] if ln.strip()] if first is not None else []
    return {"failed": run.why is not None, "why": run.why, "exit_code": run.exit_code,
            "time_ns": (ender[0] - p.boot_ns) if ender else run.virtual_ns,
            "by": ({"tid": ender[1], "thread": names.get(ender[1], "?")} if ender else None), "lines": lines}


def to_json(story: Story) -> dict:
    return OrderedDict(
        tool="preemu", version=__version__, schema=SCHEMAS["explain-schedule"], command="explain",
        binary=story.target, test=list(story.test) or None, argv=story.argv, seed=story.seed, depth=story.depth,
        k=story.k, steps=story.steps, instructions=story.insns, virtual_ns=story.virtual_ns,
        threads=story.threads, decisions=story.decisions, chapters=story.chapters,
        segments=[s.to_json() for s in story.segments], failure=story.failure, replay=story.replay,
        ok=story.ok)


def _ms(ns: int | None) -> str:
    return "?" if ns is None else f"{ns / 1e6:.3f} ms"


def _decision_text(d: dict, n: int | None = None) -> list[str]:
    head = f"  {n}. " if n is not None else "    "
    what = "stopped before" if d["kind"] == "change-point" else "demoted (fairness) at"
    out = [f"{head}step {d['step']}, t = {_ms(d['time_ns'])}: thread {d['thread']}({d['tid']}) {what} "
           f"{d['where']}"]
    pad = " " * len(head)
    if d["source"]:
        out.append(f"{pad}   {d['file']}:{d['line']}:  {d['source']}")
    if d["kind"] == "change-point":
        out.append(f"{pad}   its priority drops to {d['priority']:g}, below every thread's first one: the others "
                   "run before it until they block or finish")
    if d.get("partner_of") is not None:
        out.append(f"{pad}   (the partner of the change point at step {d['partner_of']}: just below the thread "
                   "stopped there, which runs again before it)")
    return out


def render_text(story: Story) -> str:
    j = story
    test = f" --{j.test[0]} {j.test[1]}" if j.test else ""
    cps = [d for d in j.decisions if d["kind"] == "change-point"]
    verdict = f"FAILED: {j.why}" if j.why else "passed (exit status 0)"
    out = [f"preemu explain: {j.target}{test}  schedule {j.seed}  depth {j.depth}  k = {j.k} steps",
           f"verdict: {verdict}",
           f"the run: {j.insns:,} instructions, {_ms(j.virtual_ns)} virtual, {j.steps} step{'s' if j.steps != 1 else ''}, "
           f"{len(j.segments)} slices on {len(j.threads)} threads "
           f"({', '.join(t['name'] + '(' + str(t['tid']) + ')' for t in j.threads)}); a thread is an M, "
           "which runs whichever goroutine the Go scheduler gives it; the CPUs run side by side, so the times "
           "of two threads' slices overlap while the steps count in the order the schedule ran them",
           "",
           f"The decisions that mattered ({len(cps)} change point{'s' if len(cps) != 1 else ''} of {j.points}"
           f"{'; the others fell after the run ended' if len(cps) < j.points else ''}):"]
    for n, d in enumerate(cps, start=1):
        out += _decision_text(d, n)
    if not cps:
        out.append("  none: depth 1, or every change point's step lies beyond the run")
    out += ["", "Thread by thread:"]
    for c, ch in enumerate(j.chapters):
        a = "the start" if c == 0 else f"change point {c}"
        b = f"change point {c + 1}" if ch["ends_with"] is not None else "the end"
        out.append(f"[{a} -> {b}] t = {_ms(ch['from_ns'])} .. {_ms(ch['to_ns'])}, steps {ch['step_from']}.."
                   f"{ch['step_to']}")
        for t in ch["threads"]:
            steps = (f"{t['steps']} step{'s' if t['steps'] != 1 else ''}" if t["steps"]
                     else "no steps (runtime or library code only)")
            at = f" at {t['where']}" if t["where"] else ""
            out.append(f"  {t['thread']}({t['tid']}): {t['slices']} slice{'s' if t['slices'] != 1 else ''}, "
                       f"{t['instructions']:,} instructions, {steps}; then {t['then']}{at}")
        for i in ch["fair_demotions"]:
            d = j.decisions[i]
            out.append(f"  (fairness) step {d['step']}: {d['thread']}({d['tid']}) ran {FAIR_BUDGET:,} instructions while "
                       f"others waited: demoted at {d['where']}")
        if ch["ends_with"] is not None:
            d = j.decisions[ch["ends_with"]]
            out.append(f"  => change point {c + 1}: {d['thread']}({d['tid']}) stopped before {d['where']}")
    f = j.failure
    by = f" ({'exit_group' if f['by'] else 'end'} by {f['by']['thread']}({f['by']['tid']}))" if f["by"] else ""
    out += ["", f"How it {'failed' if f['failed'] else 'ended'}: t = {_ms(f['time_ns'])}{by}: "
                f"{f['why'] or 'exit status ' + str(f['exit_code'])}"]
    out += [f"  | {ln}" for ln in f["lines"]]
    out.append(f"replay: {j.replay}")
    return "\n".join(fit(out)) + "\n"
