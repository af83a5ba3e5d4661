"""Call chains (engine/callchain.py) and the Machine's chained runs (model/chainrun.py): one ctypes call
that makes several Unicorn calls must do exactly what the separate calls do, fail where they fail, and
fill the sweep's clobber table as the Python clobber does."""
import ctypes

import pytest
import unicorn
import unicorn.x86_const as X
from conftest import assemble, world_for
from unicorn.unicorn_py3.unicorn import uclib

from emu.core import dump, memmap
from emu.drive import sweeper as sweep
from emu.engine.callchain import CallChain, xor_words_address
from emu.engine.capi import address_of
from emu.model.faults import Fault

LOOP = "f:\n mov ecx, 5\n.l:\n add rax, rcx\n dec rcx\n jnz .l\n ret\n"


def _uc():
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(0x1000, 0x1000)
    uc.mem_write(0x1000, b"\x48\xff\xc0" * 8)         # inc rax, eight times
    return uc


def test_a_chain_makes_its_calls_in_order_with_patched_arguments():
    uc = _uc()
    h = uc._uch.value
    value, out = ctypes.c_uint64(40), ctypes.c_uint64()
    chain = CallChain([
        (address_of(uclib.uc_reg_write), [h, X.UC_X86_REG_RAX, ctypes.addressof(value)]),
        (address_of(uclib.uc_emu_start), [h, 0x1000, 0, 0, 1]),
        (address_of(uclib.uc_reg_read), [h, X.UC_X86_REG_RAX, ctypes.addressof(out)])])
    assert chain.run() == (0, 0) and out.value == 41
    chain.words[CallChain.slot(1, 4)] = 3                 # the run's count, patched in place
    value.value = 100
    assert chain.run() == (0, 0) and out.value == 103
    assert uc.reg_read(X.UC_X86_REG_RIP) == 0x1000 + 3 * 3


def test_a_chain_stops_at_the_first_failing_call_and_names_it():
    uc = _uc()
    h = uc._uch.value
    out = ctypes.c_uint64(7)
    chain = CallChain([
        (address_of(uclib.uc_emu_start), [h, 0x1000, 0, 0, 1]),
        (address_of(uclib.uc_emu_start), [h, 0x9000, 0, 0, 1]),         # unmapped: UC_ERR_FETCH_UNMAPPED
        (address_of(uclib.uc_reg_read), [h, X.UC_X86_REG_RAX, ctypes.addressof(out)])])
    assert chain.run() == (1, unicorn.UC_ERR_FETCH_UNMAPPED)
    assert out.value == 7                                   # the call after the failure was not made


def test_xor_words_fills_a_record_with_a_xor_b():
    a = (ctypes.c_uint64 * 4)(1, 0xFF00, 1 << 63, 5)
    b = (ctypes.c_uint64 * 4)(3, 0x0FF0, 1, 5)
    dst = (ctypes.c_uint64 * 5)(*[0xAA] * 5)
    chain = CallChain([(xor_words_address(), [ctypes.addressof(dst), ctypes.addressof(a), ctypes.addressof(b), 4])])
    assert chain.run() == (0, 0)
    assert list(dst) == [2, 0xF0F0, (1 << 63) | 1, 0, 0xAA]


def test_run_dump_and_run_pc_are_run_then_the_reads():
    prog = assemble(LOOP)
    w1, w2 = world_for(prog, "f"), world_for(prog, "f")
    a, b = w1.machine, w2.machine
    a.run(w1.entry, 5)
    reason, d = b.run_dump(w2.entry, 5)
    assert reason == "count" and d == a.dump_state()
    rsp = a.rsp() - 64
    a.set_rsp(rsp)
    a.run(a.pc, 2)
    reason, pc = b.run_pc(b.pc, 2, rsp)
    assert reason == "count" and pc == a.pc and b.rsp() == a.rsp() == rsp
    a.set_rsp(rsp + 64)
    assert a.run(a.pc, 10_000) == b.run_dump(b.pc, 10_000, rsp + 64)[0] == "goexit"
    assert a.dump_state() == b.dump_state()


def test_a_chained_run_faults_as_run_does():
    m = world_for(assemble(LOOP), "f").machine
    high = 0x7FFF_1234_5000
    with pytest.raises(Fault) as e:
        m.run_dump(high, 1)
    assert e.value.pc == high
    with pytest.raises(Fault) as e:
        m.run_pc(high, 1, rsp=0x1234)
    assert e.value.pc == high


def test_a_points_run_saves_the_context_and_fills_the_clobber_table_as_the_python_clobber():
    prog = assemble(LOOP)
    w = world_for(prog, "f")
    m = w.machine
    s = sweep.Sweeper(w, seed=9)
    m.prepare_chained_runs()
    m.set_clobber_mask(s._mask.to_bytes(dump.SIZE, "little"))
    m.write(memmap.CLOBBER_TABLE, bytes(dump.SIZE))
    _, d = m.run_dump(w.entry, 3, point=True)
    assert m.read(memmap.CLOBBER_TABLE, dump.SIZE) == s._clobber_table(d.raw) != bytes(dump.SIZE)
    m.run(m.pc, 2)
    m.restore_context(m.point_context)
    assert m.dump_state() == d


def test_an_m_switch_in_the_trap_loads_fs_base_with_the_next_run():
    """async_preempt2_here defers World.bind's FS_BASE load to the next chained run (or run())."""
    w = world_for(assemble(LOOP), "f")
    m = w.machine
    m.run(w.entry, 2)
    fs_before = m.uc.reg_read(X.UC_X86_REG_FS_BASE)
    assert m.async_preempt2_here() is False                  # the model moves the G to the other M
    other = w.mps[w.cur][3]
    assert other != fs_before and m.uc.reg_read(X.UC_X86_REG_FS_BASE) == fs_before
    m.run_pc(m.pc, 1)
    assert m.uc.reg_read(X.UC_X86_REG_FS_BASE) == other
    assert m.async_preempt2_here() is False
    m.run(m.pc, 1)                                           # a plain run loads it too
    assert m.uc.reg_read(X.UC_X86_REG_FS_BASE) == w.mps[w.cur][3] == fs_before
