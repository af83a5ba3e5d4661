"""The `preemu` command as users run it: output, JSON, exit codes 0/1/2, one-line errors."""
import io
import json
import subprocess
import sys

import pytest
from conftest import ASM, DATA, ROOT

from emu import cli

SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))


def run(*argv):
    out = io.StringIO()
    code = cli.main(list(map(str, argv)), out)
    return code, out.getvalue()


def run_proc(*argv):
    p = subprocess.run([sys.executable, "-m", "emu", *map(str, argv)], capture_output=True, text=True, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_passes(path):
    code, out = run("run", path)
    assert code == 0, out
    assert out.rstrip().endswith("PASS")


def test_sweep_json_has_the_documented_keys():
    code, out = run("sweep", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--json")
    d = json.loads(out)
    assert code == 0
    for k in ("boundaries", "injected", "refused", "violations", "points_per_second", "points"):
        assert k in d
    assert d["refused"] == {"unsafe-point": 5}
    row = next(r for r in d["points"] if r["verdict"] == "refuse")
    assert row["insn"].startswith("jbe") and row["reason"] == "unsafe-point"
    assert d["injected"] + sum(d["refused"].values()) == d["boundaries"]


def test_broken_stub_exits_1_and_names_rflags():
    code, out = run("sweep", ASM / "adc_chain.s", "--func", "adc_chain", "--reg", "RCX=16",
                    "--stub", DATA / "stub_no_pushfq.s", "--max-points", "100")
    assert code == 1
    assert "FAIL" in out and "flags RFLAGS" in out


def test_broken_stub_json_violations_name_the_register_pc_and_values():
    code, out = run("sweep", ASM / "adc_chain.s", "--func", "adc_chain", "--reg", "RCX=16",
                    "--stub", DATA / "stub_no_pushfq.s", "--max-points", "100", "--json")
    d = json.loads(out)
    assert code == 1 and d["violations"]
    v = d["violations"][0]
    assert v["what"] == "RFLAGS" and v["pc"].startswith("0x") and v["insn"] and v["expected"] != v["actual"]
    assert "adc_chain.s:" in v["where"]


@pytest.mark.parametrize("argv,needle", [
    (["sweep", DATA / "bad_syntax.s", "--func", "f"], "bad_syntax.s:4:"),
    (["sweep", ASM / "sum_loop.s", "--func", "nope"], "no function 'nope'"),
    (["sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RZZ=1"], "unknown register"),
    (["sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RCX"], "NAME=VALUE"),
    (["sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RSI=nobuf"], "unknown symbol 'nobuf'"),
    (["sweep", ASM / "missing.s", "--func", "f"], "cannot read"),
    (["sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--stub", DATA / "bad_syntax.s"], "bad_syntax.s:4:"),
    (["run", DATA / "bad_key.toml"], "registerz: unknown key"),
    (["run", DATA / "bad_reason.toml"], "expect.refused.too-tired: unknown reason"),
    (["sweep", DATA / "runaway.s", "--func", "spin", "--budget", "100000"], "did not finish within 100000"),
    (["sweep", DATA / "fault.s", "--func", "f"], "guest fault at"),
])
def test_bad_input_exits_2_with_one_line_and_no_traceback(argv, needle):
    code, out, err = run_proc(*argv)
    assert code == 2, (out, err)
    assert needle in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_guest_fault_message_names_pc_and_disassembly():
    code, out, err = run_proc("sweep", DATA / "fault.s", "--func", "f")
    assert "mov rax, qword ptr [rbx]" in err and "fault.s:5" in err


def test_gen_stub_check_reports_up_to_date():
    code, out = run("gen-stub", "--check")
    assert code == 0 and out.count("up to date") == 3          # go1.14, go1.27 and go1.27's simd flavour


def test_disasm_lists_metadata():
    code, out = run("disasm", ASM / "call_loop.s")
    assert code == 0 and "UNSAFE" in out and "sp+8" in out


def test_same_scenario_same_json_except_speed():
    a = json.loads(run("run", ROOT / "scenarios" / "xmm_loop.toml", "--json")[1])
    b = json.loads(run("run", ROOT / "scenarios" / "xmm_loop.toml", "--json")[1])
    a.pop("points_per_second"), b.pop("points_per_second")
    assert a == b


def test_preempt_tells_the_cooperative_story_with_async_off():
    code, out = run("preempt", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--at", "3",
                    "--async-preemption", "off")
    assert code == 0
    assert "cooperative" in out and "preempted cooperatively" in out


def test_preempt_force_unsafe_exits_1_with_the_damage():
    code, out = run("preempt", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--at", "square_add",
                    "--signal-delay", "1", "--force-unsafe", "--json")
    d = json.loads(out)
    assert code == 1 and d["violations"][0]["kind"] == "needless-stack-growth"
    assert [e["kind"] for e in d["events"]][:2] == ["request", "inject"]


def test_preempt_bad_at_is_bad_input():
    code, out, err = run_proc("preempt", ASM / "call_loop.s", "--func", "call_loop", "--at", "line:999")
    assert code == 2 and "no instruction on line 999" in err


def test_sweep_force_unsafe_reports_forced_points():
    code, out = run("sweep", ASM / "unsafe_damage.s", "--func", "below_sp", "--reg", "RCX=2", "--force-unsafe",
                    "--json")
    d = json.loads(out)
    assert code == 1 and d["forced"] == d["boundaries"] and d["injected"] == 0
