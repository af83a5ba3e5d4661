"""`preemu exec`: a whole static Go program under the emulated Linux (its own runtime, sysmon and signal
handler); its options.
"""
from __future__ import annotations

import json
import os
import sys

from ..core.errors import EmuError
from .common import (
    UsageError, _add_test_options, _cpu_option, _fit, _pids, _run_with_progress_and_ctrl_c, _size, _test_of,
    _write_file)
from .schedules import _exec_schedules, _schedule_json, _schedule_text


def _argv0(target: str, binary, argv0: str) -> str:
    """argv[0] as a shell passes it (os.Args[0]): a binary's path as given (`./NAME` for a bare NAME, which a
    shell would look up in PATH instead; so exec.Command(os.Args[0]) runs it again); a program preemu built,
    `./NAME` (its binary is in preemu's cache). execve of that path runs the binary (process.exe_alias)."""
    if os.path.realpath(target) == os.path.realpath(binary):
        return target if "/" in target else "./" + target
    return "./" + os.path.basename(argv0)


def _exec_options(a, passthrough):
    from ..linux import process
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
    from ..linux.mounts import parse_mount
    mounts = tuple(parse_mount(m) for m in getattr(a, "mount", None) or ())
    at: dict[str, str] = {}
    for spec, m in zip(getattr(a, "mount", None) or (), mounts):   # Linux would stack them: the last one wins
        if m.guest in at:
            raise UsageError(f"--mount {spec!r}: --mount {at[m.guest]!r} is already at {m.guest}; give each "
                             "mount its own guest path")
        at[m.guest] = spec
    test = _test_of(a)
    if test:                             # go test runs PKG.test in the package directory
        from ..drive import realsweep
        argv = realsweep.test_argv(a.target, *test) + list(a.args)
    else:
        argv = [os.path.basename(a.target), *a.args]
    return process.Options(argv=argv, env=env, seed=a.seed, quantum=a.quantum,
                           ns_per_insn=a.ns_per_insn, max_virtual_ms=a.max_virtual_ms, budget=a.budget,
                           ncpu=a.cpus, signal_delay=delay, signal_at_pc=at_pc, passthrough=passthrough,
                           trace=bool(a.trace), mounts=mounts, cwd=os.path.abspath(a.target) if test else None,
                           max_memory=a.max_memory, max_pids=a.max_pids, cpu=a.cpu)


def cmd_exec(a, out) -> int:
    from ..front import gobuild
    from ..linux import elfimage, process
    from ..goruntime.goprocess import GoProcess
    from ..output import exec_report as xreport
    from ..drive import exec_scenario as xscenario

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
        from ..drive import schedules
        opts = replace(opts, seed=schedules.PROGRAM_SEED)   # the schedule's seed alone replays it
        if a.schedules is not None:
            return _exec_schedules(a, out, image, opts, built.package)
        sched_run, k = schedules.replay(image, opts, a.schedule, a.depth, built.package,
                                        ctrl=lambda q: _run_with_progress_and_ctrl_c(q, a))
        p = sched_run.proc
    else:
        p = GoProcess(image, opts)
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
