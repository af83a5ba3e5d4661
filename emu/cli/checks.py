"""The options' values checked before a command runs: output files that would overwrite an input or cannot be
written, values out of range, options that need another (one line each, exit 2).
"""
from __future__ import annotations

import os

from .common import UsageError, _writable
from .explain import _check_explain_schedule


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
        from ..drive.exec_scenario import MAX_CPUS, MAX_NS_PER_INSN, POSITIVE_RUN_KEYS
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
            from ..linux.process import EXEC_BUDGET
            a.budget = EXEC_BUDGET
        if a.max_memory is None:
            from ..linux.process import DEFAULT_MAX_MEMORY
            a.max_memory = DEFAULT_MAX_MEMORY
        if a.max_pids is None:
            from ..linux.process import DEFAULT_MAX_PIDS
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
        from ..drive.schedules import DEFAULT_DEPTH
        a.depth = DEFAULT_DEPTH
