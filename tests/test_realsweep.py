"""The real-program sweep (emu/drive/gsweep.py): Go functions preempted at every boundary inside their own
process, with package init done, the runtime's own handler deciding and the results compared with a native
run of the same binary."""
import io
import json
import subprocess

import pytest

from emu import cli
from emu.front import gobuild

KINDS = "tests/data/go/kinds"
GO = "tests/go"


def run(*args):
    out = io.StringIO()
    code = cli.main(list(args), out)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def native():
    """The kinds program run natively: {function: the line it printed}."""
    binary = gobuild.build(KINDS).binary
    out = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    return out, dict(line.split(" ", 1) for line in out.splitlines())


# Each kind the synthetic world could not run: package init (initTable, sha256's tables), errors.Is through
# fmt.Errorf's %w, fmt.Sprintf (sync.Pool, GOMAXPROCS), recover, a channel to another goroutine, `go`
# statements, time.Now. --max-points keeps each run short; the first and last boundaries are always in.
@pytest.mark.parametrize("func", ["initTable", "wrapped", "sprintf", "recovered", "channel", "spawn", "clock",
                                  "digest"])
def test_ordinary_functions_hold_at_every_point_and_agree_with_native(func, native):
    out, lines = native
    code, text = run("sweep", KINDS, "--func", func, "--max-points", "120", "--json")
    assert code == 0, text
    j = json.loads(text)
    assert j["engine"] == "real-program" and j["ok"] and j["violation_count"] == 0
    assert j["points_tried"] == min(120, j["boundaries"])
    assert j["points_reached"] >= j["points_tried"] // 2      # a channel's partner may let F return sooner
    assert j["injected"] > 0
    assert j["reference"]["stdout"] == out and j["reference"]["exit_code"] == 0
    assert all(t["ok"] for t in j["to_exit"]) and len(j["to_exit"]) == 3
    shown = ", ".join(j["results"].values())
    native_value = lines[func]
    assert native_value in shown or native_value.lower() == shown, (shown, native_value)


def test_every_boundary_of_a_loop_entered_with_registers_after_init():
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=40", "--json")
    j = json.loads(text)
    assert code == 0 and j["ok"], text
    assert j["entered"] == "entered" and j["points_tried"] == j["boundaries"] == j["injected"] == 407
    s = 0
    for i in range(40):
        s = (s + (i * i ^ (s >> 3))) & (1 << 64) - 1
    assert j["results"] == {"~r0": str(s)}


def test_a_stub_without_popfq_is_caught_in_the_real_program():
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=30", "--stub", "tests/data/stub_no_pushfq.s")
    assert code == 1
    assert "FAIL" in text and "flags RFLAGS:" in text
    assert "(tests/data/go/kinds/main.go:" in text           # the point is named by its Go line
    assert "loaded over runtime.asyncPreempt" in text


def test_a_stub_that_loses_a_register_is_caught(tmp_stub):
    def edit(src):
        return src.replace("    mov rbx, qword ptr [rsp + 24]", "    mov rbx, qword ptr [rsp + 16]")
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", "--stub", str(tmp_stub(edit)))
    assert code == 1 and "register RBX:" in text


@pytest.mark.parametrize("args, message", [
    (["--func", "neverCalled"], "main.neverCalled was never called: the program ran"),
    (["--func", "spin", "--call", "2"], "main.spin was called 1 time(s), not 2"),
    (["--func", "nosuch"], "--func 'nosuch': no such function"),
    (["--func", "spin", "--budget", "500"], "did not return within --budget 500"),
    (["--func", "spin", "--call", "0"], "--call 0: calls are counted from 1"),
    (["--func", "spin", "--reg", "R12=1"], "--reg R12: Go input takes its arguments"),
])
def test_bad_input_exits_2_with_what_happened(args, message, capsys):
    code = cli.main(["sweep", KINDS, *args], io.StringIO())
    assert code == 2
    assert message in capsys.readouterr().err


def test_an_assembly_function_is_refused_at_every_point_and_that_tested_nothing():
    """Issue #46 item 5: every point refused (asm-func) is no violation, and no OK either: exit 1, said so."""
    code, text = run("sweep", f"{GO}/asmpkg", "--func", "sumAsm", "--json")
    j = json.loads(text)
    assert code == 1 and not j["ok"] and j["violation_count"] == 0, text
    assert j["injected"] == 0 and j["refused"] == {"asm-func": j["points_tried"]} and j["points_tried"] > 10
    code, text = run("sweep", f"{GO}/asmpkg", "--func", "sumAsm")
    assert code == 1 and "FAIL: nothing was injected" in text and "asm-func" in text


def test_program_arguments_and_environment_reach_the_program():
    code, text = run("sweep", KINDS, "--func", "initTable", "--max-points", "5", "--to-exit", "0", "--json",
                     "--", "a", "b")
    j = json.loads(text)
    assert code == 0 and j["to_exit"] == []
    assert "initTable" in j["reference"]["stdout"] and j["results"]["~r0"] != "368"   # n = 12, not 10


def _stable(j):
    """A sweep's JSON without its timing."""
    return {k: v for k, v in j.items() if k not in ("cpu_seconds", "us_per_point")}


def test_shards_give_the_same_report_wherever_they_run_and_resume_from_a_results_file(tmp_path):
    args = ["sweep", KINDS, "--func", "spin", "--reg", "RAX=450", "--json", "--to-exit", "1"]
    one = json.loads(run(*args, "--jobs", "1")[1])
    assert one["shards"] == 3 and one["ok"] and one["points_tried"] == one["boundaries"] == 4507
    res = tmp_path / "r.jsonl"
    two = json.loads(run(*args, "--jobs", "2", "--results", str(res))[1])
    assert _stable(two) == _stable(one)
    assert len(res.read_text().splitlines()) == 3
    again = json.loads(run(*args, "--jobs", "2", "--results", str(res))[1])    # every shard from the file
    assert _stable(again) == _stable(one)


def test_the_python_api_sweeps_go_input_in_its_real_program():
    import emu
    rep = emu.sweep(KINDS, "sprintf", max_points=60, to_exit=1)
    assert type(rep).__name__ == "RealSweepReport" and rep.ok and rep.violation_count == 0
    assert rep.to_json()["results"] == {"~r0": "string 'n=10 hex=9f6 q=\"abab\"'"}
    assert rep.summary().startswith("OK")
    with pytest.raises(emu.EmuError, match="call must be a positive integer"):
        emu.sweep(KINDS, "sprintf", call=0)
    off = emu.sweep(KINDS, "spin", registers={"RAX": 5}, async_preemption=False, to_exit=0)
    assert not off.ok and off.result.vacuous and off.violation_count == 0    # nothing injected: not OK
    assert off.result.injected == 0 and off.result.refused == {"asyncpreemptoff": 57}


def test_junit_and_sarif_name_the_violation_of_a_go_sweep(tmp_path):
    import junitparser
    xml, sarif = tmp_path / "j.xml", tmp_path / "s.sarif"
    code, _ = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=20", "--stub", "tests/data/stub_no_pushfq.s",
                  "--junit-xml", str(xml), "--sarif", str(sarif), "--to-exit", "0")
    assert code == 1
    case = next(iter(junitparser.JUnitXml.fromfile(str(xml))))
    assert "flags RFLAGS" in next(iter(case)).result[0].message
    log = json.loads(sarif.read_text())
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"flags"}


def test_the_gc_sweeps_step_reads_as_an_english_ordinal():
    """"every 71st boundary", not "every 71th" (seen in a --gc sweep's report)."""
    from emu.output.realsweep_report import _ordinal
    assert [_ordinal(n) for n in (2, 3, 4, 11, 12, 13, 21, 22, 71, 111, 1001)] == [
        "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "71st", "111th", "1,001st"]
