"""Pinned Unicorn/Keystone behaviour preemu depends on (emu/FACTS.md §9). If an engine upgrade
changes any of these, the sweep's notion of a boundary is wrong: fix the engine use, not the test."""
import unicorn
import unicorn.x86_const as X
from conftest import assemble, world_for

from emu.core import memmap

LOOP = "f:\n mov ecx, 5\n.l:\n add rax, rcx\n dec rcx\n jnz .l\n ret\n"
REP = ";@data s 64 0x7\n;@data d 64 0\nf:\n mov rsi, s\n mov rdi, d\n mov ecx, 8\n cld\n rep movsb\n ret\n"


def _uc(text):
    prog = assemble(text)
    uc = unicorn.Uc(unicorn.UC_ARCH_X86, unicorn.UC_MODE_64)
    uc.mem_map(memmap.TEXT_BASE, memmap.TEXT_SIZE)
    uc.mem_map(memmap.DATA_BASE, memmap.DATA_SIZE)
    uc.mem_map(0x10000, 0x10000)
    for a, code in prog.code:
        uc.mem_write(a, code)
    uc.reg_write(X.UC_X86_REG_RSP, 0x18000)
    return prog, uc


def test_count_stops_exactly_at_boundary_k():
    prog, uc = _uc(LOOP)
    f = prog.get_func("f")
    # boundary k = after k instructions: mov, then (add, dec, jnz) x5, then ret
    expect = [f.insns[0].addr] + [f.insns[1 + (k % 3)].addr for k in range(15)] + [f.insns[4].addr]
    for k, pc in enumerate(expect):
        uc.reg_write(X.UC_X86_REG_RAX, 0)
        uc.emu_start(f.start, 0, count=k) if k else None
        got = uc.reg_read(X.UC_X86_REG_RIP) if k else f.start
        assert got == pc, f"boundary {k}"


def test_count_splits_rep_into_one_boundary_per_iteration():
    prog, uc = _uc(REP)
    rep = next(i for i in prog.get_func("f").insns if i.is_rep)
    uc.emu_start(prog.get_func("f").start, 0, count=4 + 3)   # 4 setup insns + 3 iterations
    assert uc.reg_read(X.UC_X86_REG_RIP) == rep.addr
    assert uc.reg_read(X.UC_X86_REG_RCX) == 5
    assert uc.reg_read(X.UC_X86_REG_RDI) == memmap.DATA_BASE + 64 + 3


def test_code_hook_fires_once_per_rep_iteration_with_rip_on_the_rep():
    prog, uc = _uc(REP)
    rep = next(i for i in prog.get_func("f").insns if i.is_rep)
    seen = []
    uc.hook_add(unicorn.UC_HOOK_CODE, lambda u, a, s, d: seen.append(u.reg_read(X.UC_X86_REG_RCX)),
                begin=rep.addr, end=rep.addr)
    uc.emu_start(prog.get_func("f").start, 0, count=100)
    assert seen == [8, 7, 6, 5, 4, 3, 2, 1, 0]


def test_hooks_installed_before_the_first_run_fire_from_the_first_run_on():
    prog, uc = _uc(LOOP)
    f = prog.get_func("f")
    early = []
    uc.hook_add(unicorn.UC_HOOK_CODE, lambda u, a, s, d: early.append(a), begin=f.insns[1].addr, end=f.insns[1].addr)
    uc.emu_start(f.start, 0, count=10)
    assert len(early) == 3


def test_machine_installs_its_sentinel_hooks_before_any_run():
    prog = assemble(LOOP)
    w = world_for(prog, "f")
    # Machine.__init__ adds every hook (INT3 sentinels, stub RETs); the first emu_start stops at goexit ...
    assert w.machine.run(w.entry, 10_000) == "goexit"
    # ... and the first call into asyncPreempt2 reaches the Python trap.
    trapped = []
    w2 = world_for(assemble(LOOP), "f")
    w2.machine.on_async_preempt2 = lambda m: trapped.append(m.pc) or True
    assert w2.machine.run(memmap.ASYNC_PREEMPT2, 5) == "trap" and trapped == [memmap.ASYNC_PREEMPT2 + 1]


def test_dump_state_changes_no_register_and_matches_single_reads():
    prog = assemble("f:\n std\n stc\n nop\n cld\n ret\n")
    w = world_for(prog, "f")
    m = w.machine
    m.run(w.entry, 3)
    ctx = m.save_context()
    before = {n: m.reg(n) for n in ("RAX", "RSP", "RBP", "RFLAGS", "R15", "XMM7")}
    d = m.dump_state()
    after = {n: m.reg(n) for n in before}
    assert before == after and m.pc == d.rip
    assert {n: d[n] for n in before} == before
    m.restore_context(ctx)


def test_opt_in_tracing_keeps_the_fault_hooks_and_stack_names():
    w = world_for(assemble(LOOP), "f")
    m = w.machine
    namer = m.describe_address
    seen = []
    m.trace(seen.append)
    assert m.describe_address is namer            # tracing must not reset the stack namer
    assert m.run(w.entry, 10_000) == "goexit" and len(seen) == 17
    m.trace(None)


def test_direct_c_calls_carry_full_64_bit_values():
    """Machine calls uc_emu_start/uc_reg_read/uc_reg_write without ctypes' argument conversion
    (machine._unconverted): a 64-bit value passed as a plain int would be cut to a C int. Every
    address preemu uses is below 4 GiB, so this pins it with values that are not."""
    from emu.model.faults import Fault
    w = world_for(assemble(LOOP), "f")
    m = w.machine
    for name, value in (("RAX", 0xFEDC_BA98_7654_3210), ("RSP", 0x8000_0000_0000_0008), ("R15", 1 << 40)):
        m.set_reg(name, value)
        assert m.reg(name) == value and m.dump_state()[name] == value
    high = 0x7FFF_1234_5000                          # unmapped, above 4 GiB: the fault must name it exactly
    try:
        m.run(high, 1)
    except Fault as f:
        assert f.pc == high, hex(f.pc)
    else:
        raise AssertionError("running unmapped memory did not fault")
    ctx = m.save_context()
    m.set_reg("RAX", 1)
    m.save_context(ctx)                               # into an existing context: the direct call
    m.set_reg("RAX", 2)
    m.restore_context(ctx)
    assert m.reg("RAX") == 1


def test_a_memory_hook_added_after_the_code_ran_needs_a_cache_flush():
    """Machine.heap_watch adds the heap's memory hook at the first allocation and flushes: code that
    already ran with the page does not see a hook added later until the translation cache is flushed."""
    prog, uc = _uc("f:\n mov rcx, 0x10000\n mov rax, qword ptr [rcx]\n nop\n ret\n")
    f = prog.get_func("f")
    uc.emu_start(f.start, 0, count=2)
    seen = []
    uc.hook_add(unicorn.UC_HOOK_MEM_READ, lambda u, a, addr, s, v, d: seen.append(addr), begin=0x10000, end=0x10fff)
    uc.emu_start(f.start, 0, count=2)
    assert seen == []
    uc.ctl_flush_tb()
    uc.emu_start(f.start, 0, count=2)
    assert seen == [0x10000]


def test_a_run_that_ends_at_until_leaves_no_cut_short_block_cached():
    """The instruction counter's tail (linux/icount.py _run_tail) runs a block only up to `until` and relies on
    the engine dropping that cut-short translation as the run ends (resume_all_vcpus invalidates the blocks
    over until - 1): the next look at the block finds it whole again."""
    from emu.linux.regbatch import remove_cache, request_cache
    prog, uc = _uc(LOOP)
    f = prog.get_func("f")
    add = next(i.addr for i in f.insns if i.mnemonic == "add")        # the loop block: add, dec, jnz
    jnz = next(i.addr for i in f.insns if i.mnemonic == "jne")
    whole = request_cache(uc, add)
    assert whole[1] == 3
    uc.reg_write(X.UC_X86_REG_RCX, 5)
    remove_cache(uc, add, add + 1)
    uc.emu_start(add, jnz)                       # translated anew, cut at the jnz
    assert uc.reg_read(X.UC_X86_REG_RIP) == jnz
    assert request_cache(uc, add) == whole       # not the 2-instruction translation: it was dropped
