"""`preemu sweep GO --func F --schedules N` (issue #47 part 2, emu/drive/gschedules.py): the sweep's first chain
again with every thread under PCT schedules, on tests/go/pctsweep/bump: TestBump's goroutine runs Work (the
swept function) while two goroutines bump a shared counter with a load and a store a few instructions apart.

The sweep alone passes (its one-CPU turn order never ends a bumper's slice inside that window); under
schedules 1..30 at depth 2 the first failing one is 10 (measured: its change point stops m2 before Bump's store,
bump.go:16, the other bumper runs until the change point's partner stops it before its own store there, m2
stores, and the test fails with a lost update), replayed by `--schedule 10 --depth 2`. The uninterrupted run
passes under schedule 10: with G's injections the threads reach the steps in another order, and the violation
says the failure needs them; under schedule 17 the uninterrupted run fails too (a race among the bumpers alone).
(With plain PCT, before partners, the first was 18, whose uninterrupted run failed too.)

With --gc (item 3): tests/data/go/gcnowb's moveNoWB, an assembly move without a write barrier, swept with the
runtime's cycles; under schedule 1 the GC's workers and G interleave so that the runtime itself finds the freed
node ("found bad pointer in Go heap"), with Go 1.27 and 1.24 builds; moveWB, the move with write barriers, passes.

bench/mutations.py's `sweep-schedules-*` mutations break each rule (the schedule attached, the ending judged,
the chain's points injected, the uninterrupted run classified) and these tests kill them.
"""
from __future__ import annotations

import json

import pytest
from conftest import cli_run

PKG = "tests/go/pctsweep/bump"
ARGS = ("sweep", PKG, "--test", "TestBump", "--func", "Work")
FIRST_FAILING = 10
#: the command as given, without --schedules/--depth/--json, then the schedule (--jobs 1 kept: the tests' own)
REPLAY = f"preemu sweep {PKG} --test TestBump --func Work --jobs 1 --schedule {FIRST_FAILING} --depth 2"


def _json(*more):
    code, out, err = cli_run(*ARGS, *more, "--json", "--jobs", "1")
    return code, json.loads(out), err


@pytest.fixture(scope="module")
def explored():
    return _json("--schedules", 30, "--depth", 2)


def test_without_schedules_the_sweep_passes_and_is_unchanged():
    code, j, err = _json()
    assert code == 0 and j["ok"], j["violations"]
    assert "schedules" not in j and j["reference"]["stdout"].strip().endswith("PASS")


def test_a_schedule_finds_the_lost_update_and_names_seed_change_point_and_replay(explored):
    code, j, _ = explored
    assert code == 1 and not j["ok"]
    s = j["schedules"]
    assert (s["depth"], s["first_seed"], s["requested"], s["ran"], s["passed"]) == (2, 1, 30, FIRST_FAILING, False)
    assert s["k"] > 0 and all(r["ok"] for r in s["runs"][:-1])
    # G's injection points stay the sweep's: every passing run reached every point of the chain
    assert all(r["points_reached"] == s["chain_points"] for r in s["runs"][:-1]) and s["chain_points"] > 900
    f = s["failing"]
    assert f["seed"] == FIRST_FAILING and f["exit_code"] == 1 and "an update was lost" in f["stdout"]
    assert f["replay"] == REPLAY and f["uninterrupted_fails"] is False
    cps = [d for d in f["decisions"] if d["kind"] == "change-point"]
    assert [d["where"] for d in cps] == ["example.com/pctsweep/bump.Bump+0x3a (bump.go:16)"] * 2
    assert cps[0]["tid"] != cps[1]["tid"] and cps[1]["partner_of"] == cps[0]["step"]
    [v] = j["violations"]
    assert v["kind"] == "pct-schedule" and v["what"] == f"the program under PCT schedule {FIRST_FAILING} (depth 2)"
    assert "--- FAIL: TestBump" in v["actual"] and v["detail"].endswith(f"replay: {REPLAY}")
    assert "the uninterrupted run passes under this schedule: the failure needs" in v["detail"]


def test_the_seed_replays_the_failure(explored):
    _, j, _ = explored
    code, r, _ = _json("--schedule", FIRST_FAILING, "--depth", 2)
    assert code == 1
    a, b = r["schedules"]["failing"], j["schedules"]["failing"]
    assert (a["decisions"], a["stdout"], a["steps"]) == (b["decisions"], b["stdout"], b["steps"])
    assert r["schedules"]["k"] == j["schedules"]["k"] and r["schedules"]["ran"] == 1


def test_a_schedule_whose_uninterrupted_run_fails_too_is_called_a_race_among_the_threads():
    """Schedule 17 (depth 2): the same lost update, but the uninterrupted run under it fails as well: the race
    needs no preemption of Work, and the violation says so (schedule 10's needs Work's injections)."""
    code, r, _ = _json("--schedule", 17, "--depth", 2)
    assert code == 1
    f = r["schedules"]["failing"]
    assert f["seed"] == 17 and f["uninterrupted_fails"] is True and "an update was lost" in f["stdout"]
    [v] = r["violations"]
    assert "the uninterrupted run fails under this schedule too: a race among the program's threads" in v["detail"]


def test_the_text_report_says_what_ran_and_what_failed():
    code, out, _ = cli_run(*ARGS, "--schedules", 3, "--depth", 2, "--jobs", "1")
    assert code == 0
    assert ("  schedules                  3   of 3 PCT schedules of depth 2 (seeds 1..3; k = 95 steps): the first "
            "chain's 974 points\n" + " " * 33 + "again, every thread under the schedule") in out    # wrapped at 120
    assert "the program ended as uninterrupted every time" in out and "\nOK: " in out


@pytest.mark.parametrize("args, message", [
    (["--depth", "2"], "--depth is a PCT schedule's depth: give it with --schedules N or --schedule SEED"),
    (["--schedules", "0"], "--schedules must be at least 1, got 0"),
    (["--schedules", "3", "--schedule", "4"], "give one of them"),
    (["--schedule", "-1"], "--schedule takes a seed"),
    (["--schedules", "2", "--each-pc"], "--schedules/--schedule and --each-pc"),
])
def test_bad_schedule_options_exit_2_with_one_line(args, message):
    code, out, err = cli_run(*ARGS, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_schedules_need_go_input():
    code, out, err = cli_run("sweep", "asm/sum_loop.s", "--func", "sum_loop", "--schedules", "2")
    assert code == 2 and "--schedules applies to Go input" in err and err.count("\n") == 1


# --- with --gc: the GC's workers are threads under the schedule (gschedules.py, issue #47 item 3) ---------------

NOWB = ("sweep", "tests/data/go/gcnowb", "--gc", "--max-points", "200", "--jobs", "1")


def test_under_gc_a_schedule_makes_the_runtime_find_the_node_a_move_without_write_barrier_hid():
    code, out, err = cli_run(*NOWB, "--func", "main.moveNoWB", "--schedules", 3, "--json")
    assert code == 1, err
    j = json.loads(out)
    s = j["schedules"]
    assert s["ran"] == s["failing"]["seed"] == 1 and s["failing"]["exit_code"] == 2
    # the chain's points are the ones G reached (a --gc chain's are an open range of boundaries)
    assert 0 < s["chain_points"] < 1000 and s["failing"]["points_reached"] <= s["chain_points"]
    [v] = [v for v in j["violations"] if v["kind"] == "pct-schedule"]
    assert "fatal error: found bad pointer in Go heap" in v["actual"]
    assert v["detail"].endswith("replay: preemu sweep tests/data/go/gcnowb --gc --max-points 200 --jobs 1 --func "
                                "main.moveNoWB --schedule 1 --depth 3")
    code, out, _ = cli_run(*NOWB, "--func", "main.moveNoWB", "--schedule", 1, "--depth", 3, "--json")
    a, b = json.loads(out)["schedules"]["failing"], s["failing"]
    assert code == 1 and (a["decisions"], a["steps"], a["stdout"]) == (b["decisions"], b["steps"], b["stdout"])


def test_under_gc_a_go_1_24_build_fails_under_a_schedule_too():
    from emu.front import gobuild
    binary = gobuild.build("tests/data/go/gcnowb", toolchain="1.24.11").binary
    code, out, err = cli_run("sweep", binary, "--gc", "--max-points", "200", "--jobs", "1", "--func", "main.moveNoWB",
                             "--schedules", 3, "--json")
    assert code == 1, err
    f = json.loads(out)["schedules"]["failing"]
    assert f["seed"] == 1 and "fatal error: found bad pointer in Go heap" in f["why"]


def test_under_gc_the_move_with_write_barriers_passes_every_schedule():
    code, out, err = cli_run(*NOWB, "--func", "main.moveWB", "--schedules", 4, "--json", "--", "stresswb", 1)
    assert code == 0, err
    s = json.loads(out)["schedules"]
    assert s["ran"] == 4 and s["passed"] and all(r["points_reached"] == s["chain_points"] > 0 for r in s["runs"])
