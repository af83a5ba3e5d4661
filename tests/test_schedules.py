"""`preemu exec --schedules N` / `--schedule SEED` (issue #47): PCT schedules (emu/linux/schedule.py) explored and
replayed (emu/drive/schedules.py) on tests/go/pctlock/lock, a package with

* TestRacyLock: two goroutines, a hand-rolled try-lock whose check (`locked == 0`) and act (`locked = 1`) are two
  instructions apart, a critical section that loads, works and stores a counter and notes overlaps. It fails only
  when one goroutine is stopped between its check and its act while the other checks, acts and is stopped inside
  (depth 3: a change point and its partner, emu/linux/schedule.py). From seed 1 the first failing schedule is 19
  (k = 370 steps, ~10 ms a schedule). Natively (the same test binary on this 2-core machine, shared with other
  jobs, GOMAXPROCS 2) it shows as the machine's load lets it: the binary run in a shell loop failed 0 of 10,000
  times (16.6 s of CPU) once and 4 of 2,600 (4.4 s of CPU) another time; in one process, `-test.count 470000`
  failed 30 times (4.8 s of CPU), and three `-test.failfast` loops first failed after 1.0, 3.7 and 11.7 s of CPU.
* TestMutexLock: the same critical section under sync.Mutex: passes every schedule.
* TestSpinHandoff: a goroutine spins on a flag another sets after a 1 ms sleep: the fairness bound's case.

Over 1,500 schedules from seed 1 at depth 3, TestRacyLock fails in 16 (19, 112, 409, 671, 687, 756, 806, 817,
890, 998, 1011, 1124, 1326, 1430, 1456, 1492); plain PCT (no partners) failed in 5 (318, 336, 538, 1025, 1124;
11 at depth 4, 26 at depth 5). TestMutexLock fails in 0 of 300, TestSpinHandoff at depth 1 in 0 of 200.

Every test here also pins a decision the schedule controls (which thread runs, where a slice ends, which waiter a
FUTEX_WAKE releases, whether a wakee preempts, the fairness bound, a change point's partner): bench/mutations.py's `pct-*` mutations break
each one and these tests kill them.
"""
from __future__ import annotations

import collections
import json
import subprocess
import sys

import pytest
from conftest import ROOT, cli_run

from emu.drive import schedules
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.linux.schedule import PctSchedule, step_pcs
from emu.linux.threads import BLOCKED, RUNNABLE, Thread

PKG = "tests/go/pctlock/lock"
FIRST_FAILING = 19           # from seed 1 at depth 3 (module docstring)
REPLAY = f"preemu exec {PKG} --test TestRacyLock --schedule {FIRST_FAILING} --depth 3"


def _json(*args):
    code, out, err = cli_run("exec", PKG, *args, "--json")
    return code, json.loads(out), err


@pytest.fixture(scope="module")
def explored():
    return _json("--test", "TestRacyLock", "--schedules", "400")


def test_the_check_then_act_lock_fails_within_400_schedules_and_names_seed_decisions_and_replay(explored):
    code, j, _ = explored
    assert code == 1 and j["ok"] is False
    s, bad = j["schedules"], j["failing"]
    assert s["depth"] == 3 and s["first_seed"] == 1 and s["ran"] == FIRST_FAILING and s["passed"] is False
    assert all(r["ok"] for r in s["runs"][:-1]) and not s["runs"][-1]["ok"]
    assert bad["seed"] == FIRST_FAILING and bad["exit_code"] == 1
    assert "two goroutines were inside at once" in bad["why"] and "--- FAIL: TestRacyLock" in bad["stdout"]
    assert bad["replay"] == REPLAY
    cps = [d for d in bad["schedule"]["decisions"] if d["kind"] == "change-point"]
    # the decisions that mattered: one goroutine's thread stopped between check and act (lock.go:16,
    # `locked = 1`), the other's inside the critical section by that change point's partner, just below it
    assert [d["where"] for d in cps[:2]] == ["example.com/pctlock/lock.tryLock+0xa (lock.go:16)",
                                            "example.com/pctlock/lock.critical+0x40 (lock.go:36)"]
    assert cps[0]["tid"] != cps[1]["tid"] and cps[1]["priority"] == cps[0]["priority"] - 0.5
    assert cps[0]["partner_of"] is None and cps[1]["partner_of"] == cps[0]["step"]


def test_the_text_report_names_the_seed_the_decisions_and_the_command_that_replays_it():
    code, out, err = cli_run("exec", PKG, "--test", "TestRacyLock", "--seed", FIRST_FAILING - 2, "--schedules", 5)
    assert code == 1
    assert "--- FAIL: TestRacyLock" in out
    assert (f"3 of 5 schedules of depth 3 ran (seeds {FIRST_FAILING - 2}..{FIRST_FAILING + 2}; k = 370 steps"
            in err)
    words = " ".join(err.split())                     # the summary is wrapped at 120 columns
    assert f"schedule {FIRST_FAILING} FAILED (2 passed before it): exit status 1: --- FAIL: TestRacyLock" in words
    assert "stopped before example.com/pctlock/lock.tryLock+0xa (lock.go:16) (0x" in err
    assert err.rstrip().endswith(f"replay: {REPLAY}")


def test_the_seed_reproduces_the_failure_every_time_to_the_instruction(explored):
    _, j, _ = explored
    runs = [_json("--test", "TestRacyLock", "--schedule", FIRST_FAILING, "--depth", 3) for _ in range(2)]
    for code, r, _ in runs:
        assert code == 1 and r["exit_code"] == 1 and "two goroutines were inside at once" in r["stdout"]
        assert r["schedule"]["failed"] and r["schedule"]["seed"] == FIRST_FAILING
        # the replay (a fresh boot, calibrated again) is the exploration's run
        assert r["instructions"] == j["failing"]["instructions"]
        assert r["schedule"]["decisions"] == j["failing"]["schedule"]["decisions"]
    assert runs[0][1]["instructions"] == runs[1][1]["instructions"]


def test_a_failing_schedule_replays_bit_exact_in_two_processes():
    cmd = [sys.executable, "-m", "emu", "exec", PKG, "--test", "TestRacyLock", "--schedule", str(FIRST_FAILING),
           "--json"]
    outs = [subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True) for _ in range(2)]
    js = [json.loads(o.stdout) for o in outs]
    assert [o.returncode for o in outs] == [1, 1]
    keys = ("instructions", "virtual_ns", "idle_ns", "stdout", "stderr", "syscalls", "threads", "exit_code")
    assert [{k: j[k] for k in keys} for j in js][0] == [{k: j[k] for k in keys} for j in js][1]
    assert js[0]["schedule"] == js[1]["schedule"] and js[0]["schedule"]["failed"]


def test_the_same_critical_section_under_sync_mutex_passes_every_schedule():
    code, out, err = cli_run("exec", PKG, "--test", "TestMutexLock", "--schedules", 300)
    assert code == 0, err
    assert "preemu: 300 schedules of depth 3 ran (seeds 1..300; k = 330 steps" in err and "all passed" in err


def test_a_run_from_the_boot_snapshot_is_the_run_of_a_fresh_process():
    res = gobuild.build(PKG, test=True)
    image = elfimage.load(str(res.binary))
    from emu.drive import realsweep
    import os
    argv = realsweep.test_argv(PKG, "test", "TestRacyLock")
    opts = process.Options(argv=["./" + os.path.basename(argv[0]), *argv[1:]], budget=process.EXEC_BUDGET,
                           cwd=os.path.abspath(PKG))
    pcs = step_pcs(image, res.package)
    fresh = schedules.Runner(image, opts, pcs).run(FIRST_FAILING, 3, 370)
    runner = schedules.Runner(image, opts, pcs)
    runner.run(7, 3, 370)
    again = runner.run(FIRST_FAILING, 3, 370)
    assert runner.boots == 1
    assert (fresh.insns, fresh.stdout, fresh.why) == (again.insns, again.stdout, again.why) and fresh.why
    assert [d.to_json() for d in fresh.schedule.decisions] == [d.to_json() for d in again.schedule.decisions]


def test_steps_are_the_packages_shared_memory_accesses_only():
    res = gobuild.build(PKG, test=True)
    image = elfimage.load(str(res.binary))
    where = collections.Counter(image.describe(pc).split("+")[0] for pc in step_pcs(image, res.package))
    assert where["example.com/pctlock/lock.tryLock"] == 2          # the check's load and the act's store
    assert where["example.com/pctlock/lock.unlock"] == 1
    assert "example.com/pctlock/lock.mix" not in where            # registers only: no steps
    assert all(w.startswith("example.com/pctlock/lock.") for w in where)   # no runtime, no testmain `main`


def test_a_go_1_24_builds_type_algorithms_are_not_steps():
    """A Go 1.24 build names its equality functions after the types' packages (type:.eq.internal/godebugs.Info),
    whose first element has a dot like a module path's: they are the compiler's, not the program's."""
    image = elfimage.load(str(gobuild.build("tests/data/go/gcnowb", toolchain="1.24.11").binary))
    assert any(n.startswith("type:.eq.internal/") for n in image.symbols)
    where = {image.describe(pc).split("+")[0] for pc in step_pcs(image, "main")}
    assert where and all(w.startswith("main.") for w in where) and "main.moveNoWB" in where


def test_a_plain_programs_steps_are_its_main_packages():
    image = elfimage.load(str(gobuild.build("tests/data/go/race").binary))
    where = {image.describe(pc).split("+")[0] for pc in step_pcs(image, "main")}
    assert where and all(w.startswith("main.") for w in where) and "main.tally" in where


# --- each decision point the schedule controls --------------------------------------------------------------

def _threads(*prios, state=RUNNABLE):
    s = PctSchedule(5, 3, 100)
    ts = []
    for i, pr in enumerate(prios):
        t = Thread(1000 + i, None, name=f"m{i}")
        t.state = state
        s.prio[t.tid] = pr
        ts.append(t)
    return s, ts


def test_the_highest_priority_runnable_thread_runs_next():
    s, ts = _threads(3.2, 3.9, 1, 3.5)
    runq = collections.deque(ts)
    s.to_front(runq, held=set())
    assert runq[0].name == "m1"
    s.to_front(runq, held={1001})          # a held thread is passed over
    assert runq[0].name == "m3"


def test_a_wakee_preempts_only_a_runner_of_lower_priority():
    s, (lo, hi, mid) = _threads(3.1, 3.8, 3.5)
    assert s.preempts(hi, lo) and not s.preempts(lo, hi)

    class Fake:                          # the process's side: scheduling.ThreadScheduling._place
        from emu.linux.scheduling import ThreadScheduling
        _place = ThreadScheduling._place

        def __init__(self, running):
            self.schedule, self.runq, self.in_slice, self.cur = s, collections.deque(), True, running
            self._stop_slice = False
    f = Fake(running=mid)
    f._place(lo, 123)                    # below the runner: queued, the runner goes on
    assert list(f.runq) == [lo] and lo.ready_ns == 123 and not f._stop_slice
    f._place(hi, 124)                    # above it: the runner's slice ends now
    assert list(f.runq) == [lo, hi] and f._stop_slice


def test_futex_wake_releases_the_highest_priority_waiters_first():
    s, ts = _threads(3.1, 3.8, 2, 3.5, state=BLOCKED)
    assert [t.name for t in s.wake_order(ts)] == ["m1", "m3", "m0", "m2"]

    class Fake:
        from emu.linux.scheduling import ThreadScheduling
        futex_wake = ThreadScheduling.futex_wake

        def __init__(self):
            self.schedule, self.futex_waiters, self.woken = s, {0x100: list(ts)}, []

        def wake(self, t, result):
            self.woken.append(t.name)
    f = Fake()
    assert f.futex_wake(0x100, 2) == 2 and f.woken == ["m1", "m3"]


def test_initial_priorities_are_above_every_change_point_and_the_labels_are_the_change_points():
    s = PctSchedule(11, 4, 1000)
    points = {k: i for k, i in s.change.items() if k not in s.partner_of}
    assert sorted(points.values()) == [1, 2, 3] and all(1 <= k <= 1000 for k in points)
    # each change point's partner: 1..k steps later, its label just below the change point's
    assert sorted(s.partner_of.values()) == sorted(points)
    for later, k in s.partner_of.items():
        assert 1 <= later - k <= max(1, 1000 - k) and s.change[later] == points[k] - 0.5
    assert all(4 <= s.priority(tid) < 5 for tid in range(1000, 1010))
    assert len({s.priority(tid) for tid in range(1000, 1010)}) == 10
    assert PctSchedule(11, 4, 1000).change == s.change and PctSchedule(12, 4, 1000).change != s.change


def test_a_change_point_ends_the_slice_before_its_step_and_the_step_is_counted_once():
    """Seed 19's change points: the run's slice ends with the stopped thread's RIP at the step's PC, and
    the whole run counts as many steps as its (unstopped) instructions at step PCs executed."""
    res = gobuild.build(PKG, test=True)
    image = elfimage.load(str(res.binary))
    from emu.drive import realsweep
    import os
    argv = realsweep.test_argv(PKG, "test", "TestRacyLock")
    opts = process.Options(argv=["./" + os.path.basename(argv[0]), *argv[1:]], budget=process.EXEC_BUDGET,
                           cwd=os.path.abspath(PKG))
    runner = schedules.Runner(image, opts, step_pcs(image, res.package))
    seen = []
    orig = PctSchedule.after_slice

    def after_slice(self, t, n, contended):
        from unicorn import x86_const as X
        seen.append((len([d for d in self.decisions if d.kind == "change-point"]), t.tid,
                     t.ctx.reg_read(X.UC_X86_REG_RIP)))
        orig(self, t, n, contended)
    PctSchedule.after_slice = after_slice
    try:
        r = runner.run(FIRST_FAILING, 3, 370)
    finally:
        PctSchedule.after_slice = orig
    cps = [d for d in r.schedule.decisions if d.kind == "change-point"]
    assert len(cps) == 4 and r.why
    for i, d in enumerate(cps, start=1):
        first = next(x for x in seen if x[0] == i)       # the slice in which the i-th change point fell
        assert first[1:] == (d.tid, d.pc)
    assert r.schedule.steps == 397


def test_the_fairness_bound_ends_a_spin_that_strict_priorities_livelock():
    """Depth 1 (no change points): the spinner's thread outranks the threads that could set its flag. With
    the bound each run ends in about 2 ms of virtual time, as natively; without it seeds 2 and 3 spin until
    --max-virtual-ms (measured: 100 ms, 33 M steps) and seed 1 for 31 ms, until sysmon preempts the spinner."""
    code, j, err = _json("--test", "TestSpinHandoff", "--schedules", "3", "--depth", "1", "--max-virtual-ms", "10")
    assert code == 0, err
    assert all(r["ok"] and r["virtual_ns"] < 3_000_000 for r in j["schedules"]["runs"])
    code, r, _ = _json("--test", "TestSpinHandoff", "--schedule", "1", "--depth", "1")
    demoted = [d for d in r["schedule"]["decisions"] if d["kind"] == "fair-demotion"]
    assert any("TestSpinHandoff.func2" in d["where"] for d in demoted)     # in the spin loop itself


def test_a_fairness_demotion_lasts_until_the_others_have_had_their_turn():
    from types import SimpleNamespace
    from emu.linux.schedule import FAIR_BUDGET, FAIR_TURN
    s, (spinner, other) = _threads(3.9, 3.2)
    s.proc = SimpleNamespace(image=SimpleNamespace(describe=hex), step_hooks=SimpleNamespace(
        state=SimpleNamespace(steps=7)))
    spinner.ctx = SimpleNamespace(reg_read=lambda reg: 0x401000)
    s.after_slice(spinner, FAIR_BUDGET - 1, contended=True)
    assert s.priority(spinner.tid) == 3.9
    s.after_slice(spinner, 1, contended=True)                 # the budget: below every thread
    assert s.priority(spinner.tid) < s.priority(other.tid) and s.decisions[-1].kind == "fair-demotion"
    assert s.decisions[-1].pc == 0x401000 and s.decisions[-1].step == 7
    s.after_slice(other, FAIR_TURN - 1, contended=True)
    assert s.priority(spinner.tid) < s.priority(other.tid)
    s.after_slice(other, 1, contended=True)                   # the others had their turn: PCT's order again
    assert s.priority(spinner.tid) == 3.9


@pytest.mark.parametrize("args, message", [
    (["--schedules", "0"], "--schedules must be at least 1, got 0"),
    (["--schedules", "3", "--schedule", "4"], "give one of them"),
    (["--depth", "2"], "--depth is a PCT schedule's depth: give it with --schedules N or --schedule SEED"),
    (["--schedules", "2", "--depth", "0"], "--depth must be at least 1"),
    (["--schedule", "3", "--seed", "2"], "drop --seed"),
    (["--schedule", "-1"], "--schedule takes a seed"),
    (["--schedules", "2", "--trace", "/tmp/preemu-t.json"], "--trace writes one run"),
])
def test_bad_schedule_options_exit_2_with_one_line(args, message):
    code, out, err = cli_run("exec", PKG, "--test", "TestRacyLock", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
