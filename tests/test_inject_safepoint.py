"""pushCall and doSigPreempt over a fake context; the oracle's checks in Go's order (no Unicorn)."""
import dataclasses

import pytest
from conftest import ASM, FakeSigContext, assemble

from emu.core import gostructs as gs
from emu.check.inject import do_sig_preempt, push_call
from emu.check.safepoint import REASONS, SchedState, is_async_safe_point, want_async_preempt

PROG = assemble("f:\n nop\n;@unsafe\n nop\n;@safe\n;@inline runtime.add\n nop\n;@inline-end\n ret\n"
                ";@asm\ng:\n ret\n;@goname reflect.call\nh:\n ret\n;@goname internal/runtime/atomic.Load\nk:\n ret\n")
F = PROG.get_func("f")
LO, HI = 0x100000, 0x102000
OK = SchedState(gp=0x800, g_status=gs.G_RUNNING, g_preempt=True, stack_lo=LO, stack_hi=HI, m_curg=0x800,
                m_p=0xA00, m_locks=0, m_mallocing=0, m_preemptoff=0, p_status=gs.P_RUNNING, p_preempt=True)


def test_push_call_makes_one_8_byte_store_and_moves_only_sp_and_pc():
    c = FakeSigContext(0x5000)
    push_call(c, 0x500000, 0x400123)
    assert c.stores == [(0x4FF8, 0x400123)] and c.sp == 0x4FF8 and c.rip == 0x500000


@pytest.mark.parametrize("change,pc,reason", [
    ({}, F.insns[0].addr, "safe"),
    ({"m_curg": 0x900}, F.insns[0].addr, "not-curg"),
    ({"m_p": 0}, F.insns[0].addr, "no-p"),
    ({"m_locks": 1}, F.insns[0].addr, "m-locks"),
    ({"m_mallocing": 1}, F.insns[0].addr, "m-mallocing"),
    ({"m_preemptoff": 5}, F.insns[0].addr, "m-preemptoff"),
    ({"p_status": gs.P_GCSTOP}, F.insns[0].addr, "p-not-running"),
    ({"g_status": gs.G_SYSCALL}, F.insns[0].addr, "g-syscall"),
    ({}, 0x123, "no-func"),
    ({}, F.insns[1].addr, "unsafe-point"),
    ({}, F.insns[2].addr, "runtime-func"),
    ({}, PROG.symbol("g"), "asm-func"),
    ({}, PROG.symbol("h"), "runtime-func"),
    ({}, PROG.symbol("k"), "unsafe-point"),                     # Go code of a runtime package
    ({"m_locks": 1, "m_curg": 0x900}, 0x123, "not-curg"),       # Go's order: curg first
    ({"m_locks": 1}, 0x123, "m-locks"),                         # M state before the PC lookup
])
def test_oracle_verdicts_and_reasons(change, pc, reason):
    st = dataclasses.replace(OK, **change)
    v = is_async_safe_point(PROG, st, pc, HI - 0x100, 472)
    assert (v.ok, v.reason) == (reason == "safe", reason)
    assert reason in REASONS


@pytest.mark.parametrize("sp,ok", [(LO + 472, True), (LO + 471, False), (LO - 8, False)])
def test_headroom_boundary(sp, ok):
    v = is_async_safe_point(PROG, OK, F.insns[0].addr, sp, 472)
    assert v.ok == ok and (ok or v.reason == "stack-headroom")


def test_want_async_preempt_needs_a_request_and_a_running_g():
    assert want_async_preempt(OK)
    assert want_async_preempt(dataclasses.replace(OK, g_preempt=False))            # p.preempt suffices
    assert not want_async_preempt(dataclasses.replace(OK, g_preempt=False, p_preempt=False))
    assert not want_async_preempt(dataclasses.replace(OK, g_status=gs.G_RUNNABLE))
    assert want_async_preempt(dataclasses.replace(OK, g_status=gs.G_RUNNING | gs.G_SCAN))


@pytest.mark.parametrize("st,pc,injected", [(OK, F.insns[0].addr, True), (OK, F.insns[1].addr, False),
                                            (dataclasses.replace(OK, g_preempt=False, p_preempt=False),
                                             F.insns[0].addr, False)])
def test_do_sig_preempt_acknowledges_whether_or_not_it_injects(st, pc, injected):
    c = FakeSigContext(HI - 0x100)
    acks = []
    v = do_sig_preempt(c, PROG, st, pc, c.sp, 472, 0x500000, lambda: acks.append(1))
    assert acks == [1]
    assert v.ok == injected
    assert (c.stores != []) == injected and (c.rip is not None) == injected


def test_unsafe_run_and_the_write_barrier_test_before_it():
    """Program.unsafe_run: the marked run a PC sits in and the instruction before it, which tells what
    the run guards (explain's unsafe class, episodes' write-barrier window); a safe PC is its own run."""
    from emu.drive import episode, loader
    from emu.teach.notes import unsafe_class
    from emu.core.program import tests_write_barrier
    prog = loader.load_program(ASM / "unsafe_points.s")
    f = prog.get_func("store_pointer")
    cmp_, jne, store, ret = f.insns[:4]
    before, last = prog.unsafe_run(store.addr)
    assert (before, last) == (cmp_, store) and prog.unsafe_run(jne.addr) == (cmp_, store)
    assert tests_write_barrier(before) and not tests_write_barrier(jne)
    assert prog.unsafe_run(ret.addr) == (store, ret)              # safe: a run of its own
    assert unsafe_class(prog, jne.addr) == "write-barrier" and unsafe_class(prog, ret.addr) == "other"
    assert episode._wb_range_end(prog, jne.addr) == ret.addr and episode._wb_range_end(prog, ret.addr) is None
    assert prog.unsafe_run(f.end + 0x100000) is None
