"""Sweeps over the corpus verify clean, and broken stubs are caught with the right diagnosis."""
import re

import pytest
from conftest import ASM, DATA, sweep_file, sweep_text, world_for

from emu.drive import loader, sweeper as sweep
from emu.core import regs

CORPUS = [("sum_loop.s", "sum_loop", {"RCX": 300}), ("adc_chain.s", "adc_chain", {"RCX": 32}),
          ("xmm_loop.s", "xmm_loop", {"RCX": 40}), ("rep_copy.s", "rep_copy", {"RCX": 64}),
          ("rep_copy.s", "rep_stosq_down", {"RCX": 16}), ("call_loop.s", "call_loop", {"RCX": 10})]


@pytest.mark.parametrize("layout", ["go1.14", "go1.27"])
@pytest.mark.parametrize("file,entry,regs_", CORPUS, ids=[c[1] for c in CORPUS])
def test_corpus_sweeps_clean_and_accounts_for_every_boundary(file, entry, regs_, layout):
    res = sweep_file(ASM / file, entry, layout, **regs_)
    assert res.violation_count == 0, [v.describe() for v in res.violations[:3]]
    assert res.injected + sum(res.refused.values()) == res.boundaries == res.points
    assert set(res.refused) <= {"unsafe-point"}
    from emu.drive import loader
    prog = loader.load_program(ASM / file)
    # only the morestack block is never reached: no stack growth or cooperative preemption happens
    assert [prog.insn_at(pc).line for pc in res.uncovered_pcs] == ([] if entry != "call_loop" else [41, 42, 44, 45])


def test_rep_boundaries_are_single_iterations_and_each_is_injected():
    res = sweep_file(ASM / "rep_copy.s", "rep_copy", RCX=64)
    rep_pcs = [pc for pc, st in res.per_pc.items() if pc in {i.addr for i in
               __import__("emu.drive.loader", fromlist=["x"]).load_program(ASM / "rep_copy.s").iter_insns() if i.is_rep}]
    hits = sorted(sum(res.per_pc[pc].verdicts.values()) for pc in rep_pcs)
    assert hits == [9, 65, 65]          # 8 STOSQ + 64 MOVSB + 64 MOVSB iterations, plus each final RCX=0 check


def test_call_loop_refuses_exactly_the_prologue_branch():
    res = sweep_file(ASM / "call_loop.s", "call_loop", RCX=10)
    refused_pcs = [pc for pc, st in res.per_pc.items() if "unsafe-point" in st.verdicts]
    from emu.drive import loader
    prog = loader.load_program(ASM / "call_loop.s")
    assert [prog.insn_at(pc).mnemonic for pc in refused_pcs] == ["jbe"]
    assert res.refused["unsafe-point"] == 10


def test_stub_without_pushfq_fails_naming_rflags():
    res = sweep_file(ASM / "adc_chain.s", "adc_chain", stub=DATA / "stub_no_pushfq.s", max_points=300, RCX=32)
    assert not res.ok
    assert {(v.kind, v.what) for v in res.violations} == {("flags", "RFLAGS")}
    v = res.violations[0]
    assert (v.boundary, v.insn, v.pc) == (0, "mov r8, rcx", 0x400000) and v.where.endswith("adc_chain.s:10")
    assert v.detail.startswith("flags changed: ") and int(v.expected.split()[0], 16) != int(v.actual.split()[0], 16)


@pytest.mark.parametrize("reg", ["RAX", "R12", "R14", "R15", "XMM0", "XMM7", "XMM15"])
def test_stub_that_forgets_one_register_is_caught_naming_it(tmp_stub, reg):
    r = regs.lookup(reg)
    path = tmp_stub(lambda s: re.sub(rf"^ +movu?p?s? ?{r.asm}, .*\n|^ +mov {r.asm}, .*\n", "", s, flags=re.M))
    res = sweep_file(ASM / "xmm_loop.s", "xmm_loop", stub=path, max_points=200, RCX=10)
    assert {v.what for v in res.violations if v.kind == "register"} == {reg}


def test_go127_stub_that_forgets_an_xmm_restore_is_caught(tmp_stub):
    path = tmp_stub(lambda s: re.sub(r"^ +movups xmm9, .*\n", "", s, flags=re.M), layout="go1.27")
    res = sweep_file(ASM / "xmm_loop.s", "xmm_loop", "go1.27", stub=path, max_points=200, RCX=10)
    assert {v.what for v in res.violations} == {"XMM9"}


def test_stub_writing_above_the_resume_slot_is_a_memory_violation(tmp_stub):
    path = tmp_stub(lambda s: s.replace("    pop rbp", "    mov qword ptr [rsp + 16], rbp\n    pop rbp", 1))
    res = sweep_file(ASM / "call_loop.s", "call_loop", stub=path, max_points=200, RCX=5)
    assert res.violations and all(v.kind == "memory" for v in res.violations)


def test_stub_that_returns_with_the_wrong_frame_is_a_resume_violation(tmp_stub):
    path = tmp_stub(lambda s: s.replace("    add rsp, 368", "    add rsp, 360", 1))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=path, max_points=50, RCX=5)
    assert res.violations and res.violations[0].kind == "resume" and res.violations[0].what == "RSP"


def test_a_faulting_stub_is_a_reported_violation_not_a_crash(tmp_stub):
    path = tmp_stub(lambda s: s.replace("    push rbp", "    mov rax, qword ptr [0]\n    push rbp", 1))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=path, max_points=20, RCX=3)
    assert res.violation_count == 20 and {v.kind for v in res.violations} == {"stub-fault"}
    assert "UC_ERR_READ_UNMAPPED" in res.violations[0].actual


def test_a_stub_that_never_returns_hits_the_budget(tmp_stub):
    path = tmp_stub(lambda s: s.replace("    ret", ".spin:\n    jmp .spin", 1))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=path, max_points=5, RCX=3)
    assert {v.kind for v in res.violations} == {"stub-budget"}


def test_data_kept_below_sp_is_clobbered_and_the_final_state_check_finds_the_injection():
    # Go code never keeps data below SP: the pushed resume PC lands there. Here it does.
    src = "f:\n mov qword ptr [rsp - 8], rcx\n nop\n nop\n mov rax, qword ptr [rsp - 8]\n ret\n"
    res = sweep_text(src, "f", RCX=0x1234)
    assert not res.ok
    finals = [v for v in res.violations if v.kind == "final-state"]
    assert finals and finals[0].what == "RAX"
    assert "first diverging injection: boundary 1" in finals[0].detail


def test_max_points_caps_the_sweep_but_covers_every_static_pc_even_ones_run_once():
    # adc_chain's hand-over between its two loops runs once, in the middle of the run
    res = sweep_file(ASM / "adc_chain.s", "adc_chain", max_points=100, RCX=64)
    assert res.points == 100 < res.boundaries
    assert not res.uncovered_pcs and res.ok


def test_first_boundaries_counts_rep_iterations_exactly():
    from emu.drive import loader
    prog = loader.load_program(ASM / "rep_copy.s")
    w = loader.build_world(prog, "rep_copy", registers={"RCX": 64})
    ref = sweep.run_reference(w)
    first = sweep.first_boundaries(w, ref.boundaries)
    insns = prog.get_func("rep_copy").insns
    assert first[insns[0].addr] == 0 and first[insns[1].addr] == 1
    stosq = next(i for i in insns if i.is_rep)
    after = insns[insns.index(stosq) + 1]
    assert first[after.addr] == first[stosq.addr] + 9     # 8 iterations + the final RCX=0 check
    # and a real count= run agrees with every first-seen boundary
    for pc, k in list(first.items())[::7]:
        w.reset()
        w.machine.run(w.machine.pc, k) if k else None
        assert w.machine.pc == pc


def test_select_points_is_sorted_unique_and_capped():
    pts = sweep.select_points(10_000, 1000)
    assert pts == sorted(set(pts)) and len(pts) == 1000 and pts[0] == 0 and pts[-1] == 9999


def test_same_seed_same_result():
    a = sweep_file(ASM / "xmm_loop.s", "xmm_loop", RCX=5)
    b = sweep_file(ASM / "xmm_loop.s", "xmm_loop", RCX=5)
    assert a.reference.final == b.reference.final and a.injected == b.injected


# --- the counted stub run (Sweeper._run_stub): any stub ends where the hooked run would end ----------
def _hooked_only(monkeypatch):
    """Make every stub run the plain hooked one: m.run(begin, budget) with the INT3 and RET hooks."""
    def hooked(self, begin, rsp):
        self.m.set_rsp(rsp)
        return self.m.run(begin, self.stub_budget), None
    monkeypatch.setattr(sweep.Sweeper, "_run_stub", hooked)


def _odd_resume_pc(extra: str, after_the_call: bool = False):
    """A stub edit: at points whose resume PC is odd, run `extra` just before (or just after) the CALL
    of asyncPreempt2. Both places keep the flags they test: the stub saved RFLAGS before and restores it
    after."""
    branch = f"    test byte ptr [rbp + 8], 1\n    jz .Leven\n{extra}\n.Leven:"
    call = "    call asyncPreempt2"
    return lambda s: s.replace(call, f"{call}\n{branch}" if after_the_call else f"{branch}\n{call}", 1)


@pytest.mark.parametrize("after_the_call", [False, True], ids=["before-asyncPreempt2", "after-asyncPreempt2"])
def test_a_stub_taking_a_longer_path_at_some_points_is_still_verified_exactly(tmp_stub, monkeypatch, after_the_call):
    """A correct stub whose path depends on the point (four NOPs at odd resume PCs, before or after the
    CALL): the learned counts stop short there, the run goes on with the hooks, and the sweep is as
    clean as the hooked one."""
    stub = tmp_stub(_odd_resume_pc("    nop\n    nop\n    nop\n    nop", after_the_call))
    prog = loader.load_program(ASM / "sum_loop.s")
    w = world_for(prog, "sum_loop", stub=stub, RCX=20)
    ref = sweep.run_reference(w, 10**6)
    sw = sweep.Sweeper(w)
    injected, refused, violations, final = sw.run_chain(range(ref.boundaries), ref)
    assert injected == ref.boundaries and violations.count == 0 and final is not None
    odd = sum(1 for pc in (i.addr for i in prog.get_func("sum_loop").insns) if pc & 1)
    assert odd and sw.stub_fallbacks > 0 and w.machine.stub_counts          # counted path kept, some points fell back
    counted = sweep.sweep(world_for(prog, "sum_loop", stub=stub, RCX=20), "sum_loop")
    _hooked_only(monkeypatch)
    hooked = sweep.sweep(world_for(prog, "sum_loop", stub=stub, RCX=20), "sum_loop")
    assert counted.ok and hooked.ok and counted.injected == hooked.injected


def test_a_stub_skipping_asyncpreempt2_at_some_points_gets_the_hooked_runs_verdicts(tmp_stub, monkeypatch):
    """A broken stub that jumps over its CALL at odd resume PCs: those points must be named
    no-asyncPreempt2 exactly as when every stub run goes through the hooks."""
    stub = tmp_stub(lambda s: s.replace("    call asyncPreempt2",
                                        "    test byte ptr [rbp + 8], 1\n    jnz .Lskip\n    call asyncPreempt2\n.Lskip:",
                                        1))
    prog = loader.load_program(ASM / "sum_loop.s")
    counted = sweep.sweep(world_for(prog, "sum_loop", stub=stub, RCX=20), "sum_loop")
    _hooked_only(monkeypatch)
    hooked = sweep.sweep(world_for(prog, "sum_loop", stub=stub, RCX=20), "sum_loop")
    key = lambda res: sorted((v.kind, v.what, v.boundary, v.pc) for v in res.violations)   # noqa: E731
    assert {v.kind for v in counted.violations} == {"no-asyncPreempt2"}
    assert key(counted) == key(hooked) and counted.violation_count == hooked.violation_count > 0
