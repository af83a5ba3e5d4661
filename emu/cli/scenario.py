"""`preemu run` (a scenario file's expectations) and `preemu preempt` (one preemption request step by step):
the model world's commands and their options.
"""
from __future__ import annotations

import json

from ..core import layout as L
from ..core.errors import EmuError
from .common import UsageError, _check_regs, _common, _emit, _regs, _shard_options, _writable, _write_file


def cmd_run(a, out) -> int:
    from .. import api
    from ..drive import scenario
    from ..output import timeline
    asyncp = None if a.async_preemption is None else a.async_preemption == "on"
    sc = scenario.load(a.scenario)
    if isinstance(sc, scenario.SchedScenario):
        given = [opt for opt, on in (("--max-points", a.max_points is not None), ("--table", a.table),
                                     ("--layout", a.layout is not None)) if on]
        if given:
            raise UsageError(f"{', '.join(given)}: {'applies' if len(given) == 1 else 'apply'} to sweep scenarios; "
                             f"{a.scenario} is a scheduler scenario (it has [[goroutines]])")
        _writable(a.trace, "--trace")
        _writable(a.timeline, "--timeline")
    else:
        for opt in ("async_preemption", "trace", "timeline"):
            if getattr(a, opt) is not None:
                raise UsageError(f"--{opt.replace('_', '-')} applies to scheduler scenarios (with [[goroutines]])")
    rep = api.run_scenario(a.scenario, layout=a.layout, max_points=a.max_points, async_preemption=asyncp,
                           **_shard_options(a))
    if rep.kind == "schedule":
        res, code = rep.result, 0 if rep.ok else 1
        if a.trace:
            _write_file("--trace", a.trace, lambda: timeline.write_chrome_trace(a.trace, res, sc.name, sc.seed), code)
        if a.timeline:
            def write_svg() -> None:
                with open(a.timeline, "w") as f:
                    f.write(timeline.svg(res, f"{sc.name}: GOMAXPROCS={res.gomaxprocs}, async preemption "
                                              f"{'on' if res.async_preemption else 'off'}"))
            _write_file("--timeline", a.timeline, write_svg, code)
    return _emit(a, rep, out, "" if a.json else rep.render(a.table))


def cmd_preempt(a, out) -> int:
    from ..drive import episode, loader
    from ..output import report
    program = loader.load_program(a.file)
    given = _regs(a.reg)
    world = loader.build_world(program, a.func, a.layout, a.stub, a.seed, given)
    _check_regs(given, world)
    if loader.is_go(program):
        from ..drive import modelcheck, sweeper
        modelcheck.check(a.file, world, sweeper.DEFAULT_BUDGET)
    try:
        at = episode.resolve_at(world, a.at)
        retry = episode.DEFAULT_RETRY if a.retry is None else a.retry
        ep = episode.run_episode(world, at, a.async_preemption == "on", retry, a.max_wait, a.force_unsafe,
                                 a.signal_delay, a.gc_during_preemption)
    except ValueError as e:
        raise EmuError(str(e)) from None
    if a.json:
        json.dump(report.episode_json(ep, a.file, a.func), out, indent=1)
        out.write("\n")
    else:
        out.write(report.render_episode(ep, a.file, a.func, world.layout.name))
    return 0 if ep.ok else 1


def _add_preempt(sub) -> None:
    """`preemu preempt` and its options."""
    e = sub.add_parser("preempt", help="follow one preemption request step by step (pending requests, "
                       "retries, cooperative preemption)")
    e.add_argument("file", help="assembly file (.s, Intel syntax), Go binary, .go file or Go package directory")
    e.add_argument("--func", required=True, help="entry function of the goroutine")
    e.add_argument("--at", required=True, metavar="WHEN",
                   help="when sysmon asks: a boundary number, line:N or FUNC+OFFSET (its first execution)")
    e.add_argument("--reg", action="append", metavar="NAME=VALUE", help="entry register value; repeatable")
    e.add_argument("--async-preemption", choices=["on", "off"], default="on",
                   help="off = Go 1.13 / GODEBUG=asyncpreemptoff=1: only prologues can preempt")
    e.add_argument("--retry", type=int, default=None, metavar="N",
                   help="sysmon re-sends a refused signal every N instructions (default 50: compressed; "
                        "sysmon's own tick is 20 us-10 ms, 20000 instructions or more at 1 ns each)")
    e.add_argument("--signal-delay", type=int, default=0, metavar="N",
                   help="the signal arrives N instructions after the request (default 0)")
    e.add_argument("--max-wait", type=int, default=100_000, metavar="N",
                   help="give up N instructions after the request (default 100000)")
    e.add_argument("--force-unsafe", action="store_true", help="inject even where Go refuses; shows the damage")
    e.add_argument("--gc-during-preemption", action="store_true",
                   help="a GC mark phase turns the write barrier on while the goroutine is off CPU")
    e.add_argument("--stub", help="use this asyncPreempt stub instead of the generated one")
    e.add_argument("--layout", default=None, choices=sorted(L.LAYOUTS),
                   help="stub layout (default go1.14 for .s input, go1.27 for Go input)")
    e.add_argument("--seed", type=int, default=1)
    e.add_argument("--json", action="store_true")
    e.set_defaults(fn=cmd_preempt)


def _add_run(sub) -> None:
    """`preemu run` and its options."""
    r = sub.add_parser("run", help="run a scenario file and check its expectations")
    r.add_argument("scenario", help="scenario .toml file")
    r.add_argument("--layout", choices=sorted(L.LAYOUTS), help="override the scenario's stub layout")
    r.add_argument("--async-preemption", choices=["on", "off"],
                   help="scheduler scenarios: on = Go >= 1.14, off = Go 1.13 (overrides the scenario)")
    r.add_argument("--trace", metavar="OUT.json", help="scheduler scenarios: write a Chrome/Perfetto trace")
    r.add_argument("--timeline", metavar="OUT.svg", help="scheduler scenarios: write an SVG timeline")
    _common(r)
    r.set_defaults(fn=cmd_run)
