"""Tests that kill the mutations of emu/ that once survived the whole suite (issue #13 item 9).

Each test feeds the tool one deliberately broken input (a stub, a program, a mutant list) and
requires the specific failure; `bench/mutations.py` re-applies the mutations and checks that each
makes this file fail.
"""
from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ASM, ROOT, FakeSigContext, assemble, sweep_file, world_for

from emu.drive import checkstub, loader, sweeper as sweep
from emu.core import layout, stubgen
from emu.check import mutants
from emu.output import report
from emu.model import sched
from emu.core import gostructs as gs
from emu.core.structref import read_field
from emu.check.inject import do_sig_preempt
from emu.check.safepoint import SchedState


def _kinds(res):
    return {(v.kind, v.what) for v in res.violations}


def test_a_stub_restoring_only_the_low_32_bits_of_rbx_fails_at_every_point(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("mov rbx, qword ptr [rsp + 24]", "mov ebx, dword ptr [rsp + 24]"))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=stub, RCX=20)
    per_point = [v for v in res.violations if (v.kind, v.what) == ("register", "RBX")]
    assert res.injected > 0 and len(per_point) == res.injected
    v = per_point[0]
    assert int(v.expected, 16) >> 32 and int(v.actual, 16) >> 32 == 0


def test_a_stub_overwriting_the_resume_pc_is_a_resume_violation_at_every_point(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("    popfq", "    popfq\n    mov qword ptr [rbp + 8], rbp"))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=stub, RCX=20)
    assert _kinds(res) == {("resume", "RIP")}
    assert res.violation_count == res.injected > 0


def test_a_stub_writing_into_a_global_fails_the_final_memory_check(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("    call asyncPreempt2",
                                               "    mov dword ptr [0x700000], 0x5a5a5a5a\n    call asyncPreempt2"))
    prog = assemble(";@data g 64\nf:\n    xor eax, eax\n.l:\n    inc rax\n    cmp rax, rcx\n    jb .l\n    ret\n")
    w = world_for(prog, "f", stub=stub, RCX=10)
    res = sweep.sweep(w, "f")
    assert ("final-state", "0x700000") in _kinds(res)
    assert {v.kind for v in res.violations} == {"final-state"}


def test_a_stub_restoring_only_the_low_half_of_xmm3_fails_at_every_point(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("movups xmm3, xmmword ptr [rsp + 160]", "movlpd xmm3, qword ptr [rsp + 160]"))
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=stub, RCX=20)
    assert _kinds(res) == {("register", "XMM3")}
    assert res.violation_count == res.injected > 0


def _lose_df(s: str) -> str:
    # Restore every flag from the saved RFLAGS except DF, which is taken from the state asyncPreempt2 left.
    return s.replace("    add rsp, 368                                ; ADJSP $-368, before POPFQ\n    popfq", """\
    add rsp, 368
    pushfq
    and qword ptr [rsp], 0x400
    and qword ptr [rsp + 8], -0x401
    push rax
    mov rax, qword ptr [rsp + 8]
    or qword ptr [rsp + 16], rax
    pop rax
    add rsp, 8
    popfq""")


def test_a_stub_that_loses_only_df_is_caught_because_the_clobber_flips_df(tmp_stub):
    stub = tmp_stub(_lose_df)
    res = sweep_file(ASM / "sum_loop.s", "sum_loop", stub=stub, RCX=20)
    assert _kinds(res) == {("flags", "RFLAGS")}
    assert res.violation_count == res.injected > 0
    assert all(v.detail == "flags changed: DF" for v in res.violations)


def test_an_accepted_nested_signal_is_reported_as_such(tmp_path):
    # A stub file is always runtime assembly (issue 12), so a second SIGURG inside it is refused. If an
    # oracle ever accepted one -- here the loaded stub is turned into user Go code behind the loader's
    # back -- it must be reported as a nested injection (not as some later fault).
    from emu.model.gmp import World
    stub = loader.load_stub("go1.14")
    stub = type(stub)([dataclasses.replace(f, asm=False, goname="main." + f.name) for f in stub.funcs], stub.data,
                      stub.code)
    prog = loader.load_program(ASM / "sum_loop.s")
    w = World(prog, stub, layout.get_layout("go1.14"), "sum_loop", 1, {"RCX": 5})
    res = sweep.sweep(w, "sum_loop", nested_signals=True)
    assert {v.kind for v in res.violations} == {"nested-injection"}
    assert res.violation_count == res.injected > 0


@pytest.mark.parametrize("asyncp", [True, False])
def test_asyncpreemptoff_never_acknowledges_and_on_always_does(asyncp):
    prog = loader.load_program(ASM / "sum_loop.s")
    w = world_for(prog, "sum_loop", "go1.27", RCX=10)   # Go 1.14 still ran doSigPreempt (tests/test_fidelity.py)
    res = sweep.sweep(w, "sum_loop", async_preemption=asyncp)
    gens = [read_field(w.machine, m, gs.M_FIELDS, "preemptGen") for m, _, _, _ in w.mps]
    assert res.ok
    if asyncp:
        assert sum(gens) == res.points > 0          # doSigPreempt acknowledges every signal
    else:
        assert gens == [0, 0] and res.injected == 0  # Go >= 1.15 (#38531): m is never touched


# --- the oracle: pairs of refusals (the earlier check in Go's order wins) ----------------------------
PROG = loader.load_program(ASM / "unsafe_points.s")
LO, HI, HEADROOM = 0x100000, 0x102000, 472
USER_PC = next(i.addr for i in PROG.get_func("unsafe_tour").insns if i.line == 13)
BASE = SchedState(gp=0x800, g_status=gs.G_RUNNING, g_preempt=True, stack_lo=LO, stack_hi=HI, m_curg=0x800,
                  m_p=0xA00, m_locks=0, m_mallocing=0, m_preemptoff=0, p_status=gs.P_RUNNING, p_preempt=True)
#: isAsyncSafePoint's order (runtime/preempt.go): curg, P, canPreemptM (locks, mallocing, preemptoff,
#: P status, syscall), then the stack headroom.
ORDER = [("not-curg", {"m_curg": 0x900}, None), ("no-p", {"m_p": 0}, None), ("m-locks", {"m_locks": 1}, None),
         ("m-mallocing", {"m_mallocing": 1}, None), ("m-preemptoff", {"m_preemptoff": 5}, None),
         ("p-not-running", {"p_status": gs.P_GCSTOP}, None), ("stack-headroom", {}, LO + HEADROOM - 8)]
PAIRS = [(a, b) for i, a in enumerate(ORDER) for b in ORDER[i + 1:]]


@pytest.mark.parametrize("first,second", PAIRS, ids=[f"{a[0]}+{b[0]}" for a, b in PAIRS])
def test_two_refusals_report_the_one_go_checks_first(first, second):
    st = dataclasses.replace(BASE, **first[1], **second[1])
    sp = first[2] or second[2] or HI - 64
    v = do_sig_preempt(FakeSigContext(sp), PROG, st, USER_PC, sp, HEADROOM, 0x500000, lambda: None)
    assert v.reason == first[0]


# --- the GC: caller frames are scanned precisely, by their stack maps --------------------------------
CALLER_DEAD = """
caller:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    mov qword ptr [rsp + 8], rcx
    mov eax, 32
    call newobject
    mov qword ptr [rax], 0x4242
    mov qword ptr [rsp], rax          ; live: the stack map at the call declares [rsp+0]
    mov eax, 32
    call newobject
    mov qword ptr [rsp + 8], rax      ; dead: the only copy, and the stack map does not declare it
    xor eax, eax
    mov rcx, 30
    ;@ptrs 0
    call spin
    mov rax, qword ptr [rsp]
    mov rax, qword ptr [rax]
    add rsp, 16
    pop rbp
    ret

spin:
    xor eax, eax
    xor edx, edx
    xor r8d, r8d
    xor r9d, r9d
    xor r10d, r10d
    xor r11d, r11d
.loop:
    add rax, rcx
    dec rcx
    jnz .loop
    ret
"""


def test_a_dead_pointer_in_a_caller_slot_without_a_stack_map_entry_is_freed():
    prog = assemble(CALLER_DEAD)
    w = loader.build_world(prog, "caller", "go1.14", None, 1, {}, gc=True)
    res = sweep.sweep(w, "caller")
    live, dead = sorted(w.heap.objs, key=lambda o: o.base)
    assert res.ok and res.reference.final.values["RAX"] == 0x4242
    spin_ret = next(i.addr for i in prog.get_func("spin").insns if i.mnemonic == "ret")
    back_in_caller = sweep.first_boundaries(w, res.boundaries)[spin_ret] + 1
    # the first GC inside spin scans caller's frame by its stack map: the dead object goes, the live one stays
    assert dead.freed_at is not None and dead.freed_at < back_in_caller
    assert live.freed_at is None or live.freed_at > back_in_caller


# --- the mutation score: a missed and a misdiagnosed mutant both count as survivors --------------------
def test_the_score_counts_only_mutants_caught_with_the_right_diagnosis():
    lay = layout.GO114
    by_name = {m.name: m for m in mutants.generate(lay)}
    ref = stubgen.generate(lay)
    missed = mutants.Mutant("inert", "adds a NOP", ref.replace("    pushfq", "    nop\n    pushfq", 1),
                            frozenset({"RAX"}))
    wrong = dataclasses.replace(by_name["drop-save-RBX"], name="misdiagnosed", expect=frozenset({"RAX"}))
    results = checkstub.run_mutants("go1.14", 60, [missed, wrong])
    r_missed, r_wrong = results
    assert (r_missed.caught, r_missed.killed) == (False, False)
    assert (r_wrong.caught, r_wrong.diagnosed, r_wrong.killed) == (True, False, False)
    assert checkstub.mutation_score(results) == (0, 2)
    assert "mutation score: 0/2" in report.render_mutants(results, "go1.14")
    assert report.mutants_json(results, "go1.14")["ok"] is False


# --- the scheduler: who runs when ---------------------------------------------------------------------
SPROG = loader.load_program(ASM / "starvation.s")


def _sched(specs, ms, gomaxprocs=1, ns=5.0):
    s = sched.Scheduler(SPROG, loader.load_stub("go1.14"), layout.GO114, specs, gomaxprocs, True, ns, 1)
    return s.run(int(ms * 1e6))


def test_two_spinners_on_one_p_alternate_in_slices_of_10_to_20_ms():
    r = _sched([sched.GoSpec("a", "spin"), sched.GoSpec("b", "spin")], 130)
    runs = [(e["t"] / 1e6, e["g"]) for e in r.events if e["kind"] == "run"]
    # newproc puts the newest G in runnext: b first; its first preemption finds schedtick 0, when
    # schedule() polls the global queue first (schedtick % 61 == 0) and takes b back; from then on
    # they alternate, each preempted by sysmon once its P's schedtick has not moved for 10 ms.
    assert [g for _, g in runs] == ["b", "b", "a", "b", "a", "b", "a"]
    slices = [t1 - t0 for (t0, _), (t1, _) in zip(runs, runs[1:])]
    assert all(10 <= d <= 21 for d in slices), slices


def test_a_woken_sleeper_runs_next_ahead_of_the_run_queue():
    r = _sched([sched.GoSpec("s1", "spin"), sched.GoSpec("s2", "spin"),
                sched.GoSpec("sleeper", "sleeper", {"RCX": 10**6})], 100)
    ev = [e for e in r.events if e["kind"] in ("ready", "run")]
    readies = [i for i, e in enumerate(ev) if e["kind"] == "ready" and e["g"] == "sleeper"]
    assert len(readies) >= 2
    for i in readies:       # ready() puts it in runnext: it is the next G to run on that P
        nxt = next(e for e in ev[i + 1:] if e["kind"] == "run")
        assert nxt["g"] == "sleeper", (ev[i], nxt)


def test_a_broken_stub_in_the_scheduler_world_is_not_silently_accepted(tmp_stub):
    stub = tmp_stub(lambda s: re.sub(r"^ +mov rbx, .*\n", "", s, flags=re.M))
    prog = loader.load_program(ASM / "xmm_loop.s")
    w = world_for(prog, "xmm_loop", stub=stub, RCX=30)
    res = sweep.sweep(w, "xmm_loop")
    assert ("register", "RBX") in _kinds(res)


def test_sysmon_counts_10_ms_from_the_last_schedule_not_from_the_start():
    # `work` runs first (runnext) for 2 ms and exits; the spinner starts at 2 ms. retake preempts a P
    # whose schedtick has not moved for forcePreemptNS = 10 ms, measured from when sysmon last saw it
    # move (pd.schedwhen), so the first preemption comes at least 10 ms after the spinner started.
    prog = assemble("spin:\n    xor eax, eax\n.l:\n    add rax, 3\n    jmp .l\n\n"
                    "work:\n    dec rcx\n    jnz work\n    ret\n")
    specs = [sched.GoSpec("spinner", "spin"), sched.GoSpec("work", "work", {"RCX": 1_000_000})]
    s = sched.Scheduler(prog, loader.load_stub("go1.14"), layout.GO114, specs, 1, True, 1.0, 1)
    r = s.run(40_000_000)
    ev = [(e["kind"], e["g"], e["t"] / 1e6) for e in r.events if e["kind"] in ("run", "exit", "preempt")]
    assert [(k, g) for k, g, _ in ev[:4]] == [("run", "work"), ("exit", "work"), ("run", "spinner"),
                                               ("preempt", "spinner")]
    started, preempted = ev[2][2], ev[3][2]
    assert 1.9 <= started <= 2.1
    assert 10 <= preempted - started <= 20, ev


# --- stubs that never reach asyncPreempt2, or never return ------------------------------------------------
def _cli(*argv):
    import io

    from emu import cli
    out = io.StringIO()
    return cli.main([str(a) for a in argv], out), out.getvalue()


def test_a_stub_that_just_returns_is_a_named_failure(tmp_path):
    (tmp_path / "ret.s").write_text("asyncPreempt:\n    ret\n")
    code, out = _cli("sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RCX=5", "--stub", tmp_path / "ret.s")
    assert code == 1
    assert "no-asyncPreempt2 asyncPreempt2" in out and "returned without calling asyncPreempt2" in out


def test_check_stub_of_the_generated_stub_without_its_call_fails_naming_it(tmp_stub):
    stub = tmp_stub(lambda s: re.sub(r"^ +call asyncPreempt2.*\n", "", s, flags=re.M))
    code, out = _cli("check-stub", stub, "--max-points", "20")
    assert code == 1
    assert "no-asyncPreempt2 asyncPreempt2: in " in out and "stack overflow" not in out


def test_check_stub_of_a_looping_stub_stops_at_the_first_runaway_of_each_loop(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("    call asyncPreempt2", ".spin:\n    jmp .spin"))
    code, out = _cli("check-stub", stub)
    assert code == 1
    assert f"expected RET within {sweep.stub_budget('go1.14'):,} instructions" in out
    # 50x what the reference stub runs: its ~70 instructions plus asyncPreempt2's ~40
    assert 50 * 100 <= sweep.stub_budget("go1.14") <= 50 * 150


def test_every_mutation_of_bench_mutations_still_applies():
    """bench/mutations.py patches text in emu/; when the code moves, a patch that no longer applies would
    make the mutation check report it instead of testing it: each old text is in its file exactly once."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("mutations", ROOT / "bench" / "mutations.py")
    mutations = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mutations)
    stale = [name for name, (path, old, _new, _tests) in mutations.MUTATIONS.items()
             if not (ROOT / path).is_file() or (ROOT / path).read_text().count(old) != 1]
    assert len(mutations.MUTATIONS) > 30 and stale == []
