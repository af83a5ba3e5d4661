"""The Python API at the package top level: results the CLI renders, one exception type, the docs' example."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re

import pytest

import emu
from conftest import ASM, DATA, ROOT
from emu import cli


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def _cli_json(*argv) -> tuple[int, dict]:
    out = io.StringIO()
    code = cli.main(list(map(str, argv)), out)
    return code, json.loads(out.getvalue())


def _same(a: dict, b: dict) -> None:
    a, b = dict(a), dict(b)
    for d in (a, b):
        d.pop("points_per_second", None)
    assert a == b


def test_sweep_returns_the_report_the_cli_prints(in_root):
    rep = emu.sweep("asm/adc_chain.s", "adc_chain", registers={"RCX": 8}, stub=DATA / "stub_no_pushfq.s",
                    max_points=40)
    assert isinstance(rep, emu.SweepReport) and not rep.ok
    assert rep.violations and all(isinstance(v, emu.Violation) for v in rep.violations)
    assert {(v.kind, v.what) for v in rep.violations} == {("flags", "RFLAGS")}
    code, doc = _cli_json("sweep", "asm/adc_chain.s", "--func", "adc_chain", "--reg", "RCX=8", "--stub",
                          os.path.relpath(DATA / "stub_no_pushfq.s"), "--max-points", 40, "--json")
    assert code == 1
    _same(rep.to_json(), doc)
    assert "FAIL: " in rep.render() and rep.summary().startswith("FAIL: 40 violation(s)")


def test_sweep_ok(in_root):
    rep = emu.sweep(ASM / "sum_loop.s", "sum_loop", registers={"RCX": 5})
    assert rep.ok and rep.violations == [] and rep.summary().startswith("OK:")
    from emu import api
    from emu.drive import sweeper
    assert emu.sweep is api.sweep and callable(sweeper.sweep)    # the API is a function; the engine a module


def test_sweep_in_processes_and_resumed_from_a_results_file(in_root, tmp_path, monkeypatch):
    """The shard options of the CLI (--jobs, --results) are the API's too: the same report whatever
    `jobs` is, and a results file that lets a re-run skip every finished shard."""
    from emu.drive import sweeper as engine
    monkeypatch.setattr(engine, "SHARD_POINTS", 500)
    one = emu.sweep(ASM / "sum_loop.s", "sum_loop", registers={"RCX": 200}, layout="go1.27")
    res = tmp_path / "r.jsonl"
    two = emu.sweep(ASM / "sum_loop.s", "sum_loop", registers={"RCX": 200}, layout="go1.27", jobs=2, results=res)
    _same(one.to_json(), two.to_json())
    assert len(res.read_text().splitlines()) == 4                  # 1,803 points in shards of 500
    ran = []
    real = engine.run_shard
    monkeypatch.setattr(engine, "run_shard", lambda *a, **k: ran.append(a[2]) or real(*a, **k))
    again = emu.sweep(ASM / "sum_loop.s", "sum_loop", registers={"RCX": 200}, layout="go1.27", results=res)
    assert ran == [] and again.ok and again.result.points == one.result.points
    sc = emu.run_scenario("scenarios/xmm_loop.toml", jobs=2)
    assert sc.ok and sc.result.points == emu.run_scenario("scenarios/xmm_loop.toml").result.points


def test_run_scenario_sweep_and_schedule(in_root):
    rep = emu.run_scenario("scenarios/xmm_loop.toml")
    assert isinstance(rep, emu.ScenarioReport) and rep.kind == "sweep" and rep.ok, rep.summary()
    code, doc = _cli_json("run", "scenarios/xmm_loop.toml", "--json")
    assert code == 0
    _same(rep.to_json(), doc)
    assert rep.render().rstrip().endswith("scenario xmm_loop: PASS")


def test_run_scenario_with_a_broken_stub_fails_and_names_the_flags(in_root):
    rep = emu.run_scenario("scenarios/adc_chain.toml", max_points=30, stub=DATA / "stub_no_pushfq.s")
    assert not rep.ok
    assert "violations" in [c.name for c in rep.failed_checks]
    assert "flags RFLAGS" in rep.summary()


def test_check_stub_report(in_root):
    rep = emu.check_stub(DATA / "stub_no_pushfq.s", loops=["sum_loop", "xmm_loop"], max_points=10)
    assert isinstance(rep, emu.StubReport) and not rep.ok
    assert [r.scenario for r in rep.results] == ["sum_loop", "xmm_loop"]
    assert {v.what for v in rep.violations} == {"RFLAGS"}
    assert rep.to_json()["schema"] == "preemu/check-stub/1"
    assert "flags RFLAGS: in 2 corpus loop(s)" in rep.summary()
    assert rep.only("sum_loop").results[0].scenario == "sum_loop"
    good = emu.check_stub(ASM / "preempt_amd64_go127.s", layout="go1.27", loops=["sum_loop"], max_points=10)
    assert good.ok and good.violations == [] and good.summary().startswith("PASS")


@pytest.mark.parametrize("call, message", [
    (lambda: emu.sweep("no/such.s", "f"), "no/such.s: cannot read the program"),
    (lambda: emu.sweep(DATA / "bad_syntax.s", "f"), r"bad_syntax\.s:\d+"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "nope"), "no function 'nope'"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "sum_loop", registers={"RQX": 1}), "unknown register 'RQX'"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "sum_loop", max_points=0), "max_points must be a positive"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "sum_loop", layout="go1.99"), "unknown layout 'go1.99'"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "sum_loop", stub="none.s"), "none.s: cannot read the stub"),
    (lambda: emu.sweep(DATA / "runaway.s", "spin", budget=10_000), "did not finish within 10000"),
    (lambda: emu.run_scenario(DATA / "bad_key.toml"), "bad_key.toml: "),
    (lambda: emu.run_scenario(ROOT / "scenarios" / "gc_suspend.toml", max_points=5), "apply to sweep scenarios"),
    (lambda: emu.check_stub(DATA / "stub_no_pushfq.s", loops=["nope"]), "unknown corpus loop"),
    (lambda: emu.check_stub(ASM / "sum_loop.s", loops=["sum_loop"]), "asyncPreempt"),
    (lambda: emu.sweep(ASM / "sum_loop.s", "sum_loop", jobs=0), "jobs must be a positive integer"),
    (lambda: emu.check_stub(DATA / "stub_no_pushfq.s", jobs=0), "jobs must be a positive integer"),
], ids=["missing", "asm-error", "func", "register", "max-points", "layout", "stub", "budget", "scenario-key",
        "sched-options", "loop", "not-a-stub", "jobs", "check-stub-jobs"])
def test_bad_input_raises_one_exception_type(call, message):
    with pytest.raises(emu.EmuError) as e:
        call()
    assert re.search(message, str(e.value)), str(e.value)


def test_docs_api_example_runs(in_root):
    page = (ROOT / "docs" / "how-to" / "ci.md").read_text()
    block = re.search(r"\*\*Python API\.\*\*.*?```python\n(.*?)```", page, re.S).group(1)
    assert len(block.strip().splitlines()) <= 12
    expected = [m.group(1).strip() for m in re.finditer(r"# -> (.*)$", block, re.M)]
    assert len(expected) == 4
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "docs/how-to/ci.md", "exec"), {})
    assert out.getvalue().splitlines() == expected


def test_import_emu_is_cheap():
    import subprocess
    import sys
    code = "import sys, emu; print('emu.api' in sys.modules, 'unicorn' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.split() == ["False", "False"]
