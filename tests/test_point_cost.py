"""The real-program sweep point made cheaper (issue #39 item 1): each shortcut gives what the long way gave.
The sweeps' own counts and verdicts are pinned by test_realsweep.py and the others; bench/bench_point.py
compares a whole tree against an older one."""
from __future__ import annotations

import random
import struct

import capstone
import pytest
from unicorn import UC_ARCH_X86, UC_MODE_64, Uc
from unicorn import x86_const as X

from emu.engine import x86decode
from emu.linux import regbatch, sigframe

BASE, SIZE = 0x100000, 3 << 20          # three MiB: changed_pages compares a MiB at a time, then its pages


@pytest.fixture
def uc():
    u = Uc(UC_ARCH_X86, UC_MODE_64)
    u.mem_map(BASE, SIZE)
    return u


def test_changed_pages_finds_every_changed_page_and_only_those(uc):
    rng = random.Random(7)
    uc.mem_write(BASE, bytes(rng.getrandbits(8) for _ in range(8192)))
    before = regbatch.mem_read_into(uc, BASE, bytearray(SIZE))
    assert bytes(before[:8192]) == bytes(uc.mem_read(BASE, 8192))
    into = bytearray(SIZE)
    assert regbatch.changed_pages(uc, BASE, before, into) == []
    # the first byte, the last byte of the first MiB, a word across a page boundary, the last byte of all
    for off in (0, (1 << 20) - 1, 5 * 4096 - 4, SIZE - 1):
        uc.mem_write(BASE + off, b"\xAA\xBB\xCC\xDD\xEE\xFF\x11\x22"[:min(8, SIZE - off)])
    got = regbatch.changed_pages(uc, BASE, before, into)
    assert got == [0, 4 * 4096, 5 * 4096, (1 << 20) - 4096, 1 << 20, SIZE - 4096]     # (a write's two pages)
    assert bytes(into) == bytes(uc.mem_read(BASE, SIZE))          # the memory as read
    assert regbatch.changed_pages(uc, BASE, bytes(before), into) == got     # bytes as well as a bytearray


def test_a_saved_contexts_register_reads_as_the_binding_reads_it(uc):
    uc.reg_write(X.UC_X86_REG_RIP, 0x123456789A)
    uc.reg_write(X.UC_X86_REG_R13, (1 << 64) - 3)
    ctx = uc.context_save()
    for r in (X.UC_X86_REG_RIP, X.UC_X86_REG_R13):
        assert regbatch.context_reg(ctx, r) == ctx.reg_read(r)


def test_the_first_instruction_alone_is_what_the_package_decodes_first():
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    for code in (b"\x48\x89\xe5\xc3", b"\xf3\x48\xab", b"\x0f\x05\x90", b"\xc5\xfd\x6f\x06"):
        assert x86decode.first(code, 0x4000) == next(md.disasm_lite(code, 0x4000, 1))
    assert x86decode.first(b"\xff\xff", 0) is None
    assert x86decode.first(b"", 0) is None
    rng = random.Random(7)                  # cs_disasm_iter into one cs_insn (x86decode._Library.first): the same
    for _ in range(3000):                   # instruction as the package's cs_disasm, or None, on any bytes
        code, at = rng.randbytes(rng.randrange(1, 17)), rng.getrandbits(47)
        assert x86decode.first(code, at) == next(md.disasm_lite(code, at, 1), None), code.hex()


@pytest.mark.parametrize("fault", [False, True])
def test_the_frame_packed_in_one_struct_has_every_field_at_its_offset(uc, fault):
    uc.reg_write(X.UC_X86_REG_RSP, BASE + SIZE - 4096)
    uc.reg_write(X.UC_X86_REG_RIP, 0x401234)
    uc.reg_write(X.UC_X86_REG_RAX, 0x1111)
    uc.reg_write(X.UC_X86_REG_R8, 0x8888)
    info = sigframe.SigInfo(11, sigframe.SEGV_MAPERR, addr=0xDEAD, trapno=14, err=6) if fault else \
        sigframe.SigInfo(23, pid=42, uid=7)
    d = sigframe.setup_rt_frame(uc, info, 0x402000, 0x403000, 0x5A5A, None, False)
    b = bytes(uc.mem_read(d.frame, sigframe.FRAME_SIZE))

    def q(off):
        return struct.unpack_from("<Q", b, off)[0]
    assert q(sigframe.PRETCODE) == 0x403000 and q(sigframe.UC_LINK) == 0
    assert q(sigframe.greg_offset("RIP")) == 0x401234 and q(sigframe.greg_offset("RAX")) == 0x1111
    assert q(sigframe.greg_offset("R8")) == 0x8888 and q(sigframe.greg_offset("OLDMASK")) == 0
    assert struct.unpack_from("<QiiQ", b, sigframe.UC_STACK) == (0, sigframe.SS_DISABLE, 0, 0)
    assert struct.unpack_from("<HHHH", b, sigframe.greg_offset("CSGSFS")) == (sigframe.USER_CS, 0, 0, sigframe.USER_SS)
    assert q(sigframe.FPSTATE_PTR) == d.fpstate and q(sigframe.UC_SIGMASK) == 0x5A5A
    assert (q(sigframe.greg_offset("ERR")), q(sigframe.greg_offset("TRAPNO")), q(sigframe.greg_offset("CR2"))) == \
        ((6, 14, 0xDEAD) if fault else (0, 0, 0))
    if fault:
        assert struct.unpack_from("<iiiiQ", b, sigframe.SIGINFO) == (11, 0, sigframe.SEGV_MAPERR, 0, 0xDEAD)
    else:
        assert struct.unpack_from("<iiiiIIi", b, sigframe.SIGINFO) == (23, 0, sigframe.SI_TKILL, 0, 42, 7, 0)
    assert b[sigframe.SIGINFO + 28:] == bytes(sigframe.FRAME_SIZE - sigframe.SIGINFO - 28)
    uc.reg_write(X.UC_X86_REG_RSP, d.frame + 8)                     # the handler's RET popped pretcode
    restored = sigframe.restore_rt_frame(uc)
    assert restored.vals == d.vals and restored.regs["RIP"] == 0x401234 and restored.sigmask == 0x5A5A
