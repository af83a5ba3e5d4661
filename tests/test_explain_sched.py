"""preemu explain of a scheduler scenario (emu/teach/sched.py): one signal of a real multi-goroutine
run, from sysmon's decision to the preempted goroutine's return, with the real scheduler's choices."""
from __future__ import annotations

import io
import json

import pytest
from conftest import ROOT

from emu import cli
from emu.teach import text as explain_text
from emu.drive import scenario
from emu.teach.sched import explain_scenario
from emu.check.safepoint import REASONS

SCEN = ROOT / "scenarios"


def _cli(*args):
    out = io.StringIO()
    rc = cli.main(list(map(str, args)), out=out)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def starvation():
    return explain_scenario(scenario.load(SCEN / "starvation.toml"))


def test_the_first_injected_signal_is_told_from_sysmon_to_the_return(starvation):
    st = starvation
    assert [s.phase for s in st.steps] == ["scheduler", "goroutine", "signal", "pushCall", "stub", "compare"]
    assert st.verdict == "injected" and st.reason == "safe" and st.ok and st.unit == "signal"
    first, stub, back = st.steps[0], st.steps[4], st.steps[5]
    assert "spinner" in first.title and "forcePreemptNS" in first.text[0]    # sysmon's retake, from its events
    assert first.table["rows"][0][:3] == ["M0", "P0", "spinner"]
    assert "picks sleeper" in " ".join(stub.text)             # the real schedule() ran the other goroutine
    assert any(r[2] == "resume PC (pushCall)" and int(r[3], 16) == st.pc for r in stub.table["rows"])
    assert back.regs == first.regs                            # bit-exact after the stub's RET, RIP included
    assert [c.name for c in back.checks] == ["registers bit-exact after the RET"] and back.checks[0].ok
    assert back.pc == st.pc and back.rsp == first.rsp


def test_text_json_and_html_come_from_the_story(starvation, tmp_path):
    rc, text = _cli("explain", SCEN / "starvation.toml")
    assert rc == 0 and text == explain_text.render_text(starvation)
    assert "signal 1  pc" in text.splitlines()[0] and "OK: 1 of 1 checks hold." in text
    rc, out = _cli("explain", SCEN / "starvation.toml", "--json")
    d = json.loads(out)
    assert rc == 0 and d["unit"] == "signal" and [s["phase"] for s in d["steps"]] == \
        [s.phase for s in starvation.steps]
    html = tmp_path / "s.html"
    rc, out = _cli("explain", SCEN / "starvation.toml", "--html", html)
    assert rc == 0 and "6 steps, OK" in out and "at signal 1" in html.read_text()


def test_a_refused_signal_names_the_rule_and_leaves_the_goroutine_alone():
    st = explain_scenario(scenario.load(SCEN / "cooperative.toml"), nth=1)
    assert st.verdict == "refused" and st.reason in REASONS and st.reason != "safe"
    assert [s.phase for s in st.steps] == ["scheduler", "goroutine", "signal", "ack"]
    refusing = [r for r in st.steps[2].table["rows"] if r[-1].startswith("REFUSE")]
    assert refusing and refusing[0][-1] == f"REFUSE: {st.reason}"


def test_a_stub_that_loses_a_register_fails_the_comparison(tmp_stub, tmp_path):
    stub = tmp_stub(lambda s: s.replace("mov rbx, qword ptr [rsp + 24]", "mov ebx, dword ptr [rsp + 24]"))
    text = (SCEN / "starvation.toml").read_text().replace('asm = "../asm/starvation.s"',
                                                          f'asm = "{ROOT / "asm" / "starvation.s"}"\nstub = "{stub}"')
    assert f'stub = "{stub}"' in text
    (tmp_path / "s.toml").write_text(text)
    rc, out = _cli("explain", tmp_path / "s.toml")
    assert rc == 1 and "[FAIL] registers bit-exact after the RET: RBX changed" in out


@pytest.mark.parametrize("args, message", [
    (["--func", "spin"], "--func does not apply to a scheduler scenario"),
    (["--force-unsafe"], "--force-unsafe does not apply"),
    (["--at", "x"], "the number of a signal"),
    (["--at", "99"], "there is no signal 99"),
    (["--async-preemption", "off"], "asynchronous preemption is off"),
])
def test_what_does_not_apply_or_does_not_exist_is_a_clear_error(capsys, args, message):
    rc, _ = _cli("explain", SCEN / "starvation.toml", *args)
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err
