"""Scenario files (scenarios/*.toml): parse, validate fully before running, run, check expectations.

Format (documented in scenarios/README.md):

    name = "adc_chain"                # required
    description = "..."
    asm = "../asm/adc_chain.s"        # required, relative to the scenario file
    entry = "adc_chain"               # required: the goroutine's entry function
    layout = "go1.14"                 # stub layout (go1.14 | go1.27)
    stub = "path/to/stub.s"           # optional user stub instead of the generated one
    seed = 1
    max_points = 100000
    budget = 20000000                 # instruction budget of the reference run
    [registers]                       # entry registers; others start seeded-random
    RCX = 64
    RSI = "src"                       # a ;@data symbol (symbol+offset allowed)
    [expect]
    violations = 0                    # default 0
    all_injected = true               # injected == boundaries
    refused = { unsafe-point = 3 }    # exact refusal counts by reason
    final = { RAX = 0x1234 }          # registers at goexit in the reference run
    equal_buffers = [["dst", "src"]]  # buffers with equal contents at goexit

Errors name the file and the key (ScenarioError).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..core import gostructs, memmap, regs
from . import loader
from . import sweeper as S
from .tomlfile import check_type, read_toml
from ..core.errors import EmuError, ScenarioError
from ..core.layout import LAYOUTS
from ..check.safepoint import REASONS
from ..check.verify import Check

_TOP = {"name": str, "description": str, "asm": str, "entry": str, "layout": str, "stub": str, "seed": int,
        "max_points": int, "budget": int, "registers": dict, "expect": dict, "async_preemption": bool,
        "nested_signals": bool, "cites": str, "gc": bool, "gc_scanner": str, "stack_size": int}
_EXPECT = {"violations": int, "all_injected": bool, "refused": dict, "final": dict, "equal_buffers": list,
           "min_injected": int, "retained_conservatively": int, "min_freed": int}


@dataclass
class Scenario:
    path: Path
    name: str
    description: str
    asm: Path
    entry: str
    layout: str = "go1.14"
    stub: Path | None = None
    seed: int = 1
    max_points: int = 100_000
    budget: int = S.DEFAULT_BUDGET
    registers: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    async_preemption: bool = True
    nested_signals: bool = False
    cites: str = ""
    gc: bool = False
    gc_scanner: str = "go"
    stack_size: int = memmap.DEFAULT_STACK_SIZE      # the goroutine's first stack (Go's fixedStack: 2 KiB)


def _check_top(ps: str, data: dict, allowed: dict, required: tuple[str, ...], positive: tuple[str, ...],
               what: str = "") -> None:
    """Unknown keys, types, required keys, the layout, and keys that must be positive."""
    for k, v in data.items():
        if k not in allowed:
            raise ScenarioError(ps, k, f"unknown key{what} (allowed: {', '.join(allowed)})")
        check_type(ps, k, v, allowed[k])
    for k in required:
        if k not in data:
            raise ScenarioError(ps, k, "required key is missing")
    if data.get("layout", "go1.14") not in LAYOUTS:
        raise ScenarioError(ps, "layout", f"must be one of {', '.join(LAYOUTS)}")
    for k in positive:
        if k in data and not (math.isfinite(data[k]) and data[k] > 0):
            raise ScenarioError(ps, k, f"must be positive (a finite number above 0), got {data[k]}")


def _check_stack_size(ps: str, data: dict) -> None:
    """stack_size: at least Go's fixedStack and a power of two, as stackalloc requires (stack.go:344)."""
    n = data.get("stack_size", memmap.DEFAULT_STACK_SIZE)
    if n < gostructs.FIXED_STACK or n & (n - 1) or n > memmap.STACK_SLOT // 4:
        raise ScenarioError(ps, "stack_size", f"must be a power of two from {gostructs.FIXED_STACK} to "
                            f"{memmap.STACK_SLOT // 4} bytes (got {n})")


def _check_registers(ps: str, prefix: str, table: dict, strings_ok: bool) -> None:
    for r, v in table.items():
        try:
            regs.lookup(r)
        except KeyError:
            raise ScenarioError(ps, f"{prefix}.{r}", "unknown register") from None
        if isinstance(v, bool) or not isinstance(v, (int, str) if strings_ok else int):
            raise ScenarioError(ps, f"{prefix}.{r}", "must be an integer or a data symbol name" if strings_ok
                                else "must be an integer")


def _files(ps: str, p: Path, data: dict) -> tuple[Path, Path | None]:
    """The asm file and the optional stub, relative to the scenario file; both must exist."""
    out = []
    for key in ("asm", "stub"):
        if key not in data:
            out.append(None)
            continue
        f = Path(os.path.normpath(p.parent / data[key]))
        if not f.is_file():
            raise ScenarioError(ps, key, f"no such file: {f}")
        out.append(f)
    return out[0], out[1]


def load(path: str | Path) -> "Scenario | SchedScenario":
    """Read and validate a scenario file (a sweep scenario, or a scheduler one with [[goroutines]])."""
    p = Path(path)
    ps = str(path)
    data = read_toml(p)
    if "program" in data:
        raise EmuError(f"{ps}: a whole-program scenario (it names a `program`, not an `asm` file): run it with "
                       f"`preemu exec {ps}`")
    if "goroutines" in data:
        return load_sched(p, data)
    _check_top(ps, data, _TOP, ("name", "asm", "entry"), ("max_points", "budget"))
    _check_stack_size(ps, data)
    from ..model.gcscan import SCANNERS
    if data.get("gc_scanner", "go") not in SCANNERS:
        raise ScenarioError(ps, "gc_scanner", f"must be one of {', '.join(SCANNERS)}")
    _check_registers(ps, "registers", data.get("registers", {}), strings_ok=True)
    exp = data.get("expect", {})
    for k, v in exp.items():
        if k not in _EXPECT:
            raise ScenarioError(ps, f"expect.{k}", f"unknown expectation (allowed: {', '.join(_EXPECT)})")
        check_type(ps, f"expect.{k}", v, _EXPECT[k])
        if _EXPECT[k] is int and v < 0:
            raise ScenarioError(ps, f"expect.{k}", f"a count: must be 0 or more, got {v}")
    for reason, n in exp.get("refused", {}).items():
        if reason not in REASONS:
            raise ScenarioError(ps, f"expect.refused.{reason}", f"unknown reason (known: {', '.join(REASONS)})")
        check_type(ps, f"expect.refused.{reason}", n, int)
        if n < 0:
            raise ScenarioError(ps, f"expect.refused.{reason}", f"a count: must be 0 or more, got {n}")
    _check_registers(ps, "expect.final", exp.get("final", {}), strings_ok=False)
    for i, pair in enumerate(exp.get("equal_buffers", [])):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise ScenarioError(ps, f"expect.equal_buffers[{i}]", "must be a pair of buffer names")
    asm, stub = _files(ps, p, data)
    return Scenario(p, data["name"], data.get("description", ""), asm, data["entry"], data.get("layout", "go1.14"),
                    stub, data.get("seed", 1), data.get("max_points", 100_000), data.get("budget", S.DEFAULT_BUDGET),
                    dict(data.get("registers", {})), dict(exp), data.get("async_preemption", True),
                    data.get("nested_signals", False), data.get("cites", ""), data.get("gc", False),
                    data.get("gc_scanner", "go"), data.get("stack_size", memmap.DEFAULT_STACK_SIZE))


_SCHED_TOP = {"name": str, "description": str, "cites": str, "asm": str, "layout": str, "stub": str, "seed": int,
              "gomaxprocs": int, "async_preemption": bool, "duration_ms": (int, float), "ns_per_insn": (int, float),
              "quantum_us": (int, float), "starvation_ms": (int, float), "gc_every_ms": (int, float),
              "goroutines": list, "expect": dict, "stack_size": int}
_SCHED_EXPECT = {"starved": bool, "wake_latency_p50_ms": list, "wake_latency_max_ms": list,
                 "min_preemptions_async": int, "min_preemptions_cooperative": int, "max_preemptions_async": int,
                 "cpu_share": dict, "min_wakeups": int, "gc_blocked": bool, "gc_wait_max_ms": list}


@dataclass
class SchedScenario:
    path: Path
    name: str
    description: str
    asm: Path
    goroutines: list            # [sched.GoSpec]
    layout: str = "go1.14"
    stub: Path | None = None
    seed: int = 1
    gomaxprocs: int = 1
    async_preemption: bool = True
    duration_ms: float = 100.0
    ns_per_insn: float = 1.0
    quantum_us: float = 20.0
    starvation_ms: float = 50.0
    gc_every_ms: float = 0.0
    expect: dict = field(default_factory=dict)
    cites: str = ""
    stack_size: int = memmap.DEFAULT_STACK_SIZE


MAX_DURATION_MS = 10_000          # a scheduler scenario's virtual time: 10^10 instructions at 1 ns each


MAX_SCHED_INSNS = 10 ** 10       # what MAX_DURATION_MS is at 1 ns per instruction


def _check_range(ps: str, key: str, rng) -> None:
    """A [low, high] pair of numbers, low <= high; no NaN, and only high may be infinite (no upper bound)."""
    if not (isinstance(rng, list) and len(rng) == 2 and
            all(isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x) for x in rng)):
        raise ScenarioError(ps, key, f"must be a [low, high] pair of numbers, got {rng!r}")
    if not math.isfinite(rng[0]) or rng[0] > rng[1]:
        raise ScenarioError(ps, key, f"low {rng[0]} must be a finite number no higher than high {rng[1]}")


def _check_sched_numbers(ps: str, data: dict) -> None:
    """What the model scheduler can run: GOMAXPROCS Ps it has slots for, a quantum of at least one instruction,
    and at most MAX_SCHED_INSNS instructions of virtual time (a tiny ns_per_insn would mean years of emulation)."""
    if "gomaxprocs" in data and data["gomaxprocs"] > memmap.MAX_PS:
        raise ScenarioError(ps, "gomaxprocs", f"must be 1 to {memmap.MAX_PS} (got {data['gomaxprocs']})")
    ns = data.get("ns_per_insn", 1.0)
    if data.get("quantum_us", 20) * 1000 < ns:
        raise ScenarioError(ps, "quantum_us", f"{data.get('quantum_us', 20)} us is shorter than one instruction "
                            f"(ns_per_insn = {ns})")
    insns = data.get("duration_ms", 100) * 1e6 / ns
    if insns > MAX_SCHED_INSNS:
        raise ScenarioError(ps, "ns_per_insn", f"{ns:g} ns per instruction makes duration_ms = "
                            f"{data.get('duration_ms', 100)} {insns:.3g} instructions to emulate; at most "
                            f"{MAX_SCHED_INSNS:.0e} (raise ns_per_insn or shorten duration_ms)")


def load_sched(path: str | Path, data: dict) -> SchedScenario:
    """Validate a scheduler scenario (one with [[goroutines]])."""
    from ..model.sched import GoSpec
    p, ps = Path(path), str(path)
    _check_top(ps, data, _SCHED_TOP, ("name", "asm"),
               ("gomaxprocs", "duration_ms", "ns_per_insn", "quantum_us", "starvation_ms", "gc_every_ms"),
               " for a scheduler scenario")
    _check_stack_size(ps, data)
    if isinstance(data.get("duration_ms"), (int, float)) and data["duration_ms"] > MAX_DURATION_MS:
        raise ScenarioError(ps, "duration_ms", f"at most {MAX_DURATION_MS:,} ms of virtual time (got "
                            f"{data['duration_ms']:,}): the scheduler runs every instruction of it")
    _check_sched_numbers(ps, data)
    specs = []
    if not 1 <= len(data["goroutines"]) <= memmap.MAX_GS - memmap.MAX_MS:
        raise ScenarioError(ps, "goroutines", f"between 1 and {memmap.MAX_GS - memmap.MAX_MS} goroutines "
                            f"(got {len(data['goroutines'])})")
    for i, g in enumerate(data["goroutines"]):
        key = f"goroutines[{i}]"
        if not isinstance(g, dict):
            raise ScenarioError(ps, key, "must be a table with name and entry")
        for k in g:
            if k not in ("name", "entry", "registers"):
                raise ScenarioError(ps, f"{key}.{k}", "unknown key (allowed: name, entry, registers)")
        if "name" in g:
            check_type(ps, f"{key}.name", g["name"], str)
        if "entry" not in g or not isinstance(g["entry"], str):
            raise ScenarioError(ps, f"{key}.entry", "required: the goroutine's entry function")
        regs_ = g.get("registers", {})
        if not isinstance(regs_, dict):
            raise ScenarioError(ps, f"{key}.registers", "must be a table")
        _check_registers(ps, f"{key}.registers", regs_, strings_ok=False)
        specs.append(GoSpec(str(g.get("name", f"g{i + 1}")), g["entry"], dict(regs_)))
    if not specs:
        raise ScenarioError(ps, "goroutines", "at least one goroutine is needed")
    exp = data.get("expect", {})

    def validate(table: dict, prefix: str) -> None:
        for k, v in table.items():
            if k in ("async_on", "async_off") and prefix == "expect":
                if not isinstance(v, dict):
                    raise ScenarioError(ps, f"expect.{k}", "must be a table of expectations")
                validate(v, f"expect.{k}")
                continue
            if k not in _SCHED_EXPECT:
                raise ScenarioError(ps, f"{prefix}.{k}", f"unknown expectation (allowed: {', '.join(_SCHED_EXPECT)}, "
                                    "async_on, async_off)")
            check_type(ps, f"{prefix}.{k}", v, _SCHED_EXPECT[k])
            if isinstance(v, list):
                _check_range(ps, f"{prefix}.{k}", v)
            elif isinstance(v, int) and not isinstance(v, bool) and v < 0:
                raise ScenarioError(ps, f"{prefix}.{k}", f"must be 0 or more, got {v}")
        for n, rng in table.get("cpu_share", {}).items():
            if n not in {s.name for s in specs}:
                raise ScenarioError(ps, f"{prefix}.cpu_share.{n}", "no goroutine by that name")
            _check_range(ps, f"{prefix}.cpu_share.{n}", rng)
    validate(exp, "expect")
    asm, stub = _files(ps, p, data)
    from ..front import gobuild
    if gobuild.is_go_input(asm):
        # The model scheduler runs .s goroutines with preemu's stub and the layout's rules (go1.14 by default);
        # a Go 1.27 binary would run with the wrong stub and rules (#23 N1): its own scheduler is `exec`'s.
        raise ScenarioError(ps, "asm", "a scheduler scenario runs .s goroutines in preemu's model scheduler; a Go "
                            "program brings its own runtime: name it as `program` in a whole-program scenario "
                            "and run it with `preemu exec`")
    return SchedScenario(p, data["name"], data.get("description", ""), asm, specs, data.get("layout", "go1.14"),
                         stub, data.get("seed", 1), data.get("gomaxprocs", 1), data.get("async_preemption", True),
                         float(data.get("duration_ms", 100)), float(data.get("ns_per_insn", 1.0)),
                         float(data.get("quantum_us", 20)), float(data.get("starvation_ms", 50)),
                         float(data.get("gc_every_ms", 0)), dict(exp), data.get("cites", ""),
                         data.get("stack_size", memmap.DEFAULT_STACK_SIZE))


def build_sched(sc: SchedScenario, async_preemption: bool | None = None):
    """The Scheduler of a scheduler scenario, ready to run (sched_limits gives its run's arguments)."""
    from ..core import layout as L
    from ..model.sched import Scheduler
    program = loader.load_program(sc.asm)
    stub = loader.load_stub(sc.layout, sc.stub)
    asyncp = sc.async_preemption if async_preemption is None else async_preemption
    return Scheduler(program, stub, L.get_layout(sc.layout), sc.goroutines, sc.gomaxprocs, asyncp, sc.ns_per_insn,
                     sc.seed, int(sc.quantum_us * 1000), stack_size=sc.stack_size)


def sched_limits(sc: SchedScenario) -> tuple[int, int, int]:
    """Scheduler.run's (duration, starvation threshold, GC period) in ns, from the scenario."""
    return int(sc.duration_ms * 1e6), int(sc.starvation_ms * 1e6), int(sc.gc_every_ms * 1e6)


def run_sched(sc: SchedScenario, async_preemption: bool | None = None, on_round=None):
    """Run a scheduler scenario; return (result, checks). on_round(scheduler) runs after every round."""
    s = build_sched(sc, async_preemption)
    s.on_round = on_round
    res = s.run(*sched_limits(sc))
    return res, check_sched(sc, res)


def progress_printer(duration_ms: float, stream, after_s: float = 2.0, every_s: float = 0.5):
    """An on_round for run_sched that shows, once the run has taken `after_s` of wall time, how much of the
    scenario's virtual time has run (every `every_s`), on one line of `stream`."""
    import time
    t0, shown = time.perf_counter(), [0.0]

    def on_round(s) -> None:
        now = time.perf_counter()
        if now - t0 >= after_s and now - shown[0] >= every_s:
            shown[0] = now
            stream.write(f"\rpreemu: {s.now / 1e6:,.1f} of {duration_ms:,.1f} ms of virtual time \x1b[K")
            stream.flush()

    def finish() -> None:
        """Clear the progress line, if one was shown."""
        if shown[0]:
            stream.write("\r\x1b[K")
            stream.flush()
    on_round.finish = finish
    return on_round


def check_sched(sc: SchedScenario, res) -> list[Check]:
    """Check [expect] plus [expect.async_on] or [expect.async_off], whichever world ran."""
    exp = {k: v for k, v in sc.expect.items() if k not in ("async_on", "async_off")}
    exp.update(sc.expect.get("async_on" if res.async_preemption else "async_off", {}))
    out: list[Check] = []
    if "starved" in exp:
        names = ", ".join(g.name for g in res.starved) or "none"
        out.append(Check("starved", bool(res.starved) == exp["starved"], f"{bool(res.starved)} (starved: {names})"))
    for key, q in (("wake_latency_p50_ms", 0.5), ("wake_latency_max_ms", 1.0)):
        if key in exp:
            lo, hi = exp[key]
            v = res.percentile(q)
            out.append(Check(key, v is not None and lo <= v <= hi,
                             f"{'none' if v is None else f'{v:.3f}'} ms (expected {lo}..{hi})"))
    pre = res.preemptions
    for key, kind, cmp in (("min_preemptions_async", "async", ">="), ("min_preemptions_cooperative", "cooperative", ">="),
                           ("max_preemptions_async", "async", "<=")):
        if key in exp:
            ok = pre[kind] >= exp[key] if cmp == ">=" else pre[kind] <= exp[key]
            out.append(Check(key, ok, f"{pre[kind]} {kind} preemptions ({cmp} {exp[key]})"))
    if "gc_blocked" in exp:
        names = ", ".join(res.gc_blocked) or "none"
        out.append(Check("gc_blocked", bool(res.gc_blocked) == exp["gc_blocked"],
                         f"{bool(res.gc_blocked)} (suspension still pending: {names})"))
    if "gc_wait_max_ms" in exp:
        lo, hi = exp["gc_wait_max_ms"]
        v = res.gc_waits_ns[-1] / 1e6 if res.gc_waits_ns else None
        out.append(Check("gc_wait_max_ms", v is not None and lo <= v <= hi,
                         f"{'none' if v is None else f'{v:.3f}'} ms (expected {lo}..{hi})"))
    if "min_wakeups" in exp:
        n = len(res.latencies_ns)
        out.append(Check("min_wakeups", n >= exp["min_wakeups"], f"{n} (at least {exp['min_wakeups']})"))
    for name, (lo, hi) in exp.get("cpu_share", {}).items():
        g = next(g for g in res.goroutines if g.name == name)
        v = res.cpu_share(g)
        out.append(Check(f"cpu_share.{name}", lo <= v <= hi, f"{v:.3f} (expected {lo}..{hi})"))
    return out


def run(sc: Scenario, layout: str | None = None, max_points: int | None = None, runner=None):
    """Run the scenario's sweep; return (program, world, result, checks). `runner(world)` may return
    a shard runner (emu.drive.shards) for the sweep."""
    program = loader.load_program(sc.asm)
    try:
        world = loader.build_world(program, sc.entry, layout or sc.layout, sc.stub, sc.seed, sc.registers,
                                   gc=sc.gc, scanner=sc.gc_scanner, stack_size=sc.stack_size)
    except EmuError as e:
        if str(e).startswith("no function"):
            raise ScenarioError(str(sc.path), "entry", str(e)) from None
        if str(e).startswith("--reg: "):
            raise ScenarioError(str(sc.path), "registers", str(e)[7:]) from None
        raise
    res = S.sweep(world, sc.entry, sc.seed, max_points or sc.max_points, sc.budget,
                  async_preemption=sc.async_preemption, nested_signals=sc.nested_signals,
                  runner=None if runner is None else runner(world))
    return program, world, res, check(sc, program, world, res)


def check(sc: Scenario, program, world, res: S.SweepResult) -> list[Check]:
    exp = sc.expect
    out = []
    want_v = exp.get("violations", 0)
    out.append(Check("violations", res.violation_count == want_v, f"{res.violation_count} (expected {want_v})"))
    if exp.get("all_injected", False):
        out.append(Check("all_injected", res.injected == res.boundaries,
                         f"injected {res.injected} of {res.boundaries} boundaries"))
    if "min_injected" in exp:
        out.append(Check("min_injected", res.injected >= exp["min_injected"],
                         f"injected {res.injected} (at least {exp['min_injected']})"))
    for reason, n in exp.get("refused", {}).items():
        got = res.refused.get(reason, 0)
        out.append(Check(f"refused.{reason}", got == n, f"{got} (expected {n})"))
    for r, v in exp.get("final", {}).items():
        reg = regs.lookup(r)
        got = res.reference.final.values[reg.name]
        want = v & ((1 << (8 * reg.size)) - 1)
        out.append(Check(f"final.{reg.name}", got == want, f"{got:#x} (expected {want:#x})"))
    if "retained_conservatively" in exp:
        n = len(res.gc.retained_dead) if res.gc else 0
        out.append(Check("retained_conservatively", n == exp["retained_conservatively"],
                         f"{n} dead object(s) retained (expected {exp['retained_conservatively']})"))
    if "min_freed" in exp:
        n = res.gc.freed if res.gc else 0
        out.append(Check("min_freed", n >= exp["min_freed"], f"{n} freed (at least {exp['min_freed']})"))
    mem = {a: data for a, data in res.reference.final_memory}
    for a, b in exp.get("equal_buffers", []):
        try:
            da = next(d for d in program.data if d.name == a)
            db = next(d for d in program.data if d.name == b)
        except StopIteration:
            raise ScenarioError(str(sc.path), "expect.equal_buffers", f"unknown buffer in [{a!r}, {b!r}]") from None
        va, vb = mem[da.addr][:min(da.size, db.size)], mem[db.addr][:min(da.size, db.size)]
        out.append(Check(f"equal_buffers.{a}={b}", va == vb, "equal" if va == vb else "contents differ"))
    return out
