"""`preemu sweep`: a function of a `.s` file (the model world) or of a Go program (the real process), every
boundary injected and verified; its options.
"""
from __future__ import annotations

from ..core import layout as L
from .common import (
    UsageError, _add_test_options, _check_regs, _common, _cpu_option, _emit, _model_world, _regs, _shard_options,
    warn)
from .schedules import _replay_command


def cmd_sweep(a, out) -> int:
    from .. import api
    from ..front import gobuild
    from ..drive import sweeper
    if a.call < 1:
        raise UsageError(f"--call {a.call}: calls are counted from 1")
    if a.to_exit is not None and a.to_exit < 0:
        raise UsageError(f"--to-exit {a.to_exit}: give a number of points, 0 or more")
    if gobuild.is_go_input(a.file):
        if _model_world(a):
            raise UsageError(f"{', '.join(_model_world(a))}: preemu's model world only (.s input); a Go program is "
                             "swept in its real program, where its own runtime decides, injects and collects")
        rep = api.sweep(a.file, a.func, registers=_regs(a.reg), stub=a.stub, seed=a.seed, max_points=a.max_points,
                        budget=a.budget or sweeper.DEFAULT_BUDGET, async_preemption=a.async_preemption == "on",
                        call=a.call, to_exit=3 if a.to_exit is None else a.to_exit, args=a.args, env=a.env or [],
                        gc=a.gc, test=a.test, bench=a.bench, each_pc=a.each_pc, gc_points=a.gc_points, cpu=a.cpu,
                        schedules=_sweep_schedules(a), **_shard_options(a))
        return _emit(a, rep, out, "" if a.json else rep.render(a.table))
    if a.cpu not in ("v1", "v2"):
        raise UsageError(f"--cpu {a.cpu}: .s input runs in preemu's model world, which has no AVX (v1/v2); a Go "
                         "program's sweep runs at any level")
    for opt, given in (("--schedules", a.schedules is not None), ("--schedule", a.schedule is not None),
                       ("--depth", a.depth is not None)):
        if given:
            raise UsageError(f"{opt} applies to Go input: PCT schedules steer a real program's threads")
    for opt, given in (("--call", a.call != 1), ("--to-exit", a.to_exit is not None), ("--env", a.env),
                       ("program arguments", a.args), ("--test", a.test), ("--bench", a.bench),
                       ("--each-pc", a.each_pc)):
        if given:
            raise UsageError(f"{opt} {'apply' if opt == 'program arguments' else 'applies'} to Go input, swept in "
                             "its real program")
    if a.gc_points != "all":
        raise UsageError("--gc-points applies to Go input (the runtime's own collector)")
    if a.gc_scanner is not None and not a.gc:
        raise UsageError("--gc-scanner chooses the stack scanner of --gc; add --gc")
    if a.gc == "concurrent":
        raise UsageError("--gc=concurrent runs a Go program's own collector in its default mode: Go input only "
                         "(.s input has preemu's model, --gc)")
    given = _regs(a.reg)
    rep = api.sweep(a.file, a.func, registers=given, layout=a.layout, stub=a.stub, seed=a.seed,
                    max_points=a.max_points, budget=a.budget or sweeper.DEFAULT_BUDGET, gc=a.gc,
                    gc_scanner=a.gc_scanner or "go", force_unsafe=a.force_unsafe,
                    async_preemption=a.async_preemption == "on", nested_signals=a.nested_signals,
                    on_world=lambda world: _check_regs(given, world), **_shard_options(a))
    if a.force_unsafe and rep.result.forced == 0:
        warn("--force-unsafe had no effect: Go's oracle refused no boundary of this run")
    return _emit(a, rep, out, "" if a.json else rep.render(a.table))


def _sweep_schedules(a):
    """sweep --schedules N / --schedule SEED [--depth D]: None, or (seeds, depth, replay) for api.sweep."""
    if a.schedules is None and a.schedule is None:
        if a.depth is not None:
            raise UsageError("--depth is a PCT schedule's depth: give it with --schedules N or --schedule SEED")
        return None
    if a.schedules is not None and a.schedule is not None:
        raise UsageError("--schedule SEED replays one schedule and --schedules N explores N: give one of them")
    if a.schedules is not None and a.schedules < 1:
        raise UsageError(f"--schedules must be at least 1, got {a.schedules}")
    if a.schedule is not None and a.schedule < 0:
        raise UsageError(f"--schedule takes a seed --schedules named (0 or more), got {a.schedule}")
    if a.depth is not None and a.depth < 1:
        raise UsageError(f"--depth must be at least 1 (D-1 change points), got {a.depth}")
    if a.each_pc:                    # its one chain finds its points as it goes: there is no first chain to re-run
        raise UsageError("--schedules/--schedule and --each-pc: a schedule re-runs the sweep's first chain of "
                         "injections; give one of them")
    from ..drive.schedules import DEFAULT_DEPTH
    depth = DEFAULT_DEPTH if a.depth is None else a.depth
    seeds = [a.schedule] if a.schedule is not None else list(range(1, a.schedules + 1))
    return seeds, depth, lambda seed: _replay_command(a, seed, depth, drop=("--schedules", "--schedule", "--depth"),
                                                      default=["sweep", a.file, "--func", a.func])


def _add_sweep(sub) -> None:
    """`preemu sweep` and its options."""
    s = sub.add_parser("sweep", help="inject the preemption signal at every boundary of a function and verify",
                       usage="preemu sweep FILE --func F [options] [-- PROGRAM ARGS]")
    s.add_argument("file", help="assembly file (.s, Intel syntax), Go binary, .go file or Go package directory")
    s.add_argument("--func", required=True, help="entry function of the goroutine")
    s.add_argument("--reg", action="append", metavar="NAME=VALUE",
                   help="entry register value (number or data symbol); repeatable")
    s.add_argument("--stub", help="use this asyncPreempt stub (.s) instead of the generated one; with Go input the "
                   "default is the binary's own runtime.asyncPreempt, `generated` selects preemu's go1.27 stub")
    s.add_argument("--layout", default=None, choices=sorted(L.LAYOUTS),
                   help=".s input: stub layout (default go1.14); a Go program has its own")
    s.add_argument("--seed", type=int, default=1, help="seed for unset registers and clobber values")
    s.add_argument("--budget", type=int, default=None, help="instruction budget of the goroutine (default 20000000)")
    s.add_argument("--force-unsafe", action="store_true",
                   help=".s input: inject even where Go refuses (teaching / verifier self-test): shows the damage")
    s.add_argument("--async-preemption", choices=["on", "off"], default="on",
                   help="off = GODEBUG=asyncpreemptoff=1: every SIGURG must leave the context untouched")
    s.add_argument("--gc", nargs="?", const=True, default=None, choices=["scan", "concurrent"], metavar="MODE",
                   help="run GC cycles at the points and report use-after-free: with Go input the runtime's own "
                   "collector, --gc or --gc=concurrent its default cycle (the goroutine's stack scanned at the point "
                   "by a mark worker's suspendG, the goroutine running on during mark: write barriers, assists), "
                   "--gc=scan a cycle at every safe injection with the goroutine parked through it "
                   "(GODEBUG=gcstoptheworld=2); both also run cycles at the function's call sites (--gc-points); "
                   "with .s input preemu's model of it")
    s.add_argument("--gc-points", default="all", choices=["all", "async", "sync"],
                   help="Go input with --gc: where the cycles run: all (the default), async (at injections, the "
                   "interrupted frame scanned conservatively) or sync (at the first execution of each call site of "
                   "the function's package, in the callee's prologue: every frame scanned precisely)")
    s.add_argument("--gc-scanner", default=None, choices=["go", "precise-interrupted", "skip-save-area"],
                   help=".s input with --gc: preemu's stack scanner, default go (the two mutants prove the "
                   "use-after-free oracle bites)")
    s.add_argument("--nested-signals", action="store_true",
                   help=".s input: also deliver SIGURG at every instruction of the stub, and again right after its RET")
    s.add_argument("--call", type=int, default=1, metavar="N",
                   help="Go input: sweep the N-th call of the function (default 1)")
    s.add_argument("--to-exit", type=int, default=None, metavar="K",
                   help="Go input: K points (first and last included, default 3) each also get a run of their "
                   "own: one injection, then on to the program's exit, compared with the uninterrupted ending")
    s.add_argument("--env", action="append", metavar="K=V", help="Go input: the program's environment; repeatable")
    _add_test_options(s)
    _cpu_option(s)
    s.add_argument("--each-pc", action="store_true",
                   help="Go input: decide every distinct PC of the goroutine once, at its first occurrence (one "
                   "point a PC instead of one a boundary; every PC of the uninterrupted run is decided, those only "
                   "injections lead to are counted apart; --max-points still caps them)")
    s.add_argument("--schedules", type=int, default=None, metavar="N",
                   help="Go input: after the sweep, run its first chain again under PCT schedules 1..N (every thread "
                   "steered by the schedule, with --gc the GC's workers too, the function's points the sweep's); a "
                   "failing program is a violation that names the seed and the command replaying it")
    s.add_argument("--schedule", type=int, default=None, metavar="SEED",
                   help="Go input: ... under that one schedule (the seed --schedules named)")
    s.add_argument("--depth", type=int, default=None, metavar="D",
                   help="with --schedules/--schedule: the PCT depth, D-1 change points and their partners (default 3)")
    s.set_defaults(args=[])          # Go input: the program's arguments, after `--` (split off in main)
    _common(s)
    s.set_defaults(fn=cmd_sweep)
