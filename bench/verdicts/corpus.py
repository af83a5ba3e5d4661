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
    "schedules": ("--schedules", "20"),       # the sweep, then its first chain under PCT schedules 1..20
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

#: bench/verdicts/bugs2: natively, its test binary (`GO111MODULE=off go test -c`, Go 1.27.3, this 2-CPU machine
#: loaded by other jobs; rates moved with the load) run as `bugs2.test -test.run '^T$'` with: BUGS2_N (rounds of
#: a schedule test, or the length of a GC test's window, spin's n), BUGS2_GC=1 (runtime.GC() back to back on a
#: goroutine of its own), GODEBUG; each beside its control. A "run" is a test iteration (-test.count), a
#: "process" one invocation (a fatal error ends the process). bench/verdicts/bugs2/confirm.sh runs them all.
B2 = "bench/verdicts/bugs2"
BUGS += [
    Entry(B2, "withdraw", test="TestWithdraw", bug="schedule",
          native="BUGS2_N=1000 -test.count 100 -test.cpu 1,2,4: 13 of 300 runs 'balance -1, paid 6' (BUGS2_N=200: "
                 "6, 2 and 0 of 300 on three loads); -test.cpu 1: 0 of 100"),
    Entry(B2, "connFor", test="TestConns", bug="schedule",
          native="BUGS2_N=1000 -test.count 100 -test.cpu 1,2,4: 32 of 300 runs 'dialed 2 connections'; "
                 "-test.cpu 1 (BUGS2_N=200): 0 of 100"),
    Entry(B2, "lookup", test="TestLookup", bug="schedule",
          native="BUGS2_N=1000 -test.count 100 -test.cpu 1,2,4: 86 of 300 runs 'lookups [\"\" \"n3\"]'; "
                 "-test.cpu 1 (BUGS2_N=200): 0 of 100"),
    Entry(B2, "writePairs", test="TestPairs", bug="preemption",
          native="BUGS2_N=100000000 (one P): 40 of 40 processes 'reader saw N torn pairs'; "
                 "GODEBUG=asyncpreemptoff=1: 0 of 40"),
    Entry(B2, "visit", test="TestAligned", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1: 11 and 16 of 20 processes 'fatal error: traceback' ('unexpected "
                 "SPWRITE function ...viaAligned', from scanstack); without BUGS2_GC: 0 of 20"),
    Entry(B2, "heldAsNumber", test="TestHeld", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1 GODEBUG=clobberfree=1: 9 of 200 runs (65 of 200 on a lighter load) a "
                 "wrong sum, 7 x 0xdeadbeefdeadbeef (the freed record clobbered); BUGS2_GC=1 alone 1 of 200; "
                 "clobberfree without BUGS2_GC: 0 of 200"),
    Entry(B2, "pastEnd", test="TestPastEnd", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1: 7 of 10 processes 'fatal error: found pointer to free object' (the "
                 "end pointer marks the free slot after the array: reportZombies), the same with clobberfree=1; "
                 "without BUGS2_GC: 0 of 10"),
    Entry(B2, "handleTable", test="TestHandles", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1 GODEBUG=clobberfree=1: 9 of 200 runs (62 of 200 on a lighter load) a "
                 "wrong sum; without BUGS2_GC: 0 of 200"),
    Entry(B2, "staleReuse", test="TestStale", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1: 3 of 200 runs 'sum 8' (the slot handed out again: another record's "
                 "fields), 0 of 200 on a second try; with clobberfree=1: 3 of 200 (freed, not yet reused); "
                 "without BUGS2_GC: 0 of 200"),
    Entry(B2, "readFile", test="TestReadFile", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1: 1 of 200 runs 'read 0' (the finalizer closed the descriptor), 9 of "
                 "40 on a lighter load; without BUGS2_GC: 0 of 200"),
    Entry(B2, "headerString", test="TestHeader", bug="gc",
          native="BUGS2_N=2000000 BUGS2_GC=1 GODEBUG=clobberfree=1: 12 of 200 runs a wrong sum; BUGS2_GC=1 alone "
                 "and clobberfree alone: 0 of 200"),
    Entry(B2, "hitMany", test="TestHits", bug="schedule",
          native="BUGS2_N=100 -test.count 10 -test.cpu 1,2,4: 10 of 30 processes 'fatal error: concurrent map "
                 "writes'; -test.cpu 1: 0 of 30"),
]

#: bench/verdicts/fixed2: bugs2's programs with the bug fixed as the documentation or go vet says (a lock around
#: check and act, a re-check under the dial lock, sync.Once, unsafe.Pointer for uintptr, base+index for the
#: past-the-end pointer, pointers in the table, runtime.KeepAlive), and a context-cancelled worker pair
CORRECT += [Entry("bench/verdicts/fixed2", f, test=t) for f, t in (
    ("withdraw", "TestWithdraw"), ("connFor", "TestConns"), ("lookup", "TestLookup"),
    ("heldAsPointer", "TestHeld"), ("pastEnd", "TestPastEnd"), ("handleTable", "TestHandles"),
    ("readFile", "TestReadFile"), ("deadline", "TestDeadline"))]
