"""`preemu explain`: one preemption told step by step (text, --json, --html), for `.s` and Go input, and
`explain --schedule SEED` (a PCT schedule's story); its options.
"""
from __future__ import annotations

import json
import os

from ..core import layout as L
from ..core.errors import EmuError
from .common import UsageError, _add_test_options, _cpu_option, _regs, _test_of, _write_file


def _explain_real(a, path: str, func, regs_, gc: bool, asyncp):
    """Go input: the story of one preemption in the real program (emu/teach/real.py)."""
    from ..teach import real as gexplain
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
        from ..core import stubgen
        stub = str(stubgen.stub_path("go1.27", simd=a.cpu in ("v3", "v4")))
    elif stub is not None and not os.path.isfile(stub):
        raise UsageError(f"--stub {stub}: no such file")
    return gexplain.explain(path, func, a.at, call=a.call, registers=regs_ or None, args=a.args, env=a.env or [],
                            gc=gc, async_preemption=asyncp != "off", stub=stub, test=_test_of(a), cpu=a.cpu)


def cmd_explain(a, out) -> int:
    if a.schedule is not None:
        return _explain_schedule(a, out)
    from ..drive import episode, loader, scenario
    from ..teach import story as explain, html as explain_html, text as explain_text
    from ..core import memmap
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
    from ..front import gobuild
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
    from ..drive import realsweep, schedules
    from ..front import gobuild
    from ..linux import elfimage, process
    from ..teach import schedhtml, schedstory
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
    from ..front import gobuild
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
        from ..drive.schedules import DEFAULT_DEPTH
        a.depth = DEFAULT_DEPTH


def _explain_sched(a, sc):
    """explain of a scheduler scenario: the N-th signal of its run (explain_sched)."""
    import dataclasses

    from ..teach import sched as explain_sched
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
