"""check-stub: the generated stubs pass the corpus in their own layout, broken stubs fail with the
right diagnosis, and every generated mutant is caught and named (mutation score 100%)."""
import io
import json

import pytest
from conftest import DATA

from emu.drive import checkstub
from emu import cli
from emu.core import layout, stubgen
from emu.check import mutants


def _cli(*argv):
    out = io.StringIO()
    return cli.main(list(map(str, argv)), out), out.getvalue()


@pytest.mark.parametrize("lay", ["go1.14", "go1.27"])
def test_generated_stub_passes_the_whole_corpus_with_migration(lay):
    rep = checkstub.check(stubgen.stub_path(lay), lay, max_points=600)
    assert rep.ok, [(r.scenario, r.violations[:1]) for r in rep.results if r.violations]
    assert {r.scenario for r in rep.results} >= {"adc_chain", "xmm_loop", "rep_copy", "call_loop", "r14_scratch"}


@pytest.mark.parametrize("lay", ["go1.14", "go1.27"])
def test_mutation_score_is_100_percent_with_the_right_diagnosis(lay):
    results = checkstub.run_mutants(lay)
    missed = [(r.mutant.name, r.named) for r in results if not (r.caught and r.diagnosed)]
    assert not missed
    assert len(results) == len(mutants.generate(layout.get_layout(lay))) >= 37


def test_one_mutant_per_register_go_saves():
    # written out from runtime/mkpreempt.go (amd64: every GPR but SP, BP; X0-X15), not from our table
    saved = ["RAX", "RCX", "RDX", "RBX", "RSI", "RDI", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15"] + \
        [f"XMM{i}" for i in range(16)]
    names = {m.name for m in mutants.generate(layout.GO114)}
    assert {f"drop-save-{r}" for r in saved} <= names


def test_check_stub_cli_passes_fails_and_rejects():
    code, out = _cli("check-stub", stubgen.stub_path("go1.14"), "--max-points", "200")
    assert code == 0 and "PASS" in out
    code, out = _cli("check-stub", DATA / "stub_no_pushfq.s", "--max-points", "100", "--json")
    d = json.loads(out)
    assert code == 1 and not d["ok"]
    assert {v["what"] for c in d["corpus"] for v in c["violations"]} == {"RFLAGS"}
    code, out = _cli("check-stub", DATA / "bad_syntax.s")
    assert code == 2


def test_a_stub_that_uses_more_stack_than_it_declares_breaks_the_headroom_canary(tmp_path):
    src = stubgen.generate(layout.GO114).replace("    call asyncPreempt2",
                                                 "    mov qword ptr [rsp - 200], rax\n    call asyncPreempt2")
    p = tmp_path / "greedy.s"
    p.write_text(src)
    rep = checkstub.check(p, "go1.14", 100, ("sum_loop",))
    kinds = {v.kind for r in rep.results for v in r.violations}
    assert kinds == {"headroom"}


def test_check_stub_mutants_cli_prints_the_score():
    code, out = _cli("check-stub", "--mutants", "--layout", "go1.27")
    assert code == 0 and "mutation score: 39/39 = 100%" in out


def test_a_stub_every_point_refuses_tested_nothing_and_does_not_pass(tmp_path):
    """Issue #46 item 5: a 1 MiB frame exceeds the headroom the runtime checks (asyncPreemptStack), so the
    runtime refuses every point: 0 injected is FAIL with the reason, never PASS."""
    big = tmp_path / "bigframe.s"
    big.write_text(stubgen.stub_path("go1.14").read_text().replace("sub rsp, 368 ", "sub rsp, 1048576 ")
                   .replace("add rsp, 368 ", "add rsp, 1048576 "))
    rep = checkstub.check(big, "go1.14", 100, ("sum_loop", "call_loop"))
    assert sum(r.injected for r in rep.results) == 0 and rep.vacuous and not rep.ok
    code, out = _cli("check-stub", big, "--max-points", "100")
    assert code == 1
    assert "FAIL: nothing was tested" in out and "stack-headroom" in out
