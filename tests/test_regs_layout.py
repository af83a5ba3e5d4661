"""The register table and the frame layouts derived from it match Go's (emu/FACTS.md §3.1, §3.2, §2.6)."""
from emu.core import layout, regs
from emu.model import rtcode
from emu.check import safepoint


def test_gprs_are_in_gos_order_without_sp_and_bp():
    assert [r.go_name for r in regs.GP_REGS] == ["AX", "CX", "DX", "BX", "SI", "DI", "R8", "R9", "R10", "R11",
                                                 "R12", "R13", "R14", "R15"]


def test_go114_frame_is_368_bytes_with_gprs_then_xmms():
    lay = layout.GO114
    assert lay.frame_size == 368
    assert [lay.slot(r.name).offset for r in regs.GP_REGS] == list(range(0, 112, 8))
    assert [lay.slot(r.name).offset for r in regs.XMM_REGS] == list(range(112, 368, 16))
    assert lay.below_sp == 392          # resume PC + BP + FLAGS + 368


def test_go127_frame_is_112_bytes_and_vectors_live_in_xregs_slots_of_64_bytes():
    lay = layout.GO127
    assert lay.frame_size == 112
    assert [s.offset for s in lay.xreg_slots] == [i * 64 for i in range(16)]
    assert all(s.home == "xregs" for s in lay.xreg_slots)


def test_slot_addresses_are_relative_to_the_interrupted_sp():
    s = 0x10000
    assert layout.GO114.stack_slot_address(s, "RAX") == s - 392
    assert layout.GO114.stack_slot_address(s, "XMM15") == s - 392 + 352
    assert layout.GO127.stack_slot_address(s, "R15") == s - 136 + 104


def test_async_preempt_stack_is_computed_from_frames_as_go_does():
    rt127 = rtcode.runtime_program("go1.27")
    ap2 = rt127.get_func("asyncPreempt2").max_sp_delta
    xrr = rt127.get_func("xRegRestore").max_sp_delta
    # Go 1.27.3 measured 264 = 128 + 24 + 48 + 64 (emu/FACTS.md §2.6)
    assert safepoint.async_preempt_stack(layout.GO127.max_sp_delta, ap2, xrr) == 264
    rt114 = rtcode.runtime_program("go1.14")
    assert safepoint.async_preempt_stack(layout.GO114.max_sp_delta, rt114.get_func("asyncPreempt2").max_sp_delta) \
        == 384 + 24 + 64


def test_flag_mask_covers_the_user_flags_and_never_tf_or_if():
    m = regs.USER_FLAGS_MASK
    for f in ("CF", "PF", "AF", "ZF", "SF", "DF", "OF"):
        assert m >> regs.FLAG_BITS[f] & 1
    assert not m >> regs.FLAG_BITS["TF"] & 1 and not m >> regs.FLAG_BITS["IF"] & 1
