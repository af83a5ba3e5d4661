"""What may differ between two legitimate, uninterrupted runs: the references of a real-program sweep.

A preempted goroutine may resume on another M, whose random generators (rngstate.py: `rand()`,
`cheaprand`, map seeds, `maphash`, `sync.Map`'s seed, `math/rand`) give other numbers than the M it left,
exactly as a native run may. A word that depends on them differs from one uninterrupted run to the next, so
a difference there is no violation. The rule:

- From the snapshot at F's call, REFERENCES runs go on uninterrupted: the primary (the process as it is) and
  others whose runtime randomness was drawn again (rngstate.reseed, each with its own seed derived from
  --seed), every second one also on a CPU half as fast (the virtual clock at 2 ns an instruction), so that
  values of elapsed time differ too. Every key (a result path, a global path, the exit status, an output line) whose value is not the
  same in all of them is *unstable*: not compared, listed in the report.
- A swept run differs at a key only if its value differs from the primary's at a stable key.
- When a chain differs at a stable key, up to CONFIRM more references run (in the coordinator; reseeded and
  held in turns, with --gc also runs with a cycle at a seeded boundary) and the key is dropped, and listed, if
  any of them differs there too: a difference that appears in no legitimate run is a violation (keys of few
  values, e.g. which of two map keys iteration meets first, are caught by these extra runs).
- Output is compared line by line when every reference printed as many lines; otherwise the whole stream is
  unstable.
- HELD_REFERENCES more runs are the program's other legitimate schedules (gsweep.held_reference): G's thread
  descheduled by the OS at a few seeded boundaries of F while the other threads run on. What other goroutines
  legitimately change while F is part-way (a counter under a sync.Mutex, a semaphore's waiters, what a
  channel holds) differs there as after a preemption: such keys are unstable too. A native run on several
  CPUs varies the same thing. A global that the other goroutines wrote during a hold is *shared*: its
  value at F's return is the schedule's, not F's, so it is compared at the program's end only (its output
  and exit status, which every legitimate schedule must agree on), never at F's return.
- Legitimate runs whose exit statuses differ, one of them failing (a test's FAIL, a panic), show a
  schedule-dependent failure of the program: reported as such (failing_schedules), never merely listed.
- With --gc, GC_REFERENCES more runs get the runtime's own cycles during F (gsweep.gc_reference: one at F's
  entry, then 4 at seeded boundaries; a finalizer whose object F stopped using too early runs before F's end there):
  a key a cycle changes without any bug (a finalizer's count, a sync.Pool New count, a cleared weak pointer) is
  unstable too. A GC bug is still found by its own evidence: the use of freed memory, the runtime's crash.
Left out: the AES hash keys fixed at start-up (rngstate.py says why). Elapsed time is varied by the clock
rate only: a value that depends on it in a way a 2x slower clock leaves unchanged but a preemption changes
is still compared.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

#: uninterrupted runs from the snapshot: the primary and REFERENCES - 1 reseeded ones
REFERENCES = 3
#: --gc: references with the runtime's cycles made due during F (one at its entry; then gc_run's, from the seed:
#: 4 cycles, so that a later cycle's sweep finishes what an earlier one freed and its finalizers run while F is
#: still running, as a busy heap's back-to-back cycles do): a cycle legitimately changes what finalizers,
#: sync.Pool's New or weak pointers leave behind, so those keys are not compared
GC_REFERENCES = 2
#: runs with G's thread descheduled at seeded boundaries of F while the others run (gsweep.held_reference)
HELD_REFERENCES = 2
#: runs more (reseeded and held in turns), when a chain differs at a key the references agreed on
CONFIRM = 6

#: how keys name the ending (Violation.what of the final-state checks)
EXIT, STDOUT, STDERR = "program exit_code", "program stdout", "program stderr"


@dataclass
class Unstable:
    """Keys whose value differs between uninterrupted runs."""
    results: set = field(default_factory=set)
    globals: set = field(default_factory=set)
    lines: dict = field(default_factory=dict)        # "stdout"/"stderr" -> set of line indices, or None: whole
    exit_code: bool = False
    references: int = 1                              # legitimate runs compared
    gc_runs: int = 0                                 # of them, --gc's with a cycle during F (GC_REFERENCES)
    held_runs: int = 0                               # of them, with G's thread descheduled (HELD_REFERENCES)
    shared: set = field(default_factory=set)         # globals other goroutines wrote while G was held
    by_gc: set = field(default_factory=set)          # keys a run with a GC cycle varied ("result K", globals)
    by_other: set = field(default_factory=set)       # keys a run without one varied
    endings: dict = field(default_factory=dict)      # exit status -> (the first run that ended so, its Ending)

    def stream_unstable(self, what: str) -> bool:
        return what in self.lines and self.lines[what] is None

    def describe(self, symbol=lambda k: k) -> dict:
        """JSON-ready: what was found unstable and how many runs showed it."""
        return {"references": self.references, "gc_references": self.gc_runs, "held_references": self.held_runs,
                "results": sorted(self.results), "shared": sorted(self.shared),
                "gc_only": sorted(symbol(k) if not isinstance(k, str) or not k.startswith("result ") else k
                                  for k in self.by_gc - self.by_other),
                "globals": sorted(symbol(k) for k in self.globals),
                "output": {w: ("all" if ix is None else sorted(ix)) for w, ix in sorted(self.lines.items())},
                "exit_code": self.exit_code}

    def is_shared(self, effects, key) -> bool:
        """Whether global key `key` (changed_globals') belongs to a global other goroutines wrote while F ran."""
        return bool(self.shared) and effects.global_of(key) in self.shared

    @property
    def count(self) -> int:
        return (len(self.results) + len(self.globals) + len(self.shared) + int(self.exit_code)
                + sum(1 if ix is None else len(ix) for ix in self.lines.values()))


def other_run(sw, budget: int, seed: int, i: int):
    """The i-th reference after the primary (i >= 1): the runtime's random state drawn anew, and every other
    one on a CPU half as fast (2 ns an instruction from the snapshot on), so that what depends on elapsed
    time (a benchmark's ns/op, time.Since) differs between references as between two native runs."""
    return sw.reference(budget, reseed_seed(seed, i), ns_per_insn=None if i % 2 else 2 * sw.p.opts.ns_per_insn)


def held_run(sw, budget: int, seed: int, i: int, boundaries: int):
    """The i-th reference with G's thread descheduled at seeded boundaries of F (gsweep.held_reference): at
    3, 12 or 48 of them in turns, so that some runs let the others in as often as a chain's injections do."""
    from .gsweep import HOLDS
    return sw.held_reference(budget, reseed_seed(seed, 1000 + i), boundaries, HOLDS * 4 ** (i % 3))


def gc_run(sw, budget: int, seed: int, i: int, boundaries: int):
    """--gc: the i-th reference with the runtime's cycles made due at 1, 4 or 16 boundaries of F (in turns) drawn
    from the seed (gsweep.gc_reference): when cycles come, and how many, decides what they free and which
    finalizers run first, as in a chain, which has one at every point."""
    rng = random.Random(f"preemu-gc-reference-{seed}-{i}")
    return sw.gc_reference(budget, sorted({rng.randrange(max(1, boundaries)) for _ in range(4 ** (i % 3))}))


def establish(sw, budget: int, seed: int):
    """The primary reference of RealSweep `sw` with its `unstable` keys from REFERENCES - 1 other runs and
    HELD_REFERENCES held ones (with --gc, GC_REFERENCES more with the runtime's own cycles during F:
    gsweep.gc_reference)."""
    ref = sw.reference(budget)
    ref.unstable = Unstable()
    for i in range(1, REFERENCES):
        add_run(ref.unstable, ref, other_run(sw, budget, seed, i))
    for i in range(HELD_REFERENCES):
        add_run(ref.unstable, ref, held_run(sw, budget, seed, i, ref.boundaries))
        ref.unstable.held_runs += 1
    if sw.gc is not None:
        for i in range(GC_REFERENCES):      # a cycle at F's entry, then gc_run's seeded cycles
            add_gc_run(ref, gc_run(sw, budget, seed, i, ref.boundaries) if i else sw.gc_reference(budget, 0))
    return ref


def add_gc_run(ref, other) -> None:
    """A --gc reference: a legitimate run widens ref.unstable; one in which preemu found a use of freed memory
    or the runtime crashed is a finding (ref.findings, reported as violations), never a legitimate value."""
    if other.gc_evidence is not None:
        ref.findings.append(other.gc_evidence)
        return
    add_run(ref.unstable, ref, other, gc=True)
    ref.unstable.gc_runs += 1


def results_diff(ref, results: dict) -> list[tuple[str, str, str]]:
    """(name, expected, actual) of the results that differ from the primary reference's at stable keys."""
    u: Unstable = ref.unstable or Unstable()
    return [(n, ref.results.get(n, "-"), results.get(n, "-")) for n in sorted(set(results) | set(ref.results))
            if ref.results.get(n, "-") != results.get(n, "-") and n not in u.results]


def reseed_seed(seed: int, i: int) -> int:
    """The seed of the i-th reseeded reference (i >= 1) of a sweep with --seed `seed`."""
    return random.Random(f"preemu-reference-{seed}-{i}").getrandbits(64)


def _lines(b: bytes) -> list[bytes]:
    return b.split(b"\n")


def add_run(u: Unstable, primary, other, gc: bool = False) -> None:
    """Widen u by the keys where reference `other` differs from `primary` (runrecords.Reference); `gc`: other ran
    with the runtime's cycles made due (what only such runs vary is listed apart: Unstable.by_gc)."""
    _widen(u, primary, other)
    if getattr(other, "returned", True):
        varied = {f"result {k}" for k in set(primary.results) | set(other.results)
                  if primary.results.get(k) != other.results.get(k)}
        varied |= {k for k in set(primary.globals) | set(other.globals) if primary.globals.get(k) != other.globals.get(k)}
        (u.by_gc if gc else u.by_other).update(varied)


def _widen(u: Unstable, primary, other) -> None:
    u.references += 1
    u.shared |= set(getattr(other, "shared", ()))
    for r in (primary, other):
        if r.ending.exit_code not in u.endings:     # the head of its output only: u travels to every shard
            e = r.ending
            u.endings[e.exit_code] = (r.label, replace(e, stdout=e.stdout[:4096], stderr=e.stderr[:4096]))
    if getattr(other, "returned", True):          # else F never returned there: an ending, no results or globals
        for k in set(primary.results) | set(other.results):
            if primary.results.get(k) != other.results.get(k):
                u.results.add(k)
        for k in set(primary.globals) | set(other.globals):
            if primary.globals.get(k) != other.globals.get(k):
                u.globals.add(k)
    a, b = primary.ending, other.ending
    if a.exit_code != b.exit_code:
        u.exit_code = True
    for what in ("stdout", "stderr"):
        la, lb = _lines(getattr(a, what)), _lines(getattr(b, what))
        if la == lb:
            continue
        if len(la) != len(lb) or u.stream_unstable(what):
            u.lines[what] = None
            continue
        u.lines.setdefault(what, set()).update(i for i, (x, y) in enumerate(zip(la, lb)) if x != y)


def ending_diff(ref, ending) -> list[tuple[str, str, str]]:
    """(what, expected, actual) where `ending` differs from the primary reference's at a stable key: `what` is
    `exit_code`, `stdout line N` (1-based; the streams have as many lines) or `stdout` / `stderr` (they do
    not)."""
    from .runrecords import shown
    u: Unstable = ref.unstable or Unstable()
    out = []
    a, b = ref.ending, ending
    if a.exit_code != b.exit_code and not u.exit_code:
        out.append(("exit_code", shown(a.exit_code), shown(b.exit_code)))
    for what in ("stdout", "stderr"):
        xa, xb = getattr(a, what), getattr(b, what)
        if xa == xb or u.stream_unstable(what):
            continue
        la, lb = _lines(xa), _lines(xb)
        if len(la) != len(lb):
            out.append((what, shown(xa), shown(xb)))
            continue
        skip = u.lines.get(what, set())
        for i, (x, y) in enumerate(zip(la, lb)):
            if x != y and i not in skip:
                out.append((f"{what} line {i + 1}", shown(x), shown(y)))
    return out


def key_of(what: str) -> tuple[str, object] | None:
    """The key a final-state violation's `what` names: ("result", name), ("global", path), ("exit_code",),
    ("stdout", line index or None), or None (control flow: not a value)."""
    if what.startswith("result "):
        return ("result", what[len("result "):])
    if what.startswith("program "):
        rest = what[len("program "):]
        if rest == "exit_code":
            return ("exit_code", None)
        stream, _, line = rest.partition(" line ")
        return (stream, int(line) - 1 if line else None)
    if what == "control flow":
        return None
    return ("global", what)


def failing_schedules(u: Unstable) -> list[tuple[str, object]]:
    """(label, Ending) of the legitimate runs that failed where another one did not: their exit statuses differ
    and theirs is not 0 (a schedule-dependent failure of the program, whatever preemption does)."""
    if len(u.endings) < 2:
        return []
    return [(label, e) for code, (label, e) in sorted(u.endings.items(), key=lambda kv: str(kv[0])) if code != 0]


def is_unstable(u: Unstable, key, global_names=None) -> bool:
    """Whether the references found `key` (key_of's form) unstable; `global_names`: u.globals as the names
    violations give them, when its keys are addresses."""
    kind, k = key
    if kind == "result":
        return k in u.results
    if kind == "global":
        return k in (u.globals if global_names is None else global_names)
    if kind == "exit_code":
        return u.exit_code
    if u.stream_unstable(kind):
        return True
    return k is not None and k in u.lines.get(kind, set())
