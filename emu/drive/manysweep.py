"""Many functions in one run: `preemu sweep PROG --func 'ring.*'` sweeps every function of the program's own
package that the pattern matches, each at its first call, as a sweep of that function alone does.

Which functions a pattern can match: the program's own functions (package main, or, with --test/--bench, the
package under test and its external _test package), minus what the compiler generates (ABI wrappers `.abi0`,
`-range` bodies, `deferwrap`/`gowrap` thunks, `type:` equality functions). A pattern that names a package
(`strings.*`: the text before its first dot, without wildcards) reaches that package too, and one with a `/`
every package (`example.com/ring.*`, `*/ring.*`). Each
function is matched by its full name (`example.com/ring.(*Ring).Push`), its package-qualified short name
(`ring.(*Ring).Push`, `main.sum`) and its name within the package (`(*Ring).Push`, `sum`), with shell
wildcards (fnmatch: `*`, `?`, `[...]`; a generic instance's brackets are matched as text when the pattern
has no wildcard there).

Each function gets a sweep of its own (realsweep.sweep from a RealSpec naming it), with the same options,
shards, runner and results file (the results file keys shards by function: an interrupted pattern sweep
resumes function by function). A matched function the run never calls is listed as such, not an error.
One start-up serves them all (_shared): the program runs once, stopping at each matched function's first
call, where that function is swept from the stopped process; with --gc (the collector watches one goroutine
of a process) each function starts the program again.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from ..core.errors import EmuError

WILDCARDS = "*?"
#: compiler-generated function names (cmd/compile: ABI wrappers, range-over-func bodies, go/defer thunks)
GENERATED = (".abi0", "-range", ".deferwrap", ".gowrap")


def is_pattern(func: str) -> bool:
    """Whether --func is a pattern: it has a wildcard outside a pointer receiver's `(*T)`."""
    return any(c in func.replace("(*", "(") for c in WILDCARDS)


def _short(name: str) -> tuple[str, str]:
    """(package-qualified short name, name within the package) of a full Go symbol name."""
    slash = name.rfind("/", 0, name.find("(") if "(" in name else len(name))
    rest = name[slash + 1:]
    return rest, rest.split(".", 1)[1] if "." in rest else rest


def matching(symbols: dict, pattern: str, packages: tuple[str, ...], is_code=lambda addr: True) -> list[str]:
    """The functions (symbols at `is_code` addresses) of `packages` (of any package when the pattern has a '/')
    whose names match `pattern`."""
    from ..front.godwarf import package_of
    head = pattern.split(".", 1)[0] if "." in pattern else ""
    named = head if head and not any(c in head for c in "*?[(") else None    # strings.* names package strings
    out = []
    for name, (addr, size) in symbols.items():
        if size <= 0 or name.startswith(("type:", "go:")) or any(g in name for g in GENERATED) or \
                not is_code(addr):
            continue
        pkg = package_of(name)
        if "/" not in pattern and pkg not in packages and named not in (pkg, pkg.rsplit("/", 1)[-1]):
            continue
        short, local = _short(name)
        if any(fnmatch.fnmatchcase(n, pattern) for n in (name, short, local)):
            out.append(name)
    return sorted(out)


@dataclass
class FunctionResult:
    """One matched function: its report (a realsweep_report.RealSweepReport), or why there is none."""
    func: str
    report: object = None
    status: str = "swept"            # swept | not called | error
    note: str = ""

    @property
    def short(self) -> str:
        """How the table names it: package-qualified, without the import path's directories."""
        return _short(self.func)[0]


@dataclass
class ManyResult:
    source: str
    pattern: str
    test: tuple
    functions: list = field(default_factory=list)     # [FunctionResult]
    elapsed: float = 0.0
    cpu: float = 0.0

    @property
    def ok(self) -> bool:
        """Every swept function held, none could not be swept, and at least one was swept (issue #46 item 5:
        a pattern whose functions the run never called tested nothing)."""
        return all(f.report is None or f.report.ok for f in self.functions) and \
            not any(f.status == "error" for f in self.functions) and self.swept > 0

    @property
    def swept(self) -> int:
        return sum(1 for f in self.functions if f.report is not None)


def sweep_all(src: str, pattern: str, packages: tuple[str, ...], image, sweep_one, progress=None,
              spec=None) -> list:
    """Sweep every matching function of `image` (elfimage.Image) with sweep_one(func, process) -> report; a
    function the run never calls (or whose call count --call exceeds) is 'not called', another bad input for
    that function alone 'error'. With `spec` (a realsweep.RealSpec of the program: its parts, not its
    function, are used), one start-up serves every function (shared)."""
    code = [(s.vaddr, s.vaddr + s.memsz) for s in image.segments if s.flags & 1]      # PF_X
    names = matching(image.symbols, pattern, packages, lambda a: any(lo <= a < hi for lo, hi in code))
    if not names:
        raise EmuError(f"--func {pattern!r}: matches no function of {', '.join(packages)} (a pattern matches the "
                       "program's own functions by full name, package.name or name; put a '/' in it to reach "
                       "other packages)")
    done: dict[str, FunctionResult] = {}

    def sweep(name: str, process=None) -> FunctionResult:
        if progress is not None:
            progress(len(done) + 1, len(names), name)
        try:
            done[name] = FunctionResult(name, sweep_one(name, process))
        except EmuError as e:
            text = str(e)
            called = " was never called" in text or " time(s), not " in text
            done[name] = FunctionResult(name, None, "not called" if called else "error", text)
        return done[name]
    if spec is not None:
        _shared(image, names, spec, sweep, done)
    for name in names:
        if name not in done:
            sweep(name)
    return [done[n] for n in names]


def _shared(image, names: list[str], spec, sweep, done: dict) -> None:
    """One start-up for all: a process run on from one matched function's first call to the next
    (gstart.next_first_call), each function swept from the process stopped at its call, which is then put
    back there (its snapshot) to run on. A run stopped and resumed runs as one that was not, so each function
    gets the snapshot a start-up of its own would give and shards rebuilt elsewhere from the spec agree
    (tests/test_pattern_sweep.py compares the two). A sweep that could not use the shared process (an
    error, a process built again) leaves the functions after it to start-ups of their own."""
    from ..linux import snapshot
    from . import gstart
    img, opts, _, stub, res = spec.parts()
    p = gstart.new_process(img, opts, res.source_path, stub)
    remaining = {n: image.symbols[n][0] for n in names}
    while remaining:
        hit = gstart.next_first_call(p, remaining)
        if hit is None:                         # the program ended: the rest are never called
            for name in remaining:
                done[name] = FunctionResult(name, None, "not called", f"{name} was never called during the run")
            return
        del remaining[hit]
        r = sweep(hit, p)
        sw = r.report.sweeper if r.report is not None else None
        if sw is None or sw.p is not p:
            return
        snapshot.restore(p, sw.snap)            # back at hit's call, to run on to the next one
