"""Sweeps in shards: the same report whatever runs them (one process, --jobs N), resumable from a
results file, a clean Ctrl-C, and memory that does not grow with the number of points."""
import io
import json

import pytest
from conftest import ASM, DATA

from emu import cli
from emu.drive import loader, shards, sweeper as sweep

SUM = ASM / "sum_loop.s"
BROKEN = DATA / "stub_no_pushfq.s"


def _json(*argv):
    out = io.StringIO()
    code = cli.main([str(a) for a in argv] + ["--json", "--quiet"], out)
    d = json.loads(out.getvalue())
    d.pop("points_per_second")                 # the one timing field
    return code, d


@pytest.fixture
def small_shards(monkeypatch):
    monkeypatch.setattr(sweep, "SHARD_POINTS", 700)


def test_a_sharded_sweep_reports_exactly_what_one_chain_reports(small_shards, monkeypatch):
    args = ["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=300", "--layout", "go1.27", "--jobs", "1"]
    code, sharded = _json(*args)
    monkeypatch.setattr(sweep, "SHARD_POINTS", 10**9)
    code1, whole = _json(*args)
    assert code == code1 == 0 and sharded["points_tried"] == 2703
    assert sharded == whole


@pytest.mark.parametrize("stub", [None, BROKEN], ids=["ok", "broken-stub"])
def test_jobs_2_gives_the_same_json_as_jobs_1(small_shards, stub):
    args = ["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=300"] + (["--stub", stub] if stub else [])
    code1, one = _json(*args, "--jobs", "1")
    code2, two = _json(*args, "--jobs", "2")
    assert code1 == code2 == (1 if stub else 0)
    assert one == two
    if stub:
        assert one["violation_count"] > len(one["violations"]) == 200     # kept 200, counted all


def test_shards_start_from_the_reference_context_not_from_entry(small_shards):
    prog = loader.load_program(SUM)
    w = loader.build_world(prog, "sum_loop", "go1.14", None, 1, {"RCX": 300})
    ref = sweep.run_reference(w)
    snap = sweep.start_states(w, [1400])[0]
    w2 = loader.build_world(prog, "sum_loop", "go1.14", None, 1, {"RCX": 300})
    w2.restore(snap)                                   # a fresh world, as in a worker process
    w2.machine.run(w2.machine.pc, ref.boundaries - 1400)
    assert w2.machine.dump_state() == ref.final


def test_an_interrupted_results_file_resumes_to_the_same_report(small_shards, tmp_path):
    res = tmp_path / "r.jsonl"
    args = ["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=300", "--stub", BROKEN, "--jobs", "1",
            "--results", res]
    code, full = _json(*args)
    lines = res.read_text().splitlines()
    assert len(lines) == 4                             # 2703 points in shards of 700
    res.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])    # two shards done, the third cut short
    ran = []
    real = sweep.run_shard
    try:
        sweep.run_shard = lambda *a, **k: ran.append(a[2]) or real(*a, **k)
        code2, resumed = _json(*args)
    finally:
        sweep.run_shard = real
    assert ran == [2, 3]                               # finished shards are not run again
    assert (code2, resumed) == (code, full)


def test_ctrl_c_prints_one_line_the_partial_summary_and_exits_130(small_shards, monkeypatch, capsys):
    real = sweep.run_shard

    def interrupt_at_shard_2(world, ref, index, *a, **k):
        if index == 2:
            raise KeyboardInterrupt
        return real(world, ref, index, *a, **k)
    monkeypatch.setattr(sweep, "run_shard", interrupt_at_shard_2)
    out = io.StringIO()
    code = cli.main(["sweep", str(SUM), "--func", "sum_loop", "--reg", "RCX=300", "--jobs", "1", "--quiet"], out)
    err = capsys.readouterr().err
    assert code == 130
    assert err.strip().splitlines() == ["preemu: interrupted (Ctrl-C) after 2 of 4 shards; the summary above is "
                                        "partial"] and "Traceback" not in err
    assert out.getvalue().startswith("partial: 2 of 4 shards finished: 1,400 points, 1,400 injected, 0 violation(s)")


def test_a_bad_executor_is_a_one_line_error(capsys):
    code = cli.main(["sweep", str(SUM), "--func", "sum_loop", "--reg", "RCX=3", "--executor", "spark://x:1"],
                    io.StringIO())
    assert code == 2 and "dask://HOST:PORT" in capsys.readouterr().err


def test_memory_does_not_grow_with_the_points():
    assert isinstance(sweep.select_points(10**7, 10**9), range)
    log = sweep.ViolationLog(keep=3)
    v = shards.verify.Violation("register", "RAX", "1", "2", 0, 0, "nop", "t.s:1")
    for _ in range(10_000):
        log.append(v)
    assert (log.count, len(log.kept), log.groups[("register", "RAX")]) == (10_000, 3, 10_000)


def test_check_stub_reports_the_same_with_jobs_2():
    from emu.drive import checkstub
    from emu.output import report
    names = ("sum_loop", "adc_chain", "xmm_loop")
    one = report.checkstub_json(checkstub.check(BROKEN, "go1.14", 100, names, jobs=1))
    two = report.checkstub_json(checkstub.check(BROKEN, "go1.14", 100, names, jobs=2))
    assert one == two and not one["ok"]
    assert [c["scenario"] for c in one["corpus"]] == sorted(names)


def test_help_imports_no_engine_module():
    import subprocess
    import sys
    code = ("import sys; from emu import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('emu.') or m in ('capstone', 'keystone')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = out.strip().splitlines()[-1]
    for heavy in ("emu.sweep", "emu.drive.loader", "emu.drive.checkstub", "emu.drive.scenario", "capstone", "keystone", "emu.drive.shards"):
        assert f"'{heavy}'" not in loaded, loaded


def _on_a_terminal(*argv) -> str:
    """Run preemu with stdout/stderr on a pseudo-terminal (120 columns); return what it printed."""
    import fcntl
    import os
    import pty
    import struct
    import sys
    import termios
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.execv(sys.executable, [sys.executable, "-m", "emu", *map(str, argv)])
    out = b""
    while True:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
    os.waitpid(pid, 0)
    return out.decode(errors="replace")


def test_progress_shows_on_a_terminal_unless_quiet():
    # 273 points end well inside tqdm's 0.1 s redraw interval: the finished state must still be drawn
    args = ["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=30", "--jobs", "1"]
    shown = _on_a_terminal(*args)
    assert "preemu sweep: 100%" in shown and "273/273" in shown and "points/s" in shown
    assert "%|" not in _on_a_terminal(*args, "--quiet")



GC_ROOTS = ASM / "gc_roots.s"
DROP_EARLY = """
; an object that is garbage from its fourth instruction on, then a long loop: every shard's first GC
; frees it again from the reference run's heap
drop_early:
    push rbp
    mov rbp, rsp
    mov eax, 32
    call newobject
    mov qword ptr [rax], 7
    xor eax, eax
.loop:
    add rax, rcx
    dec rcx
    jnz .loop
    pop rbp
    ret
"""


@pytest.mark.parametrize("entry", ["drop_early", "ptr_in_caller_slot"])
def test_a_gc_sweep_runs_in_shards_like_any_other(monkeypatch, tmp_path, entry):
    src = GC_ROOTS
    if entry == "drop_early":
        src = tmp_path / "drop.s"
        src.write_text(DROP_EARLY)
    args = ["sweep", src, "--func", entry, "--reg", "RCX=20", "--gc"]
    monkeypatch.setattr(sweep, "SHARD_POINTS", 10**9)
    _, whole = _json(*args, "--jobs", "1")
    monkeypatch.setattr(sweep, "SHARD_POINTS", 30)
    res = tmp_path / "gc.jsonl"
    code1, one = _json(*args, "--jobs", "1", "--results", res)
    code2, two = _json(*args, "--jobs", "2")
    assert code1 == code2 == 0 and one == two and one["points_tried"] > 60
    assert len(res.read_text().splitlines()) == 3                 # three shards, each written ...
    assert _json(*args, "--jobs", "1", "--results", res) == (0, one)   # ... and read back, GC included
    # every shard's first GC frees again what the chain before it freed: counted once, as by one chain
    assert one["gc"] == whole["gc"] and one["gc"]["cycles"] == one["injected"] and one["gc"]["freed"] == 1


def test_a_mutant_scanner_is_caught_in_every_shard_that_frees_a_live_object(monkeypatch):
    monkeypatch.setattr(sweep, "SHARD_POINTS", 37)
    code, d = _json("sweep", GC_ROOTS, "--func", "ptr_in_reg", "--reg", "RCX=20", "--gc",
                    "--gc-scanner", "skip-save-area", "--jobs", "2")
    uaf = [v for v in d["violations"] if v["kind"] == "use-after-free"]
    assert code == 1 and [v["boundary"] for v in uaf] == [7, 37]       # shard 0 from entry, shard 1 from 37
    assert all("freed by the GC" in v["detail"] for v in uaf)


# --- a real-program sweep's progress: the same bar, moved point by point (issue #41) ----------------------
KINDS = DATA / "go" / "kinds"


class _Bar:
    """A progress sink in place of tqdm (ShardRunner's progress factory): what the sweep told it."""

    def __init__(self, total, initial):
        self.total, self.n, self.updates, self.closed = total, initial, [], False

    def update(self, n):
        self.n += n
        self.updates.append(n)

    def refresh(self):
        pass

    def close(self):
        self.closed = True


def _swept(**kw):
    from emu import api
    bars = []
    rep = api.sweep(KINDS, "initTable", progress=lambda total, initial: bars.append(_Bar(total, initial)) or bars[-1],
                    **kw)
    assert len(bars) == 1 and bars[0].closed
    return rep.result, bars[0]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_real_sweep_moves_the_bar_at_every_point_here_and_from_worker_processes(monkeypatch, jobs):
    from emu.drive import realsweep
    monkeypatch.setattr(realsweep, "SHARD_POINTS", 50)        # 117 points: three shards, two in worker processes
    res, bar = _swept(jobs=jobs)
    assert res.points == bar.total == bar.n == 117 and res.shards == 3
    assert bar.updates == [1] * 117                            # each point as its chain went past it


def test_a_gc_sweeps_single_chain_counts_the_points_it_reaches():
    res, bar = _swept(gc=True, jobs=1)
    assert bar.total is None                                   # open-ended: every k-th boundary until F returns
    assert bar.n == res.points == res.reached > 100 and set(bar.updates) == {1}


def test_a_real_sweep_shows_progress_on_a_terminal_and_nothing_elsewhere():
    import subprocess
    import sys
    args = ["sweep", KINDS, "--func", "initTable", "--jobs", "1"]
    shown = _on_a_terminal(*args)
    assert "preemu sweep: 100%" in shown and "117/117" in shown and "points/s" in shown
    assert "%|" not in _on_a_terminal(*args, "--quiet")
    piped = subprocess.run([sys.executable, "-m", "emu", *map(str, args)], capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == "" and "points tried             117" in piped.stdout
