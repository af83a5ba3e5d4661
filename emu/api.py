"""The Python API: what `preemu sweep`, `preemu run` and `preemu check-stub` do, as functions.

Each function returns the result object the CLI renders (`.ok`, `.violations`, `.to_json()`,
`.render()`, `.summary()`), and raises `EmuError` (one type) for bad input: an unreadable or
wrong file, an assembly error (file:line), a scenario key, an unknown register or layout, a
guest fault outside the stub, a runaway loop. A failed check is never an exception: it is a
result whose `.ok` is False. The CLI (cli.py) is a thin layer over these functions.

    import emu
    rep = emu.check_stub("my_stub.s", layout="go1.14", max_points=200)
    if not rep.ok:
        print(rep.summary())
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .drive import checkstub, loader, scenario
from .output import report
from .core import layout as L
from .core.errors import BudgetExceeded, EmuError, GuestFault
from .model.gmp import World
from .core.program import Program
from .drive.sweeper import DEFAULT_BUDGET, SweepResult
from .drive.sweeper import sweep as _sweep
from .check.verify import Violation

PathLike = str | os.PathLike


def _positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise EmuError(f"{name} must be a positive integer (got {value!r})")


def _layout(name: str) -> str:
    try:
        return L.get_layout(name).name
    except KeyError:
        raise EmuError(f"unknown layout {name!r} (known: {', '.join(sorted(L.LAYOUTS))})") from None


def _readable(path: PathLike, what: str) -> str:
    p = os.fspath(path)
    try:
        os.stat(p)
    except OSError as e:         # no such file, a name too long, a directory on the way that is not one
        why = "no such file" if isinstance(e, FileNotFoundError) else (e.strerror or str(e)).lower()
        raise EmuError(f"{p}: cannot read {what}: {why}") from None
    return p


def _stub(stub: PathLike | None) -> str | None:
    """The stub as reports show it: None, a file, or (for Go input) "real" or "generated"."""
    if stub is None or stub in ("real", "generated"):
        return stub
    return display_path(_readable(stub, "the stub"))


def display_path(p: PathLike) -> str:
    """A path as reports show it: relative to the working directory when that is shorter."""
    s = os.fspath(p)
    try:
        rel = os.path.relpath(s)
    except ValueError:
        return s
    return rel if len(rel) < len(os.path.abspath(s)) else os.path.abspath(s)


@dataclasses.dataclass
class SweepReport:
    """One sweep of one goroutine: what `preemu sweep` prints."""

    result: SweepResult = dataclasses.field(repr=False)
    program: Program = dataclasses.field(repr=False)        # the user's program
    stub_program: Program = dataclasses.field(repr=False)   # the asyncPreempt stub it ran with
    source: str                 # the program's file, as shown
    stub: str | None            # the user's stub file, or None for the generated one
    layout: str

    @property
    def ok(self) -> bool:
        """True when no violation was found."""
        return self.result.ok

    @property
    def violations(self) -> list[Violation]:
        """The violations kept (the first 200; `violation_count` has the total)."""
        return self.result.violations

    @property
    def violation_count(self) -> int:
        return self.result.violation_count

    def to_json(self) -> dict[str, Any]:
        """The object `preemu sweep --json` prints (schema "preemu/sweep/1")."""
        return report.to_json(self.result, self.program, self.source)

    def render(self, table: bool = False) -> str:
        """The text `preemu sweep` prints."""
        return report.render_text(self.result, self.program, self.source,
                                  loader.stub_description(self.program, self.layout, self.stub), table)

    def summary(self) -> str:
        """The verdict: OK, or FAIL with one paragraph per violated register, flag or address."""
        return "\n".join(report.sweep_verdict(self.result)) + "\n"


@dataclasses.dataclass
class ScenarioReport:
    """One scenario file run: what `preemu run` prints. `kind` is "sweep" or "schedule"."""

    scenario: Any                                  # scenario.Scenario or scenario.SchedScenario
    kind: str                                      # "sweep" or "schedule"
    checks: list                                   # [scenario.Check]: the expectations, each ok or not
    result: Any = dataclasses.field(repr=False)    # SweepResult or sched.SchedResult
    source: str                                    # the scenario's .s file, as shown
    program: Program | None = dataclasses.field(default=None, repr=False)
    stub_program: Program | None = dataclasses.field(default=None, repr=False)
    layout: str = "go1.14"
    elapsed: float = 0.0                           # wall seconds of the run

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def ok(self) -> bool:
        """True when every expectation of the scenario holds."""
        return all(c.ok for c in self.checks)

    @property
    def violations(self) -> list[Violation]:
        """A sweep scenario's violations (a scheduler scenario has none: it checks figures)."""
        return self.result.violations if self.kind == "sweep" else []

    @property
    def failed_checks(self) -> list:
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        """The object `preemu run --json` prints (schema "preemu/run/1" or "preemu/run-schedule/1")."""
        if self.kind == "schedule":
            return report.sched_json(self.result, self.scenario, self.source, self.checks)
        return report.scenario_json(self.result, self.program, self.source, self.scenario, self.checks)

    def render(self, table: bool = False) -> str:
        """The text `preemu run` prints."""
        if self.kind == "schedule":
            return report.render_sched(self.result, self.scenario, self.source, self.checks)
        stub = str(self.scenario.stub) if self.scenario.stub else None
        return report.render_scenario(self.result, self.program, self.source, self.scenario, self.checks,
                                      loader.stub_description(self.program, self.layout, stub), table)

    def summary(self) -> str:
        """The failed expectations and, for a sweep scenario, the violation summary."""
        lines = [f"scenario {self.name}: {'PASS' if self.ok else 'FAIL'}"]
        lines += [f"  [FAIL] {c.name}: {c.detail}" for c in self.failed_checks]
        if self.kind == "sweep" and not self.result.ok:
            lines += report.sweep_verdict(self.result)
        return "\n".join(lines) + "\n"


#: where --gc's cycles run on Go input (emu/drive/gsync.py for "sync")
GC_POINTS = ("all", "async", "sync")


def sweep(path: PathLike, func: str, *, registers: Mapping[str, int | str] | None = None,
          layout: str | None = None, stub: PathLike | None = None, seed: int = 1, max_points: int = 100_000,
          budget: int = DEFAULT_BUDGET, gc: bool | str = False, gc_scanner: str = "go", force_unsafe: bool = False,
          async_preemption: bool = True, nested_signals: bool = False, jobs: int = 1, executor: str | None = None,
          results: PathLike | None = None, progress: bool = False,
          on_world: Callable[[World], None] | None = None, runner: Callable[[World], Any] | None = None,
          call: int = 1, to_exit: int = 3, args: Sequence[str] = (), env: Sequence[str] = (),
          test: str | None = None, bench: str | None = None, each_pc: bool = False, gc_points: str = "all",
          cpu: str = "v1", schedules=None):
    """Deliver the preemption signal at every instruction boundary of `func` in `path` (a .s file,
    a Go binary, a .go file or a Go package directory) and verify each injection (`preemu sweep`).

    Go input is swept inside its real program (emu/drive/realsweep.py; the result is a
    sweep_report.RealSweepReport): the program runs from its entry with `args` and `env` (KEY=VALUE) to
    the `call`-th call of `func` (with `registers`: to main.main's, where `func` is entered instead with
    those ABIInternal registers), and `to_exit` points each also run on to the program's exit; `gc` runs the
    runtime's own GC cycle at injections (emu/goruntime/realgc.py): "scan" (or True) a cycle at every safe injection
    with the goroutine parked through it (GODEBUG=gcstoptheworld=2), "concurrent" the runtime's default cycle, the
    goroutine scanned at the injection by a mark worker and running on during mark; `gc_points` says where the cycles
    run: "all" (the default), "async" (at injections only) or "sync" (at the call sites of the function's package
    only, every frame scanned precisely: emu/drive/gsync.py). force_unsafe, nested_signals, a layout
    and gc_scanner belong to preemu's model world (.s input): Go input given one is refused. `test` (a test or
    example name) or `bench` (a benchmark's): `path` is a package directory whose test binary preemu builds
    (`go test -c`) and runs in that directory with only that test (`-test.run '^NAME$' -test.short`), and
    `func` is a function of the package (`Max`, `ring.(*Ring).Move` or its full import path) called by it.
    cpu (Go input): the CPU level, "v1" (default) to "v4" (core/cpulevel.py): at "v3"/"v4" the program is
    built for that level with GOEXPERIMENT=simd, its AVX instructions run in preemu's vector unit, and every
    resume is checked on Y0-15 (v3) or Z0-31 and K0-7 (v4); .s input only runs at v1/v2.
    schedules (Go input): None, or (seeds, depth, replay): after the sweep, its first chain again under those PCT
    schedules at that depth (emu/drive/gschedules.py); `replay(seed)` is the command a failure names.

    registers: entry values, numbers or `;@data` symbols ("src", "dst+16"); unset ones are seeded
    random. layout: "go1.14" or "go1.27" (default: go1.27 for Go input, else go1.14). stub: your own
    asyncPreempt (.s) instead of the generated one (for Go input: the binary's own by default, or
    "generated"). max_points caps the injections (the first instance of every static PC is tried).
    jobs: local processes for the shards; executor: "dask://HOST:PORT" (default: $DASK_SCHEDULER_ADDRESS)
    sends them to a Dask cluster;
    results: a JSON-lines file of finished shards (an interrupted sweep resumes from it); progress: a
    bar on stderr (points, rate, ETA; Go input's moves at every point), or a bar factory of your own
    (emu.drive.shards.ShardRunner). Whatever these are, the result (timing aside) is the same. gc (.s
    input): preemu's model of the collector at every point, its stack scanner `gc_scanner`.
    on_world(world) is called with the built World before the sweep (the CLI warns about entry
    registers there); runner(world) may return a shard runner of your own (emu.drive.shards) instead.
    """
    _positive("max_points", max_points)
    _positive("jobs", jobs)
    _positive("budget", budget)
    src = display_path(_readable(path, "the program"))
    from .front import gobuild
    from .goruntime import realgc
    go_input = gobuild.is_go_input(src)
    gc = (realgc.mode_of(gc) if go_input or gc is not True else True) or False   # .s input: gc=True is the model
    if gc_points not in GC_POINTS:
        raise EmuError(f"gc_points={gc_points!r}: one of {', '.join(GC_POINTS)}")
    if gc_points != "all" and not gc:
        raise EmuError(f"gc_points={gc_points!r} says where --gc's cycles run: add gc")
    if go_input:
        model = [flag for kw, flag in model_world_options(force_unsafe, nested_signals, layout,
                                                          None if gc_scanner == "go" else gc_scanner)]
        if model:
            raise EmuError(f"{', '.join(model)}: preemu's model world only (.s input); a Go program is swept in "
                           "its real program, where its own runtime decides, injects and collects")
        test_ = gobuild.test_selection(test, bench)

        def one(name: str, process=None):
            return _sweep_real(src, name, registers, stub, seed, max_points, budget, async_preemption, jobs,
                               executor, results, progress, call, to_exit, args, env, gc, test_, process, each_pc,
                               gc_points, cpu, schedules)
        from .drive import manysweep
        if manysweep.is_pattern(func):
            if schedules is not None:
                raise EmuError("schedules: one function's sweep (its first chain under PCT schedules); a pattern "
                               "sweeps many")
            shared = None
            if not gc and call == 1 and not registers:      # one start-up for all (manysweep._shared)
                shared = _real_spec(src, func, registers, stub, seed, call, args, env, gc, test_,
                                    async_preemption, cpu)[0]
            return _sweep_many(src, func, test_, one, progress, shared)
        return one(func)
    if call != 1 or to_exit != 3 or args or env or test or bench or each_pc:
        raise EmuError("call, to_exit, args, env, test, bench and each_pc apply to Go input, swept in its real "
                       "program")
    if gc_points != "all":
        raise EmuError("gc_points applies to Go input (the runtime's own collector)")
    if cpu not in ("v1", "v2"):
        raise EmuError(f"--cpu {cpu}: .s input runs in preemu's model world, which has no AVX (v1/v2); a Go "
                       "program's sweep runs at any level")
    if gc == "concurrent":
        raise EmuError("gc='concurrent' runs a Go program's own collector in its default mode: Go input only (.s "
                       "input has preemu's model, gc=True)")
    gc = bool(gc)
    stub_s = _stub(stub)
    program = loader.load_program(src)
    lay = _layout(layout or loader.default_layout(program))
    world = loader.build_world(program, func, lay, stub_s, seed, dict(registers or {}), gc=gc, scanner=gc_scanner)
    entry = world.program.func_for(world.entry).name
    if on_world is not None:
        on_world(world)
    if runner is None:
        def runner(w: World):
            return _shard_runner(_world_spec(src, entry, lay, stub_s, seed, registers, gc, gc_scanner),
                                 w, jobs, executor, results, progress)
    from .engine.interrupt import ctrl_c
    with ctrl_c(lambda: world.machine):
        res = _sweep(world, entry, seed, max_points, budget, force_unsafe=force_unsafe,
                     async_preemption=async_preemption, nested_signals=nested_signals, runner=runner(world))
    return SweepReport(res, program, world.machine.stub, src, stub_s, lay)


def model_world_options(force_unsafe: bool, nested_signals: bool, layout, gc_scanner) -> list[tuple[str, str]]:
    """The sweep options given that only preemu's model world has (.s input), each as (the API's keyword, the
    CLI's flag): a Go program given any of them is refused."""
    return [names for names, on in ((("force_unsafe", "--force-unsafe"), force_unsafe),
                                    (("nested_signals", "--nested-signals"), nested_signals),
                                    (("layout", "--layout"), layout is not None),
                                    (("gc_scanner", "--gc-scanner"), gc_scanner is not None)) if on]


def _sweep_many(src: str, pattern: str, test: tuple, one, progress: bool, shared=None):
    """Every function of the program's own package matching `pattern`, each swept at its first call
    (emu/drive/manysweep.py): a ManySweepReport. `shared`: the program's RealSpec, for one start-up for all;
    None: one each (with --gc, whose collector watches one goroutine of a process)."""
    import sys
    import time
    from .drive import manysweep
    from .front import gobuild
    from .linux import elfimage
    from .output import many_report
    res = gobuild.build(src, test=bool(test))
    pkg = res.package or "main"
    packages = (pkg, pkg + "_test") if test else ("main",)
    t0, c0 = time.perf_counter(), time.process_time()

    def say(i, n, name):
        if progress:
            print(f"preemu: [{i}/{n}] {name}", file=sys.stderr, flush=True)
    funcs = manysweep.sweep_all(src, pattern, packages, elfimage.load(str(res.binary)), one, say, shared)
    return many_report.ManySweepReport(manysweep.ManyResult(src, pattern, test, funcs, time.perf_counter() - t0,
                                                            time.process_time() - c0))


def _real_spec(src: str, func: str, registers, stub, seed: int, call: int, args, env, gc: bool | str, test: tuple,
               async_preemption: bool, gc_points: str = "all", cpu: str = "v1"):
    """(the RealSpec of a Go function's sweep, the stub file or None), the options checked."""
    from .drive import realsweep
    if not isinstance(call, int) or isinstance(call, bool) or call < 1:
        raise EmuError(f"call must be a positive integer, counted from 1 (got {call!r})")
    for kv in env:
        if "=" not in kv:
            raise EmuError(f"env {kv!r}: write KEY=VALUE")
    if gc and any(kv.split("=", 1)[0] == "GOGC" and kv.split("=", 1)[1].strip().lower() in ("off", "-1")
                  for kv in env):
        raise EmuError("--gc runs the program's own GC at every injection; GOGC=off disables it")
    if not async_preemption:
        env = realsweep.with_godebug(list(env), "asyncpreemptoff=1")
    if stub == "generated":                 # preemu's stub for the binary's layout, loaded over its own (at
        from .core import stubgen           # v3/v4 the simd flavour: the AVX2/AVX-512 paths chosen by CPUID)
        stub = str(stubgen.stub_path("go1.27", simd=cpu in ("v3", "v4")))
    stub_s = None if stub in (None, "real") else _readable(stub, "the stub")
    spec = realsweep.RealSpec(os.path.abspath(src), func, call, realsweep.check_registers(registers),
                              None if stub_s is None else os.path.abspath(stub_s),
                              tuple((realsweep.test_argv(src, *test) if test else realsweep.default_argv(src))
                                    + list(args)), tuple(env), seed, gc, test, gc_points, cpu)
    return spec, stub_s


def _sweep_real(src: str, func: str, registers, stub, seed: int, max_points: int, budget: int,
                async_preemption: bool, jobs: int, executor, results, progress: bool, call: int, to_exit: int,
                args, env, gc: bool | str = False, test: tuple = (), process=None, each_pc: bool = False,
                gc_points: str = "all", cpu: str = "v1", schedules=None):
    """A Go function swept inside its real program (emu/drive/realsweep.py; `process`: the shared process of
    a pattern sweep, stopped at the function's first call; `schedules`: None or (seeds, depth, replay), the
    first chain again under those PCT schedules: gschedules.py)."""
    from .drive import realsweep
    from .output import realsweep_report as sweep_report
    if not isinstance(to_exit, int) or isinstance(to_exit, bool) or to_exit < 0:
        raise EmuError(f"to_exit must be 0 or more (got {to_exit!r})")
    spec, stub_s = _real_spec(src, func, registers, stub, seed, call, args, env, gc, test, async_preemption,
                              gc_points, cpu)
    if each_pc and gc:
        raise EmuError("--each-pc and --gc: a --gc sweep injects along the swept run itself, whose boundaries the "
                       "cycles change; give one of them")
    from .drive import shards
    from .engine.interrupt import ctrl_c
    built: list = []                    # the sweep, once built: its boot already runs the program, under ctrl_c
    try:
        with ctrl_c(lambda: built[0].p if built else None):
            sw = spec.build(process)
            built.append(sw)
            if stub_s is not None:
                sw.stub = f"{display_path(stub_s)} (loaded over runtime.asyncPreempt)"
            runner = shards.ShardRunner(spec, jobs, executor, None if results is None else os.fspath(results),
                                        progress, sw)
            res = realsweep.sweep(spec, sw, src, max_points, budget, to_exit, runner=runner, each_pc=each_pc,
                                  schedules=schedules)
    except shards.Interrupted as e:
        e.live = e.live or (built[0].live_summary() if built else "")
        raise
    except KeyboardInterrupt:
        raise shards.Interrupted([], 0, built[0].live_summary() if built else "") from None
    return sweep_report.RealSweepReport(res, src, None if stub_s is None else display_path(stub_s), sw)


def _world_spec(src: str, entry: str, layout: str, stub: str | None, seed: int, registers, gc: bool = False,
                scanner: str = "go", stack_size: int | None = None):
    """What a worker process needs to build the same World (emu.drive.shards.WorldSpec)."""
    from .core import memmap
    from .drive import shards
    return shards.WorldSpec(src, entry, layout, stub, seed, tuple(dict(registers or {}).items()), gc, scanner,
                            stack_size or memmap.DEFAULT_STACK_SIZE)


def _shard_runner(spec, world: World, jobs: int, executor: str | None, results: PathLike | None, progress: bool):
    """The shard runner for these options (with jobs=1 and nothing else, the shards run here one after
    another; a Ctrl-C still raises shards.Interrupted with the shards finished so far)."""
    from .drive import shards
    return shards.ShardRunner(spec, jobs, executor, None if results is None else os.fspath(results), progress, world)


def run_scenario(path: PathLike, *, layout: str | None = None, max_points: int | None = None,
                 async_preemption: bool | None = None, stub: PathLike | None = None, jobs: int = 1,
                 executor: str | None = None, results: PathLike | None = None, progress: bool = False,
                 runner: Callable[[World], Any] | None = None) -> ScenarioReport:
    """Run a scenario file (`preemu run`) and check its expectations.

    A sweep scenario honours `layout` and `max_points`, and runs its shards as `sweep` does (jobs,
    executor, results, progress); a scheduler scenario (one with [[goroutines]]) honours
    `async_preemption`, and with `progress` shows the virtual time run so far on stderr once the run takes
    more than 2 s. `stub` replaces the generated stub in a scenario that does not name its own.
    """
    _positive("max_points", max_points)
    _positive("jobs", jobs)
    sc = scenario.load(_readable(path, "the scenario"))
    if stub is not None and sc.stub is None:
        sc = dataclasses.replace(sc, stub=Path(_readable(stub, "the stub")))
    src = display_path(sc.asm)
    t0 = time.perf_counter()
    if isinstance(sc, scenario.SchedScenario):
        if max_points is not None or layout is not None:
            raise EmuError("max_points and layout apply to sweep scenarios (this one has [[goroutines]])")
        import sys
        shown = scenario.progress_printer(sc.duration_ms, sys.stderr) if progress else None
        try:
            res, checks = scenario.run_sched(sc, async_preemption, shown)
        finally:
            if shown is not None:
                shown.finish()
        return ScenarioReport(sc, "schedule", checks, res, src, layout=sc.layout, elapsed=time.perf_counter() - t0)
    if async_preemption is not None:
        raise EmuError("async_preemption applies to scheduler scenarios (with [[goroutines]])")
    lay = _layout(layout or sc.layout)
    if runner is None:
        spec = _world_spec(str(sc.asm), sc.entry, lay, None if sc.stub is None else str(sc.stub), sc.seed,
                           sc.registers, sc.gc, sc.gc_scanner, sc.stack_size)

        def runner(w: World):
            return _shard_runner(spec, w, jobs, executor, results, progress)
    try:
        program, world, res, checks = scenario.run(sc, lay, max_points, runner)
    except (BudgetExceeded, GuestFault) as e:           # name the scenario (and its key) as well
        raise EmuError(f"{os.fspath(path)}: {str(e).replace('with --budget', 'with `budget = N` in the scenario')}") \
            from None
    return ScenarioReport(sc, "sweep", checks, res, src, program, world.machine.stub, lay,
                          time.perf_counter() - t0)


def corpus_loops(layout: str | None = None) -> list[str]:
    """The names of the regression corpus loops `check_stub` sweeps: one per sweep scenario, and in the go1.27
    layout (or with no layout given) the real-program loops `go:NAME`."""
    real = list(checkstub.REAL_LOOPS) if layout in (None, "go1.27") else []
    return [sc.name for sc in checkstub.corpus()] + real


def _go_stub_layout(stub: str, layout: str | None) -> str:
    """The world a Go program's own asyncPreempt is checked in: its release's (goreleases.py). Go 1.21-1.25
    keep X0-X15 in the stub's frame, as the go1.14 layout does, and touch no g/m/p field, so they run in
    that world; Go 1.26 and 1.27 save them in g.m.p.xRegs, which the go1.27 world lays out at Go 1.27.3's
    offsets: a Go 1.26 program runs there when its DWARF puts every field preemu models at the same place."""
    from .front import gobuild, golayout, goreleases
    from .core import gostructs
    res = gobuild.build(stub)
    version = res.go_version or gobuild.go_version()
    rel = goreleases.release_of(version, stub)
    want = rel.layout
    if want == "go1.27" and rel.minor != 27:
        mine, typed = golayout.struct_tables(res.binary), gostructs.typed_tables()
        if (mine.g, mine.m, mine.p) != (typed.g, typed.m, typed.p):
            raise EmuError(f"{stub}: {version}'s asyncPreempt reads g.m.p.xRegs where {rel.name}'s DWARF puts "
                           f"them, not where Go 1.27.3 does as preemu's go1.27 world has them: check it inside "
                           f"its own program with `preemu sweep PROG --func F`")
    if layout not in (None, want):
        raise EmuError(f"{stub}: a {rel.name} program's runtime.asyncPreempt runs in the {want} world, not "
                       f"{layout}'s: drop --layout (a Go program's release decides it)")
    return want


def check_stub(path: PathLike, *, layout: str | None = None, max_points: int = 2000,
               loops: Sequence[str] | None = None, seed: int = 1,
               on_report: Callable[[checkstub.StubReport], None] | None = None,
               jobs: int = 1, cpu: str = "v1") -> checkstub.StubReport:
    """Sweep the whole regression corpus (or the named `loops`) with your asyncPreempt stub at
    `path` in the Go `layout` world (`preemu check-stub`); a GC at every point, every preemption
    resumed on the other M and P, a canary below the declared headroom. `path` may also be a Go
    program (binary, .go file, package directory): its own runtime.asyncPreempt, in its release's world.
    Without a layout, a .s stub's is told from its code (checkstub.stub_layout: where it saves the X
    registers; an EmuError when it cannot tell) and the report says so (`layout_note`). on_report(report) is
    called as soon as the report exists; it fills as the corpus runs (the CLI prints it when interrupted).
    jobs: local processes, one corpus loop per task (the report is in corpus order whatever jobs is). cpu: the
    CPU level (v3/v4: the real-program loops only, built for the level; checkstub.check)."""
    from .front import gobuild
    _positive("max_points", max_points)
    _positive("jobs", jobs)
    stub = display_path(_readable(path, "the stub"))
    note = ""
    if gobuild.is_go_input(stub):
        layout = _go_stub_layout(stub, layout)
    elif layout is None:
        layout, note = checkstub.stub_layout(stub)
    lay = _layout(layout)
    given_report = on_report

    def on_report(rep: checkstub.StubReport) -> None:
        rep.layout_note = note
        if given_report is not None:
            given_report(rep)
    if loops is not None:
        known = corpus_loops()
        unknown = [n for n in loops if n not in known]
        if unknown:
            raise EmuError(f"unknown corpus loop(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return checkstub.check(stub, lay, max_points, tuple(loops) if loops is not None else None, seed, on_report,
                           jobs, cpu)
