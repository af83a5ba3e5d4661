"""`preemu explain PROGRAM --test NAME --schedule SEED` (issue #47): a PCT schedule's failing run told thread by
thread (emu/teach/schedstory.py) in text, --json and the --html page (schedhtml.py), on tests/go/pctlock/lock's
TestRacyLock at schedule 19 (depth 3), the first failing schedule from seed 1 (tests/test_schedules.py): m0 is
stopped between the try-lock's check and act (lock.go:16), m2 takes the lock and is stopped inside the critical
section (lock.go:36) by that change point's partner, m0 acts and enters too, and the test fails.

bench/mutations.py's `explain-schedule-*` mutations break each rule of the story (which run is told, the
chapters cut at the change points, the source lines of a -trimpath build, the exit status) and these tests kill
them.
"""
from __future__ import annotations

import json

import pytest
from conftest import cli_run

PKG = "tests/go/pctlock/lock"
SEED = 19
REPLAY = f"preemu exec {PKG} --test TestRacyLock --schedule {SEED} --depth 3"


@pytest.fixture(scope="module")
def story():
    code, out, err = cli_run("explain", PKG, "--test", "TestRacyLock", "--schedule", SEED, "--json")
    assert code == 1, err
    return json.loads(out)


def test_the_text_tells_the_decisions_with_their_source_lines_the_threads_and_the_failure():
    code, out, err = cli_run("explain", PKG, "--test", "TestRacyLock", "--schedule", SEED)
    assert code == 1 and "Traceback" not in err
    assert out.startswith(f"preemu explain: {PKG} --test TestRacyLock  schedule {SEED}  depth 3  k = 370 steps\n")
    assert "verdict: FAILED: exit status 1: --- FAIL: TestRacyLock" in out
    assert "The decisions that mattered (4 change points of 4):" in out
    assert ("  1. step 34, t = 0.727 ms: thread m0(1000) stopped before example.com/pctlock/lock.tryLock+0xa "
            "(lock.go:16)\n        lock.go:16:  locked = 1") in out
    assert ("  2. step 160, t = 0.736 ms: thread m2(1002) stopped before example.com/pctlock/lock.critical+0x40 "
            "(lock.go:36)\n        lock.go:36:  inside--") in out
    assert ("        (the partner of the change point at step 34: just below the thread stopped there, which runs "
            "again before it)") in out
    # thread by thread, cut at the change points: between the first two m2 alone ran the program's code
    assert "[the start -> change point 1] t = 0.000 ms .. 0.727 ms, steps 0..33" in out
    assert "[change point 1 -> change point 2] t = 0.723 ms .. 0.736 ms, steps 33..159" in out
    assert ("  m2(1002): 1 slice, 12,038 instructions, 126 steps; then runnable at "
            "example.com/pctlock/lock.critical+0x40\n    (lock.go:36)") in out      # wrapped at 120 columns
    assert "  => change point 2: m2(1002) stopped before example.com/pctlock/lock.critical+0x40 (lock.go:36)" in out
    assert "[change point 4 -> the end]" in out
    assert "How it failed: t = 0.885 ms (exit_group by m2(1002)): exit status 1" in out
    assert "  |     lock_test.go:33: count 40 after 20+20 entries, 20 overlaps: two goroutines were inside at once" in out
    assert out.rstrip().endswith(f"replay: {REPLAY}")


def test_the_story_is_the_run_exec_replays_and_its_slices_add_up(story):
    code, out, _ = cli_run("exec", PKG, "--test", "TestRacyLock", "--schedule", SEED, "--json")
    x = json.loads(out)
    assert code == 1 and story["schema"] == "preemu/explain-schedule/1" and story["ok"] is False
    assert (story["instructions"], story["virtual_ns"], story["steps"]) == \
        (x["instructions"], x["virtual_ns"], x["schedule"]["steps"])
    assert [(d["kind"], d["step"], d["tid"], d["where"]) for d in story["decisions"]] == \
        [(d["kind"], d["step"], d["tid"], d["where"]) for d in x["schedule"]["decisions"]]
    segs = story["segments"]
    # every instruction of the run is in one slice of the story (none of the calibration run's)
    assert sum(s["instructions"] for s in segs) == story["instructions"] and len(segs) == 84
    assert all(s["instructions"] > 0 and 0 <= s["start_ns"] < s["end_ns"] <= story["virtual_ns"] for s in segs)
    assert segs[0]["step_from"] == 0 and segs[-1]["step_to"] == story["steps"]
    assert all(a["step_to"] == b["step_from"] for a, b in zip(segs, segs[1:]))
    assert {t["tid"] for t in story["threads"]} == {s["tid"] for s in segs}
    for d in story["decisions"]:
        sg = segs[d["segment"]]          # a decision falls in the slice of the thread it concerns
        assert sg["tid"] == d["tid"] and d["time_ns"] == sg["end_ns"]
        if d["kind"] == "change-point":  # ... and a change point ends that slice before its step's instruction
            assert sg["pc"] == d["pc"] and sg["step_to"] == d["step"] - 1 and sg["then"] == "runnable"


def test_the_chapters_are_cut_at_the_change_points(story):
    cps = [i for i, d in enumerate(story["decisions"]) if d["kind"] == "change-point"]
    chs = story["chapters"]
    assert [c["ends_with"] for c in chs] == [*cps, None]
    assert [c["segments"][1] for c in chs[:-1]] == [story["decisions"][i]["segment"] for i in cps]
    assert all(a["segments"][1] + 1 == b["segments"][0] for a, b in zip(chs, chs[1:]))
    assert chs[-1]["segments"][1] == len(story["segments"]) - 1
    between = chs[1]["threads"]
    assert [(t["thread"], t["steps"]) for t in between if t["steps"]] == [("m2", 126)]
    f = story["failure"]
    assert f["failed"] and f["exit_code"] == 1 and f["by"] == {"tid": 1002, "thread": "m2"}
    assert f["lines"][0] == "--- FAIL: TestRacyLock (0.00s)" and story["replay"] == REPLAY


def test_a_passing_schedule_is_told_too_and_exits_0():
    code, out, err = cli_run("explain", PKG, "--test", "TestMutexLock", "--schedule", 1)
    assert code == 0, err
    assert "verdict: passed (exit status 0)" in out and "How it ended:" in out
    assert out.rstrip().endswith(f"replay: preemu exec {PKG} --test TestMutexLock --schedule 1 --depth 3")


def test_the_page_is_self_contained(tmp_path):
    html = tmp_path / "s.html"
    code, out, _ = cli_run("explain", PKG, "--test", "TestRacyLock", "--schedule", SEED, "--html", html)
    assert code == 1 and out == f"wrote {html}: schedule {SEED}, 84 slices on 5 threads, FAILED\n"
    page = html.read_text()
    assert "http://" not in page.replace("'http://www.w3.org/2000/svg'", "") and "https://" not in page
    assert "<script src" not in page and "<link" not in page


@pytest.mark.parametrize("args, message", [
    (["--depth", "2"], "--depth is a PCT schedule's depth: give it with --schedule SEED"),
    (["--schedule", "-1"], "--schedule takes a seed"),
    (["--schedule", "3", "--depth", "0"], "--depth must be at least 1"),
    (["--schedule", "3", "--at", "5"], "--at: one preemption's options"),
    (["--schedule", "3", "--func", "f", "--gc"], "--func, --gc: one preemption's options"),
])
def test_bad_schedule_options_exit_2_with_one_line(args, message):
    code, out, err = cli_run("explain", PKG, "--test", "TestRacyLock", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_schedule_needs_a_go_program():
    code, out, err = cli_run("explain", "asm/sum_loop.s", "--schedule", "3")
    assert code == 2 and "--schedule tells a Go program's run" in err and err.count("\n") == 1
    code, out, err = cli_run("explain", "no/such/dir", "--schedule", "3")
    assert code == 2 and "no/such/dir: no such file or directory" in err
