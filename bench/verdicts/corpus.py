"""The labelled verdict corpus (issue #46 item 6): correct programs that every mode must call clean, and bug
programs, each confirmed natively (the method and the figure beside it), that the modes claiming their class
must catch. One table; bench/verdicts/matrix.py runs it and prints a confusion matrix per mode, and
tests/test_verdict_corpus.py pins a fast subset.

An entry sweeps `func` of the program at `src` (a package directory: under its test `test`, or as a program
with `args`). A bug's `cls` says which modes claim it (CLAIMS): "schedule" (a data race, a check-then-act, a
misuse that fails the program under some schedule: every mode, through its legitimate runs), "preemption"
(only an asynchronous preemption at the window exposes it: every mode), "gc" (a pointer the collector cannot
see: the --gc modes), "gc-concurrent" (a missing write barrier: --gc only).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

#: the modes of the matrix: name -> the sweep's extra options
MODES = {
    "default": (),
    "gc": ("--gc",),
    "gc-scan": ("--gc=scan",),
    "gc-sync": ("--gc", "--gc-points", "sync"),
    "v3": ("--cpu", "v3"),
    "v4": ("--cpu", "v4"),
    "each-pc": ("--each-pc",),
}
ALL = frozenset(MODES)
GC_MODES = frozenset({"gc", "gc-scan", "gc-sync"})
#: the modes that claim a bug class
#: gc-sync makes no injection at all; --each-pc tries each PC once, at its first occurrence, in a chain after earlier
#: injections (its report counts the points tried alone): a window that needs the state of a later iteration, or no
#: injection before it (race.tally: the helper goroutine must still have its loop to run), is the default sweep's
CLAIMS = {"schedule": ALL, "preemption": ALL - {"gc-sync", "each-pc"},
          "gc": GC_MODES, "gc-concurrent": frozenset({"gc"})}


@dataclass(frozen=True)
class Entry:
    src: str                      # a directory under the repository
    func: str
    test: str | None = None       # run under this test of the package (--test)
    args: tuple = ()
    bug: str | None = None        # None: correct code; else its class (CLAIMS)
    native: str = ""              # how the bug was confirmed natively, with the figure
    points: int | None = None     # --max-points for it (None: the matrix's): a one-window bug needs every boundary

    @property
    def name(self) -> str:
        return f"{Path(self.src).name}.{self.func}"


def _libcorpus() -> list[Entry]:
    src = (ROOT / "bench/data/libcorpus/main.go").read_text()
    return [Entry("bench/data/libcorpus", f) for f in re.findall(r"//go:noinline\nfunc (\w+)\(", src)]


CORRECT = _libcorpus() + [
    *(Entry("tests/data/go/gccorrect", f) for f in ("maps", "chans", "pooled", "finals")),
    *(Entry("tests/data/go/gcverdicts", f) for f in ("appendMap", "recovered", "explicitGC", "gcPercent",
                                                     "weakPtrs", "finalOrder")),
    Entry("tests/data/go/gcverdicts", "appendMap", args=("one",)),            # GOMAXPROCS(1)
    Entry("tests/data/go/mutexcount", "add", test="TestCount"),
    *(Entry("tests/data/go/kinds", f) for f in ("initTable", "wrapped", "sprintf", "recovered", "channel", "spawn",
                                                "digest", "mixed")),
    *(Entry("bench/verdicts/concur", f, test=t) for f, t in (
        ("workerPool", "TestWorkerPool"), ("onceInit", "TestOnce"), ("atomics", "TestAtomics"),
        ("cancelled", "TestCancelled"), ("rwStore", "TestRWStore"), ("pipeline", "TestPipeline"))),
]

#: natively: the package's test binary (`go test -c`, Go 1.27.3, this 2-CPU machine) run 100 times
BUGS = [
    Entry("bench/verdicts/bugs", "lostUpdate", test="TestLost", bug="schedule", native="TestLost fails 7/100"),
    Entry("bench/verdicts/bugs", "closeOnce", test="TestClose", bug="schedule", native="TestClose fails 97/100"),
    Entry("bench/verdicts/bugs", "memo", test="TestMemo", bug="schedule",
          native="TestMemo: fatal error: concurrent map read and map write, 31/100"),
    Entry("bench/verdicts/bugs", "countAll", test="TestCountAll", bug="schedule",
          native="TestCountAll fails 100/100 (go vet: WaitGroup.Add called from inside new goroutine)"),
    Entry("bench/verdicts/bugs", "appendShared", test="TestAppend", bug="schedule", native="TestAppend fails 12/100"),
    Entry("bench/verdicts/bugs", "lazy", test="TestLazy", bug="schedule", native="TestLazy fails 96/100"),
    Entry("bench/verdicts/bugs", "scanTable", test="TestScan", bug="schedule",
          native="TestScan: fatal error: concurrent map iteration and map write, 3/100"),
    Entry("tests/data/go/poolmisuse", "use", test="TestUse", bug="schedule", native="TestUse fails 200/200"),
    Entry("tests/data/go/gcreal", "hidden", bug="gc",
          native="an XOR-masked uintptr the collector cannot see (go vet rejects it); docs/explanation/gc-modes.md"),
    Entry("tests/data/go/gcslice", "rebuild", bug="gc",
          native="`prog stress 200000` with GODEBUG=clobberfree=1: wrong sums (4 of 200,000); rebuildGC every time"),
    Entry("tests/data/go/gcreuse", "reuse", bug="gc",
          native="`prog stress 200` (runtime.GC() in the window): the stale read returns the new object's word "
                 "199 of 200 times, 200 of 200 with GODEBUG=clobberfree=1"),
    Entry("tests/data/go/gcnowb", "moveNoWB", bug="gc-concurrent",
          native="`prog stress 1000` with GODEBUG=gccheckmark=1: 'checkmark found unmarked object' in a third of runs"),
    Entry("tests/data/go/race", "tally", bug="preemption", points=100_000,
          native="not shown natively at this size: only a preemption inside the load/store window (sysmon's comes "
                 "after 10 ms) exposes it"),
]
