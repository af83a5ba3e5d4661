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
from ..core.errors import EmuError
from ..check.verify import Violation
from ..linux import crashtext, realgc
from .gsweep import Ending, RealSweep, Reference, ReferenceEnded

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
    gc: dict | None = None            # with --gc: the runtime's cycles (realsweep.gc_stats, summed over shards)
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


def _global_name(eff, key) -> str:
    return key if isinstance(key, str) else (eff.symbol_of(key) or f"{key:#x}")


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
            out.append(sw.make_violation("final-state", _global_name(eff, addr), a, b, k, pc,
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
    if points != SYNC_CHAIN:
        return _chain_shard(sw, ref, index, points, opts, each_pc)
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
                 each_pc: int | None = None) -> S.ShardResult:
    c0 = time.process_time()
    stats: dict = {}
    pcs = None
    if each_pc is not None:
        from . import eachpc
        listener, reached, ending, seen, decided = eachpc.chain(sw, each_pc, stats)
        points, pcs = range(reached), {"distinct": len(seen), "decided": len(decided & seen)}
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
                          **({"gc": gc} if gc is not None else {}), **({"each_pc": pcs} if pcs else {})})


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


def gc_stats(sw: RealSweep, listener) -> dict:
    """What the cycles of one run did (JSON-ready: shards carry it across processes)."""
    g = sw.gc
    injected = [pt.boundary for pt in listener.points if pt.event.outcome == "injected"]
    # parked at the injection: gopreempt_m left G _Grunnable, or preemptPark _Gpreempted (suspendG then claims it
    # as _Gwaiting before scanstack)
    parked = [s for s in g.scans if s.status in ("_Grunnable", "_Gwaiting") and s.async_safe_point]
    at_injection = [s for s in g.scans if s.async_safe_point]
    sample = at_injection[len(at_injection) // 2] if at_injection else (g.scans[0] if g.scans else None)
    phases = {0: "_GCoff", 1: "_GCmark", 2: "_GCmarktermination"}
    return {"mode": g.mode, "injections": len(injected), "cycles": g.cycles, "freed": g.freed_total,
            "scans_at_injection": len(parked), "uses_after_free": len(g.uaf),
            "stopped_by": dict(Counter(s.path or "not at an injection" for s in g.scans if s.kind == "async")),
            "sync_stopped_by": dict(Counter(s.path or "not at the call" for s in g.scans if s.kind != "async")),
            "scan_phases": dict(Counter(phases.get(s.phase, str(s.phase)) for s in g.scans)),
            "stw_at_point": sum(1 for pt in listener.points if getattr(pt, "stw", None) is not None),
            "sync_points": sum(1 for pt in listener.points if pt.kind != "async"),
            "sync_sites": len(sw.sync.sites) if sw.sync is not None else 0,
            "cycles_by_kind": dict(g.cycle_kinds),
            "scans_by_kind": dict(Counter(s.kind for s in g.scans)),
            "points": sw.gc_points,
            "kept_by_stale_words": len(g.survivors),
            "quarantined": len(g.quarantine.held) if g.quarantine is not None else 0,
            "unasked": getattr(g, "unasked", 0),
            "survivors": [{"object": f"{sv.obj.addr:#x}", "size": sv.obj.size, "type": sv.obj.type,
                           "kept_at": sv.kept_at, "word": sv.word, "freed_at": sv.obj.boundary}
                          for sv in g.survivors[:SURVIVORS_SHOWN]],
            "mark_instructions": g.mark_insns, "write_barriers": g.barriers["wb"],
            "bulk_barriers": g.barriers["bulk"], "assists": g.barriers["assist"],
            "sample": None if sample is None else {"boundary": sample.boundary, "status": sample.status,
                                                   "path": sample.path, "frames": [list(f) for f in sample.frames]}}


def merge_gc(acc: dict | None, g: dict) -> dict:
    """gc_stats of two chains as one: counts added, the first chain's sample and settings kept."""
    if acc is None:
        acc = {key: 0 for key in _GC_SUMS} | {"mode": g.get("mode", "scan"), "sample": g["sample"],
                                              "points": g.get("points", "all"), "sync_sites": g.get("sync_sites", 0),
                                              "survivors": []}
        acc |= {key: {} for key in _GC_COUNTERS}
    acc = dict(acc)
    for key in _GC_SUMS:
        acc[key] = acc.get(key, 0) + g.get(key, 0)
    for key in _GC_COUNTERS:
        acc[key] = dict(Counter(acc.get(key, {})) + Counter(g.get(key, {})))
    for key in ("sync_sites", "sync_reached", "sync_waiting"):      # set by the one call-site shard
        acc[key] = max(acc.get(key, 0), g.get(key, 0))
    if acc.get("sample") is None:
        acc["sample"] = g.get("sample")
    acc["survivors"] = (acc.get("survivors", []) + g.get("survivors", []))[:SURVIVORS_SHOWN]
    return acc


#: conservative survivors listed in a report (all are counted)
SURVIVORS_SHOWN = 10

#: gc_stats' tallies by name, added key by key
_GC_COUNTERS = ("stopped_by", "sync_stopped_by", "scan_phases", "cycles_by_kind", "scans_by_kind")

#: the task of --gc's call-site chain (gsync.py), in place of its points
SYNC_CHAIN = ("sync",)

#: gc_stats' counts, summed over shards
_GC_SUMS = ("injections", "cycles", "freed", "scans_at_injection", "uses_after_free", "stw_at_point", "unasked",
            "mark_instructions", "write_barriers", "bulk_barriers", "assists", "sync_points", "kept_by_stale_words",
            "quarantined")


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
                           ref.unstable.describe(lambda g: _global_name(sw.effects, g)), paths, spec.test,
                           (results[0].extra or {}).get("each_pc") if each_pc else None, vector_state(sw.p),
                           vector_note(sw.p), alone=sum(1 for r in results if r.points) + len(ends),
                           schedules=pct)


def vector_state(p) -> str:
    """What the resume check compared beyond the GPRs and RFLAGS in process `p`: XMM0-15, Y0-15, or Z0-31 and
    K0-7, the state its stub saves at the CPU level (linux/stubsaves.py: a default build's, XMM0-15 at any level),
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
        return {_global_name(sw.effects, g) for g in u.globals}

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


def _failed_uninterrupted(spec: RealSpec, sw: RealSweep, source: str, ending: Ending, t0: float,
                          c0: float) -> RealSweepResult:
    """The result of a sweep whose uninterrupted run ended the program before F returned (a crash, an exit):
    a schedule finding (the program fails under the one schedule preemu ran it in, with no injection) and no
    point swept."""
    said = next((ln for ln in (ending.stderr + ending.stdout).decode(errors="replace").splitlines()
                 if ln.strip() and not ln.startswith("=== ")), "")
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


def schedule_findings(sw: RealSweep, ref: Reference, test: str | None = None) -> list[Violation]:
    """The legitimate runs (no injection) that ended with a failing status where another ended otherwise:
    the program fails under some schedule (references.failing_schedules). Under `--test`, a test that failed in
    every legitimate run is a finding too: the program fails by itself, before preemption changes anything."""
    out = []
    u = ref.unstable
    codes = ", ".join(str(c) for c in sorted(u.endings, key=str))
    for label, e in references.failing_schedules(u):
        said = next((ln for ln in (e.stdout + e.stderr).decode(errors="replace").splitlines()
                     if ln.strip() and not ln.startswith("=== ")), "")
        out.append(sw.make_violation("schedule", "program exit status", f"one ending in every legitimate run "
                                     f"(they ended with statuses {codes})", f"exit status {e.exit_code}"
                                     + (f": {said[:100]!r}" if said else ""), 0, sw.entry,
                                     f"in {label}, without any injection: the program fails under that schedule"))
    e = ref.ending
    if test and not out and e is not None and e.exit_code not in (0, None):
        said = next((ln.strip() for ln in (e.stdout + e.stderr).decode(errors="replace").splitlines()
                     if ln.strip() and not ln.startswith(("=== ", "--- FAIL"))), "")
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
