"""Versioned JSON: every --json object carries "schema": "preemu/<command>/<version>" and exactly the
keys documented for that version, in docs/reference/json.md and frozen here. Changing the keys of a
command means a new version (a new entry below) and a note on that page."""
from __future__ import annotations

import io
import json
import re

import pytest

from conftest import ASM, ROOT
from emu import cli
from emu.output import report

#: Frozen: edit only by adding a new version.
KEYS = {
    "preemu/sweep/1": "tool version schema command file func layout runtime seed boundaries points_tried injected refused "
                      "forced violation_count violations violation_groups points_per_second async_preempt_stack "
                      "uncovered_pcs final_registers points ok gc",
    "preemu/run-schedule/1": "tool version schema command kind scenario file seed layout runtime gomaxprocs async_preemption "
                             "ns_per_insn duration_ms wake_latency_ms starved starved_goroutines preemptions signals "
                             "goroutines gc checks ok",
    "preemu/preempt/1": "tool version schema command file func at async_preemption outcome preempted_at "
                        "latency_instructions signals events violations ok",
    "preemu/check-stub/1": "tool version schema command stub layout stub_max_sp_delta async_preempt_stack corpus ok",
    "preemu/check-stub-mutants/1": "tool version schema command layout mutants score total ok",
    "preemu/disasm/1": "tool version schema command file functions",
    "preemu/exec/3": "tool version schema command binary argv env seed exit_code stdout stderr starved stop_reason "
                     "error virtual_ns idle_ns instructions ns_per_insn quantum threads wall_s syscalls signals "
                     "preemptions violations oracle go_version unmodelled processes ok",
    "preemu/explain/3": "tool version schema command file func layout at pc verdict reason gc steps code stack_top "
                        "stack_labels boundaries unit sigstack_top sigstack_labels ok",
    "preemu/exec-schedules/1": "tool version schema command binary argv schedules failing ok",
    "preemu/explain-schedule/1": "tool version schema command binary test argv seed depth k steps instructions "
                                 "virtual_ns threads decisions chapters segments failure replay ok",
}
KEYS["preemu/run/1"] = KEYS["preemu/sweep/1"] + " scenario checks"
VIOLATION_KEYS = "kind what expected actual boundary pc insn where detail".split()

SCHED = """name = "tiny"
asm = "{asm}"
duration_ms = 0.2
[[goroutines]]
entry = "spin"
"""


def _documented_keys() -> dict[str, list[str]]:
    text = (ROOT / "docs" / "reference" / "json.md").read_text()
    out = {}
    for m in re.finditer(r"^- `(preemu/[\w-]+/\d+)`: (.*)$", text, re.M):
        keys = m.group(2)
        base = re.match(r"the keys of `(preemu/[\w-]+/\d+)`, then (.*)", keys)
        out[m.group(1)] = (out[base.group(1)] + base.group(2).split(", ")) if base else keys.split(", ")
    return out


def _json(*argv) -> dict:
    out = io.StringIO()
    assert cli.main(list(map(str, argv)), out) in (0, 1)
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("json")
    sched = tmp / "tiny.toml"
    sched.write_text(SCHED.format(asm=ASM / "starvation.s"))
    docs = [
        _json("sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RCX=3", "--json"),
        _json("run", ROOT / "scenarios" / "sum_loop.toml", "--max-points", 20, "--json"),
        _json("run", sched, "--json"),
        _json("preempt", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--at", "square_add",
              "--json"),
    ]
    from emu import api
    docs.append(api.check_stub(ASM / "preempt_amd64_go114.s", loops=["sum_loop"], max_points=5).to_json())
    docs.append(report.mutants_json([], "go1.14"))
    docs.append(_json("disasm", ASM / "sum_loop.s", "--json"))
    docs.append(_json("explain", ROOT / "scenarios" / "sum_loop.toml", "--at", 10, "--json"))
    docs.append(_json("exec", ROOT / "scenarios" / "go" / "hello", "--json"))
    docs.append(_json("exec", ROOT / "scenarios" / "go" / "hello", "--schedules", 1, "--json"))
    docs.append(_json("explain", ROOT / "scenarios" / "go" / "hello", "--schedule", 1, "--json"))
    return docs


def test_every_command_is_versioned_and_keeps_its_keys(outputs):
    seen = set()
    for doc in outputs:
        schema = doc["schema"]
        assert re.fullmatch(r"preemu/[a-z-]+/\d+", schema)
        assert list(doc) == KEYS[schema].split(), f"{schema}: keys changed; add a new version"
        seen.add(schema)
    assert seen == set(KEYS) == set(report.SCHEMAS.values())


def test_the_docs_document_the_keys():
    assert {k: v for k, v in _documented_keys().items()} == {k: v.split() for k, v in KEYS.items()}


def test_violation_objects_keep_their_keys():
    doc = _json("sweep", ASM / "adc_chain.s", "--func", "adc_chain", "--reg", "RCX=8", "--stub",
                ROOT / "tests" / "data" / "stub_no_pushfq.s", "--max-points", 3, "--json")
    assert doc["violations"] and all(list(v) == VIOLATION_KEYS for v in doc["violations"])


def test_every_json_command_has_a_schema():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        if any(a.dest == "json" for a in p._actions):
            assert name in report.SCHEMAS, f"`preemu {name} --json` has no schema id in report.SCHEMAS"
