"""Table-driven oracle test: (PC class x G/M/P state) -> verdict and reason, as Go decides.

Rows are PC classes taken from asm/unsafe_points.s; columns are G/M/P states. Go checks the
request first, then the G/M/P state and stack headroom, then the PC (preempt.go order), so a
cell's answer is the column's reason when it has one and the row's otherwise -- every cell below is
written out, not computed.
"""
import dataclasses

import pytest
from conftest import ASM, FakeSigContext

from emu.core import gostructs as gs
from emu.drive import loader
from emu.check.inject import do_sig_preempt
from emu.check.safepoint import REASONS, SchedState

PROG = loader.load_program(ASM / "unsafe_points.s")
LO, HI = 0x100000, 0x102000
HEADROOM = 472


def _pc(func, line):
    return next(i.addr for i in PROG.get_func(func).insns if i.line == line)


ROWS = {  # PC class -> pc
    "user": _pc("unsafe_tour", 13),
    "wb-window": _pc("store_pointer", 43),
    "atomic-loop": _pc("atomic_or32", 63),
    "nosplit": _pc("nosplit_inc", 70),
    "asm-runtime": _pc("memclr", 78),
    "inlined-runtime": _pc("unsafe_tour", 27),
    "runtime-go": _pc("procyield", 85),
    "unknown": 0x4FFFF0,
}
BASE = SchedState(gp=0x800, g_status=gs.G_RUNNING, g_preempt=True, stack_lo=LO, stack_hi=HI, m_curg=0x800,
                  m_p=0xA00, m_locks=0, m_mallocing=0, m_preemptoff=0, p_status=gs.P_RUNNING, p_preempt=True)
COLS = {  # state -> (SchedState changes, sp)
    "ok": ({}, HI - 64),
    "p-request-only": ({"g_preempt": False}, HI - 64),
    "no-request": ({"g_preempt": False, "p_preempt": False}, HI - 64),
    "g-runnable": ({"g_status": gs.G_RUNNABLE}, HI - 64),
    "on-g0": ({"m_curg": 0x900}, HI - 64),
    "no-p": ({"m_p": 0}, HI - 64),
    "locks": ({"m_locks": 2}, HI - 64),
    "mallocing": ({"m_mallocing": 1}, HI - 64),
    "preemptoff": ({"m_preemptoff": 9}, HI - 64),
    "p-gcstop": ({"p_status": gs.P_GCSTOP}, HI - 64),
    "syscall": ({"g_status": gs.G_SYSCALL}, HI - 64),
    "low-stack": ({}, LO + HEADROOM - 8),
}
C = list(COLS)
#              ok      p-only  no-req      g-runnable  on-g0       no-p    locks     mallocing     preemptoff      p-gcstop         syscall      low-stack
TABLE = {
    "user":            ["safe", "safe", "no-request", "no-request", "not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "wb-window":       ["unsafe-point"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "atomic-loop":     ["unsafe-point"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "nosplit":         ["unsafe-point"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "asm-runtime":     ["asm-func"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "inlined-runtime": ["runtime-func"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "runtime-go":      ["unsafe-point"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
    "unknown":         ["no-func"] * 2 + ["no-request"] * 2 + ["not-curg", "no-p", "m-locks", "m-mallocing", "m-preemptoff", "p-not-running", "no-request", "stack-headroom"],
}


@pytest.mark.parametrize("row", list(TABLE))
@pytest.mark.parametrize("col", C)
def test_cell(row, col):
    changes, sp = COLS[col]
    st = dataclasses.replace(BASE, **changes)
    ctx = FakeSigContext(sp)
    acked = []
    v = do_sig_preempt(ctx, PROG, st, ROWS[row], sp, HEADROOM, 0x500000, lambda: acked.append(True))
    want = TABLE[row][C.index(col)]
    assert v.reason == want
    assert v.ok == (want == "safe") == ctx.pushed
    assert acked == [True]      # preemptGen++ and signalPending = 0 happen in every cell


def test_every_reason_code_is_produced_by_some_cell():
    # asyncpreemptoff is sighandler's (tests/test_bites.py); g-syscall is unreachable through
    # doSigPreempt: wantAsyncPreempt already refuses a G that is not _Grunning.
    produced = {v for r in TABLE.values() for v in r}
    assert set(REASONS) - produced == {"asyncpreemptoff", "g-syscall"}
