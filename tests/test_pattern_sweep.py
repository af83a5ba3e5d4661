"""Many functions in one run (issue #41 item 2): `--func PATTERN` sweeps every matching function of the
program's own package at its first call, with one table in text and JSON, a JUnit case and SARIF results per
function, and --jobs/--results as one sweep has them."""
import json
import xml.etree.ElementTree as ET

from conftest import cli_run
from emu.drive import manysweep

PKG = "tests/go/ringmod/ring"


def run(*args):
    code, out, err = cli_run(*args)
    return code, out + err


def test_every_method_the_test_calls_is_swept_and_tabled(tmp_path):
    junit, sarif = tmp_path / "j.xml", tmp_path / "s.sarif"
    code, text = run("sweep", PKG, "--test", "TestSum", "--func", "ring.*", "--max-points", "80", "--to-exit", "0",
                     "--json", "--junit-xml", str(junit), "--sarif", str(sarif))
    j = json.loads(text)
    assert code == 0 and j["ok"] and j["schema"] == "preemu/sweep-many/1"
    status = {f["func"].rsplit("/", 1)[-1]: f["status"] for f in j["functions"]}
    for swept in ("ring.(*Ring).Push", "ring.(*Ring).Sum", "ring.(*Ring).Scale.func1", "ring.Max[go.shape.int]",
                  "ring.TestSum"):
        assert status[swept] == "swept", (swept, status)
    assert status["ring.BenchmarkSum"] == "not called" and status["ring.ExampleMax"] == "not called"
    assert not any(".dict." in f for f in status)                     # dictionaries are data, not functions
    one = next(f["sweep"] for f in j["functions"] if f["func"].endswith("(*Ring).Sum"))
    assert one["schema"] == "preemu/sweep-real/1" and one["injected"] > 0 and one["test"]["name"] == "TestSum"
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert len(cases) == j["swept"] and not ET.parse(junit).getroot().findall(".//failure")
    assert json.loads(sarif.read_text())["runs"][0]["results"] == []


def test_a_broken_stub_fails_the_functions_it_breaks_by_name(tmp_path):
    junit = tmp_path / "j.xml"
    code, text = run("sweep", PKG, "--test", "TestSum", "--func", "ring.(*Ring).S*", "--max-points", "60",
                     "--to-exit", "0", "--stub", "tests/data/stub_no_pushfq.s", "--junit-xml", str(junit))
    assert code == 1
    assert "ring.(*Ring).Sum" in text and "FAIL: " in text and "--- example.com/ringmod/ring.(*Ring).Sum" in text
    failed = [c.get("name") for c in ET.parse(junit).getroot().findall(".//testcase") if c.find("failure") is not None]
    assert "example.com/ringmod/ring.(*Ring).Sum" in failed


def test_a_pattern_of_a_program_and_shards_resumed_from_a_results_file(tmp_path):
    res = tmp_path / "r.jsonl"
    args = ["sweep", "tests/data/go/kinds", "--func", "sp*", "--max-points", "40", "--to-exit", "0", "--json"]
    first = json.loads(run(*args, "--jobs", "2", "--results", str(res))[1])
    again = json.loads(run(*args, "--jobs", "2", "--results", str(res))[1])

    def stable(j):
        return [(f["func"], f["status"], f.get("sweep", {}).get("injected"), f.get("sweep", {}).get("ok"))
                for f in j["functions"]]
    assert first["ok"] and stable(first) == stable(again)
    assert [f["func"] for f in first["functions"]] == ["main.spawn", "main.spawn.func1", "main.spin", "main.sprintf"]
    assert len(res.read_text().splitlines()) == 4                      # a shard a function, each resumed


def test_no_match_is_bad_input():
    code, text = run("sweep", "tests/data/go/kinds", "--func", "nothing*")
    assert code == 2 and "matches no function of main" in text


def test_a_pointer_receiver_is_no_wildcard():
    assert not manysweep.is_pattern("ring.(*Ring).Sum") and manysweep.is_pattern("ring.(*Ring).*")
    assert manysweep.is_pattern("ring.*") and manysweep.is_pattern("Max?") and not manysweep.is_pattern("Max[int]")


def test_what_a_pattern_matches():
    syms = {"example.com/r.(*R).Push": (0x10, 5), "example.com/r.(*R).Push.abi0": (0x20, 5),
            "example.com/r.Max[go.shape.int]": (0x30, 5), "example.com/r..dict.Max[int]": (0x900, 8),
            "example.com/r.TestPush": (0x40, 5), "example.com/r.(*R).Push-range1": (0x50, 5),
            "strings.Index": (0x60, 5), "main.f": (0x70, 5)}
    code = lambda a: a < 0x100                                          # noqa: E731
    pk = ("example.com/r", "example.com/r_test")
    assert manysweep.matching(syms, "r.*", pk, code) == ["example.com/r.(*R).Push", "example.com/r.Max[go.shape.int]",
                                                         "example.com/r.TestPush"]
    assert manysweep.matching(syms, "(*R).*", pk, code) == ["example.com/r.(*R).Push"]
    assert manysweep.matching(syms, "Max*", pk, code) == ["example.com/r.Max[go.shape.int]"]
    assert manysweep.matching(syms, "strings.*", pk, code) == ["strings.Index"]     # a package named reaches it
    assert manysweep.matching(syms, "*.Index", pk, code) == []          # but a wildcard package stays at home
    assert manysweep.matching(syms, "*/r.Test*", pk, code) == ["example.com/r.TestPush"]    # a '/': every package
    assert manysweep.matching(syms, "m*.f", pk, code) == []
    assert manysweep.matching(syms, "main.f", ("main",), code) == ["main.f"]


def test_one_start_up_gives_each_function_the_snapshot_of_its_own(monkeypatch):
    """The shared start-up (manysweep._shared: stopped at each first call, swept, put back, run on) gives every
    function what a start-up of its own gives: the same boundaries, injections, refusals and results."""
    import emu

    def table(rep):
        return [(f.func, f.status) + ((f.report.result.boundaries, f.report.result.injected,
                                       dict(f.report.result.refused), f.report.result.results, f.report.ok)
                                      if f.report else ()) for f in rep.result.functions]
    shared = emu.sweep("tests/data/go/kinds", "s*", max_points=60, to_exit=1)
    orig = manysweep.sweep_all
    monkeypatch.setattr(manysweep, "sweep_all", lambda *a, **k: orig(*a[:6], spec=None))
    alone = emu.sweep("tests/data/go/kinds", "s*", max_points=60, to_exit=1)
    assert table(shared) == table(alone) and len(shared.reports) == 4


def test_a_pattern_whose_functions_were_never_called_tested_nothing_and_fails():
    """Issue #46 item 5: `--func 'build*' --call 2` matched buildList, which main calls once: 0 swept was OK."""
    code, out, _ = cli_run("sweep", "tests/go/corpus", "--func", "build*", "--call", "2")
    assert code == 1
    assert "FAIL: nothing was tested" in out and "not called" in out
