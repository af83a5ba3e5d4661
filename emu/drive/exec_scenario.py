"""Whole-program scenarios: a Go program (built at run time), how to run it, and what must hold.

A scenario is a TOML file run by `preemu exec FILE.toml [--variant NAME]`:

  name, description, cites          text
  program = "starve"                a .go file or package directory, relative to the scenario file
  args = [...], env = ["K=V", ...]  the program's arguments and environment
  max_virtual_ms, budget, seed, quantum, ns_per_insn, cpus    run options (as the exec flags)
  [expect]                          checks on the run (all optional):
      exit_code, starved (bool), stdout_regex, stdout_number_range = [lo, hi] (the regex's
      first group as a number), min_async_preemptions, max_async_preemptions
  [variants.NAME]                   overrides of the keys above (env, max_virtual_ms...); its own
                                    [variants.NAME.expect] replaces [expect] as a whole

Every async preemption's register check and oracle agreement are always checked (violations).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import ScenarioError
from .tomlfile import check_type, read_toml

RUN_KEYS = {"max_virtual_ms": (int, float), "budget": int, "seed": int, "quantum": int, "ns_per_insn": int, "cpus": int}
EXPECT_KEYS = {"exit_code": int, "starved": bool, "stdout_regex": str, "stdout_number_range": list,
               "min_async_preemptions": int, "max_async_preemptions": int}
TOP_KEYS = {"name", "description", "cites", "program", "args", "env", "expect", "variants", *RUN_KEYS}


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


def _check_run(path: str, run: dict) -> None:
    """The run options' values, checked as the exec flags are (a scenario's quantum = 0 would never end)."""
    for k in POSITIVE_RUN_KEYS:
        if k in run and run[k] <= 0:
            raise ScenarioError(path, k, f"must be positive, got {run[k]}")
    if "cpus" in run and not 1 <= run["cpus"] <= MAX_CPUS:
        raise ScenarioError(path, "cpus", f"must be between 1 and {MAX_CPUS}, got {run['cpus']}")


def load(path: str, variant: str | None = None) -> ExecScenario:
    p = Path(path)
    data = read_toml(p)
    for k in data:
        if k not in TOP_KEYS:
            raise ScenarioError(path, k, f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    if not isinstance(data.get("program"), str):
        raise ScenarioError(path, "program", "required: the Go program (file or package directory) to run")
    variants = data.get("variants", {})
    if variant is not None:
        if variant not in variants:
            raise ScenarioError(path, f"variants.{variant}",
                                f"no such variant (have: {', '.join(sorted(variants)) or 'none'})")
        data = {**data, **variants[variant]}           # a variant's [expect] replaces the base one
    run = {k: data[k] for k in RUN_KEYS if k in data}
    _check(path, "", run, RUN_KEYS)
    _check_run(path, run)
    expect = data.get("expect", {})
    _check(path, "expect.", expect, EXPECT_KEYS)
    if "stdout_number_range" in expect and "stdout_regex" not in expect:
        raise ScenarioError(path, "expect.stdout_number_range", "needs expect.stdout_regex with a group")
    for k in ("args", "env"):
        if not all(isinstance(x, str) for x in data.get(k, [])):
            raise ScenarioError(path, k, "expected a list of strings")
    for kv in data.get("env", []):
        if "=" not in kv:
            raise ScenarioError(path, "env", f"{kv!r}: write KEY=VALUE")
    prog = (p.parent / data["program"]).resolve()
    if not prog.exists():
        raise ScenarioError(path, "program", f"{prog} does not exist")
    return ExecScenario(p, data.get("name", p.stem), data.get("description", ""), prog, list(data.get("args", [])),
                        list(data.get("env", [])), run, expect, sorted(variants))


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
            v = float(m.group(1))
            if not lo <= v <= hi:
                fails.append(f"expect.stdout_number_range: {v:g} is outside [{lo}, {hi}]")
    if "min_async_preemptions" in e and n < e["min_async_preemptions"]:
        fails.append(f"expect.min_async_preemptions: wanted at least {e['min_async_preemptions']}, got {n}")
    if "max_async_preemptions" in e and n > e["max_async_preemptions"]:
        fails.append(f"expect.max_async_preemptions: wanted at most {e['max_async_preemptions']}, got {n}")
    return fails
