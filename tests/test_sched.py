"""Scheduler, sysmon and virtual time: starvation before Go 1.14, its cure, fairness, migration,
determinism, and the Chrome trace's structure."""
import io
import json

import pytest
from conftest import ASM, ROOT, assemble

from emu import cli
from emu.core import layout, regs
from emu.drive import loader, sweeper as sweep
from emu.model import gcsuspend, sched, sysmon
from emu.output import timeline

PROG = loader.load_program(ASM / "starvation.s")


def _run(specs, gomaxprocs=1, async_preemption=True, ms=60, lay="go1.14", ns=1.0, seed=1):
    s = sched.Scheduler(PROG, loader.load_stub(lay), layout.get_layout(lay), specs, gomaxprocs, async_preemption,
                        ns, seed)
    return s, s.run(int(ms * 1e6))


SPIN_SLEEP = [sched.GoSpec("spinner", "spin"), sched.GoSpec("sleeper", "sleeper", {"RCX": 10**6})]


def test_async_preemption_wakes_the_sleeper_about_20ms_late_like_the_real_runtime():
    _, r = _run(SPIN_SLEEP, ms=60)
    assert 15 <= r.percentile(0.5) <= 25
    assert r.preemptions["async"] >= 2 and r.signals_injected == r.preemptions["async"]
    assert not r.starved


def test_first_signal_comes_10_to_20ms_after_the_spinner_starts():
    s, r = _run(SPIN_SLEEP, ms=30)
    first = next(e for e in r.events if e["kind"] == "signal")
    assert 10e6 <= first["t"] <= 20e6


def test_without_async_preemption_the_sleeper_starves():
    _, r = _run(SPIN_SLEEP, async_preemption=False, ms=60)
    r.starvation_ns = 50_000_000
    assert [g.name for g in r.starved] == ["sleeper"]
    assert r.preemptions == {"async": 0, "cooperative": 0} and r.signals_sent == 0


@pytest.mark.parametrize("asyncp", [True, False])
def test_a_calling_spinner_is_preempted_cooperatively_in_both_worlds(asyncp):
    _, r = _run([sched.GoSpec("caller", "spin_calls"), sched.GoSpec("sleeper", "sleeper", {"RCX": 10**6})],
                async_preemption=asyncp, ms=60)
    assert r.preemptions["cooperative"] >= 2 and r.preemptions["async"] == 0
    assert 15 <= r.percentile(0.5) <= 25


def test_three_spinners_share_two_ps_and_migrate_between_them():
    _, r = _run([sched.GoSpec(f"s{i}", "spin") for i in range(3)], gomaxprocs=2, ms=200, ns=5.0)
    shares = [r.cpu_share(g) for g in r.goroutines]
    assert all(0.25 <= x <= 0.42 for x in shares), shares
    assert abs(sum(shares) - 1.0) < 0.01
    tracks = {}
    for e in r.events:
        if e["kind"] == "run":
            tracks.setdefault(e["g"], set()).add(e["track"])
    assert any(len(t) == 2 for t in tracks.values())      # a preempted G resumed on the other M and P


@pytest.mark.parametrize("lay", ["go1.14", "go1.27"])
def test_goroutines_preempted_and_moved_between_ps_finish_with_the_uninterrupted_result(lay):
    prog = loader.load_program(ASM / "xmm_loop.s")
    specs = [sched.GoSpec(f"x{i}", "xmm_loop", {"RCX": 600_000}) for i in range(3)]
    s = sched.Scheduler(prog, loader.load_stub(lay), layout.get_layout(lay), specs, 2, True, 5.0, 7)
    r = s.run(300_000_000)
    assert r.finished and r.preemptions["async"] >= 3
    moved = {e["g"] for e in r.events if e["kind"] == "run"
             for f in r.events if f["kind"] == "run" and f["g"] == e["g"] and f["track"] != e["track"]}
    assert moved
    for j, g in enumerate(r.goroutines):
        w = loader.build_world(prog, "xmm_loop", lay, None, sched.Scheduler.register_seed(7, j), {"RCX": 600_000})
        ref = sweep.run_reference(w)
        for name in ("RAX", "RDX"):
            assert g.ctx.reg_read(regs.lookup(name).uc_id) == ref.final.values[name], (g.name, name)


def _cli(*argv):
    out = io.StringIO()
    code = cli.main(list(map(str, argv)), out)
    return code, out.getvalue()


def test_starvation_scenario_both_worlds_and_identical_output_across_runs(tmp_path):
    sc = ROOT / "scenarios" / "starvation.toml"
    a = _cli("run", sc, "--json")
    b = _cli("run", sc, "--json")
    assert a == b and a[0] == 0
    d = json.loads(a[1])
    for k in ("wake_latency_ms", "starved", "preemptions", "signals", "goroutines"):
        assert k in d
    assert set(d["wake_latency_ms"]) == {"p50", "p90", "p99", "max", "count"}
    assert not d["starved"] and "cpu_share" in d["goroutines"][0]
    off = _cli("run", sc, "--async-preemption", "off")
    assert off[0] == 0 and "STARVED          sleeper" in off[1]
    text1 = _cli("run", sc)[1]
    assert text1 == _cli("run", sc)[1]


def test_chrome_trace_structure(tmp_path):
    out = tmp_path / "t.json"
    svg = tmp_path / "t.svg"
    code, _ = _cli("run", ROOT / "scenarios" / "starvation.toml", "--trace", out, "--timeline", svg)
    assert code == 0
    d = json.loads(out.read_text())
    assert d["displayTimeUnit"] == "ns" and d["otherData"]["scenario"] == "starvation"
    evs = d["traceEvents"]
    assert all({"ph", "pid", "tid", "name"} <= set(e) for e in evs)
    names = {(e["tid"], e["args"]["name"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {(1, "M0 (P0)"), (timeline.SYSMON_TID, "sysmon")}
    slices = [e for e in evs if e["ph"] == "X"]
    assert slices and all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    by_tid = {}
    for e in sorted(slices, key=lambda e: e["ts"]):        # no overlapping slices on one track (Perfetto)
        assert e["ts"] >= by_tid.get(e["tid"], 0) - 1e-9
        by_tid[e["tid"]] = e["ts"] + e["dur"]
    kinds = {e["cat"] for e in evs if e["ph"] == "i"}
    assert {"signal", "inject", "preempt", "sleep", "ready"} <= kinds
    assert all(e["s"] == "t" for e in evs if e["ph"] == "i")
    assert svg.read_text().startswith("<svg")


@pytest.mark.parametrize("bad,needle", [
    ('name="x"\nasm="../asm/starvation.s"\ngomaxprocs=0\n[[goroutines]]\nentry="spin"\n', "gomaxprocs: must be positive"),
    ('name="x"\nasm="../asm/starvation.s"\n[[goroutines]]\nentry="spin"\nfoo=1\n', "goroutines[0].foo"),
    ('name="x"\nasm="../asm/starvation.s"\n[[goroutines]]\nentry="spin"\n[expect]\nstarved="no"\n', "expect.starved"),
    ('name="x"\nasm="../asm/starvation.s"\n[[goroutines]]\nentry="nope"\n', "no function 'nope'"),
])
def test_bad_scheduler_scenarios_are_clear_errors(tmp_path, bad, needle):
    p = tmp_path / "scenarios"
    p.mkdir()
    f = p / "bad.toml"
    f.write_text(bad.replace("../asm/", str(ASM) + "/"))
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "emu", "run", str(f)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("svg,argv", [("starvation_async_on.svg", ["scenarios/starvation.toml"]),
                                      ("starvation_async_off.svg", ["scenarios/starvation.toml",
                                                                    "--async-preemption", "off"]),
                                      ("fair_share.svg", ["scenarios/fair_share.toml"])])
def test_the_docs_timelines_are_up_to_date(tmp_path, svg, argv):
    out = tmp_path / svg
    _cli("run", *[ROOT / argv[0]] + argv[1:], "--timeline", out)
    assert out.read_text() == (ROOT / "docs" / "img" / svg).read_text(), \
        f"docs/img/{svg} is stale: regenerate it with " \
        f"`preemu run {' '.join(argv)} --timeline docs/img/{svg}`"


@pytest.mark.parametrize("asyncp,blocked", [(True, False), (False, True)])
def test_gc_stack_scan_requests_stop_a_spinner_only_with_async_preemption(asyncp, blocked):
    s = sched.Scheduler(PROG, loader.load_stub("go1.14"), layout.GO114, [sched.GoSpec("spinner", "spin")], 1,
                        asyncp, 1.0, 1)
    r = s.run(40_000_000, gc_every_ns=15_000_000)
    assert r.gc_cycles == 2
    assert bool(r.gc_blocked) == blocked
    if asyncp:
        assert len(r.gc_waits_ns) == 2 and r.gc_waits_ns[-1] < 100_000        # microseconds, not forever
        assert any(e["kind"] == "scanned" for e in r.events)


def test_suspendg_does_not_resend_a_signal_acknowledged_within_5us_of_its_last_send():
    """N2 (issue 23): suspendG takes a new (M, preemptGen) pair as seen even when the 5 us rate limit
    stops it from sending (preempt.go:211-215 assign asyncM/asyncGen, :227-232 test nextPreemptM), so a
    signal refused within 5 us of the last send is not sent again for that pair: the next suspendG
    signal needs an acknowledgement at least 5 us after the previous one (of sysmon's, say). Over code
    that is mostly unsafe points the GC then waits for sysmon, milliseconds instead of microseconds."""
    prog = loader.load_program(ASM / "unsafe_points.s")
    s = sched.Scheduler(prog, loader.load_stub("go1.27"), layout.get_layout("go1.27"),
                        [sched.GoSpec("tour", "unsafe_tour", {"RCX": 10**9})], 1, True, 1.0, 1)
    r = s.run(60_000_000, gc_every_ns=5_000_000)
    acks = [e["t"] for e in r.events if e["kind"] in ("refuse", "inject") and e.get("g") == "tour"]
    sends = [e for e in r.events if e["kind"] == "signal" and e.get("why") == "suspendG"]
    skips = [e for e in r.events if e["kind"] == "suspendG-skip"]
    for sa, sb in zip(sends, sends[1:]):
        a, b = sa["t"], sb["t"]                  # when the rounds started; Go sent at sa["seen"] <= a
        between = [t for t in acks if a <= t <= b]
        if between and not any(e["kind"] == "scanned" and a <= e["t"] <= b for e in r.events):   # a re-send
            assert any(t >= sa.get("seen", a) + gcsuspend.SUSPEND_RESEND_NS for t in between), (sa, b, between[:3])
    waits = list(r.gc_waits_ns) + list(r.gc_blocked.values())
    assert max(waits) > 2_000_000                                # a skipped pair leaves it to sysmon
    assert skips and all(e["acked"] < e["not_before"] for e in skips)


# --- T3 (issue 23): where Go 1.14's scheduler differs (the go1.14 layout selects it) -----------------
THREE = [sched.GoSpec("spinA", "spin"), sched.GoSpec("spinB", "spin"), sched.GoSpec("sleeper", "sleeper", {"RCX": 50})]


def test_go114_does_not_steal_the_timers_of_a_p_running_a_busy_goroutine():
    """golang/go#38860: in Go 1.14 findrunnable steals another P's timers only if shouldStealTimers says
    so (that P idle, or its G asked to stop); Go 1.16+ steal any P's timers in the last steal round
    (proc.go:3875). Three Ps: the sleeper's timer sits on P0, which runs spinA; P2 is idle. Go 1.27
    wakes the sleeper within a round every time; Go 1.14 only once sysmon preempts spinA (10 ms)."""
    late = {}
    for lay in ("go1.14", "go1.27"):
        _, r = _run(THREE, gomaxprocs=3, lay=lay, ms=30)
        late[lay] = [e["late_ms"] for e in r.events if e["kind"] == "ready" and e["g"] == "sleeper"]
    assert len(late["go1.27"]) == 50 and max(late["go1.27"]) < 0.1
    assert late["go1.14"] and late["go1.14"][0] > 10 and len(late["go1.14"]) < 5


def test_go114_steals_the_run_queue_before_the_timers():
    """Go 1.14's last steal round takes p2's runnext before it runs p2's due timers; Go 1.27.3 runs the
    timers first (proc.go:3875 before :3899)."""
    for lay, first in (("go1.14", "spinB"), ("go1.27", "sleeper")):
        s = sched.Scheduler(PROG, loader.load_stub(lay), layout.get_layout(lay), THREE, 2, True, 1.0, 1)
        p, q = s.ps
        a, b, sl = s.gs
        for x in s.ps:
            x.runq.clear()
            x.runnext = None
        q.runnext = b                                          # q: nothing running, b in runnext
        sl.status = "waiting"
        q.timers = [(100.0, sl)]                               # and the sleeper's timer, due
        g, _ = s.stealing.work(p, 200.0)
        assert g.name == first, lay


def test_go114_sysmon_ticks_at_20us_again_after_every_p_was_idle():
    """Go 1.14's sysmon set idle = 0, delay = 20 us whenever every P was idle; Go 1.27.3 does so only
    after a syscall wake (proc.go:6575-6604), so after a long sleep its next tick can be milliseconds
    away. The goroutine wakes from 30 ms asleep with its old time slice (runnext inherits it), so the
    first sysmon tick that sees it preempts it."""
    prog = assemble("nap_then_spin:\n mov eax, 30000000\n call nanosleep\n.l:\n inc rdx\n jmp .l\n")
    gap = {}
    for lay in ("go1.14", "go1.27"):
        s = sched.Scheduler(prog, loader.load_stub(lay), layout.get_layout(lay),
                            [sched.GoSpec("napper", "nap_then_spin")], 1, True, 1.0, 1)
        r = s.run(40_000_000)
        woke = next(e["t"] for e in r.events if e["kind"] == "ready")
        gap[lay] = next(e["t"] for e in r.events if e["kind"] == "preemptone") - woke
    assert gap["go1.14"] <= 2 * sysmon.SYSMON_MIN_US * 1000 < 500_000 < gap["go1.27"]
