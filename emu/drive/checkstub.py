"""`preemu check-stub`: run anyone's asyncPreempt over the regression corpus, and mutation testing.

In the go1.27 layout the corpus also has a real-program part (`go:NAME` rows): the functions REAL_FUNCS of
scenarios/go/stubcorpus, each swept inside its real program (emu/drive/realsweep.py) with the stub loaded
over the binary's runtime.asyncPreempt (a Go program's own stub moved there, its CALL to asyncPreempt2
redirected: realsweep.transplant), so the runtime's own handler, asyncPreempt2 and scheduler meet it.

The corpus is every sweep scenario in scenarios/ that expects no violations (not forced). Each is
swept at every boundary (capped) with the user's stub; every asynchronous preemption resumes the
goroutine on the other M and P (different FS base, different p.xRegs), and the stub must also stay
within the headroom the oracle assumes (a canary below S - asyncPreemptStack) and write nothing
at or above the resume-PC slot. A full GC (stack scan through the stub's frame, mark, sweep) runs at
every injection point, so a stub that breaks the scan (or a frame it builds) shows up as a
use-after-free.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core import layout as L
from . import loader, scenario, sweeper
from ..check import mutants
from ..core import paths
from ..output import report
from ..core.errors import AsmError, EmuError
from ..core.program import Program

SCENARIOS = paths.SCENARIOS_DIR

#: The quick corpus used for mutants: together they keep every register and flag live.
MUTANT_CORPUS = ("xmm_loop", "adc_chain", "r14_scratch", "rep_copy")
#: The real-program part of the corpus (go1.27): functions of REAL_PROGRAM, as `go:NAME` rows
REAL_PROGRAM = SCENARIOS / "go" / "stubcorpus"
REAL_FUNCS = ("spin", "floats", "compare", "calls", "walk")
REAL_LOOPS = tuple(f"go:{f}" for f in REAL_FUNCS)
#: the corpus of the AVX mutants (--cpu v3/v4): real-program loops, whose vector state is the level's
AVX_MUTANT_CORPUS = ("go:spin",)


@dataclass
class CorpusResult:
    scenario: str
    entry: str
    boundaries: int
    points: int
    injected: int
    refused: dict
    violations: list
    violation_count: int
    elapsed: float = 0.0          # seconds spent sweeping this loop




#: refusals a stub causes by itself (its frame too large for the headroom the runtime checks), as opposed to
#: those of a loop's own code (assembly, unsafe points)
STUB_REFUSALS = ("stack-headroom",)


@dataclass
class StubReport:
    """What `preemu check-stub` prints: one CorpusResult per corpus loop."""

    stub: str
    layout: str
    headroom: int
    stub_max_sp_delta: int
    results: list[CorpusResult] = field(default_factory=list)
    stub_program: Program | None = field(default=None, repr=False)   # the assembled stub (for locations)
    layout_note: str = ""          # how the layout was chosen, when the stub's code told it (stub_layout)
    whole: bool = True             # the whole corpus (only() restricts it to a loop, some of which refuse all)

    @property
    def ok(self) -> bool:
        """True when the stub passed every corpus loop and was injected at all (issue #46 item 5: a stub every
        point refuses, e.g. one whose frame exceeds the headroom, tested nothing and does not pass)."""
        return all(r.violation_count == 0 for r in self.results) and not self.vacuous

    @property
    def vacuous(self) -> bool:
        """No corpus loop injected the stub even once, so nothing it saves or restores was tested: over the whole
        corpus, or in loops where the stub itself was the reason (STUB_REFUSALS; a loop of assembly, below_sp,
        refuses every point by design)."""
        if not self.results or any(r.injected for r in self.results):
            return False
        return (self.whole and len(self.results) > 1) or any(k in STUB_REFUSALS for r in self.results for k in r.refused)

    @property
    def violations(self) -> list:
        """Every kept violation over the corpus (each loop keeps its first 200)."""
        return [v for r in self.results for v in r.violations]

    @property
    def violation_count(self) -> int:
        return sum(r.violation_count for r in self.results)

    def groups(self) -> "dict[tuple[str, str], list[tuple[str, object]]]":
        """{(kind, what): [(corpus loop, violation), ...]} in order of first appearance."""
        out: dict = {}
        for r in self.results:
            for v in r.violations:
                out.setdefault((v.kind, v.what), []).append((r.scenario, v))
        return out

    def only(self, loop: str) -> "StubReport":
        """The same report restricted to one corpus loop."""
        return replace(self, results=[r for r in self.results if r.scenario == loop], whole=False)

    def to_json(self) -> dict:
        """The object `preemu check-stub --json` prints (schema "preemu/check-stub/1")."""
        return report.checkstub_json(self)

    def render(self) -> str:
        """The text `preemu check-stub` prints."""
        return report.render_checkstub(self)

    def summary(self) -> str:
        """The verdict: PASS, or FAIL with the first example of each violated register, flag or address."""
        return "\n".join(report.checkstub_verdict(self)) + "\n"


def _rel(p: Path) -> str:
    try:
        return os.path.relpath(p)
    except ValueError:
        return str(p)


def corpus(names: tuple[str, ...] | None = None) -> list:
    """The sweep scenarios that define the regression corpus."""
    out = []
    for p in sorted(SCENARIOS.glob("*.toml")):
        sc = scenario.load(p)
        if isinstance(sc, scenario.SchedScenario) or sc.expect.get("violations", 0) != 0 or sc.stub is not None:
            continue
        if names is None or sc.name in names:
            out.append(sc)
    return out


_XSAVE = re.compile(r"^(?:\w+ ptr )?\[([^\]]*)\], ([xyz]mm\d+)$")     # a store of an X register to memory
_STACK_REGS = frozenset({"rsp", "rbp"})


def stub_layout(path: str | Path) -> tuple[str, str]:
    """(layout, why) of a .s stub, told from its code: where it saves the X registers before it calls
    asyncPreempt2. Go 1.14-1.25's stub stores X0-X15 in its own frame (an address in RSP, or in a register
    copied from it); Go 1.26+'s (the go1.27 layout) stores them through a pointer it loads from g.m.p, into
    p.xRegs. An EmuError when the stub saves no X register, or saves some each way."""
    prog = loader.load_stub("go1.14", path)             # (the layout does not change how a file assembles)
    stack = set(_STACK_REGS)                            # registers holding an address in the stub's frame
    on_stack, elsewhere = [], []
    for insn in prog.get_func("asyncPreempt").insns:
        if insn.mnemonic == "call" and "asyncPreempt2" in insn.op_str:
            break
        m = _XSAVE.match(insn.op_str)
        if m and not insn.mnemonic.startswith(("cmp", "test", "ptest", "ucomi", "comi")):
            (on_stack if _base(m.group(1)) in stack else elsewhere).append((insn, _base(m.group(1))))
            continue
        dst, _, src = insn.op_str.partition(", ")
        if insn.mnemonic in ("mov", "lea") and dst in _GPR64:     # follow which registers hold a frame address
            frame = src in stack if insn.mnemonic == "mov" else (src.endswith("]") and _base(src) in stack)
            (stack.add if frame else stack.discard)(dst)
    where = lambda items: f"{items[0][0].mnemonic.upper()} at {items[0][0].where}"      # noqa: E731
    if on_stack and elsewhere:
        raise EmuError(f"{path}: cannot tell the stub's layout: it saves X registers both in its frame "
                       f"({where(on_stack)}) and through {elsewhere[0][1]} ({where(elsewhere)}); give --layout "
                       "go1.14 (X0-X15 in the stub's frame) or --layout go1.27 (X0-X15 in p.xRegs)")
    if elsewhere:
        return "go1.27", (f"told from the stub's code: it saves the X registers through {elsewhere[0][1]} "
                          f"({where(elsewhere)}), not in its own frame, as Go 1.26+ saves them in p.xRegs; "
                          "--layout go1.14 overrides")
    if on_stack:
        return "go1.14", (f"told from the stub's code: it saves the X registers in its own frame "
                          f"({where(on_stack)}), as Go 1.14-1.25 do; --layout go1.27 overrides")
    raise EmuError(f"{path}: cannot tell the stub's layout: it saves no X register before it calls asyncPreempt2; "
                   "give --layout go1.14 (X0-X15 saved in the stub's frame) or --layout go1.27 (in p.xRegs)")


_GPR64 = frozenset("rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15".split())


def _base(mem: str) -> str:
    """The base register of a memory operand: `rsp` of `xmmword ptr [rsp + 0x70]` or of `rsp + 0x70`."""
    inner = mem[mem.index("[") + 1:] if "[" in mem else mem
    return re.split(r"[\s+*\]-]", inner.strip(), maxsplit=1)[0]


def _check_one(task) -> CorpusResult:
    """Sweep one corpus loop (a loaded scenario, or a `go:NAME` function of the real program) with the stub."""
    sc, stub_path, layout_name, max_points, seed, cpu = task
    if isinstance(sc, str):
        return _check_real(sc, stub_path, max_points, seed, cpu)
    program = loader.load_program(_rel(sc.asm))
    world = loader.build_world(program, sc.entry, layout_name, stub_path, seed, sc.registers, gc=True)
    t0 = time.perf_counter()
    res = sweeper.sweep(world, sc.entry, seed, min(max_points, sc.max_points), sc.budget, canary=True,
                      async_preemption=sc.async_preemption, nested_signals=sc.nested_signals)
    return CorpusResult(sc.name, sc.entry, res.boundaries, res.points, res.injected, dict(res.refused),
                        res.violations, res.violation_count, time.perf_counter() - t0)


def check(stub_path: str | Path, layout_name: str, max_points: int = 2000,
          names: tuple[str, ...] | None = None, seed: int = 1, on_report=None, jobs: int = 1,
          cpu: str = "v1") -> StubReport:
    """Sweep the corpus with the stub at `stub_path` in the `layout_name` world (one corpus loop per
    task, in `jobs` local processes; the report is in corpus order whatever `jobs` is). At `cpu` v3/v4 only
    the real-program loops run (the model world has no AVX), their program built for the level with
    GOEXPERIMENT=simd, so that the stub's AVX2 or AVX-512 path is the one taken.

    on_report(report) is called as soon as the report exists (it fills as the corpus runs), so a
    caller interrupted half-way can still show what is done."""
    from .shards import map_ordered
    lay = L.get_layout(layout_name)
    scs, every = corpus(names), corpus(None)
    if not every:
        raise EmuError("the regression corpus is empty (no sweep scenarios found)")
    real = [name for name in REAL_LOOPS if names is None or name in names]
    if cpu not in ("v1", "v2"):
        if lay.name != "go1.27":
            raise EmuError(f"--cpu {cpu}: the AVX paths are Go 1.27's (the go1.27 layout); go1.14 had none")
        scs = []
    if lay.name != "go1.27":
        if names is not None and real:
            raise EmuError(f"{', '.join(real)}: the real-program loops run a Go 1.27 runtime: use the go1.27 layout")
        real = []
    first = loader.build_world(loader.load_program(_rel(every[0].asm)), every[0].entry, lay.name, stub_path, seed,
                               every[0].registers, gc=True)          # the stub's figures, before any sweep
    rep = StubReport(str(stub_path), lay.name, first.headroom, first.machine.stub.get_func("asyncPreempt").max_sp_delta,
                     stub_program=first.machine.stub)
    if on_report is not None:
        on_report(rep)
    tasks = [(sc, str(stub_path), lay.name, max_points, seed, cpu) for sc in scs]
    tasks += [(name, os.path.abspath(stub_path), lay.name, max_points, seed, cpu) for name in real]
    for result in map_ordered(_check_one, tasks, jobs):
        rep.results.append(result)
    return rep


def _check_real(name: str, stub_path: str, max_points: int, seed: int, cpu: str = "v1") -> CorpusResult:
    """Sweep function `name` ("go:spin") of the real-program corpus with the stub loaded over its asyncPreempt."""
    from . import realsweep
    func = name.split(":", 1)[1]
    spec = realsweep.RealSpec(str(REAL_PROGRAM), func, 1, (), stub_path, ("prog",), (), seed, cpu=cpu)
    t0 = time.perf_counter()
    sw = spec.build()
    res = realsweep.sweep(spec, sw, str(REAL_PROGRAM), max_points, to_exit=0)
    return CorpusResult(name, res.func, res.boundaries, res.points, res.injected, dict(res.refused),
                        res.violations, res.violation_count, time.perf_counter() - t0)


@dataclass
class MutantResult:
    mutant: mutants.Mutant
    caught: bool
    diagnosed: bool
    named: list[str]

    @property
    def killed(self) -> bool:
        """A mutant counts only when it is caught AND the diagnosis names what it broke."""
        return self.caught and self.diagnosed


mutation_score = report.mutation_score          # (killed, total), defined where the report needs it


def _named(violations) -> set[str]:
    out = set()
    for v in violations:
        out.add(v.what)
        out.add(v.kind)
    return out


def _check_mutant(task) -> MutantResult:
    mu, layout_name, max_points, tmp, cpu = task
    path = Path(tmp) / f"{mu.name}.s"
    path.write_text(mu.text)
    try:
        rep = check(path, layout_name, max_points, MUTANT_CORPUS if cpu in ("v1", "v2") else AVX_MUTANT_CORPUS,
                    cpu=cpu)
        viol = [v for r in rep.results for v in r.violations]
    except AsmError as e:
        raise AssertionError(f"mutant {mu.name} does not assemble: {e}") from None
    named = _named(viol)
    return MutantResult(mu, bool(viol), mu.expect <= named, sorted(named - {
        "register", "flags", "memory", "resume", "final-state"}))


def run_mutants(layout_name: str, max_points: int = 150, mutant_list=None, jobs: int = 1,
                cpu: str = "v1") -> list[MutantResult]:
    """Check every generated mutant (or `mutant_list`) against the quick corpus (one mutant per task,
    in `jobs` local processes); report caught and correctly diagnosed. At `cpu` v3/v4 the mutants are the
    simd stub's dropped AVX restores of that level (mutants.generate_avx), checked on AVX_MUTANT_CORPUS."""
    from .shards import map_ordered
    lay = L.get_layout(layout_name)
    if mutant_list is not None:
        todo = mutant_list
    elif cpu in ("v1", "v2"):
        todo = mutants.generate(lay)
    else:
        todo = [m for level, m in mutants.generate_avx(lay) if level == cpu]
    with tempfile.TemporaryDirectory() as tmp:
        return list(map_ordered(_check_mutant, [(mu, lay.name, max_points, tmp, cpu) for mu in todo], jobs))
