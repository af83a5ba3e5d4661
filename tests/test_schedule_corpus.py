"""Two of the schedule benchmark's bugs (bench/bench_schedules.py, issue #47 item 6) and their correct twins under
`preemu exec --schedules N` (emu/drive/schedules.py):

* a lost wakeup (bench/verdicts/bugs awaitPost, TestWakeup): the waiter checks its flag without the lock and then
  waits on the condition variable; a post between the check and the wait wakes no one and the waiter sleeps for
  ever. The test's own patience (100 ms of virtual time, `time.After`) turns the hang into a failing test (exit
  1), not a run preemu has to stop. Natively it fails 1 run in 1,000 (3 of 20 runs of 20,000 rounds). Its twin,
  the wait under the lock in a loop (bench/verdicts/concur wakeup), passes every schedule.
* an assembly pointer move without a write barrier (tests/data/go/gcnowb `stress 5`, the runtime's own GC in a
  loop on another goroutine) under GODEBUG=gccheckmark=1, which makes the runtime re-mark the heap after each
  cycle and die on an object the concurrent mark missed. The GC's mark workers and the background loop are
  threads like the others, so a schedule decides when G's thread runs during a mark: the uninterrupted exec
  passes, a schedule fails with "checkmark found unmarked object". Natively, `stress 1000` fails 16 and 33 runs of
  100; its twin (`stresswb`: the same move in Go, with the compiler's write barriers) 0 of 100, and no schedule.
"""
from __future__ import annotations

import json

from conftest import cli_run

NOWB = ("tests/data/go/gcnowb", "--env", "GODEBUG=gccheckmark=1")


def _json(*args):
    """exec ARGS --json (before a `--` that starts the program's own arguments)."""
    i = args.index("--") if "--" in args else len(args)
    code, out, err = cli_run("exec", *args[:i], "--json", *args[i:])
    return code, json.loads(out), err


def test_a_lost_wakeup_ends_as_the_tests_failure_named_by_its_seed_and_replayed():
    code, j, err = _json("bench/verdicts/bugs", "--test", "TestWakeup", "--schedules", 30)
    assert code == 1, err
    bad = j["failing"]
    assert j["schedules"]["ran"] == bad["seed"] == 6
    assert bad["exit_code"] == 1 and "lost wakeup: the waiter still sleeps 100ms after its post" in bad["stdout"]
    assert bad["virtual_ns"] > 100_000_000          # the waiter slept through the test's patience
    code, r, _ = _json("bench/verdicts/bugs", "--test", "TestWakeup", "--schedule", bad["seed"])
    assert code == 1 and r["instructions"] == bad["instructions"] and "lost wakeup" in r["stdout"]


def test_the_wait_under_the_lock_passes_every_schedule():
    code, out, err = cli_run("exec", "bench/verdicts/concur", "--test", "TestWakeup", "--schedules", 40)
    assert code == 0 and "40 schedules of depth 3 ran" in err and "all passed" in err, err


def test_a_write_barrier_omission_is_found_by_a_schedule_and_not_by_the_one_uninterrupted_run():
    code, out, err = cli_run("exec", *NOWB, "--", "stress", 5)
    assert code == 0 and "stress done" in err, err
    code, j, err = _json(*NOWB, "--schedules", 10, "--", "stress", 5)
    assert code == 1, err
    bad = j["failing"]
    assert bad["exit_code"] == 2 and "fatal error: checkmark found unmarked object" in bad["stderr"]
    assert bad["replay"] == (f"preemu exec {NOWB[0]} --env GODEBUG=gccheckmark=1 --schedule {bad['seed']} --depth 3 "
                             "-- stress 5")
    code, r, _ = _json(*NOWB, "--schedule", bad["seed"], "--", "stress", 5)
    # the replay is exec's run of the program, whose exit status (2, the fatal error's) exec passes on
    assert code == r["exit_code"] == 2 and r["instructions"] == bad["instructions"] and r["stderr"] == bad["stderr"]


def test_the_same_move_with_write_barriers_passes_every_schedule():
    code, out, err = cli_run("exec", *NOWB, "--schedules", 20, "--", "stresswb", 20)
    assert code == 0 and "20 schedules of depth 3 ran" in err and "all passed" in err, err
