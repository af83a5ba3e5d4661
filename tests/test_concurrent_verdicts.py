"""Concurrent code at F's return (issue #46 item 1, emu/drive/references.py): what other goroutines
legitimately change while F is descheduled is not a violation; a value no legitimate run produces still is."""
import io
import json

import pytest

from emu import cli
from emu.drive import references as R, realsweep
from emu.drive.gsweep import Ending, Reference

MUTEX = "tests/data/go/mutexcount"


def run(*args):
    out = io.StringIO()
    code = cli.main(list(args), out)
    return code, out.getvalue()


def test_the_mutex_counter_swept_under_its_test_is_ok_and_says_what_it_left_out():
    """Measured before the rule: FAIL, `count.total: expected 100, actual 200` (the other goroutine added its
    100 while add was preempted) and `count.mu.mu.sema: expected 0, actual 1`."""
    code, text = run("sweep", MUTEX, "--test", "TestCount", "--func", "add", "--json")
    j = json.loads(text)
    assert code == 0 and j["ok"], j["violations"]
    nd = j["nondeterministic"]
    assert {"preemu/prog.total", "preemu/prog.mu"} <= set(nd["shared"])
    assert nd["held_references"] >= R.HELD_REFERENCES
    assert j["reference"]["stdout"].strip().endswith("PASS")
    code, text = run("sweep", MUTEX, "--test", "TestCount", "--func", "add")
    assert code == 0
    words = " ".join(text.split())                             # the report wraps at 120 columns
    assert "shared globals" in text and "compared at the program's end only" in words
    assert "legitimate runs agreed on" in text                 # the OK line says what it compared
    assert "--schedules N runs the first chain again" in words  # and what it did not try: other orders
    code, text = run("sweep", MUTEX, "--test", "TestCount", "--func", "add", "--schedules", "2")
    assert code == 0 and "--schedules N runs the" not in text    # (said only when no schedule was tried)


def test_without_the_held_references_the_mutex_counter_is_a_false_failure(monkeypatch):
    """The mutation 'no held references, no held confirmations' brings the measured false FAIL back."""
    monkeypatch.setattr(R, "HELD_REFERENCES", 0)
    monkeypatch.setattr(realsweep.references, "held_run", lambda sw, budget, seed, i, n: R.other_run(sw, budget, seed, 50 + i))
    code, text = run("sweep", MUTEX, "--test", "TestCount", "--func", "add", "--json")
    j = json.loads(text)
    assert code == 1
    assert any(v["what"].startswith("preemu/prog.") for v in j["violations"])


def _ref(globs, stdout=b"PASS\n"):
    return Reference(10, {}, dict(globs), Ending(0, stdout, b"", "exit"))


class _Eff:
    def global_of(self, key):
        return key.split(".")[0] + "." + key.split(".")[1] if isinstance(key, str) else None


def test_a_shared_global_is_not_compared_at_the_return_but_the_output_still_is():
    u = R.Unstable()
    held = _ref({"main.total": "200"})
    held.shared = {"main.total"}
    R.add_run(u, _ref({"main.total": "100"}), held)
    assert u.shared == {"main.total"} and u.held_runs == 0
    assert u.is_shared(_Eff(), "main.total.x") and not u.is_shared(_Eff(), "main.other")
    primary = _ref({"main.total": "100"})
    primary.unstable = u
    assert [w for w, _, _ in R.ending_diff(primary, Ending(0, b"FAIL\n", b"", "exit"))] == ["stdout line 1"]


POOL = "tests/data/go/poolmisuse"


def test_a_test_that_fails_under_some_legitimate_schedule_is_a_schedule_finding_not_ok():
    """The sync.Pool misuse: the legitimate runs (no injection) end with statuses 0 and 1. Before, the exit
    status and the output were listed as nondeterministic and the sweep said OK."""
    code, text = run("sweep", POOL, "--test", "TestUse", "--func", "use", "--json")
    j = json.loads(text)
    assert code == 1
    sched = [v for v in j["violations"] if v["kind"] == "schedule"]
    assert sched and all(v["what"] == "program exit status" for v in sched)
    assert any("FAIL: TestUse" in v["actual"] for v in sched)
    code, text = run("sweep", POOL, "--test", "TestUse", "--func", "use")
    assert "schedule program exit status: in 1 legitimate run(s) without injection" in text or \
        "legitimate run(s) without injection" in text


def test_a_test_that_fails_in_every_legitimate_run_is_a_finding_of_its_own():
    """countAll calls WaitGroup.Add inside the goroutines (natively 100 of 100 runs fail): every legitimate run
    fails the same way, so no schedule disagrees; the finding says the test fails by itself, named."""
    code, text = run("sweep", "bench/verdicts/bugs", "--test", "TestCountAll", "--func", "countAll", "--json",
                     "--max-points", "60")
    j = json.loads(text)
    assert code == 1
    own = [v for v in j["violations"] if v["kind"] == "schedule" and "fails by itself" in v["detail"]]
    assert own and own[0]["expected"] == "TestCountAll passes" and "counted" in own[0]["actual"], j["violations"]
    code, text = run("sweep", MUTEX, "--test", "TestCount", "--func", "add", "--json", "--max-points", "60")
    assert code == 0 and not json.loads(text)["violations"]


def test_failing_schedules_need_two_endings_one_failing():
    u = R.Unstable()
    a, b = _ref({}), _ref({})
    R.add_run(u, a, b)
    assert R.failing_schedules(u) == []
    c = Reference(10, {}, {}, Ending(1, b"FAIL\n", b"", "exit"), label="held")
    R.add_run(u, a, c)
    assert [label for label, _ in R.failing_schedules(u)] == ["held"]


def test_the_report_counts_the_points_tested_alone():
    code, text = run("sweep", "tests/data/go/kinds", "--func", "mixed", "--max-points", "300", "--to-exit", "5",
                     "--json")
    j = json.loads(text)
    assert code == 0 and j["points_alone"] == 1 + 5            # one chain's first point, five to-exit runs
    code, text = run("sweep", "tests/data/go/kinds", "--func", "mixed", "--max-points", "300", "--to-exit", "5")
    assert "points alone               6" in text and "the other 294 after earlier injections" in text
