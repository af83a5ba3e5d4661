"""The labelled verdict corpus (bench/verdicts, issue #46 item 6): its table is sound, and a fast subset runs
here in the default mode with the verdicts its labels require (bench/verdicts/matrix.py runs all of it in
every mode)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench/verdicts"))

import corpus  # noqa: E402
import matrix  # noqa: E402


def test_the_table_names_programs_that_exist_and_labels_every_bug_with_its_native_confirmation():
    assert len(corpus.CORRECT) >= 40 and len(corpus.BUGS) >= 20
    names = [e.name + str(e.args) for e in corpus.CORRECT + corpus.BUGS]
    assert len(names) == len(set(names))
    for e in corpus.CORRECT + corpus.BUGS:
        assert (ROOT / e.src).is_dir(), e
        assert e.bug is None or (e.bug in corpus.CLAIMS and e.native), e


@pytest.mark.parametrize("name,mode,kind", [
    ("bugs.lostUpdate", "default", None), ("bugs.closeOnce", "default", None), ("bugs.memo", "default", None),
    ("bugs.countAll", "default", None), ("race.tally", "default", None), ("concur.atomics", "default", None),
    ("concur.pipeline", "default", None), ("gcverdicts.explicitGC", "gc", None),
    # bugs2: a pair torn only when an asynchronous preemption lands between its two stores (one P), a record
    # held as a uintptr across a call (the collector frees it), and that function's fix (unsafe.Pointer)
    ("bugs2.writePairs", "default", "final-state"), ("bugs2.heldAsNumber", "gc", "use-after-free"),
    ("fixed2.heldAsPointer", "gc", None),
    # a finalizer that closes a descriptor F still reads (no runtime.KeepAlive): found by --gc's reference with
    # several cycles (one cycle's sweep queues it only when a later cycle or a sweeper gets to the span); the fix
    ("bugs2.readFile", "gc", "schedule"), ("fixed2.readFile", "gc", None),
    # a check-then-act the default sweep's runs miss (its window needs the other goroutine mid-call), found under
    # PCT schedules; its fix clean under the same 20 schedules
    ("bugs2.lookup", "schedules", "pct-schedule"), ("fixed2.lookup", "schedules", None)])
def test_the_fast_subset_gets_its_label(name, mode, kind):
    entry = next(e for e in corpus.CORRECT + corpus.BUGS if e.name == name)
    _, code, said, _ = matrix.sweep(entry, mode, 150)
    assert matrix.outcome(entry, mode, code, said) in ("TN", "TP"), said
    assert kind is None or kind in said, said


def test_an_exit_1_without_a_violation_is_counted_vacuous_not_a_catch_or_a_false_fail():
    bug = next(e for e in corpus.BUGS if e.bug == "gc")
    good = corpus.CORRECT[0]
    vacuous = "VACUOUS: exit 1, 0 violations, 0 injected"
    assert matrix.outcome(bug, "gc-sync", 1, vacuous) == "VAC"
    assert matrix.outcome(good, "gc-sync", 1, vacuous) == "VAC"
    assert matrix.outcome(bug, "gc-sync", 1, "FAIL 1 (use-after-free)") == "TP"
    assert matrix.outcome(good, "gc", 1, "FAIL 2 (use-after-free)") == "FP"
    assert matrix.outcome(bug, "default", 0, "OK") is None          # a GC bug: the default mode does not claim it
