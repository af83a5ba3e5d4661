"""Whole-program mode, part by part: the signal frame, the address space, CPUID, the instruction counter,
and the exec scenario files."""
from __future__ import annotations

import io
import json

import keystone
import pytest
from unicorn import UC_ARCH_X86, UC_HOOK_INSN, UC_MODE_64, Uc, UcError
from unicorn import x86_const as X

from emu import cli
from emu.core.errors import ScenarioError
from emu.core import cpuid
from emu.linux import memory, sigframe
from emu.drive import exec_scenario as scenario
from emu.linux.icount import InsnCounter

from conftest import ROOT

GO = ROOT / "scenarios" / "go"


# --- rt_sigframe --------------------------------------------------------------------------------
def test_sigframe_layout_is_the_kernels():
    """Offsets from arch/x86 struct rt_sigframe / ucontext / sigcontext (64-bit)."""
    assert sigframe.greg_offset("RSP") == 168 and sigframe.greg_offset("RIP") == 176
    assert sigframe.greg_offset("EFLAGS") == 184 and sigframe.FPSTATE_PTR == 232
    assert (sigframe.UC_SIGMASK, sigframe.SIGINFO, sigframe.FRAME_SIZE) == (304, 312, 440)
    assert len(sigframe.GREGS) == 23                       # Go's mcontext.gregs[23]


def _cpu():
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(0x10000, 0x20000)
    return uc


def test_frame_placement_and_round_trip():
    uc = _cpu()
    regs = {X.UC_X86_REG_RSP: 0x18008, X.UC_X86_REG_RIP: 0x1234, X.UC_X86_REG_RBX: 77,
            X.UC_X86_REG_EFLAGS: 0x202 | 0x400 | 0x1, X.UC_X86_REG_XMM3: 0xAB << 64}
    for r, v in regs.items():
        uc.reg_write(r, v)
    d = sigframe.setup_rt_frame(uc, sigframe.SigInfo(23, pid=1000, uid=1000), 0x5000, 0x6000, 0b101,
                                (0x20000, 0x8000), on_altstack=False)
    rsp = uc.reg_read(X.UC_X86_REG_RSP)
    assert rsp == d.frame and (rsp + 8) % 16 == 0 and d.fpstate % 64 == 0    # as after a CALL
    assert d.fpstate + sigframe.FXSAVE_SIZE <= 0x28000 and rsp + sigframe.FRAME_SIZE <= d.fpstate
    assert uc.reg_read(X.UC_X86_REG_RIP) == 0x5000 and uc.reg_read(X.UC_X86_REG_RDI) == 23
    assert uc.reg_read(X.UC_X86_REG_RDX) == rsp + sigframe.UC and uc.reg_read(X.UC_X86_REG_EFLAGS) & 0x400 == 0
    assert int.from_bytes(uc.mem_read(rsp, 8), "little") == 0x6000                   # pretcode = restorer
    # the handler edits RIP in the ucontext, clobbers registers, returns (pops pretcode), rt_sigreturn
    uc.mem_write(rsp + sigframe.greg_offset("RIP"), (0x4444).to_bytes(8, "little"))
    uc.reg_write(X.UC_X86_REG_RBX, 0)
    uc.reg_write(X.UC_X86_REG_XMM3, 0)
    uc.reg_write(X.UC_X86_REG_RSP, rsp + 8)
    r = sigframe.restore_rt_frame(uc)
    assert uc.reg_read(X.UC_X86_REG_RIP) == 0x4444 and uc.reg_read(X.UC_X86_REG_RBX) == 77
    assert uc.reg_read(X.UC_X86_REG_RSP) == 0x18008 and uc.reg_read(X.UC_X86_REG_XMM3) == 0xAB << 64
    assert uc.reg_read(X.UC_X86_REG_EFLAGS) & 0xCD5 == 0x401 and r.sigmask == 0b101


def test_frame_without_altstack_skips_the_red_zone():
    uc = _cpu()
    uc.reg_write(X.UC_X86_REG_RSP, 0x28000)
    d = sigframe.setup_rt_frame(uc, sigframe.SigInfo(23), 0x5000, 0x6000, 0, None, on_altstack=False)
    assert d.fpstate + sigframe.FXSAVE_SIZE <= 0x28000 - sigframe.REDZONE


# --- address space ------------------------------------------------------------------------------
def test_mmap_reserve_commit_and_unmap():
    uc = _cpu()
    mem = memory.AddressSpace(uc)
    base = mem.mmap(0, 1 << 20, memory.PROT_NONE, 0x22)               # reservation: not accessible
    assert base % 4096 == 0 and mem.committed_bytes() == 0
    with pytest.raises(Exception):
        uc.mem_read(base, 1)
    assert mem.mmap(base + 0x2000, 0x3000, 3, 0x32) == base + 0x2000   # MAP_FIXED commit inside it
    uc.mem_write(base + 0x2000, b"x")
    assert mem.mmap(base + 0x2000, 0x1000, 3, 0x32) == base + 0x2000   # a fresh map reads as zeros
    assert bytes(uc.mem_read(base + 0x2000, 1)) == b"\0"
    assert mem.mmap(base, 0x1000, 3, 0x22) != base                     # a hint inside a mapping is not honoured
    assert mem.munmap(base + 0x3000, 0x1000) == 0 and mem.committed_bytes() == 0x2000 + 0x1000
    uc.mem_write(base + 0x4000, b"y")
    assert mem.madvise(base + 0x4000, 0x1000, 4) == 0 and bytes(uc.mem_read(base + 0x4000, 1)) == b"\0"
    assert mem.mprotect(0x7000_0000, 0x1000, 3) == -12                 # not mapped: ENOMEM


def test_only_what_asks_for_prot_exec_is_executable():
    """mmap/mprotect with PROT_EXEC map the engine's pages executable, without it not (the NX bit), and a
    change applies to the part that differs; the engine's regions say the same as `executable`."""
    from unicorn import UC_PROT_EXEC
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    mem = memory.AddressSpace(uc)

    def exec_pages():
        return sorted((b, e + 1) for b, e, perms in uc.mem_regions() if perms & UC_PROT_EXEC)
    a = mem.mmap(0, 0x4000, 3, 0x22)                                   # PROT_READ|PROT_WRITE
    assert exec_pages() == [] and mem.executable.r == []
    assert mem.mprotect(a + 0x1000, 0x2000, 7) == 0                    # PROT_EXEC on the middle pages
    assert exec_pages() == mem.executable.r == [(a + 0x1000, a + 0x3000)]
    assert mem.mprotect(a, 0x2000, 3) == 0                             # and off again for one of them
    assert exec_pages() == mem.executable.r == [(a + 0x2000, a + 0x3000)]
    b = mem.mmap(0, 0x1000, 5, 0x22)                                   # PROT_READ|PROT_EXEC
    assert mem.munmap(a, 0x4000) == 0 and exec_pages() == mem.executable.r == [(b, b + 0x1000)]


@pytest.mark.parametrize("asm,regs,want", [
    ("mov rax, qword ptr [rbx + 8]", {"RBX": 0}, 0x8),                        # a nil struct's field
    ("mov qword ptr [rdi + rcx*8 + 0x10], rax", {"RDI": 0x7000, "RCX": 3}, 0x7028),
    ("push rax", {"RSP": 0x200008}, 0x200000),                               # the slot below RSP
    ("call rax", {"RSP": 0x200008, "RAX": 0x1000}, 0x200000),
    ("pop rax", {"RSP": 0x200000}, 0x200000),
    ("rep stosb", {"RDI": 0x1ffffe, "RCX": 5}, 0x200000),                    # faults at the page's first byte
    ("mov rax, qword ptr [rsi + 0xffc]", {"RSI": 0x1ff000}, 0x200000),       # straddles into the next page
    ("movsq", {"RSI": 0x100000, "RDI": 0x300010}, 0x300010),
    ("mov rax, qword ptr fs:[0x20]", {"FS_BASE": 0x400000}, 0x400020),
    ("mov rax, qword ptr [rip + 0x300000]", {}, 0x10007 + 0x300000),
])
def test_a_page_faults_address_comes_from_the_instruction(asm, regs, want):
    """With no unmapped-memory hook (any makes Unicorn slow every store), si_addr is worked out from the
    faulting instruction's operands and the page the engine asked for last (faultaddr.py)."""
    from emu.engine.faultaddr import fault_address
    from emu.engine.pagetable import PageTable
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    pages = PageTable(uc)
    uc.mem_map(0x10000, 0x1000)
    uc.mem_map(0x100000, 0x100000)                  # 0x100000-0x1fffff; nothing at 0 or from 0x200000
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(asm, 0x10000)[0])
    uc.mem_write(0x10000, code)
    for name, v in regs.items():
        uc.reg_write(getattr(X, "UC_X86_REG_" + name), v)
    with pytest.raises(UcError):
        uc.emu_start(0x10000, 0x10000 + len(code))
    assert uc.reg_read(X.UC_X86_REG_RIP) == 0x10000
    assert fault_address(uc, pages.last_fill()) == want


def test_a_host_pages_snapshot_can_be_returned_to_again_and_again():
    """hostpages.py: a snapshot is the memory as it was, however often it is restored, written through the
    engine or read back; pages never touched stay zeros; the memfds close with the snapshot."""
    import gc
    import os
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    mem = memory.AddressSpace(uc)
    a = mem.mmap(0, 0x40000, 3, 0x22)
    uc.mem_write(a + 0x1000, b"before")
    gc.collect()                       # earlier tests' snapshots close their memfds now, not during the count
    fds_before = len(os.listdir("/proc/self/fd"))
    snap = mem.host.snapshot()
    assert len(os.listdir("/proc/self/fd")) == fds_before + 1
    for round_ in range(3):
        uc.mem_write(a + 0x1000, b"after%d" % round_)
        uc.mem_write(a + 0x30000, b"new")
        assert bytes(uc.mem_read(a + 0x1000, 6)) == b"after%d" % round_
        mem.host.restore(snap)
        assert bytes(uc.mem_read(a + 0x1000, 6)) == b"before"
        assert bytes(uc.mem_read(a + 0x30000, 3)) == b"\0\0\0"
    del snap
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds_before


def test_a_snapshot_puts_back_regions_mapped_unmapped_and_reprotected_since():
    """snapshot.restore undoes the engine's map changes: a region unmapped comes back with its contents, one
    unmapped and mapped again at the same address (new host memory) is the snapshot's again, a region mapped
    since is gone, and permissions changed since are back; the address space's intervals follow."""
    from types import SimpleNamespace
    from emu.linux import snapshot
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    mem = memory.AddressSpace(uc)
    a = mem.mmap(0, 0x4000, 3, 0x22)
    b = mem.mmap(0, 0x4000, 3, 0x22)
    uc.mem_write(a, b"A-before")
    uc.mem_write(b + 0x1000, b"B-before")
    p = SimpleNamespace(uc=uc, mem=mem, watch=SimpleNamespace(**{k: [] for k in snapshot.WATCH_STATE}),
                        **{k: None for k in snapshot.STATE})
    snap = snapshot.take(p)
    regions = sorted(uc.mem_regions())
    assert mem.munmap(a, 0x4000) == 0
    assert mem.mmap(a, 0x4000, 3, 0x10 | 0x20) == a                # MAP_FIXED: the same range, new memory
    uc.mem_write(a, b"A-new")
    assert mem.mprotect(b, 0x1000, 1) == 0                         # read-only: the engine splits the region
    c = mem.mmap(0, 0x2000, 3, 0x22)
    assert sorted(uc.mem_regions()) != regions
    for _ in range(2):
        assert snapshot.restorable(p, snap)
        snapshot.restore(p, snap)
        assert sorted(uc.mem_regions()) == regions
        assert bytes(uc.mem_read(a, 8)) == b"A-before" and bytes(uc.mem_read(b + 0x1000, 8)) == b"B-before"
        assert not mem.mapped.contains(c, c + 0x2000) and mem.mapped.contains(a, a + 0x4000)
        uc.mem_write(b, b"writable")                               # the read-only split is gone
        uc.mem_write(a + 8, b"x")
    with pytest.raises(UcError):
        uc.mem_read(c, 1)


def test_intervals():
    s = memory.Intervals()
    s.add(0, 10)
    s.add(20, 30)
    s.add(10, 20)
    assert s.r == [(0, 30)]
    s.remove(5, 25)
    assert s.r == [(0, 5), (25, 30)] and s.gaps(0, 30) == [(5, 25)] and not s.contains(0, 30)


# --- CPUID and counting -------------------------------------------------------------------------
def test_cpuid_has_sse42_and_no_avx():
    _, _, ecx, edx = cpuid.cpuid(1, 0)
    assert ecx & (1 << 20) and ecx & (1 << 23) and edx & (1 << 26)        # SSE4.2, POPCNT, SSE2
    assert not ecx & ((1 << 28) | (1 << 27) | (1 << 26) | (1 << 12))      # AVX, OSXSAVE, XSAVE, FMA
    assert not cpuid.cpuid(7, 0)[1] & ((1 << 5) | (1 << 16))              # AVX2, AVX512F
    assert cpuid.cpuid(0, 0)[0] == 7 and cpuid.cpuid(0x12345, 0) == (0, 0, 0, 0)


def test_counter_is_exact_and_stops_before_the_limit():
    uc = _cpu()
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm("l: inc rax; cmp rax, rbx; jne l; hlt",
                                                                           0x10000)[0])
    uc.mem_write(0x10000, code)
    uc.reg_write(X.UC_X86_REG_RBX, 1000)
    c = InsnCounter(uc)
    c.arm(100)                                   # the limit falls inside a block (inc, cmp, jne): cut there
    assert c.run(0x10000) == 100
    assert c.executed == 100 and uc.reg_read(X.UC_X86_REG_RAX) == 34 and uc.reg_read(X.UC_X86_REG_RIP) == 0x10003
    c.arm(5)                                     # resumes where it stopped, counts from zero again
    assert c.run(uc.reg_read(X.UC_X86_REG_RIP)) == 5
    assert c.executed == 5 and uc.reg_read(X.UC_X86_REG_RAX) == 35 and uc.reg_read(X.UC_X86_REG_RIP) == 0x10000
    c.arm(3)                                     # on a block boundary: no tail
    assert c.run(0x10000) == 3 and uc.reg_read(X.UC_X86_REG_RIP) == 0x10000 and uc.reg_read(X.UC_X86_REG_RAX) == 36


def test_tails_cut_from_one_block_are_its_prefixes_decoded_once():
    """Slices that end at every instruction of one long block: each tail is a block cut short, so its
    instructions are the first ones of the longest block decoded at its address (derived, not decoded
    again: no address is decoded twice), and every count stays exact."""
    import capstone
    uc = _cpu()
    body = "; ".join(["inc rax"] * 12)
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(f"l: {body}; dec rbx; jnz l; hlt",
                                                                           0x10000)[0])
    uc.mem_write(0x10000, code)
    uc.reg_write(X.UC_X86_REG_RBX, 50)
    decoded = []

    class Md:
        def __init__(self, md):
            self.md = md

        def disasm_lite(self, code, addr):
            decoded.append((addr, len(code)))
            return self.md.disasm_lite(code, addr)
    c = InsnCounter(uc)
    c._md = Md(capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64))
    total = 0
    for limit in list(range(1, 14)) * 3:         # a tail at each instruction of the 14-instruction block
        c.arm(limit)
        total += c.run(uc.reg_read(X.UC_X86_REG_RIP) if total else 0x10000)
        assert c.executed == limit
    assert uc.reg_read(X.UC_X86_REG_RAX) == total - total // 14 * 2 - {0: 0, 13: 1}.get(total % 14, 0)
    starts = [a for a, _ in decoded]              # a slice resumed mid-block starts a block there: decoded once
    assert len(set(starts)) == len(starts) < 14 and 0x10000 in starts


# --- scenario files -----------------------------------------------------------------------------
def test_scenario_variants_and_errors(tmp_path):
    sc = scenario.load(str(GO / "starvation.toml"))
    assert sc.variants == ["asyncpreemptoff"] and sc.expect["exit_code"] == 0
    off = scenario.load(str(GO / "starvation.toml"), "asyncpreemptoff")
    assert off.env == ["GODEBUG=asyncpreemptoff=1"] and off.expect == {"starved": True, "max_async_preemptions": 0}
    bad = tmp_path / "bad.toml"
    for text, key in [('program = "x"', "program"), (f'program = "{GO / "hello"}"\nmax_virtual_ms = "a"',
                                                      "max_virtual_ms"),
                      (f'program = "{GO / "hello"}"\n[expect]\nexit = 0', "expect.exit"), ("foo = 1", "foo"),
                      # values the exec flags refuse are refused in a scenario too (quantum = 0 never ended)
                      (f'program = "{GO / "hello"}"\nquantum = 0', "quantum"),
                      (f'program = "{GO / "hello"}"\ncpus = 65', "cpus"),
                      (f'program = "{GO / "hello"}"\nmax_virtual_ms = true', "max_virtual_ms")]:
        bad.write_text(text)
        with pytest.raises(ScenarioError) as e:
            scenario.load(str(bad))
        assert e.value.key == key
    with pytest.raises(ScenarioError, match="no such variant"):
        scenario.load(str(GO / "hello.toml"), "nope")


def test_scenario_failure_names_the_expectation(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(f'program = "{GO / "hello"}"\nmax_virtual_ms = 50\n[expect]\nexit_code = 3\n'
                 'stdout_regex = "bye"\n')
    out = io.StringIO()
    assert cli.main(["exec", str(f), "--json"], out=out) == 1
    failed = json.loads(out.getvalue())["scenario"]["failed"]
    assert [x.split(":")[0] for x in failed] == ["expect.exit_code", "expect.stdout_regex"]
    assert cli.main(["exec", str(tmp_path / "missing.toml")]) == 2


def test_counter_keeps_two_hot_blocks_whose_hashes_collide():
    """A loop of two blocks that hash to the same table entries: both stay cached (the table is 2-way), so
    the counter asks Python once per block, not at every iteration; a third block that hashes alike evicts
    one, and every count stays exact."""
    from emu.linux.icount import pair_index
    a = 0x10000
    b, c = [x for x in range(a + 0x100, 0xA0000, 8) if pair_index(x) == pair_index(a)][:2]
    ks = keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64)
    uc = _cpu()
    uc.mem_map(0x30000, 0x70000)
    for at, text in ((a, f"inc rax; jmp {b:#x}"), (b, f"cmp rax, rbx; jne {a:#x}; jmp {c:#x}"), (c, "inc rcx; hlt")):
        uc.mem_write(at, bytes(ks.asm(text, at)[0]))
    misses = []

    class Counting(InsnCounter):
        def _on_miss(self, addr, size):
            misses.append(addr)
            return super()._on_miss(addr, size)
    uc.reg_write(X.UC_X86_REG_RBX, 1000)
    cnt = Counting(uc)
    cnt.arm(cnt.UNLIMITED)
    n = cnt.run(a)                               # on to the hlt, which stops the engine
    assert uc.reg_read(X.UC_X86_REG_RAX) == 1000 and uc.reg_read(X.UC_X86_REG_RCX) == 1
    assert n == 1000 * 2 + 1000 * 2 + 1 + 2
    assert misses == [a, b, b + 9, c]           # each block once (b + 9: the jmp after the jne not taken)


def test_counter_stays_exact_when_a_hook_moves_rip_inside_a_cut_block():
    """RDTSC is emulated by a code hook that moves RIP past it (Process._on_rdtsc, counter.cut_after); when
    the slice's limit falls after it in the same block, the run must still stop on the limit's instruction
    (the blocks after the cut one are whole translations that would run on)."""
    from unicorn import UC_HOOK_CODE
    uc = _cpu()
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(
        "l: inc rax; nop; inc rbx; inc rcx; inc rdx; jmp l", 0x10000)[0])
    uc.mem_write(0x10000, code)
    c = InsnCounter(uc)

    def emulate(uc, addr, size, _):
        if not c.stopping(addr):
            c.cut_after(addr)
            uc.reg_write(X.UC_X86_REG_RIP, addr + size)
    uc.hook_add(UC_HOOK_CODE, emulate, None, 0x10003, 0x10003)       # the nop
    uc.ctl_remove_cache(0x10000, 0x10001)
    addrs = [0x10000, 0x10003, 0x10004, 0x10007, 0x1000A, 0x1000D]          # the loop's six instructions
    for limit in (2, 3, 4, 50, 53):
        c.arm(limit)
        assert c.run(0x10000) == limit
        assert uc.reg_read(X.UC_X86_REG_RIP) == addrs[limit % 6]          # stopped on the limit's instruction


def test_counter_counts_a_jump_to_unmapped_memory_as_the_per_instruction_counter_did():
    uc = _cpu()
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(
        "mov rax, 0x900000; nop; nop; jmp rax", 0x10000)[0])
    uc.mem_write(0x10000, code)
    c = InsnCounter(uc)
    c.arm(100)
    with pytest.raises(UcError):
        c.run(0x10000)
    assert c.executed == 4                       # the jump ran; the fetch at its target faulted


@pytest.mark.parametrize("executed,base", [(0, 10**12), (123_456_789, 10**12 + 999_999_997), (7, 5)])
def test_vdso_functions_answer_what_the_syscalls_answer(executed, base):
    """Each of the vDSO's three functions, run on Unicorn against a vvar page holding `executed`, the clock base
    and the realtime offset, returns what sys_time's syscalls return at that instruction (the function's
    second, where it reads the count): clock_gettime for both clocks, gettimeofday (and its obsolete tz
    zeroed), time (returned and stored)."""
    import ctypes
    import struct

    from emu.linux import icount, vdso
    from emu.linux.sys_time import REALTIME_EPOCH_NS
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(vdso.VDSO_BASE, vdso.PAGE)
    uc.mem_write(vdso.VDSO_BASE, vdso.image())
    page = icount._Counter(executed=executed, clock_base=base, ns_per_insn=1,
                           realtime_offset=REALTIME_EPOCH_NS - 10**12)
    uc.mem_map(vdso.VVAR, vdso.PAGE)
    uc.mem_write(vdso.VVAR, bytes(ctypes.string_at(ctypes.addressof(page), ctypes.sizeof(page))))
    data, ret = 0x10000, 0x20000
    uc.mem_map(data, 0x2000)
    uc.mem_map(ret, 0x1000)
    uc.mem_write(ret, b"\xf4")           # HLT, where the function returns to

    def call(name, rdi, rsi=0):
        uc.mem_write(data, b"\xaa" * 64)
        uc.reg_write(X.UC_X86_REG_RSP, data + 0x1000)
        uc.mem_write(data + 0x1000, struct.pack("<Q", ret))
        uc.reg_write(X.UC_X86_REG_RDI, rdi)
        uc.reg_write(X.UC_X86_REG_RSI, rsi)
        uc.emu_start(vdso.address(name), ret)
        return uc.reg_read(X.UC_X86_REG_RAX), uc.mem_read(data, 32)

    mono = base + executed + 2
    real = mono + REALTIME_EPOCH_NS - 10**12
    assert call("__vdso_clock_gettime", 1, data) == (0, struct.pack("<qq", mono // 10**9, mono % 10**9) + b"\xaa" * 16)
    assert call("__vdso_clock_gettime", 0, data)[1][:16] == struct.pack("<qq", real // 10**9, real % 10**9)
    rax, mem = call("__vdso_gettimeofday", data, data + 16)
    assert (rax, bytes(mem)) == (0, struct.pack("<qqq", real // 10**9, real % 10**9 // 1000, 0) + b"\xaa" * 8)
    assert call("__vdso_gettimeofday", 0, 0) == (0, b"\xaa" * 32)
    rax, mem = call("__vdso_time", data + 8)
    assert (rax, bytes(mem[8:16])) == (real // 10**9, struct.pack("<q", real // 10**9))
    assert call("__vdso_time", 0)[0] == real // 10**9
    # #50: every other clock (the CPU-time ones, a pid-encoded one, an alarm clock, a bad id) was answered with
    # monotonic time; it makes the clock_gettime syscall with the caller's arguments, as Linux's vDSO falls
    # back, and returns what the syscall gave, ts written by the syscall only
    calls = []

    def kernel(uc, _):
        calls.append(tuple(uc.reg_read(r) for r in (X.UC_X86_REG_RAX, X.UC_X86_REG_RDI, X.UC_X86_REG_RSI)))
        if uc.reg_read(X.UC_X86_REG_RDI) == 99:
            uc.reg_write(X.UC_X86_REG_RAX, -22 & (2**64 - 1))
        else:
            uc.mem_write(uc.reg_read(X.UC_X86_REG_RSI), struct.pack("<qq", 3, 456))
            uc.reg_write(X.UC_X86_REG_RAX, 0)
    uc.hook_add(UC_HOOK_INSN, kernel, None, 1, 0, X.UC_X86_INS_SYSCALL)
    for clk in (2, 3, -2 & (2**64 - 1), 9):
        assert call("__vdso_clock_gettime", clk, data) == (0, struct.pack("<qq", 3, 456) + b"\xaa" * 16)
        assert calls.pop() == (228, clk, data)
    assert call("__vdso_clock_gettime", 99, data) == (-22 & (2**64 - 1), b"\xaa" * 32)
    assert call("__vdso_clock_gettime", 1, data)[1][:16] == struct.pack("<qq", mono // 10**9, mono % 10**9)
    assert calls == [(228, 99, data)]


def test_directories_have_a_size():
    """#50 item 7: a directory's size was 0. A /tmp directory has tmpfs's (mm/shmem.c: 2 x BOGO_DIRENT_SIZE,
    20 more per entry), a directory preemu made up (/, the ones above a mount) ext4's 4096; the working
    directory's is the host's st_size (4096 on ext4)."""
    import struct as _s
    from guestkernel import Guest
    g = Guest()
    assert g.call("mkdirat", -100, "/tmp/d", 0o755) == 0
    size = lambda path: (_s.unpack_from("<q", bytes(g.p.read(buf, 144)), 48)[0]   # noqa: E731
                         if g.call("newfstatat", -100, path, buf, 0) == 0 else None)
    buf = g.alloc(144)
    assert size("/tmp/d") == 40
    assert g.call("mkdirat", -100, "/tmp/d/e", 0o755) == 0 and g.open("/tmp/d/f", 0o101) >= 0
    assert size("/tmp/d") == 80 and size("/") == 4096
