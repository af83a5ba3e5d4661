"""Whole-program scenarios: a Go program (built at run time), how to run it, and what must hold.

A scenario is a TOML file run by `preemu exec FILE.toml [--variant NAME]`:

  name, description, cites          text
  program = "starve"                a .go file or package directory, relative to the scenario file
  args = [...], env = ["K=V", ...]  the program's arguments and environment (a string is split as a shell
                                    splits a command line: args = "-v -n 3")
  max_virtual_ms, budget, seed, quantum, ns_per_insn, cpus    run options (as the exec flags)
  [expect]                          checks on the run (all optional):
      exit_code, starved (bool), stdout_regex, stdout_number_range = [lo, hi] (the regex's
      first group as a number), min_async_preemptions, max_async_preemptions
  [variants.NAME]                   overrides of the keys above (env, max_virtual_ms...); its own
                                    [variants.NAME.expect] replaces [expect] as a whole

Every async preemption's register check and oracle agreement are always checked (violations).
"""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import EmuError, ScenarioError
from .tomlfile import check_type, read_toml

RUN_KEYS = {"max_virtual_ms": (int, float), "budget": int, "seed": int, "quantum": int, "ns_per_insn": int, "cpus": int}
EXPECT_KEYS = {"exit_code": int, "starved": bool, "stdout_regex": str, "stdout_number_range": list,
               "min_async_preemptions": int, "max_async_preemptions": int}
TOP_KEYS = {"name", "description", "cites", "program", "args", "env", "expect", "variants", *RUN_KEYS}
#: the types of the keys that are not run options ([expect] and [variants] are checked key by key)
TEXT_KEYS = {"name": str, "description": str, "cites": str, "program": str, "args": (list, str), "env": (list, str),
             "expect": dict, "variants": dict}


@dataclass
class ExecScenario:
    path: Path
    name: str
    description: str
    program: Path
    args: list[str]
    env: list[str]
    run: dict
    expect: dict
    variants: list[str] = field(default_factory=list)


#: run options that must be positive, and the CPUs sched_getaffinity may report (as the exec flags)
POSITIVE_RUN_KEYS = ("max_virtual_ms", "budget", "quantum", "ns_per_insn")
MAX_CPUS = 64
MAX_NS_PER_INSN = 1_000_000             # a millisecond per instruction: beyond it sysmon sees hours per loop


def _check(path: str, where: str, table: dict, allowed: dict) -> None:
    for k, v in table.items():
        if k not in allowed:
            raise ScenarioError(path, f"{where}{k}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
        check_type(path, f"{where}{k}", v, allowed[k])


def _check_run(path: str, run: dict, where: str = "") -> None:
    """The run options' values, checked as the exec flags are (a scenario's quantum = 0 would never end)."""
    for k in POSITIVE_RUN_KEYS:
        if k in run and not (math.isfinite(run[k]) and run[k] > 0):
            raise ScenarioError(path, f"{where}{k}", f"must be a positive number, got {run[k]}")
    if "ns_per_insn" in run and run["ns_per_insn"] > MAX_NS_PER_INSN:
        raise ScenarioError(path, f"{where}ns_per_insn", f"must be at most {MAX_NS_PER_INSN:,} (a millisecond per "
                            f"instruction), got {run['ns_per_insn']}")
    if "cpus" in run and not 1 <= run["cpus"] <= MAX_CPUS:
        raise ScenarioError(path, f"{where}cpus", f"must be between 1 and {MAX_CPUS}, got {run['cpus']}")


def _strings(path: str, key: str, v) -> list[str]:
    """args/env: a list of strings, or one string split as a shell splits a command line (shlex)."""
    if isinstance(v, str):
        try:
            return shlex.split(v)
        except ValueError as e:
            raise ScenarioError(path, key, f"{v!r}: cannot split it as a shell would ({e}); write a list of "
                                "strings, e.g. [\"-v\", \"x y\"]") from None
    for i, x in enumerate(v):
        if not isinstance(x, str):
            raise ScenarioError(path, f"{key}[{i}]", f"must be a string (got {type(x).__name__} {x!r}); "
                                "write a list of strings")
    return list(v)


def _check_expect(path: str, expect: dict, where: str) -> None:
    """[expect]: each key's type and value, the regex compiled and its group there if a number range needs it."""
    _check(path, where, expect, EXPECT_KEYS)
    if "exit_code" in expect and not 0 <= expect["exit_code"] <= 255:
        raise ScenarioError(path, f"{where}exit_code", f"an exit status is 0 to 255, got {expect['exit_code']}")
    for k in ("min_async_preemptions", "max_async_preemptions"):
        if k in expect and expect[k] < 0:
            raise ScenarioError(path, f"{where}{k}", f"must be 0 or more, got {expect[k]}")
    if expect.get("min_async_preemptions", 0) > expect.get("max_async_preemptions", math.inf):
        raise ScenarioError(path, f"{where}min_async_preemptions", f"{expect['min_async_preemptions']} is more "
                            f"than max_async_preemptions ({expect['max_async_preemptions']}): no run can hold both")
    groups = 0
    if "stdout_regex" in expect:
        try:
            groups = re.compile(expect["stdout_regex"]).groups
        except re.error as e:
            raise ScenarioError(path, f"{where}stdout_regex", f"{expect['stdout_regex']!r} is not a valid "
                                f"regular expression (Python's re: {e})") from None
    if "stdout_number_range" in expect:
        rng, key = expect["stdout_number_range"], f"{where}stdout_number_range"
        if not (len(rng) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                                      for x in rng)):
            raise ScenarioError(path, key, f"must be a [low, high] pair of numbers, got {rng!r}")
        if rng[0] > rng[1]:
            raise ScenarioError(path, key, f"low {rng[0]} is above high {rng[1]}")
        if "stdout_regex" not in expect:
            raise ScenarioError(path, key, f"needs {where}stdout_regex with a group")
        if groups < 1:
            raise ScenarioError(path, key, f"needs a group in {where}stdout_regex (the number to check, e.g. "
                                "'took (\\d+) ms'); it has none")


def _validate(path: str, data: dict, where: str = "") -> None:
    """Every key of a scenario (or of one variant, `where` = "variants.NAME."): known, typed, in range."""
    for k, v in data.items():
        if k not in TOP_KEYS or (where and k == "variants"):
            allowed = sorted(TOP_KEYS - ({"variants"} if where else set()))
            raise ScenarioError(path, f"{where}{k}", f"unknown key (allowed: {', '.join(allowed)})")
        check_type(path, f"{where}{k}", v, RUN_KEYS.get(k) or TEXT_KEYS[k])
    _check_run(path, {k: data[k] for k in RUN_KEYS if k in data}, where)
    for k in ("args", "env"):
        if k in data:
            _strings(path, f"{where}{k}", data[k])
    env = data.get("env", [])
    for kv in _strings(path, f"{where}env", env):
        if "=" not in kv:
            raise ScenarioError(path, f"{where}env", f"{kv!r}: write KEY=VALUE")
    if "expect" in data:
        _check_expect(path, data["expect"], f"{where}expect.")


def load(path: str, variant: str | None = None) -> ExecScenario:
    p = Path(path)
    data = read_toml(p)
    if "program" not in data and ("asm" in data or "goroutines" in data):
        raise EmuError(f"{path}: a {'scheduler' if 'goroutines' in data else 'sweep'} scenario (it names an `asm` "
                       f"file, not a `program`): run it with `preemu run {path}`")
    for k in data:
        if k not in TOP_KEYS:
            raise ScenarioError(path, k, f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    if "program" not in data:
        raise ScenarioError(path, "program", "required: the Go program (file or package directory) to run")
    _validate(path, data)
    variants = data.get("variants", {})
    for name, table in variants.items():             # every variant is checked, not only the one run
        check_type(path, f"variants.{name}", table, dict)
        _validate(path, table, f"variants.{name}.")
    if variant is not None:
        if variant not in variants:
            raise ScenarioError(path, f"variants.{variant}",
                                f"no such variant (have: {', '.join(sorted(variants)) or 'none'})")
        data = {**data, **variants[variant]}           # a variant's [expect] replaces the base one
    run = {k: data[k] for k in RUN_KEYS if k in data}
    expect = data.get("expect", {})
    prog = (p.parent / data["program"]).resolve()
    if not data["program"] or not prog.exists():
        raise ScenarioError(path, "program", f"{prog} does not exist" if data["program"] else
                            "empty: name the Go program (a .go file or package directory, relative to the scenario)")
    return ExecScenario(p, data.get("name", p.stem), data.get("description", ""), prog,
                        _strings(path, "args", data.get("args", [])), _strings(path, "env", data.get("env", [])),
                        run, expect, sorted(variants))


def check(sc: ExecScenario, proc) -> list[str]:
    """The failed expectations, each naming its key."""
    e, fails = sc.expect, []
    out = bytes(proc.fds.stdout.data).decode(errors="replace")
    n = len(proc.watch.preemptions)
    if "exit_code" in e and proc.exit_code != e["exit_code"]:
        fails.append(f"expect.exit_code: wanted {e['exit_code']}, the program ended with {proc.exit_code}")
    if "starved" in e and proc.starved != e["starved"]:
        fails.append(f"expect.starved: wanted {e['starved']}, got {proc.starved} ({proc.stop_reason})")
    if "stdout_regex" in e:
        m = re.search(e["stdout_regex"], out)
        if m is None:
            fails.append(f"expect.stdout_regex: {e['stdout_regex']!r} does not match the output {out!r}")
        elif "stdout_number_range" in e:
            lo, hi = e["stdout_number_range"]
            try:
                v = float(m.group(1))
            except (TypeError, ValueError):          # the group matched no number (or did not take part)
                fails.append(f"expect.stdout_number_range: the first group of stdout_regex matched {m.group(1)!r}, "
                             "not a number")
            else:
                if not lo <= v <= hi:
                    fails.append(f"expect.stdout_number_range: {v:g} is outside [{lo}, {hi}]")
    if "min_async_preemptions" in e and n < e["min_async_preemptions"]:
        fails.append(f"expect.min_async_preemptions: wanted at least {e['min_async_preemptions']}, got {n}")
    if "max_async_preemptions" in e and n > e["max_async_preemptions"]:
        fails.append(f"expect.max_async_preemptions: wanted at most {e['max_async_preemptions']}, got {n}")
    return fails
