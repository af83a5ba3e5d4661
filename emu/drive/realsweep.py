"""A Go function swept inside its real program, as `preemu sweep` and `emu.sweep` run it: the spec a worker
rebuilds the process from, the shards, the checks at F's return and at the exit, and the merged result.

The coordinator builds the process to F's call (gsweep.RealSweep), runs the reference, chooses the points
(sweep.select_points) and cuts them into shards of SHARD_POINTS; each shard rebuilds the same snapshot from
the spec (the program and options determine it), runs uninterrupted to its first point and injects at its
points in one chain, then compares F's results and globals at the return and the program's ending with the
reference. Shards run where emu.drive.shards runs them (here, --jobs processes, Dask), with a results file to
resume from and progress; the result does not depend on where they ran. `to_exit` points then get a run of
their own each (one injection, on to the exit).
"""
from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field

from . import references, shards
from . import sweeper as S
from .findings import confirm, gc_violations, global_name, reference_findings, schedule_findings
from .gcstats import gc_stats, merge_gc
from ..core.errors import EmuError
from ..check.verify import Violation
from ..goruntime import crashtext, realgc
from .gsweep import RealSweep
from .runrecords import Ending, Reference, ReferenceEnded

#: points per shard: fixed, so the plan depends on the points only (never on --jobs or the executor)
SHARD_POINTS = 2_000
ABI_INT_REGS = ("RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11")


@dataclass(frozen=True)
class RealSpec:
    """Everything a process needs to rebuild the same snapshot: program, function, call, entry registers,
    stub, arguments, environment, seed."""

    asm: str                                   # the program (binary, .go file or package directory)
    entry: str
    call: int = 1
    registers: tuple = ()                      # ((ABI register, value), ...) for --reg entry
    stub: str | None = None
    argv: tuple = ()
    env: tuple = ()
    seed: int = 1
    gc: bool | str = False                     # the runtime's own GC cycle at injections: "scan" (True) or
    #                                            "concurrent" (realgc.py)
    test: tuple = ()                           # ("test" | "bench", NAME): the package's test binary running it
    gc_points: str = "all"                     # --gc's points: "all", "async" (injections) or "sync" (calls: gsync.py)
    cpu: str = "v1"                            # the CPU level (--cpu): the process's, and a source build's GOAMD64

    def build(self, process=None) -> RealSweep:
        """The sweep's process run to F's call (`process`: one a pattern sweep's start-up runs on, gsweep's
        next_first_call stopped at F's first call; None: a process of its own)."""
        image, opts, regs, stub, res = self.parts()
        return RealSweep(image, opts, self.entry, self.call, regs, stub, res.source_path, gc=self.gc,
                         package=res.package, process=process, gc_points=self.gc_points)

    def parts(self) -> tuple:
        """(image, process options, entry registers, stub (name, code) or None, BuildResult): what a process of
        this spec is made of, whatever function it sweeps."""
        from ..front import gobuild, goreleases
        from ..linux import elfimage, process
        res = gobuild.build(self.asm, test=bool(self.test), goamd64=self.cpu)
        version = res.go_version or gobuild.go_version()
        rel = goreleases.release_of(version, str(res.binary))              # one preemu reads, or exit 2
        if self.gc and rel.minor < 22:
            raise EmuError(f"--gc: {self.asm} was built by {version}; the heap watch reads spans as Go 1.22 and "
                           f"later lay them out (malloc headers, mspan.largeType)")
        image = elfimage.load(str(res.binary))
        if self.test:
            check_test_exists(image.symbols, res.package, *self.test)
        regs = {}
        for name, v in self.registers:
            regs[name] = v if isinstance(v, int) else image.resolve(str(v), f"--reg {name}", data=True)
        if self.stub is None:
            stub = None
        elif gobuild.is_go_input(self.stub):          # a Go program's own asyncPreempt, moved into this one
            stub = (self.stub, transplant(self.stub, image))
        else:
            stub = (self.stub, stub_code(self.stub, image))
        setting = realgc.godebug(realgc.mode_of(self.gc))
        env = with_godebug(list(self.env), setting) if setting else list(self.env)
        opts = process.Options(argv=list(self.argv), env=env, seed=self.seed, cpu=self.cpu,
                               cwd=self.asm if self.test else None)    # go test runs in the package directory
        return image, opts, regs, stub, res

    @staticmethod
    def run(sw: RealSweep, ref, index, points, start, opts) -> S.ShardResult:
        return run_shard(sw, ref, index, points, opts)


def with_godebug(env: list[str], setting: str) -> list[str]:
    """env with `setting` (KEY=VALUE) added to its GODEBUG (one GODEBUG variable: the runtime reads the first)."""
    out, done = [], False
    for kv in env:
        if kv.startswith("GODEBUG=") and not done:
            kv, done = kv + ("," if kv != "GODEBUG=" else "") + setting, True
        out.append(kv)
    return out if done else out + [f"GODEBUG={setting}"]


def transplant(program: str, image) -> bytes:
    """The runtime.asyncPreempt of Go program `program`, to load over `image`'s: its bytes with its CALL to
    asyncPreempt2 retargeted at `image`'s. Any other reference out of the function (RIP-relative data, a CALL
    elsewhere) cannot be moved: a clear error."""
    import capstone

    from ..front import gobuild
    from ..front.gofront import redirect_stub_call
    from ..linux import elfimage
    src = elfimage.load(str(gobuild.build(program).binary))
    at, size = src.symbols["runtime.asyncPreempt.abi0"]
    code = bytearray(src.text_bytes(at, size))
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    redirect_stub_call(code, at, image.symbol("runtime.asyncPreempt.abi0"),
                       ((a, mn, ops) for a, _, mn, ops in md.disasm_lite(bytes(code), at)),
                       lambda target: (src.func_at(target) or (None, 0))[0],
                       image.symbol("runtime.asyncPreempt2"), program, "into another program")
    return bytes(code)


def stub_code(path: str, image) -> bytes:
    """Assemble a stub file (Intel syntax, the .s front end) at runtime.asyncPreempt's address, its CALL to
    asyncPreempt2 resolved to the binary's runtime.asyncPreempt2, a simd stub's X86HasAVX2/X86HasAVX512 to the
    binary's internal/cpu.X86 feature bytes: the bytes to load over the binary's stub."""
    from ..core import stubgen
    from ..front import asmfront
    at = image.symbol("runtime.asyncPreempt.abi0")
    externs = {"asyncPreempt2": image.symbol("runtime.asyncPreempt2")}
    x86 = image.symbols.get("internal/cpu.X86")
    if x86 is not None:
        externs.update({name: x86[0] + off for name, off in stubgen.X86_SYMBOLS.items()})
    prog = asmfront.assemble_file(path, at, externs, package="runtime", asm=True)
    if not prog.has_func("asyncPreempt"):
        raise EmuError(f"{path}: the stub must define the label `asyncPreempt` (its entry point)")
    code = bytearray()
    for addr, blob in sorted(prog.code):
        code[addr - at:addr - at + len(blob)] = blob
    return bytes(code)


def check_registers(registers) -> tuple:
    """--reg for Go input: ABIInternal's integer argument registers, numbers or global symbols."""
    from ..core import regs
    out = []
    for k, v in dict(registers or {}).items():
        try:
            name = regs.lookup(k).name
        except KeyError:
            raise EmuError(f"--reg {k}: unknown register") from None
        if name not in ABI_INT_REGS:
            raise EmuError(f"--reg {k}: Go input takes its arguments in ABIInternal's integer registers "
                           "(RAX, RBX, RCX, RDI, RSI, R8-R11)")
        if isinstance(v, str):
            try:
                v = int(v, 0)
            except ValueError:
                pass                            # a global's name, resolved against the binary
        out.append((name, v & (1 << 64) - 1 if isinstance(v, int) else v))
    return tuple(out)


@dataclass
class RealSweepResult:
    """What a sweep of a Go function in its real program found (rendered by sweep_report)."""
    source: str
    func: str
    call: int
    entered: str                      # "called" (the program's own N-th call) or "entered" (--reg)
    stub: str
    seed: int
    boundaries: int
    points: int
    injected: int
    refused: Counter
    violations: list
    violation_count: int
    violation_groups: Counter
    elapsed: float
    cpu: float
    per_pc: dict                      # pc -> Counter(verdict)
    ending: Ending                    # the reference run's
    results: dict                     # F's results in the reference run, as text
    reached: int                      # points the chains reached (< points when F returned sooner)
    to_exit: list                     # [(boundary, ok, detail)]
    other_preemptions: int = 0
    oracle_note: str = ""
    shards: int = 1
    entry: str = field(default="")    # = func (the name reports of every sweep use)
    gc: dict | None = None            # with --gc: the runtime's cycles (gcstats.gc_stats, summed over shards)
    nondeterministic: dict | None = None   # what differed between uninterrupted runs (references.Unstable.describe)
    paths: Counter | None = None      # injections at the points by the path watch.py saw them take (watch.PATHS)
    test: tuple = ()                  # ("test" | "bench", NAME): F was called by that test of its package
    each_pc: dict | None = None       # --each-pc: {"distinct": PCs G executes, "decided": of them decided}
    vector: str = "XMM0-15"           # the vector state every resume compared, at the sweep's --cpu level
    vector_note: str = ""             # why that is less than the level has (vector_note), or ""
    alone: int = 0                    # points tested with no earlier injection in their run (chains' first, to-exit)
    schedules: object = None          # --schedules/--schedule: gschedules.SweepSchedules, else None

    @property
    def ok(self) -> bool:
        """No violation, and something was injected (issue #46 item 5: a sweep the runtime refused at every point
        tested the oracle's refusals only, never the stub: not OK, `vacuous`)."""
        return self.violation_count == 0 and not self.vacuous

    @property
    def vacuous(self) -> bool:
        """Nothing was tested: no injection, and no cycle at a synchronous point either (`--gc-points sync` makes
        no injection: its checks are the cycles with the goroutine stopped at calls, gsync.py)."""
        synced = (self.gc or {}).get("sync_points", 0)
        return self.points > 0 and self.injected == 0 and not synced and self.violation_count == 0


def _finals(sw: RealSweep, ref: Reference, ending: Ending, last) -> list[Violation]:
    """The chain's F-return and exit checks against the reference, at the keys the references agreed on
    (references.py)."""
    out = []
    u = ref.unstable or references.Unstable()
    k, pc = (last.boundary, last.pc) if last else (0, sw.entry)
    if sw.returned is None:
        return [crashtext.crash_violation(sw, ending, k, pc, f"{sw.func} never returned: the injections up to this "
                                          "boundary, then on to the exit") or
                sw.make_violation("final-state", "control flow", f"{sw.func} returns", "it never returned", k, pc,
                                  f"the program ended: {ending.reason}")]
    _, results, globs = sw.returned
    for name, a, b in references.results_diff(ref, results):
        out.append(sw.make_violation("final-state", f"result {name}", a, b, k, pc,
                                     f"{sw.func}'s result differs from the uninterrupted run"))
    eff = sw.effects
    for addr in sorted(set(globs) | set(ref.globals), key=str):
        a = ref.globals.get(addr) or eff.start_token(addr)
        b = globs.get(addr) or eff.start_token(addr)
        if a != b and addr not in u.globals and not u.is_shared(eff, addr):
            out.append(sw.make_violation("final-state", global_name(eff, addr), a, b, k, pc,
                                         f"a global {sw.func} changed differs from the uninterrupted run"))
            break
    for what, a, b in references.ending_diff(ref, ending):
        out.append(sw.make_violation("final-state", f"program {what}", a, b, k, pc,
                                     "after the injections, the program ended otherwise than uninterrupted"))
    return out


def run_shard(sw: RealSweep, ref: Reference, index: int, points, opts: S.ChainOptions,
              each_pc: int | None = None) -> S.ShardResult:
    """Inject at `points` in one chain from the snapshot; check each resume, F's return and the exit. With
    `each_pc` (a cap), the chain decides each PC of G at its first occurrence instead (eachpc.py). SYNC_CHAIN:
    --gc's call sites (gsync.py), in chains from the snapshot until every site G reached has had its cycle (a
    site reached while a cycle was running waits for the next chain: the concurrent mode's cycles are long)."""
    if each_pc is not None:
        return _each_pc_shard(sw, ref, index, opts, each_pc)
    if points != SYNC_CHAIN:
        return _chain_shard(sw, ref, index, points, opts)
    out = _chain_shard(sw, ref, index, points, opts)
    for _ in range(SYNC_ROUNDS - 1):
        before = len(sw.sync.done)
        if not sw.sync.waiting - sw.sync.done:
            break                                # every site reached has had its cycle
        nxt = _chain_shard(sw, ref, index, points, opts)
        _add_shard(out, nxt)
        if len(sw.sync.done) == before:
            break
    out.extra["gc"] |= {"sync_reached": len(sw.sync.reached), "sync_waiting": len(sw.sync.waiting - sw.sync.done)}
    return out


#: most chains a --gc sweep runs for its call sites (each serves at least one site no chain before it did)
SYNC_ROUNDS = 32
#: most passes --each-pc runs after its first for the reference run's PCs not decided yet (each decides one or more)
EACH_PC_ROUNDS = 32


def _each_pc_shard(sw: RealSweep, ref: Reference, index: int, opts: S.ChainOptions, cap: int) -> S.ShardResult:
    """--each-pc: the pass deciding each PC of G at its first occurrence (eachpc.chain), then, while PCs of the
    reference run's goroutine are not decided and `cap` allows, passes that leave out the PCs decided so far (each
    decides one or more). extra["each_pc"]: distinct (PCs G executed in a pass or the reference run), decided,
    reference (the reference run's PCs), reference_decided, beyond (PCs decided that the reference run does not
    execute: only injections led G there), rounds (the passes after the first), capped (`cap` was reached)."""
    from . import eachpc
    ref_pcs = eachpc.reference_pcs(sw)
    out = _chain_shard(sw, ref, index, (), opts, cap)
    seen, decided = out.extra.pop("each_pc")
    rounds = 0
    while ref_pcs - decided and len(decided) < cap and rounds < EACH_PC_ROUNDS:
        nxt = _chain_shard(sw, ref, index, (), opts, cap, decided)
        more_seen, more = nxt.extra.pop("each_pc")
        _add_shard(out, nxt)
        rounds += 1
        seen |= more_seen
        if not more - decided:
            break                           # no progress: the PCs left are reported as not decided
        decided |= more
    out.extra["each_pc"] = {"distinct": len(seen | ref_pcs), "decided": len(decided),
                            "reference": len(ref_pcs), "reference_decided": len(ref_pcs & decided),
                            "beyond": len(decided - ref_pcs), "rounds": rounds, "capped": len(decided) >= cap}
    return out


def _add_shard(out: S.ShardResult, more: S.ShardResult) -> None:
    """Another shard's counts added to out's: the call-site rounds' chains, and every shard of a sweep (a shard
    that ran in another process has PCs as strings, and no extra when it had nothing to add)."""
    out.points += more.points
    out.injected += more.injected
    out.refused.update(more.refused)
    out.violations.merge(more.violations)
    for pc, ps in more.per_pc.items():
        out.per_pc.setdefault(int(pc), S.PcStats(int(pc), Counter())).verdicts.update(ps.verdicts)
    out.cpu_seconds += more.cpu_seconds
    a, b = out.extra, more.extra or {}
    a["reached"] = a.get("reached", 0) + b.get("reached", more.points)
    a["other_preemptions"] = a.get("other_preemptions", 0) + b.get("other_preemptions", 0)
    a["paths"] = dict(Counter(a.get("paths", {})) + Counter(b.get("paths", {})))
    if b.get("gc") is not None:
        a["gc"] = merge_gc(a.get("gc"), b["gc"])


def _chain_shard(sw: RealSweep, ref: Reference, index: int, points, opts: S.ChainOptions,
                 each_pc: int | None = None, decided: set | None = None) -> S.ShardResult:
    """One chain: at `points`; with `each_pc` (a cap), a pass of --each-pc deciding the PCs not in `decided`
    (extra["each_pc"]: the PCs it saw and the PCs decided, `decided` included)."""
    c0 = time.process_time()
    stats: dict = {}
    pcs = None
    if each_pc is not None:
        from . import eachpc
        listener, reached, ending, seen, now = eachpc.chain(sw, each_pc, stats, decided)
        points, pcs = range(reached), (seen, now & (seen | (decided or set())))
    elif points == SYNC_CHAIN:                   # --gc: the call sites' cycles, one chain (gsync.py)
        listener, reached, ending = sw.chain((), stats, sync_only=True)
    else:
        listener, reached, ending = sw.chain(shards.ticking(points, index), stats)   # the bar moves point by point
    log = S.ViolationLog(opts.max_violations)
    log.extend(listener.violations)
    for w in sw.p.watch.violations:              # the oracle against the runtime, the handler's edits
        if w["kind"] == "resume-registers":
            continue                             # the listener reported those register by register
        pc = int(w.get("pc", "0x0"), 16)
        k = next((pt.boundary for pt in listener.points if pt.pc == pc), -1)
        log.append(sw.make_violation(w["kind"], f"{pc:#x}", "the runtime and preemu's oracle agree", "they differ",
                                     k, pc, w["message"]))
    log.extend(_finals(sw, ref, ending, listener.points[-1] if listener.points else None))
    gc = None
    if sw.gc is not None:
        log.extend(gc_violations(sw))
        gc = gc_stats(sw, listener)
    injected = sum(1 for pt in listener.points if pt.event.outcome == "injected")
    refused: Counter = Counter()
    for pt in listener.points:
        if pt.event.outcome != "injected":
            refused[pt.event.oracle or pt.event.outcome] += 1
    per_pc = {pc: S.PcStats(pc, c) for pc, c in stats.items()}
    n = reached if sw.gc is not None else len(points)      # --gc: a chain over the swept run's own boundaries
    return S.ShardResult(index, n, injected, 0, refused, log, per_pc, time.process_time() - c0, None,
                         {"reached": reached, "other_preemptions": listener.other_injections,
                          "paths": dict(listener.paths),
                          "swept_boundaries": sw.returned[0] if sw.returned is not None else None,
                          **({"gc": gc} if gc is not None else {}), **({"each_pc": pcs} if pcs is not None else {})})


#: the task of --gc's call-site chain (gsync.py), in place of its points
SYNC_CHAIN = ("sync",)


def spread(points: list[int], k: int) -> list[int]:
    """k of the points, the first and the last included, the rest evenly between."""
    if k <= 0 or not points:
        return []
    if k == 1:
        return [points[0]]
    n = len(points)
    return sorted({points[round(i * (n - 1) / (k - 1))] for i in range(min(k, n))})


def sweep(spec: RealSpec, sw: RealSweep, source: str, max_points: int = 100_000,
          budget: int = S.DEFAULT_BUDGET, to_exit: int = 3, max_violations: int = 200,
          runner=None, each_pc: bool = False, schedules=None) -> RealSweepResult:
    """Sweep F at every boundary (capped by max_points) in its real program; see the module docstring.
    each_pc: at each distinct PC's first boundary only (eachpc.py). schedules: None, or (seeds, depth, replay):
    the first chain again under those PCT schedules once the sweep is done (gschedules.py)."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        ref = references.establish(sw, budget, spec.seed)
    except ReferenceEnded as e:             # the program fails without any injection: nothing to sweep
        if sw.regs:                         # ... because of the registers --reg gave F: bad input
            raise EmuError(str(e)) from None
        return _failed_uninterrupted(spec, sw, source, e.ending, t0, c0)
    points = list(S.select_points(ref.boundaries, max_points))
    opts = S.ChainOptions(spec.seed, max_violations=max_violations)
    if spec.gc:
        # Each cycle changes what G runs next (the sweep flushes every mcache, so allocations refill), so G's
        # boundaries after the first cycle are not the reference's: one chain injects every `step`-th boundary
        # of the swept run itself, until F returns. max_points sets the step from the reference's boundaries;
        # the cycles lengthen G's run (assists, sweeping, refills), so more points than max_points may be tried
        # (the report says so: a cap would leave the end of F unswept).
        # With gc_points "all" (or "sync"), a second chain (or the only one) runs a cycle at each call site of F's
        # package instead, every frame precise (gsync.py): apart, so that the chains' cycles do not crowd each
        # other out (a concurrent cycle spans tens of thousands of G's instructions).
        step = -(-ref.boundaries // max_points)
        tasks = [] if spec.gc_points == "sync" else [(0, range(0, 1 << 62, step), None)]
        if spec.gc_points != "async":
            tasks.append((len(tasks), SYNC_CHAIN, None))
        plan = [(i, i + 1) for i in range(len(tasks))]
    else:
        plan = S.shard_plan(len(points), SHARD_POINTS)
        tasks = [(i, points[a:b], None) for i, (a, b) in enumerate(plan)]
    if each_pc:                             # one chain, which finds its points as it goes (eachpc.py)
        plan, tasks = [(0, 1)], []
    c1 = time.process_time()
    if each_pc:
        results = [run_shard(sw, ref, 0, (), opts, each_pc=max_points)]
    elif runner is None:
        results = [run_shard(sw, ref, i, pts, opts) for i, pts, _ in tasks]
    else:
        results = sorted(runner(tasks, ref, opts), key=lambda r: r.index)
    c0 += time.process_time() - c1 - sum(r.cpu_seconds for r in results)   # shards: their own CPU, wherever they ran
    total = S.ShardResult(-1, 0, 0, 0, Counter(), S.ViolationLog(max_violations), {}, extra={})
    for r in results:
        _add_shard(total, r)
    log, refused, injected = total.violations, total.refused, total.injected
    reached, other = total.extra.get("reached", 0), total.extra.get("other_preemptions", 0)
    paths, gc = Counter(total.extra.get("paths", {})), total.extra.get("gc")
    per_pc = {pc: ps.verdicts for pc, ps in total.per_pc.items()}
    ends = []
    for k in spread(points, to_exit):
        pt, end = sw.single(k)
        ends.append((k, end))
        diff = references.ending_diff(ref, end)
        for what, a, b in diff:
            log.append(sw.make_violation("final-state", f"program {what}", a, b, k, pt.pc if pt else sw.entry,
                                         "one injection at this boundary, then on to the exit: the program "
                                         "ended otherwise than uninterrupted"))
        if diff and (crash := crashtext.crash_violation(sw, end, k, pt.pc if pt else sw.entry,
                                                        "one injection at this boundary, then on to the exit")):
            log.append(crash)
        if sw.returned is not None:     # F's return too: this point alone, no earlier injection (issue #46 item 4)
            for v in _finals(sw, ref, end, pt):
                if not v.what.startswith("program "):        # the ending: compared above
                    v.detail = "one injection at this boundary alone: " + v.detail
                    log.append(v)
        if sw.gc is not None:
            log.extend(gc_violations(sw))
    confirm(sw, ref, budget, spec.seed, log)
    log.extend(reference_findings(sw, ref))
    log.extend(schedule_findings(sw, ref, spec.test[1] if spec.test and spec.test[0] == "test" else None))
    pct = None
    if schedules is not None and tasks:
        from . import gschedules
        seeds, depth, replay = schedules
        pct = gschedules.explore(sw, ref, tasks[0][1], seeds, depth, budget, replay)
        if pct.failing is not None:
            log.append(gschedules.violation(sw, pct, ref.ending.exit_code))
    checks = []
    for k, end in ends:
        d = references.ending_diff(ref, end)
        checks.append((k, not d, "; ".join(f"{w}: {a} -> {b}" for w, a, b in d)))
    tried = sum(r.points for r in results) if spec.gc or each_pc else len(points)
    if gc is not None:
        gc["step"] = step
        gc["swept_boundaries"] = (results[0].extra or {}).get("swept_boundaries") if results else None
    return RealSweepResult(source, sw.func, sw.call, "entered" if sw.regs else "called", sw.stub, spec.seed,
                           ref.boundaries, tried, injected, refused, log.kept, log.count, log.groups,
                           time.perf_counter() - t0, time.process_time() - c0, per_pc, ref.ending, ref.results,
                           reached, checks, other, sw.p.oracle_note, len(plan), sw.func, gc,
                           ref.unstable.describe(lambda g: global_name(sw.effects, g)), paths, spec.test,
                           (results[0].extra or {}).get("each_pc") if each_pc else None, vector_state(sw.p),
                           vector_note(sw.p), alone=sum(1 for r in results if r.points) + len(ends),
                           schedules=pct)


def vector_state(p) -> str:
    """What the resume check compared beyond the GPRs and RFLAGS in process `p`: XMM0-15, Y0-15, or Z0-31 and
    K0-7, the state its stub saves at the CPU level (goruntime/stubsaves.py: a default build's, XMM0-15 at any level),
    and vector_note's reason when that is less than the level has."""
    return p.watch.saved.describe()


def vector_note(p) -> str:
    """Why the resume check compared less than the CPU level has (stubsaves.py), or ""."""
    saved, level = p.watch.saved, p.level
    if saved == level.state:
        return ""
    missing = "AVX-512" if saved.vector == "Y" else "AVX"
    return (f"At --cpu {level.name} the binary's asyncPreempt saves only {saved.describe()} (no {missing} save path: "
            "built without GOEXPERIMENT=simd).")


def _failed_uninterrupted(spec: RealSpec, sw: RealSweep, source: str, ending: Ending, t0: float,
                          c0: float) -> RealSweepResult:
    """The result of a sweep whose uninterrupted run ended the program before F returned (a crash, an exit):
    a schedule finding (the program fails under the one schedule preemu ran it in, with no injection) and no
    point swept."""
    said = crashtext.first_said(ending)
    v = sw.make_violation("schedule", "program exit status", f"{sw.func} returns, as natively it may",
                          f"exit status {ending.exit_code}" + (f": {said[:100]!r}" if said else ""), 0, sw.entry,
                          f"in the uninterrupted run, without any injection, the program ended before {sw.func} "
                          "returned: it fails under that schedule, so no point could be swept")
    crash = crashtext.crash_violation(sw, ending, 0, sw.entry, "in the uninterrupted run, without any injection, "
                                      f"the program crashed before {sw.func} returned: no point could be swept")
    if crash is not None:
        crash.kind = "schedule"             # the program's own failure, found with no injection
        crash.expected = f"{sw.func} returns, as natively it may"
    log = S.ViolationLog()
    log.append(crash or v)
    return RealSweepResult(source, sw.func, sw.call, "entered" if sw.regs else "called", sw.stub, spec.seed, 0, 0, 0,
                           Counter(), log.kept, log.count, log.groups, time.perf_counter() - t0,
                           time.process_time() - c0, {}, ending, {}, 0, [], vector=vector_state(sw.p),
                           vector_note=vector_note(sw.p), test=spec.test)


def test_argv(path: str, kind: str, name: str) -> list[str]:
    """argv of a package's test binary running one test or example (kind "test") or benchmark ("bench"), as
    `go test -run '^NAME$' -short -count=1` runs it (cmd/go/internal/test: the binary is PKG.test, run in the
    package directory; a benchmark runs once, -benchtime=1x, with no test). NAME may name a subtest, A/B."""
    if not name or not re.fullmatch(r"[\w/.-]+", name):
        raise EmuError(f"--{kind} {name!r}: give the name of a {'benchmark' if kind == 'bench' else 'test or example'}"
                       f" (e.g. {'BenchmarkSum' if kind == 'bench' else 'TestSum, ExampleSum or TestSum/small'})")
    pattern = "/".join(f"^{part}$" for part in name.split("/"))
    base = os.path.basename(os.path.abspath(path).rstrip("/")) + ".test"
    common = ["-test.count=1", "-test.short", "-test.paniconexit0", "-test.timeout=10m0s"]
    if kind == "bench":
        return [base, "-test.run=^$", f"-test.bench={pattern}", "-test.benchtime=1x", *common]
    return [base, f"-test.run={pattern}", *common]


def check_test_exists(symbols: dict, package: str, kind: str, name: str) -> None:
    """An EmuError unless the test binary has the test, example or benchmark NAME (its top level, for A/B):
    the generated test main lists each in a table by its function (cmd/go/internal/load/test.go, the
    testmain template), so each is a function of the package or of its external _test package in the binary.
    Without it -test.run matches nothing and the run never reaches F."""
    top = name.split("/", 1)[0]
    pkgs = (package, package + "_test")
    if any(f"{pkg}.{top}" in symbols for pkg in pkgs):
        return
    prefixes = ("Benchmark",) if kind == "bench" else ("Test", "Example", "Fuzz")
    have = sorted({rest for n in symbols for pkg in pkgs if n.startswith(pkg + ".")
                   for rest in [n[len(pkg) + 1:]] if rest.startswith(prefixes) and "." not in rest})
    what = "benchmark" if kind == "bench" else "test or example"
    raise EmuError(f"--{kind} {name}: the package has no {what} {top}"
                   + (f" (it has {', '.join(have[:8])}{', ...' if len(have) > 8 else ''})" if have else
                      f" (it has no {what}s)"))


def default_argv(path: str) -> list[str]:
    """argv[0] of a swept program: the binary's name, or `prog` for sources (the name gobuild gives it)."""
    return [os.path.basename(path) if os.path.isfile(path) and not path.endswith(".go") else "prog"]
