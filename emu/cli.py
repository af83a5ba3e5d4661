"""The `preemu` command: sweep, run, preempt, explain, check-stub, gen-stub, disasm, exec.

Exit codes: 0 all checks hold, 1 a check failed, 2 bad input (one line on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys

from . import __version__
from .core import layout as L
from .core.errors import EmuError

# Commands import what they use when they run: `preemu --help` and a small sweep pay for no module
# they do not need (bench/bench_sweep.py reports the fixed startup cost).


class _Parser(argparse.ArgumentParser):
    """preemu's parsers: no abbreviated options (`--cpu` must never be taken for `--cpus`), one-line errors."""

    def __init__(self, *args, **kw):
        kw["allow_abbrev"] = False
        super().__init__(*args, **kw)

    def error(self, message):  # exit 2 with one line (the usage is one `--help` away)
        print(f"preemu: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


class UsageError(EmuError):
    """An option value or combination the command cannot honour (exit 2, one line)."""


class OutputError(EmuError):
    """An output file that could not be written after the run (exit 2, or the run's own status if it failed)."""

    def __init__(self, message: str, run_code: int | None = None):
        super().__init__(message)
        self.run_code = run_code


def _why(e: OSError) -> str:
    return (e.strerror or str(e)).lower() if e.errno != errno.EBADF else "it is closed"


def _write_file(option: str, path: str, write, run_code: int | None = None) -> None:
    """write() the output file of `option`; a full disk or a device that refuses it is one clean line."""
    try:
        write()
    except OSError as e:
        failed = f"; exit status {run_code}: the run itself failed" if run_code else ""
        raise OutputError(f"{option} {path}: cannot write it ({_why(e)}){failed}", run_code) from None


class _Stream:
    """stdout or stderr for a command: a write that fails (a full disk, a closed descriptor: `> /dev/full`,
    `>&-`) is remembered, not raised in the middle of a run (an exec's program goes on, its output lost);
    main() reports it once the command has its exit status."""

    def __init__(self, stream, name: str):
        self.stream, self.name, self.error = stream, name, None

    def write(self, text: str) -> int:
        if self.error is None and text:
            try:
                if self.stream is None:     # Python's sys.stdout when descriptor 1 was closed (`>&-`)
                    raise OSError(errno.EBADF, "it is closed")
                self.stream.write(text)
            except OSError as e:
                self._failed(e)
        return len(text)

    def flush(self) -> None:
        if self.error is None and self.stream is not None:
            try:
                self.stream.flush()
            except OSError as e:
                self._failed(e)

    def _failed(self, e: OSError) -> None:
        self.error = e
        real = sys.__stdout__ if self.name == "stdout" else sys.__stderr__
        if self.stream is real and real is not None:   # what is still buffered would fail again at exit
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), real.fileno())
            except OSError:
                pass

    def isatty(self) -> bool:
        return self.error is None and self.stream is not None and self.stream.isatty()

    def __getattr__(self, name):
        return getattr(self.stream, name)


#: A command may leave here a callable returning (partial summary text, how far it got) or None:
#: on Ctrl-C, main() prints it before exiting 130.
_PARTIAL: list = []


def warn(message: str) -> None:
    print(f"preemu: warning: {message}", file=sys.stderr)


def _writable(path: str | None, option: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if path is None:
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    existed = os.path.exists(path)
    try:                            # os.access says yes to root everywhere, /proc and /sys included: open it
        with open(path, "a"):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror.lower()})") from None
    if not existed:
        os.remove(path)


def _regs(items: list[str]) -> dict[str, str]:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise EmuError(f"--reg {it!r}: write NAME=VALUE, e.g. --reg RCX=100 or --reg RSI=src")
        k, v = (x.strip() for x in it.split("=", 1))
        if not k or not v:
            raise UsageError(f"--reg {it!r}: write NAME=VALUE with both, e.g. --reg RCX=100")
        same = next((old for old in out if old.upper() == k.upper()), None)
        if same is not None:                 # the last one would win silently
            raise UsageError(f"--reg {it!r}: {k} is already set by --reg {same}={out[same]}")
        out[k] = v
    return out


def _emit(a, rep, out, text: str) -> int:
    """Write the --junit-xml and --sarif files if asked, then the JSON or the text; return the exit code."""
    from .output import junit, sarif
    code = 0 if rep.ok else 1
    if getattr(a, "junit_xml", None):
        _write_file("--junit-xml", a.junit_xml, lambda: junit.write(a.junit_xml, junit.from_report(rep)), code)
    if getattr(a, "sarif", None):
        _write_file("--sarif", a.sarif, lambda: sarif.write(a.sarif, sarif.from_report(rep)), code)
    if a.json:
        json.dump(rep.to_json(), out, indent=1)
        out.write("\n")
    else:
        out.write(text)
    return code


def _jobs(a) -> int:
    return a.jobs if a.jobs is not None else (os.cpu_count() or 1)


def _shard_options(a) -> dict:
    """--jobs/--executor/--results/--quiet as the API's shard options (progress only on a terminal)."""
    return {"jobs": _jobs(a), "executor": a.executor, "results": a.results,
            "progress": not a.quiet and sys.stderr.isatty()}


def _check_regs(given: dict[str, str], world) -> None:
    """Say what happens with entry registers that compiled Go code would never see."""
    from .core import regs
    names = {regs.lookup(k).name for k in given}       # build_world has validated them
    start = world.start_regs
    if "R14" in names:
        warn(f"--reg R14: R14 holds g ({world.gp:#x}) on entry in Go's ABIInternal; the goroutine starts with "
             f"R14 = {start['R14']:#x} instead (as code that uses R14 as a scratch register would)")
    if "RFLAGS" in names:
        fl = start["RFLAGS"]
        extra = fl & ~(regs.USER_FLAGS_MASK | 0x2)
        if extra:
            raise UsageError(f"--reg RFLAGS={fl:#x}: only the arithmetic flags and DF can be set "
                             f"(CF PF AF ZF SF DF OF); {extra:#x} has other bits (TF would single-step trap)")
        if fl & (1 << regs.FLAG_BITS["DF"]):
            warn("--reg RFLAGS: DF is set; Go's ABI requires DF clear at function entry, and the goroutine "
                 "starts with DF set (string instructions run downwards)")
    if "XMM15" in names and world.layout.name != "go1.14" and start["XMM15"] != 0:
        warn(f"--reg XMM15: X15 is the zero register in Go's ABIInternal ({world.layout.name} layout); the "
             "goroutine starts with X15 != 0, which compiled Go code never sees")


def _model_world(a) -> list[str]:
    """The sweep flags given that only preemu's model world (.s input) has."""
    from . import api
    return [flag for _, flag in api.model_world_options(a.force_unsafe, a.nested_signals, a.layout, a.gc_scanner)]


def cmd_sweep(a, out) -> int:
    from . import api
    from .front import gobuild
    from .drive import sweeper
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


def cmd_run(a, out) -> int:
    from . import api
    from .drive import scenario
    from .output import timeline
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
    from .drive import episode, loader
    from .output import report
    program = loader.load_program(a.file)
    given = _regs(a.reg)
    world = loader.build_world(program, a.func, a.layout, a.stub, a.seed, given)
    _check_regs(given, world)
    if loader.is_go(program):
        from .drive import modelcheck, sweeper
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


def _explain_real(a, path: str, func, regs_, gc: bool, asyncp):
    """Go input: the story of one preemption in the real program (emu/teach/real.py)."""
    from .teach import real as gexplain
    model = [flag for flag, on in (("--layout", a.layout), ("--force-unsafe", a.force_unsafe),
                                   ("--signal-delay", a.signal_delay), ("--seed", a.seed is not None),
                                   ("--gc-during-preemption", a.gc_during_preemption)) if on]
    if model:
        raise UsageError(f"{', '.join(model)}: preemu's model world only (.s input); a Go program's preemption "
                         "is told from its real program, where its own runtime decides")
    if not func:
        raise EmuError("--func is required (the goroutine's entry function)")
    if a.at is None:
        raise UsageError("--at is required: a boundary number of the function's goroutine (0 is its entry), "
                         "FILE:LINE or FUNC+OFFSET")
    for kv in a.env or []:
        if "=" not in kv:
            raise UsageError(f"--env {kv!r}: write KEY=VALUE")
    stub = a.stub
    if stub == "generated":
        from .core import stubgen
        stub = str(stubgen.stub_path("go1.27", simd=a.cpu in ("v3", "v4")))
    elif stub is not None and not os.path.isfile(stub):
        raise UsageError(f"--stub {stub}: no such file")
    return gexplain.explain(path, func, a.at, call=a.call, registers=regs_ or None, args=a.args, env=a.env or [],
                            gc=gc, async_preemption=asyncp != "off", stub=stub, test=_test_of(a), cpu=a.cpu)


def cmd_explain(a, out) -> int:
    if a.schedule is not None:
        return _explain_schedule(a, out)
    from .drive import episode, loader, scenario
    from .teach import story as explain, html as explain_html, text as explain_text
    from .core import memmap
    func, regs_, layout, gc, seed, path = a.func, _regs(a.reg), a.layout, a.gc, a.seed, a.file
    stub, asyncp = a.stub, a.async_preemption
    if a.html and not os.path.isdir(os.path.dirname(os.path.abspath(a.html))):
        raise EmuError(f"--html {a.html}: no such directory")
    story, stack_size, scanner = None, memmap.DEFAULT_STACK_SIZE, "go"
    if a.file.endswith(".toml"):
        sc = scenario.load(a.file)
        if isinstance(sc, scenario.SchedScenario):
            story = _explain_sched(a, sc)
        else:
            func = func or sc.entry
            regs_ = {**sc.registers, **regs_}
            layout = layout or sc.layout
            gc = gc or sc.gc
            seed = sc.seed if a.seed is None else a.seed
            path = os.path.relpath(sc.asm) if not sc.asm.is_absolute() else str(sc.asm)
            stub = stub or (str(sc.stub) if sc.stub else None)
            asyncp = asyncp or ("on" if sc.async_preemption else "off")
            stack_size, scanner = sc.stack_size, sc.gc_scanner
    from .front import gobuild
    if story is None and gobuild.is_go_input(path):
        story = _explain_real(a, path, func, regs_, gc, asyncp)
    if story is None and a.cpu not in ("v1", "v2"):
        raise UsageError(f"--cpu {a.cpu}: .s input and scenarios run in preemu's model world, which has no AVX "
                         "(v1/v2); a Go program's preemption is told at any level")
    if story is None:
        if not func:
            raise EmuError("--func is required (the goroutine's entry function)")
        if a.at is None:
            raise UsageError("--at is required: where the signal lands (a boundary number, line:N or FUNC+OFFSET)")
        program = loader.load_program(path)
        world = loader.build_world(program, func, layout, stub, 1 if seed is None else seed, regs_, gc=gc,
                                   scanner=scanner, stack_size=stack_size)
        func = world.program.func_for(world.entry).name
        try:
            at = episode.resolve_at(world, a.at)
            story = explain.explain(world, at, path, func, a.force_unsafe, 1 if seed is None else seed,
                                    a.signal_delay, a.gc_during_preemption, asyncp != "off")
        except ValueError as e:
            raise EmuError(str(e)) from None
    if a.html:
        def write_html() -> None:
            with open(a.html, "w") as f:
                f.write(explain_html.render(story))
        _write_file("--html", a.html, write_html, 0 if story.ok else 1)
    if a.json:
        json.dump(explain_text.to_json(story), out, indent=1)
        out.write("\n")
    elif a.html:
        out.write(f"wrote {a.html}: {len(story.steps)} steps, {'OK' if story.ok else 'FAIL'}\n")
    else:
        out.write(explain_text.render_text(story))
    return 0 if story.ok else 1


def _explain_schedule(a, out) -> int:
    """`explain PROGRAM --schedule SEED`: one PCT schedule's run told thread by thread (teach/schedstory.py);
    exit 1 when the run fails, as `exec --schedule SEED` does."""
    from .drive import realsweep, schedules
    from .front import gobuild
    from .linux import elfimage, process
    from .teach import schedhtml, schedstory
    test = _test_of(a)
    built = gobuild.build(a.file, test=bool(test), goamd64=a.cpu)
    image = elfimage.load(str(built.binary))
    argv = realsweep.test_argv(a.file, *test) + list(a.args) if test else [os.path.basename(a.file), *a.args]
    argv[0] = "./" + os.path.basename(argv[0])
    opts = process.Options(argv=argv, env=list(a.env or []), seed=schedules.PROGRAM_SEED,
                           budget=process.EXEC_BUDGET, cwd=os.path.abspath(a.file) if test else None, cpu=a.cpu)
    story = schedstory.tell(image, opts, a.schedule, a.depth, built.package, a.file, test, a.env or [], a.args)
    code = 0 if story.ok else 1
    if a.html:
        def write_html() -> None:
            with open(a.html, "w") as f:
                f.write(schedhtml.render(story))
        _write_file("--html", a.html, write_html, code)
    if a.json:
        json.dump(schedstory.to_json(story), out, indent=1)
        out.write("\n")
    elif a.html:
        out.write(f"wrote {a.html}: schedule {story.seed}, {len(story.segments)} slices on "
                  f"{len(story.threads)} threads, {'passed' if story.ok else 'FAILED'}\n")
    else:
        out.write(schedstory.render_text(story))
    return code


def _check_explain_schedule(a) -> None:
    """explain --schedule / --depth: a Go program's (or package test's) run only; bad values exit 2."""
    from .front import gobuild
    if a.schedule is None:
        if a.depth is not None:
            raise UsageError("--depth is a PCT schedule's depth: give it with --schedule SEED")
        return
    if a.schedule < 0:
        raise UsageError(f"--schedule takes a seed `exec --schedules` named (0 or more), got {a.schedule}")
    if a.depth is not None and a.depth < 1:
        raise UsageError(f"--depth must be at least 1 (D-1 change points), got {a.depth}")
    if not os.path.exists(a.file):
        raise UsageError(f"{a.file}: no such file or directory")
    if a.file.endswith((".s", ".toml")) or not gobuild.is_go_input(a.file):
        raise UsageError(f"--schedule tells a Go program's run (a package, a .go file or a binary), not {a.file}")
    given = [f"--{o.replace('_', '-')}" for o in ("func", "at", "reg", "layout", "gc", "force_unsafe",
                                                   "async_preemption", "gc_during_preemption", "stub", "seed")
             if getattr(a, o) not in (None, False, [])]
    if a.signal_delay:
        given.append("--signal-delay")
    if a.call != 1:
        given.append("--call")
    if given:
        raise UsageError(f"{', '.join(given)}: one preemption's options; --schedule tells a whole run under a "
                         "PCT schedule (drop them, or drop --schedule)")
    if a.depth is None:
        from .drive.schedules import DEFAULT_DEPTH
        a.depth = DEFAULT_DEPTH


def _explain_sched(a, sc):
    """explain of a scheduler scenario: the N-th signal of its run (explain_sched)."""
    import dataclasses

    from .teach import sched as explain_sched
    for opt in ("func", "reg", "layout", "gc", "force_unsafe", "gc_during_preemption", "stub", "signal_delay"):
        if getattr(a, opt) not in (None, False, 0, []):
            raise UsageError(f"--{opt.replace('_', '-')} does not apply to a scheduler scenario (its goroutines, "
                             "layout and stub come from the scenario)")
    nth = None
    if a.at is not None:
        if not a.at.isdigit() or int(a.at) < 1:
            raise UsageError(f"--at {a.at}: for a scheduler scenario, the number of a signal (1, 2, ...)")
        nth = int(a.at)
    if a.async_preemption is not None:
        sc = dataclasses.replace(sc, async_preemption=a.async_preemption == "on")
    if a.seed is not None:
        sc = dataclasses.replace(sc, seed=a.seed)
    return explain_sched.explain_scenario(sc, nth, a.file)


def cmd_check_stub(a, out) -> int:
    from . import api
    from .drive import checkstub
    from .output import report
    if a.mutants:
        if a.junit_xml or a.sarif:
            raise EmuError("--junit-xml and --sarif apply to a stub check, not to --mutants")
        if a.file:
            raise UsageError("--mutants checks the generated stub's mutants; give no FILE")
        a.layout = a.layout or ("go1.14" if a.cpu in ("v1", "v2") else "go1.27")
        results = checkstub.run_mutants(a.layout, a.max_points or 150, jobs=_jobs(a), cpu=a.cpu)
        if a.json:
            json.dump(report.mutants_json(results, a.layout), out, indent=1)
            out.write("\n")
        else:
            out.write(report.render_mutants(results, a.layout))
        killed, total = checkstub.mutation_score(results)
        return 0 if killed == total else 1
    if not a.file:
        raise EmuError("check-stub needs a stub FILE (.s), or a Go program whose own asyncPreempt is checked "
                       "(or --mutants)")
    so_far = []
    _PARTIAL[:] = [lambda: (report.render_checkstub(so_far[0], interrupted=True),
                            f"after {len(so_far[0].results)} corpus loop(s)") if so_far and not a.json else None]
    rep = api.check_stub(a.file, layout=a.layout, max_points=a.max_points or 2000, on_report=so_far.append,
                         jobs=_jobs(a), cpu=a.cpu)
    return _emit(a, rep, out, "" if a.json else rep.render())


def cmd_gen_stub(a, out) -> int:
    from .core import stubgen
    stale = []
    for path, text in stubgen.all_stubs():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path)
            if not a.check:
                path.write_text(text)
        out.write(f"{path}: {'up to date' if current == text else ('STALE' if a.check else 'written')}\n")
    return 1 if (a.check and stale) else 0


def cmd_disasm(a, out) -> int:
    from .drive import disasm, loader
    from .output import report
    program = loader.load_program(a.file)
    if a.func:
        try:
            name = program.resolve(a.func) if loader.is_go(program) else a.func
            funcs = [program.get_func(name)]
        except KeyError:
            raise EmuError(f"no function {a.func!r} in {a.file}") from None
    else:
        funcs = program.user_funcs() if loader.is_go(program) else list(program.funcs)
    if a.json:
        json.dump(report.disasm_json(a.file, [disasm.func_json(program, f) for f in funcs]), out, indent=1)
        out.write("\n")
    else:
        out.write(disasm.render(program, funcs))
    return 0


def _shards_partial(e: BaseException):
    """(summary, note) of the shards a Ctrl-C'd sweep finished (shards.Interrupted carries them), or None."""
    done = getattr(e, "done", None)
    live = getattr(e, "live", "")
    if not done:
        return (f"partial: {live}\n", "during the chain in progress") if live else None
    pts = sum(r.points for r in done)
    inj = sum(r.injected for r in done)
    viol = sum(r.violations.count for r in done)
    return (f"partial: {len(done)} of {e.total} shards finished: {pts:,} points, {inj:,} injected, "
            f"{viol:,} violation(s)" + (f"; {live}" if live else "") + "\n", f"after {len(done)} of {e.total} shards")


def _argv0(target: str, binary, argv0: str) -> str:
    """argv[0] as a shell passes it (os.Args[0]): a binary's path as given (`./NAME` for a bare NAME, which a
    shell would look up in PATH instead; so exec.Command(os.Args[0]) runs it again); a program preemu built,
    `./NAME` (its binary is in preemu's cache). execve of that path runs the binary (process.exe_alias)."""
    if os.path.realpath(target) == os.path.realpath(binary):
        return target if "/" in target else "./" + target
    return "./" + os.path.basename(argv0)


def _exec_options(a, passthrough):
    from .linux import process
    env = []
    for kv in a.env or []:
        if "=" not in kv:
            raise EmuError(f"--env {kv!r}: write KEY=VALUE, e.g. --env GODEBUG=asyncpreemptoff=1")
        env.append(kv)
    delay, at_pc = 0, None
    if a.signal_at and a.signal_at.startswith("insn:"):
        if not a.signal_at[5:].isdigit():
            raise EmuError(f"--signal-at {a.signal_at!r}: write insn:N with N a number of instructions")
        delay = int(a.signal_at[5:])
    elif a.signal_at:
        at_pc = a.signal_at                  # FUNC+OFF, resolved against the binary's symbols later
    from .linux.mounts import parse_mount
    mounts = tuple(parse_mount(m) for m in getattr(a, "mount", None) or ())
    at: dict[str, str] = {}
    for spec, m in zip(getattr(a, "mount", None) or (), mounts):   # Linux would stack them: the last one wins
        if m.guest in at:
            raise UsageError(f"--mount {spec!r}: --mount {at[m.guest]!r} is already at {m.guest}; give each "
                             "mount its own guest path")
        at[m.guest] = spec
    test = _test_of(a)
    if test:                             # go test runs PKG.test in the package directory
        from .drive import realsweep
        argv = realsweep.test_argv(a.target, *test) + list(a.args)
    else:
        argv = [os.path.basename(a.target), *a.args]
    return process.Options(argv=argv, env=env, seed=a.seed, quantum=a.quantum,
                           ns_per_insn=a.ns_per_insn, max_virtual_ms=a.max_virtual_ms, budget=a.budget,
                           ncpu=a.cpus, signal_delay=delay, signal_at_pc=at_pc, passthrough=passthrough,
                           trace=bool(a.trace), mounts=mounts, cwd=os.path.abspath(a.target) if test else None,
                           max_memory=a.max_memory, max_pids=a.max_pids, cpu=a.cpu)


def _test_of(a) -> tuple:
    """--test / --bench of a command: ("test", NAME), ("bench", NAME) or ()."""
    from .front.gobuild import test_selection
    return test_selection(getattr(a, "test", None), getattr(a, "bench", None))


def _run_with_progress_and_ctrl_c(p, a) -> None:
    """Run a whole program: Ctrl-C stops it between two slices (never inside a syscall the kernel model is
    handling), and a run longer than 2 s shows its progress on a terminal (not with --quiet or --json)."""
    import signal
    import time
    t0 = time.perf_counter()
    shown = [0.0]
    tty = sys.stderr.isatty() and not getattr(a, "quiet", False) and not a.json

    def progress(proc) -> None:
        now = time.perf_counter()
        if tty and now - t0 > 2 and now - shown[0] > 0.5:
            shown[0] = now
            sys.stderr.write(f"\rpreemu: {(proc.clock - proc.boot_ns) / 1e6:,.1f} ms virtual, {proc.insns:,} "
                             f"instructions, {len(proc.threads)} threads, {sum(proc.syscall_counts.values()):,} "
                             "syscalls \x1b[K")
            sys.stderr.flush()

    def on_sigint(signum, frame) -> None:
        p.interrupted = True
        if p.in_slice:
            p.uc.emu_stop()                   # the slice ends; the run loop stops before the next one

    old = signal.signal(signal.SIGINT, on_sigint)
    p.on_slice = progress
    try:
        p.run()
    finally:
        signal.signal(signal.SIGINT, old)
        if shown[0]:
            sys.stderr.write("\r\x1b[K")


def cmd_exec(a, out) -> int:
    from .front import gobuild
    from .linux import elfimage, process
    from .output import exec_report as xreport
    from .drive import exec_scenario as xscenario

    def passthrough(stream: str, data: bytes) -> None:
        if stream == "stdout":
            out.write(data.decode(errors="replace"))
            out.flush()
        else:
            sys.stderr.write(data.decode(errors="replace"))

    sc = None
    if a.target.endswith(".toml"):
        sc = xscenario.load(a.target, a.variant)
        a.args, a.env = sc.args, sc.env
        for k, v in sc.run.items():
            if not _given(a, k):             # an option on the command line wins over the scenario's key
                setattr(a, k, v)
        target = str(sc.program)
    elif a.variant:
        raise EmuError("--variant needs a scenario file (.toml)")
    else:
        target = a.target
    opts = _exec_options(a, None if a.json else passthrough)
    built = gobuild.build(target, test=bool(_test_of(a)), goamd64=opts.cpu)
    image = elfimage.load(str(built.binary))
    opts.argv[0] = _argv0(target, built.binary, opts.argv[0])
    if opts.signal_at_pc is not None:
        opts.signal_at_pc = image.resolve(opts.signal_at_pc, "--signal-at")
    sched_run = None
    if getattr(a, "schedules", None) is not None or getattr(a, "schedule", None) is not None:
        from dataclasses import replace
        from .drive import schedules
        opts = replace(opts, seed=schedules.PROGRAM_SEED)   # the schedule's seed alone replays it
        if a.schedules is not None:
            return _exec_schedules(a, out, image, opts, built.package)
        sched_run, k = schedules.replay(image, opts, a.schedule, a.depth, built.package,
                                        ctrl=lambda q: _run_with_progress_and_ctrl_c(q, a))
        p = sched_run.proc
    else:
        p = process.Process(image, opts)
        _run_with_progress_and_ctrl_c(p, a)
    if p.interrupted:
        text = xreport.render_text(p, a.target)
        for line in _fit([f"preemu: {line}" for line in text.splitlines()]):
            print(line, file=sys.stderr)
        print(f"preemu: interrupted (Ctrl-C) after {p.clock - p.boot_ns:,} ns of virtual time; the summary above "
              "is partial", file=sys.stderr)
        return 130
    fails = xscenario.check(sc, p) if sc else []
    if p.error is not None:
        code = 2                             # as without --json, where the error is raised (an unsupported syscall)
    elif p.watch.violations or fails or xreport.child_violations(p):
        code = 1
    else:
        code = 0 if sc else 1 if p.starved else p.exit_code
    if a.trace:
        _write_file("--trace", a.trace, lambda: xreport.write_chrome_trace(a.trace, p, a.target), code)
    if a.json:
        j = xreport.to_json(p, a.target)
        if sched_run is not None:
            j["schedule"] = _schedule_json(sched_run, k, image.path)
        if sc:
            j["scenario"] = {"name": sc.name, "variant": a.variant, "failed": fails}
            j["ok"] = j["ok"] and not fails
        json.dump(j, out, indent=1)
        out.write("\n")
    else:
        text = xreport.render_text(p, a.target)
        if sc:
            text += f"scenario {sc.name}{' (' + a.variant + ')' if a.variant else ''}: " + \
                ("all expectations hold\n" if not fails else "FAILED\n" + "".join(f"  {f}\n" for f in fails))
        if sched_run is not None:
            text += _schedule_text(sched_run, k, image.path)
        for line in _fit([f"preemu: {line}" for line in text.splitlines()]):
            print(line, file=sys.stderr)
    if p.error is not None and not a.json:
        raise p.error
    return code


def _given(a, dest: str) -> bool:
    """Whether option `dest` was on the command line (the parsers take no abbreviations: its full spelling)."""
    flag = "--" + dest.replace("_", "-")
    return any(x == flag or x.startswith(flag + "=") for x in a.raw_argv)


def _schedule_json(run, k: int, binary: str) -> dict:
    from .drive import schedules
    j = run.schedule.summary()
    for d, dj in zip(run.schedule.decisions, j["decisions"]):
        dj["where"] = schedules.where(binary, d)
    j["k"], j["failed"], j["why"] = k, run.why is not None, run.why
    return j


def _schedule_text(run, k: int, binary: str, limit: int = 20) -> str:
    """The schedule's decisions (change points, fairness demotions), at most `limit` of them."""
    from .drive import schedules
    s = run.schedule
    ds = s.decisions
    text = (f"schedule {s.seed} (depth {s.depth}, change points at steps "
            f"{', '.join(map(str, sorted(s.change))) or 'none'} of k = {k}): {s.steps} steps ran, "
            f"{len(ds)} decision(s){':' if ds else ''}\n")
    for d in ds[:limit]:
        d.where = schedules.where(binary, d)
        text += f"  {d.line()}\n"
    if len(ds) > limit:
        text += f"  ... {len(ds) - limit} more (--json lists them all)\n"
    return text


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
    from .drive.schedules import DEFAULT_DEPTH
    depth = DEFAULT_DEPTH if a.depth is None else a.depth
    seeds = [a.schedule] if a.schedule is not None else list(range(1, a.schedules + 1))
    return seeds, depth, lambda seed: _replay_command(a, seed, depth, drop=("--schedules", "--schedule", "--depth"),
                                                      default=["sweep", a.file, "--func", a.func])


def _replay_command(a, seed: int, depth: int, drop=("--schedules", "--seed", "--depth"), default=None) -> str:
    """The command line that replays schedule `seed`: this one without --schedules/--seed/--depth/--json
    (`drop`: the options to leave out; a sweep keeps its --seed, which is not the schedule's)."""
    import shlex
    argv = list(getattr(a, "raw_argv", None) or default or ["exec", a.target])
    out, i = [], 0
    while i < len(argv):
        x = argv[i]
        name = x.split("=", 1)[0]
        if name in drop:
            i += 1 if "=" in x else 2
            continue
        if x != "--json":
            out.append(x)
        i += 1
    out += ["--schedule", str(seed), "--depth", str(depth)]
    rest = getattr(a, "raw_rest", None)
    if rest is not None:
        out += ["--", *rest]
    return "preemu " + shlex.join(out)


def _exec_schedules(a, out, image, opts, package) -> int:
    """`exec --schedules N`: explore (drive/schedules.py); exit 0 when all pass, 1 at the first failing one."""
    import time
    from .drive import schedules
    c0 = time.process_time()
    last = []

    def ctrl(p) -> None:
        last[:] = [p]
        _run_with_progress_and_ctrl_c(p, a)

    ex = schedules.explore(image, opts, a.schedules, a.depth, a.seed, package, ctrl,
                           interrupted=lambda: bool(last) and last[0].interrupted)
    cpu = time.process_time() - c0
    if last and last[0].interrupted:
        print(f"preemu: interrupted (Ctrl-C) after {len(ex.runs)} of {a.schedules} schedules", file=sys.stderr)
        return 130
    bad = ex.failing
    seeds = f"seeds {a.seed}..{a.seed + a.schedules - 1}" if a.schedules > 1 else f"seed {a.seed}"
    ran = f"{len(ex.runs)}" if len(ex.runs) == a.schedules else f"{len(ex.runs)} of {a.schedules}"
    head = (f"{ran} schedule{'s' if a.schedules > 1 else ''} of depth {a.depth} ran ({seeds}; k = {ex.k} steps at "
            f"{ex.pcs} step PCs; {cpu:.2f} s CPU)")
    replay = _replay_command(a, bad.seed, a.depth) if bad else None
    if a.json:
        from . import __version__
        from .output.report import SCHEMAS
        j = {"tool": "preemu", "version": __version__, "schema": SCHEMAS["exec-schedules"], "command": "exec",
             "binary": a.target, "argv": opts.argv,
             "schedules": {"requested": a.schedules, "ran": len(ex.runs), "depth": a.depth, "first_seed": a.seed,
                           "k": ex.k, "step_pcs": ex.pcs, "cpu_s": round(cpu, 3),
                           "calibration_cpu_s": round(ex.calibration_cpu_s, 3),
                           "passed": bad is None, "runs": [r.to_json() for r in ex.runs]},
             "failing": None, "ok": bad is None}
        if bad is not None:
            j["failing"] = {**bad.to_json(), "depth": a.depth, "replay": replay,
                            "schedule": _schedule_json(bad, ex.k, image.path), "stdout": bad.stdout,
                            "stderr": bad.stderr}
        json.dump(j, out, indent=1)
        out.write("\n")
        return 0 if bad is None else 1
    if bad is None:
        print(f"preemu: {head}: all passed", file=sys.stderr)
        return 0
    out.write(bad.stdout)
    out.flush()
    sys.stderr.write(bad.stderr)
    lines = [f"{head}: schedule {bad.seed} FAILED ({len(ex.runs) - 1} passed before it): {bad.why}",
             f"this run: {bad.insns:,} instructions, {bad.virtual_ns / 1e6:.3f} ms virtual",
             *_schedule_text(bad, ex.k, image.path).splitlines(),
             f"replay: {replay}"]
    for line in _fit([f"preemu: {line}" for line in lines]):
        print(line, file=sys.stderr)
    return 1


def _fit(lines: list[str]) -> list[str]:
    """exec's summary lines on stderr, each fitted to the terminal's 120 columns (the program's output is not)."""
    from .output.fit import fit
    return fit(lines)


def _parallel(sp) -> None:
    sp.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="run the sweep's shards in N local processes (default: the number of CPUs)")
    sp.add_argument("--executor", metavar="dask://HOST:PORT",
                    help="run the shards on a Dask cluster instead (default: $DASK_SCHEDULER_ADDRESS if set)")
    sp.add_argument("--results", metavar="FILE.jsonl",
                    help="append each finished shard to FILE; re-running the same command skips those shards")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def _common(sp) -> None:
    _parallel(sp)
    sp.add_argument("--max-points", type=int, default=None, metavar="N",
                    help="inject at no more than N boundaries (default: 100000); with --gc on Go input, inject "
                         "at every (boundaries/N)-th boundary of the swept run, which the cycles lengthen")
    sp.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    sp.add_argument("--table", action="store_true", help="print the per-PC verdict table")
    _ci_outputs(sp)


def _ci_outputs(sp) -> None:
    sp.add_argument("--junit-xml", metavar="FILE", help="also write JUnit XML (one testcase per loop or scenario)")
    sp.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (one result per violation group)")


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
                   "point a PC instead of one a boundary; --max-points still caps them)")
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


def _add_test_options(p) -> None:
    """--test and --bench: a package directory's test binary runs one test, example or benchmark."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--test", metavar="NAME", help="FILE is a Go package directory: build its test binary (go test -c) "
                   "and run only this test or example (-test.run '^NAME$' -test.short, in the package directory); "
                   "--func names a function of the package it calls")
    g.add_argument("--bench", metavar="NAME", help="as --test, for a benchmark (run once: -test.benchtime=1x)")


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


def _add_explain(sub) -> None:
    """`preemu explain` and its options."""
    x = sub.add_parser("explain", help="tell one preemption step by step (text, --json, or an --html page)")
    x.add_argument("file", help="assembly file (.s), Go input, or a scenario (.toml; a scheduler scenario "
                                "tells one signal of its run)")
    x.add_argument("--func", help="entry function of the goroutine (a scenario gives its own)")
    x.add_argument("--at", metavar="WHEN",
                   help="where the signal lands: a boundary number (Go input: of the function's goroutine in its "
                        "real program), line:N or FUNC+OFFSET (its first execution; Go input also FILE:LINE, FILE "
                        "a file's name or the end of its path, as in main.go:42); "
                        "for a scheduler scenario, the N-th signal that lands on a goroutine (default: the first "
                        "one injected)")
    x.add_argument("--reg", action="append", metavar="NAME=VALUE", help="entry register value; repeatable")
    x.add_argument("--layout", choices=sorted(L.LAYOUTS), help="stub layout (default go1.14)")
    x.add_argument("--gc", action="store_true", help="run a GC while the goroutine is preempted; show the scan")
    x.add_argument("--force-unsafe", action="store_true", help="inject even where Go refuses; shows the damage")
    x.add_argument("--async-preemption", choices=["on", "off"],
                   help="off = GODEBUG=asyncpreemptoff=1: the handler ignores SIGURG (default on)")
    x.add_argument("--gc-during-preemption", action="store_true",
                   help="a GC mark phase turns the write barrier on while the goroutine is off CPU")
    x.add_argument("--stub", help="use this asyncPreempt stub instead of the generated one")
    x.add_argument("--signal-delay", type=int, default=0, metavar="N",
                   help="sysmon's request comes N instructions before the signal (default 0)")
    x.add_argument("--seed", type=int, default=None, help="seed for unset registers and clobber values")
    x.add_argument("--call", type=int, default=1, metavar="N",
                   help="Go input: the N-th call of the function (default 1)")
    x.add_argument("--env", action="append", metavar="K=V", help="Go input: the program's environment; repeatable")
    _add_test_options(x)
    x.set_defaults(args=[])          # Go input: the program's arguments, after `--` (split off in main)
    _cpu_option(x)
    x.add_argument("--schedule", type=int, default=None, metavar="SEED",
                   help="Go input: tell the run of PCT schedule SEED (as `exec --schedules` named it) thread by "
                   "thread: the decisions that mattered, what each thread did between them, how it ended")
    x.add_argument("--depth", type=int, default=None, metavar="D",
                   help="with --schedule: the schedule's depth (default 3, as exec's)")
    x.add_argument("--html", metavar="OUT.html", help="also write the story as one self-contained page")
    x.add_argument("--json", action="store_true", help="print the steps as one JSON object")
    x.set_defaults(fn=cmd_explain)


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


def _add_check_stub(sub) -> None:
    """`preemu check-stub` and its options."""
    c = sub.add_parser("check-stub", help="run an asyncPreempt stub over the whole regression corpus")
    c.add_argument("file", nargs="?", help="the stub (.s, Intel syntax): entry label asyncPreempt, calls asyncPreempt2; "
                   "or a Go binary / .go file / package directory, whose runtime.asyncPreempt is checked")
    c.add_argument("--layout", default=None, choices=sorted(L.LAYOUTS),
                   help="the world the stub runs in (asyncPreempt2 and xRegs behaviour); default: told from the "
                   "stub's code (where it saves X0-X15), a Go program's release for its own runtime.asyncPreempt")
    c.add_argument("--mutants", action="store_true", help="check the generated stub's mutants; print the score")
    _cpu_option(c)
    c.add_argument("--max-points", type=int, default=None, metavar="N", help="cap per corpus loop (default 2000)")
    c.add_argument("--json", action="store_true")
    _ci_outputs(c)
    c.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="check corpus loops (or mutants) in N local processes (default: the number of CPUs)")
    c.set_defaults(fn=cmd_check_stub)


def _add_gen_stub(sub) -> None:
    """`preemu gen-stub` and its options."""
    g = sub.add_parser("gen-stub", help="regenerate asm/preempt_amd64_*.s from the register table")
    g.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    g.set_defaults(fn=cmd_gen_stub)


def _size(text: str) -> int:
    """A size in bytes: 512M, 2G, 1.5GiB, 65536 (K, M, G, T: powers of 1024, as free(1) and cgroups write)."""
    import re
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (write 512M, 2G or a number of bytes)")
    unit = m.group(2).upper()
    n = int(float(m.group(1)) * (1024 ** ("KMGT".index(unit) + 1) if unit else 1))
    if n < 1 << 20:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1M (a Go program maps a few MiB to start)")
    return n


def _pids(text: str) -> int:
    """--max-pids: a whole number of tasks, at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of processes and threads, at least 1")
    return int(text)


def _cpu_option(p) -> None:
    from .core.cpulevel import DEFAULT, LEVELS
    p.add_argument("--cpu", default=DEFAULT, choices=list(LEVELS), metavar="LEVEL",
                   help="the CPU's x86-64 level, as GOAMD64 names them: v1 (default) and v2 have no AVX; v3 adds "
                   "AVX2 and FMA, v4 AVX-512 (preemu executes those instructions itself). CPUID and XGETBV say so, "
                   "the verifier compares the level's Y/Z and K registers, and Go sources are built for it")


def _add_exec(sub) -> None:
    """`preemu exec` and its options."""
    x = sub.add_parser("exec", help="run a whole static Go program (its own runtime, sysmon and signal handler) "
                       "and watch every preemption")
    x.add_argument("target", help="a static linux/amd64 Go binary, a .go file, a package directory, "
                   "or a scenario (.toml, see scenarios/go; an option given here wins over its key)")
    x.add_argument("args", nargs="*", help="the program's arguments (after --)")
    x.add_argument("--env", action="append", metavar="KEY=VALUE", help="environment variable; repeatable")
    _add_test_options(x)
    x.add_argument("--max-virtual-ms", type=float, default=None, metavar="N",
                   help="stop after N ms of virtual time and report the program starved")
    x.add_argument("--budget", type=int, default=None, metavar="N",
                   help="stop after N instructions and report the program starved (default 1e11: about 4 minutes "
                   "of CPU; progress shows on a terminal)")
    x.add_argument("--ns-per-insn", type=int, default=1, metavar="N", help="virtual ns per instruction (default 1)")
    x.add_argument("--quantum", type=int, default=20_000, metavar="N",
                   help="instructions a thread runs before the next one is scheduled (default 20000)")
    x.add_argument("--cpus", type=int, default=2, metavar="N",
                   help="CPUs the threads run on, interleaved per quantum; sched_getaffinity reports them (default 2)")
    _cpu_option(x)
    x.add_argument("--max-memory", type=_size, default=None, metavar="SIZE",
                   help="memory the run may make preemu hold, as a memory cgroup's memory.max (512M, 2G; default "
                   "8G): the memory every process maps, /tmp's files, the output kept, a fixed 20M a process and "
                   "64K a thread. Past it mmap fails with ENOMEM (Go ends with 'fatal error: out of memory'), a /tmp "
                   "write with ENOSPC, fork with ENOMEM; output is streamed, not held")
    x.add_argument("--max-pids", type=_pids, default=None, metavar="N",
                   help="processes and threads the run may have at once, as a cgroup's pids.max (default 256): "
                   "past it clone and fork fail with EAGAIN")
    x.add_argument("--mount", action="append", metavar="HOST:GUEST[:ro|rw]",
                   help="show the program a host directory at GUEST (read-only unless :rw; repeatable, one per "
                   "GUEST path). It always "
                   "sees the working directory read-only and /tmp in memory, and nothing else of the host")
    x.add_argument("--seed", type=int, default=None,
                   help="seed for AT_RANDOM, getrandom and where slices end while threads wait for a CPU (default 1); "
                   "with --schedules, the first schedule's seed")
    x.add_argument("--schedules", type=int, default=None, metavar="N",
                   help="explore: run the program (or --test) under N PCT schedules (seeds --seed, --seed+1, ...), "
                   "stop at the first that fails, name its seed, decisions and the command that replays it")
    x.add_argument("--schedule", type=int, default=None, metavar="SEED",
                   help="replay one PCT schedule (the seed --schedules named), instruction for instruction")
    x.add_argument("--depth", type=int, default=None, metavar="D",
                   help="with --schedules/--schedule: the bug depth PCT aims at, D-1 priority change points, each "
                   "with a partner later in the run (default 3)")
    x.add_argument("--signal-at", metavar="FUNC+OFF|insn:N",
                   help="take each pending signal when its target thread is about to execute FUNC+OFF (e.g. "
                   "main.spin+0x9), or N of its instructions after it is sent (default: at its next instruction)")
    x.add_argument("--trace", metavar="OUT.json", help="write a Perfetto/Chrome trace, one track per thread")
    x.add_argument("--json", action="store_true", help="print one JSON object (program output captured in it)")
    x.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr during a long run")
    x.add_argument("--variant", metavar="NAME", help="scenario files: run this variant (e.g. asyncpreemptoff)")
    x.set_defaults(fn=cmd_exec)


def _add_disasm(sub) -> None:
    """`preemu disasm` and its options."""
    d = sub.add_parser("disasm", help="list a program with its metadata (SP deltas, unsafe points)")
    d.add_argument("file", help="assembly file (.s), Go binary, .go file or Go package directory")
    d.add_argument("--func", help="only this function (Go input: `main.f` or `f`; default: the program's own)")
    d.add_argument("--json", action="store_true", help="one JSON object: per instruction offset, pc, insn, line, "
                   "unsafe (PCDATA_UnsafePoint), verdict and reason")
    d.set_defaults(fn=cmd_disasm)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="preemu", description="Emulate Go's asynchronous goroutine preemption on x86-64, "
                "one instruction boundary at a time.")
    p.add_argument("--version", action="version", version=f"preemu {__version__}")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    add_parser = sub.add_parser

    def add_sub(*args, **kw):        # every subcommand also accepts --traceback after its name
        sp = add_parser(*args, **kw)
        sp.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks for errors")
        return sp
    sub.add_parser = add_sub
    for add in (_add_sweep, _add_preempt, _add_explain, _add_run, _add_check_stub, _add_gen_stub, _add_exec,
                _add_disasm):
        add(sub)                     # one small function per subcommand, in the order `preemu --help` lists them
    return p


_OUTPUTS = ("junit_xml", "sarif", "trace", "timeline", "html", "results")


def _check_outputs(a) -> None:
    """Two options writing the same file would overwrite each other: refuse before any work."""
    seen: dict[str, str] = {}
    for opt in _OUTPUTS:
        path = getattr(a, opt, None)
        if not path:
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"--{opt.replace('_', '-')} {path}: --{seen[real].replace('_', '-')} writes the "
                             "same file; give each output its own path")
        seen[real] = opt
        for inp in _INPUTS:
            src = getattr(a, inp, None)
            if isinstance(src, str) and src and _overwrites(real, os.path.realpath(src)):
                raise UsageError(f"--{opt.replace('_', '-')} {path}: that is {'the input ' + src if os.path.isfile(src) else 'a source file of ' + src}; "
                                 "preemu never writes over its inputs: give the output another path")


#: the options that name inputs (issue #51 item 2: no output may resolve to one)
_INPUTS = ("file", "target", "scenario", "stub")
#: inside an input directory (a Go package), the files an output may not replace
_SOURCES = (".go", ".s", ".toml", ".mod", ".sum")


def _overwrites(out: str, inp: str) -> bool:
    """Whether writing `out` would replace input `inp` (both resolved): the file itself, or a source file of
    the directory `inp` (its own .go/.s files, go.mod, a scenario)."""
    if out == inp:
        return True
    return (os.path.isdir(inp) and os.path.exists(out) and out.startswith(inp.rstrip("/") + "/")
            and out.endswith(_SOURCES))


def _check_values(a) -> None:
    for opt in ("file", "target", "scenario"):
        if getattr(a, opt, None) == "":
            raise UsageError(f"the {'scenario' if opt == 'scenario' else 'input'} file is an empty string")
    for kv in getattr(a, "env", None) or []:
        if "=" not in kv or kv.startswith("="):
            raise UsageError(f"--env {kv!r}: write KEY=VALUE, e.g. --env GODEBUG=asyncpreemptoff=1")
    if getattr(a, "call", 1) < 1:
        raise UsageError(f"--call {a.call}: calls are counted from 1")
    for opt in ("max_points", "retry", "max_wait", "budget", "jobs"):
        if getattr(a, opt, None) is not None and getattr(a, opt) <= 0:
            raise UsageError(f"--{opt.replace('_', '-')} must be positive, got {getattr(a, opt)}")
    if getattr(a, "signal_delay", 0) < 0:
        raise UsageError(f"--signal-delay must not be negative, got {a.signal_delay}")
    _check_outputs(a)
    results = getattr(a, "results", None)
    if results and os.path.exists(results) and not os.path.isfile(results) and not os.path.isdir(results):
        raise UsageError(f"--results {results}: not a regular file (a sweep reads its results file back to resume "
                         "and appends a line per shard); give a file's path")
    _writable(results, "--results")
    _writable(getattr(a, "junit_xml", None), "--junit-xml")
    _writable(getattr(a, "sarif", None), "--sarif")
    if getattr(a, "json", False) and getattr(a, "table", False):
        raise UsageError("--table prints the per-PC table as text; with --json it is in `points`")
    if a.cmd == "explain":
        _check_explain_schedule(a)
    if a.cmd == "exec":
        import math
        from .drive.exec_scenario import MAX_CPUS, MAX_NS_PER_INSN, POSITIVE_RUN_KEYS
        for opt in POSITIVE_RUN_KEYS:
            v = getattr(a, opt)
            if v is not None and (not math.isfinite(v) or v <= 0):
                raise UsageError(f"--{opt.replace('_', '-')} must be a positive number, got {v}")
        if a.ns_per_insn > MAX_NS_PER_INSN:
            raise UsageError(f"--ns-per-insn must be at most {MAX_NS_PER_INSN:,} (a millisecond per instruction), "
                             f"got {a.ns_per_insn}")
        if not 1 <= a.cpus <= MAX_CPUS:
            raise UsageError(f"--cpus must be between 1 and {MAX_CPUS}, got {a.cpus}")
        _check_schedules(a)
        _writable(a.trace, "--trace")
        if a.budget is None:
            from .linux.process import EXEC_BUDGET
            a.budget = EXEC_BUDGET
        if a.max_memory is None:
            from .linux.process import DEFAULT_MAX_MEMORY
            a.max_memory = DEFAULT_MAX_MEMORY
        if a.max_pids is None:
            from .linux.process import DEFAULT_MAX_PIDS
            a.max_pids = DEFAULT_MAX_PIDS


def _check_schedules(a) -> None:
    """--schedules / --schedule / --depth: bad values and combinations are usage errors (exit 2)."""
    if a.schedules is not None and a.schedules < 1:
        raise UsageError(f"--schedules must be at least 1, got {a.schedules}")
    if a.schedules is not None and a.schedule is not None:
        raise UsageError("--schedule SEED replays one schedule and --schedules N explores N: give one of them")
    if a.schedule is not None and a.schedule < 0:
        raise UsageError(f"--schedule takes a seed --schedules named (0 or more), got {a.schedule}")
    if a.schedule is not None and a.seed is not None:
        raise UsageError("--schedule SEED names the schedule to replay; --seed is where --schedules starts: "
                         "drop --seed")
    exploring = a.schedules is not None or a.schedule is not None
    if a.depth is not None and not exploring:
        raise UsageError("--depth is a PCT schedule's depth: give it with --schedules N or --schedule SEED")
    if a.depth is not None and a.depth < 1:
        raise UsageError(f"--depth must be at least 1 (D-1 change points), got {a.depth}")
    if exploring and a.target.endswith(".toml"):
        raise UsageError("--schedules/--schedule run a program or a package's --test, not a scenario file")
    if a.schedules is not None and a.trace:
        raise UsageError("--trace writes one run: replay the failing schedule with --schedule SEED --trace T.json")
    if a.seed is None:
        a.seed = 1
    if exploring and a.depth is None:
        from .drive.schedules import DEFAULT_DEPTH
        a.depth = DEFAULT_DEPTH


def _as_command() -> bool:
    """Whether this process is the `preemu` command (its script or `python -m emu`), not a library user."""
    main_mod = sys.modules.get("__main__")
    spec = getattr(main_mod, "__spec__", None)
    return (bool(sys.argv) and os.path.basename(sys.argv[0]) == "preemu") or \
        (spec is not None and spec.name == "emu.__main__")


def main(argv: list[str] | None = None, out=None) -> int:
    """Run the command; every error is one line on stderr (exit 2), Ctrl-C exits 130. An output that cannot be
    written (stdout full or closed) is one more line, and exit 2 unless the run itself failed.

    Ctrl-C at any moment: before this function the package made SIGINT's default action quiet (emu/__init__.py);
    here it becomes a KeyboardInterrupt that every command turns into its partial summary and exit 130, also
    while the arguments are parsed; once the command has answered (its summary printed), a second Ctrl-C, or one
    while the interpreter shuts down, ends the process as SIGINT does (a shell shows 130), never a traceback."""
    import signal
    command = argv is None and out is None and _as_command()
    heard = None
    if command:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        heard = _hear_signals()
    stdout = _Stream(sys.stdout if out is None else out, "stdout")
    saved = sys.stdout, sys.stderr
    sys.stderr = _Stream(sys.stderr, "stderr")          # a full or closed stderr never raises either
    if out is None:
        sys.stdout = stdout                              # argparse's --help and --version write there
    try:
        try:
            code = _main(argv, stdout, command)
        except KeyboardInterrupt:                        # before the command started (parsing its arguments)
            _quiet_sigint(command)
            print("preemu: interrupted (Ctrl-C) before the command started; nothing to summarise",
                  file=sys.stderr)
            code = 130
    except SystemExit as e:                              # argparse: --help, --version, a usage error
        code = e.code
        if stdout.error is None or code:
            raise
    finally:
        _quiet_sigint(command)
        sys.stdout, sys.stderr = saved
    if heard is not None and _heard_sigint(heard) and code != 130:
        # a Ctrl-C that reached the process but no handler acted on: the interpreter runs a Python handler only
        # in the main thread, and one caught in another thread (a pool's) just before the command ended was
        # still pending when SIGINT went back to its default action, which drops it
        _say("preemu: interrupted (Ctrl-C) as the command ended; its output above is complete")
        code = 130
    if stdout.error is not None and not isinstance(stdout.error, BrokenPipeError):   # `| head` is no error
        why = f"stdout: cannot write the output ({_why(stdout.error)})"
        if code in (0, None):
            code = 2
            why += "; the command itself succeeded, but its output is lost"
        else:
            why += f"; it is lost (exit status {code} is the command's own)"
        _say(f"preemu: error: {why}")
    return code


def _hear_signals():
    """A pipe the interpreter writes each caught signal's number to (signal.set_wakeup_fd), as soon as it is
    caught, in whichever thread: what _heard_sigint reads once the command has ended."""
    import signal
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return None
    return r, w


def _heard_sigint(pipe) -> bool:
    """Whether SIGINT was caught while the command ran (the pipe is closed)."""
    import signal
    r, w = pipe
    signal.set_wakeup_fd(-1)
    got = b""
    try:
        while chunk := os.read(r, 4096):
            got += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(r)
        os.close(w)
    return signal.SIGINT in got


def _caused_by_ctrl_c(e: BaseException) -> bool:
    """Whether a KeyboardInterrupt is behind this exception (its cause or context, at any depth)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _quiet_sigint(command: bool) -> None:
    """From now on (the command answered, or is answering, a Ctrl-C) SIGINT ends the process as its default
    action does: quietly, status 130 in a shell."""
    if command:
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _say(line: str) -> None:
    """One line on stderr, whatever has become of it."""
    if sys.stderr is None:                   # (print would fall back to stdout)
        return
    try:
        print(line, file=sys.stderr)
    except (OSError, AttributeError, ValueError):
        pass


def _main(argv: list[str] | None, out, command: bool = False) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = None
    if argv and argv[0] in ("sweep", "exec", "explain") and "--" in argv:   # a Go program's own arguments, after --
        i = argv.index("--")                                     # (options may come before or after the target)
        argv, rest = argv[:i], argv[i + 1:]
    a = parser.parse_args(argv)
    a.raw_argv, a.raw_rest = list(argv), rest      # `exec --schedules` prints the command that replays a schedule
    if rest is not None:
        a.args = list(getattr(a, "args", None) or []) + rest
    _PARTIAL.clear()
    if a.cmd == "sweep" and a.max_points is None:
        a.max_points = 100_000
    try:
        _check_values(a)
        return a.fn(a, out)
    except EmuError as e:
        if a.traceback:
            import traceback
            traceback.print_exc()
        print(f"preemu: error: {e}", file=sys.stderr)
        return getattr(e, "run_code", None) or 2      # an output file that failed after a failed run: 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as e:
        _quiet_sigint(command)                     # a second Ctrl-C while the summary is written: quiet
        partial = (_PARTIAL[0]() if _PARTIAL else None) or _shards_partial(e)
        if partial is not None:
            out.write(partial[0])
            out.flush()
            print(f"preemu: interrupted (Ctrl-C) {partial[1]}; the summary above is partial", file=sys.stderr)
        else:
            print(f"preemu: interrupted (Ctrl-C) during `preemu {a.cmd}`; nothing to summarise yet",
                  file=sys.stderr)
        return 130
    except Exception as e:          # a bug in preemu: still one line, unless --traceback
        if _caused_by_ctrl_c(e):        # a Ctrl-C that Python wrapped (a class being made: RuntimeError from
            _quiet_sigint(command)      # __set_name__) is a Ctrl-C
            print(f"preemu: interrupted (Ctrl-C) during `preemu {a.cmd}`; nothing to summarise yet", file=sys.stderr)
            return 130
        if a.traceback:
            import traceback
            traceback.print_exc()
        print(f"preemu: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
