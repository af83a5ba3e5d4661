"""--cpu v3/v4: the engine facts the design rests on, preemu's AVX executor, and real v3/v4 programs."""
from __future__ import annotations

import struct
import subprocess

import keystone
import pytest
from unicorn import UC_ARCH_X86, UC_HOOK_INTR, UC_MODE_64, Uc, UcError
from unicorn import x86_const as X

from emu.core import cpulevel
from emu.engine import avx, avxexec
from emu.front import gobuild
from emu.core import cpuid
from emu.linux import elfimage, process
from emu.goruntime.goprocess import GoProcess

from conftest import DATA, cli_run

_ks = keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64)
CODE, DATA_AT = 0x1000, 0x10000


def _asm(text: str) -> bytes:
    return bytes(_ks.asm(text, CODE)[0])


def _uc(code: bytes) -> Uc:
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(CODE, 0x1000)
    uc.mem_map(DATA_AT, 0x10000)
    uc.mem_write(CODE, code)
    uc.reg_write(X.UC_X86_REG_RAX, DATA_AT)
    return uc


# --- what Unicorn 2.1.4 does with AVX (the reasons for engine/avx.py's design) -------------------------
def test_unicorn_runs_vex128_as_legacy_sse_silently_wrong():
    uc = _uc(_asm("vpxor xmm0, xmm1, xmm2"))
    uc.reg_write(X.UC_X86_REG_XMM0, 0xDEAD)
    uc.reg_write(X.UC_X86_REG_XMM1, 0x1111)
    uc.reg_write(X.UC_X86_REG_XMM2, 0x2222)
    uc.emu_start(CODE, CODE + 4)
    assert uc.reg_read(X.UC_X86_REG_XMM0) == 0xDEAD ^ 0x2222       # not 0x1111 ^ 0x2222: VEX.vvvv ignored


@pytest.mark.parametrize("text", ["vmovdqu ymm0, [rax]", "vfmadd231sd xmm0, xmm1, xmm2", "vpcmpeqb ymm0, ymm1, [rax]"])
def test_unicorn_rejects_vex256_and_fma(text):
    code = _asm(text)
    with pytest.raises(UcError, match="INSN_INVALID"):
        _uc(code).emu_start(CODE, CODE + len(code))


def test_unicorn_rejects_evex_and_keeps_zmm_whole():
    code = bytes.fromhex("62f1fe486f00")              # vmovdqu64 zmm0, [rax]
    uc = _uc(code)
    with pytest.raises(UcError, match="INSN_INVALID"):
        uc.emu_start(CODE, CODE + len(code))
    big = int.from_bytes(bytes(range(1, 65)), "little")
    uc.reg_write(X.UC_X86_REG_ZMM17, big)
    ctx = uc.context_save()
    uc.reg_write(X.UC_X86_REG_ZMM17, 0)
    uc.context_restore(ctx)
    assert uc.reg_read(X.UC_X86_REG_ZMM17) == big        # all 512 bits, in a saved context too


def test_unicorn_runs_vex_bmi_correctly():
    uc = _uc(_asm("andn rax, rbx, rcx; shlx rdx, rbx, rcx"))
    uc.reg_write(X.UC_X86_REG_RBX, 0xF0F0)
    uc.reg_write(X.UC_X86_REG_RCX, 3)
    uc.emu_start(CODE, CODE + 10)
    assert uc.reg_read(X.UC_X86_REG_RAX) == ~0xF0F0 & 3 and uc.reg_read(X.UC_X86_REG_RDX) == 0xF0F0 << 3


def test_int3_site_counts_as_one_instruction_under_count():
    code = bytearray(_asm("mov rbx, 1; vmovdqu ymm0, [rax]; add rbx, 2; add rbx, 4"))
    unit_sites = {CODE + 7: 4}
    code[7] = avx.INT3
    for count, rbx in ((1, 1), (2, 1), (3, 3), (4, 7)):
        uc = _uc(bytes(code))
        uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: uc.reg_write(
            X.UC_X86_REG_RIP, uc.reg_read(X.UC_X86_REG_RIP) - 1 + unit_sites[uc.reg_read(X.UC_X86_REG_RIP) - 1]))
        uc.emu_start(CODE, CODE + len(code), count=count)
        assert uc.reg_read(X.UC_X86_REG_RBX) == rbx


# --- the executor ----------------------------------------------------------------------------------------
def _run(text, level: str = "v3", setup=None) -> Uc:
    code = text if isinstance(text, bytes) else _asm(text)      # bytes: what Keystone cannot assemble (K regs)
    uc = _uc(code + b"\x90")
    unit = avx.VectorUnit(uc, cpulevel.level(level))
    assert unit.patch([(CODE, code)]) >= 1
    uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: unit.trap() and unit.error is None or uc.emu_stop())
    if setup:
        setup(uc, unit)
    uc.emu_start(CODE, CODE + len(code))
    if unit.error:
        raise unit.error
    uc.unit = unit
    return uc


@pytest.fixture(params=["host", "avx2-host"])
def host(request, monkeypatch):
    """The host CPU as it is, and as an AVX2-only one (its AVX-512 features hidden: the routines' frame then moves
    YMM0-15 only, and bits 256-511 of what a VEX instruction writes are hostexec's to zero)."""
    from emu.engine import hostcpu
    if request.param == "avx2-host":
        real = hostcpu.get()
        monkeypatch.setattr(hostcpu, "_HOST", hostcpu.HostCpu(hide=frozenset(
            f for f in real.features if f.startswith("AVX512"))))
        assert not hostcpu.get().wide
    return hostcpu.get()


def test_vex_three_operand_and_upper_zeroing(host):
    def setup(uc, _):
        uc.reg_write(X.UC_X86_REG_ZMM0, (0xFF << 300) | 0xDEAD)
        uc.reg_write(X.UC_X86_REG_XMM1, 0x1111)
        uc.reg_write(X.UC_X86_REG_XMM2, 0x2222)
        uc.reg_write(X.UC_X86_REG_ZMM3, (0xAB << 400) | 7)
    uc = _run("vpxor xmm0, xmm1, xmm2; vptest ymm3, ymm3", setup=setup)
    assert uc.reg_read(X.UC_X86_REG_ZMM0) == 0x3333      # a VEX.128 write zeroes bits 128-511
    assert uc.reg_read(X.UC_X86_REG_ZMM3) == (0xAB << 400) | 7      # a register only read keeps them


def test_ymm_load_store_and_vzeroupper(host):
    def setup(uc, _):
        uc.mem_write(DATA_AT, bytes(range(32)))
        uc.reg_write(X.UC_X86_REG_ZMM6, 1 << 500)
    uc = _run("vmovdqu ymm5, [rax]; vmovdqu [rax + 64], ymm5; vpaddq ymm6, ymm5, [rax]; vmovdqu [rax + 128], ymm6",
              setup=setup)
    assert uc.unit.executed == 4, f"the engine stopped at {uc.reg_read(X.UC_X86_REG_RIP) - CODE:#x}"
    assert uc.reg_read(X.UC_X86_REG_YMM5) == int.from_bytes(bytes(range(32)), "little")
    assert bytes(uc.mem_read(DATA_AT + 64, 32)) == bytes(range(32))          # _mov's store
    want = b"".join((2 * int.from_bytes(bytes(range(i, i + 8)), "little")).to_bytes(8, "little") for i in (0, 8, 16, 24))
    assert uc.reg_read(X.UC_X86_REG_ZMM6) == int.from_bytes(want, "little")  # the host's, bits 256-511 zeroed
    assert bytes(uc.mem_read(DATA_AT + 128, 32)) == want
    uc2 = _run("vzeroupper", setup=lambda uc, _: uc.reg_write(X.UC_X86_REG_YMM3, (7 << 200) | 9))
    assert uc2.reg_read(X.UC_X86_REG_YMM3) == 9


@pytest.mark.parametrize("operand,regs", [(f"[rcx*4 + {DATA_AT:#x}]", {"RCX": 16}),      # SIB, no base: disp32
                                          ("[r9 + r10*2 + 8]", {"R9": DATA_AT + 40, "R10": 8}),   # VEX.X and .B
                                          ("[rip + 0x10000 - 4]", {})], ids=["no-base", "r9-r10", "rip"])
def test_a_host_executed_operand_is_read_from_its_address(operand, regs):
    """hostexec re-encodes the memory operand against its scratch: every addressing form reads the guest's bytes
    at the address the CPU computes (here DATA_AT + 64; the RIP-relative one from where the instruction sits)."""
    code = _asm(f"vpaddq ymm6, ymm5, ymmword ptr {operand}")
    if operand.startswith("[rip"):
        code = _asm(f"vpaddq ymm6, ymm5, ymmword ptr [rip + {DATA_AT + 64 - CODE - len(code):#x}]")

    def setup(uc, _):
        uc.mem_write(DATA_AT + 64, bytes(range(32)))
        uc.reg_write(X.UC_X86_REG_YMM5, 0)
        for r, v in regs.items():
            uc.reg_write(getattr(X, f"UC_X86_REG_{r}"), v)
    uc = _run(code, setup=setup)
    assert uc.reg_read(X.UC_X86_REG_YMM6) == int.from_bytes(bytes(range(32)), "little")


def test_bytealg_instructions():
    def setup(uc, _):
        uc.mem_write(DATA_AT, b"x" * 31 + b"a")
        uc.reg_write(X.UC_X86_REG_XMM1, ord("a"))
    uc = _run("vpbroadcastb ymm1, xmm1; vpcmpeqb ymm2, ymm1, [rax]; vpmovmskb ecx, ymm2; vptest ymm2, ymm2",
              setup=setup)
    assert uc.reg_read(X.UC_X86_REG_RCX) == 1 << 31
    assert not uc.reg_read(X.UC_X86_REG_EFLAGS) & 0x40            # ZF clear: a match
    uc = _run("vptest ymm2, ymm2", setup=lambda uc, _: uc.reg_write(X.UC_X86_REG_EFLAGS, 0x2))
    assert uc.reg_read(X.UC_X86_REG_EFLAGS) & 0x41 == 0x41           # ZF and CF set: no match (the host's flags)


def test_fma_rounds_once():
    a, b, c = 1 + 2.0 ** -30, 1 - 2.0 ** -30, -1.0                 # a*b = 1 - 2^-60: lost by a*b rounded first

    def setup(uc, _):
        for r, v in ((X.UC_X86_REG_XMM0, c), (X.UC_X86_REG_XMM1, a), (X.UC_X86_REG_XMM2, b)):
            uc.reg_write(r, struct.unpack("<Q", struct.pack("<d", v))[0])
    uc = _run("vfmadd231sd xmm0, xmm1, xmm2", setup=setup)
    got = struct.unpack("<d", struct.pack("<Q", uc.reg_read(X.UC_X86_REG_XMM0) & (2 ** 64 - 1)))[0]
    assert got == -(2.0 ** -60) and a * b + c == 0.0


def test_kmov_keeps_k_registers_beside_unicorn():
    uc = _run(bytes.fromhex("c4e1fb92db" "c4e1fb93cb"), level="v4",         # kmovq k3, rbx; kmovq rcx, k3
              setup=lambda uc, _: uc.reg_write(X.UC_X86_REG_RBX, 0xABC))
    assert uc.unit.vf.k[3] == 0xABC and uc.reg_read(X.UC_X86_REG_RCX) == 0xABC


def test_unsupported_and_above_level_name_pc_instruction_and_level():
    with pytest.raises(avxexec.Unsupported, match=r"an instruction of VAES, which the CPU at --cpu v3 does not have "
                                                  r"\(invalid opcode\) at 0x1000: vaesenc ymm0, ymm1, ymm2 \(--cpu v3\)"):
        _run(bytes.fromhex("c4e275dcc2"))                                  # (Keystone has no VAES)
    with pytest.raises(avxexec.Unsupported, match=r"a gather or scatter \(VSIB addressing\), which preemu does not "
                                                  r"execute at 0x1000: vpgatherdd"):
        _run("vpgatherdd ymm0, [rax + ymm1*4], ymm2")
    with pytest.raises(avxexec.Unsupported, match=r"x86-64-v4 \(invalid opcode at this level\) at 0x1000: kmovq"):
        _run(bytes.fromhex("c4e1fb92c8"), level="v3")                      # kmovq k1, rax


def test_xgetbv_and_cpuid_at_each_level():
    uc = _run("xgetbv", level="v4")
    assert uc.reg_read(X.UC_X86_REG_RAX) == 0xE7
    v1, v3, v4 = (cpuid.cpuid(7, 0, cpulevel.level(n))[1] for n in ("v1", "v3", "v4"))
    assert not v1 & cpulevel.AVX2 and v3 & cpulevel.AVX2 and not v3 & cpulevel.AVX512F and v4 & cpulevel.AVX512F
    assert cpuid.cpuid(1, 0, cpulevel.level("v1")) == cpuid.cpuid(1, 0)          # v1: today's CPU, unchanged
    assert cpuid.cpuid(1, 0, cpulevel.level("v3"))[2] & cpulevel.OSXSAVE


# --- real programs ---------------------------------------------------------------------------------------
def _exec(binary, level: str) -> tuple[process.Process, bytes]:
    out = []
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["avx"], cpu=level,
                        passthrough=lambda _s, b: out.append(b)))
    p.run()
    return p, b"".join(out)


@pytest.mark.parametrize("level", ["v3", "v4"])
def test_level_binary_runs_as_natively(level):
    binary = gobuild.build(DATA / "go" / "avx", goamd64=level).binary
    native = subprocess.run([str(binary)], capture_output=True, timeout=60).stdout
    p, out = _exec(binary, level)
    assert p.error is None and p.exit_code == 0
    assert out == native and b"ok 3145728" in out
    assert p.avx.executed > 10_000                        # the runtime's AVX2 memmove/memclr/bytealg ran here


def test_v1_has_no_vector_unit():
    p, out = _exec(gobuild.build(DATA / "go" / "avx").binary, "v1")
    assert p.avx is None and p.exit_code == 0 and b"ok" in out


def test_cli_cpu_and_no_abbreviations():
    code, _, err = cli_run("exec", str(DATA / "go" / "avx"), "--cpu", "v5")
    assert code == 2 and "invalid choice: 'v5'" in err
    code, _, err = cli_run("exec", str(DATA / "go" / "avx"), "--cp", "3")
    assert code == 2 and "unrecognized arguments: --cp" in err


def test_v3_binary_at_v1_is_refused():
    binary = gobuild.build(DATA / "go" / "avx", goamd64="v3").binary
    code, _, err = cli_run("exec", str(binary), "--cpu", "v1")
    assert code == 2 and "needs --cpu v3" in err


# --- the signal frame's XSAVE area -------------------------------------------------------------------------
def test_signal_frame_keeps_the_upper_state_a_handler_clobbers():
    from emu.linux import sigframe, xstate
    uc = _uc(b"\x90")
    uc.mem_map(0x100000, 0x10000)
    uc.reg_write(X.UC_X86_REG_RSP, 0x10F000)
    z5, z17 = int.from_bytes(bytes(range(64)), "little"), (1 << 511) | 7
    uc.reg_write(X.UC_X86_REG_ZMM5, z5)
    uc.reg_write(X.UC_X86_REG_ZMM17, z17)
    xcr0 = cpulevel.level("v4").xcr0
    d = sigframe.setup_rt_frame(uc, sigframe.SigInfo(23), 0x1000, 0x1000, 0, None, False, (xcr0, (0,) * 3 + (9,) + (0,) * 4))
    assert struct.unpack_from("<I", bytes(uc.mem_read(d.fpstate + xstate.SW_BYTES, 4)))[0] == xstate.FP_XSTATE_MAGIC1
    uc.reg_write(X.UC_X86_REG_ZMM5, 0)                    # the handler clobbers Z5 and Z17
    uc.reg_write(X.UC_X86_REG_ZMM17, 0)
    uc.reg_write(X.UC_X86_REG_RSP, d.frame + 8)           # its RET popped pretcode
    r = sigframe.restore_rt_frame(uc, xcr0)
    assert uc.reg_read(X.UC_X86_REG_ZMM5) == z5 and uc.reg_read(X.UC_X86_REG_ZMM17) == z17 and r.kregs[3] == 9


# --- the simd stub, and the AVX paths verified in real programs -------------------------------------------
def test_generated_simd_stub_is_the_binary_stub_instruction_by_instruction():
    import capstone
    from emu.core import stubgen
    from emu.drive import realsweep
    image = elfimage.load(str(gobuild.build(DATA / "go" / "avx", goamd64="v3").binary))
    at, size = image.symbols["runtime.asyncPreempt.abi0"]
    ours = realsweep.stub_code(str(stubgen.stub_path("go1.27", simd=True)), image)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True

    def listing(code: bytes) -> list[tuple]:
        insns = list(md.disasm(code, at))
        index = {i.address: k for k, i in enumerate(insns)}
        out = []
        for i in insns:
            ops = []
            for o in i.operands:
                if o.type == capstone.x86.X86_OP_IMM and i.group(capstone.x86.X86_GRP_JUMP):
                    ops.append(("insn", index.get(o.imm, o.imm)))         # a jump: to which instruction
                elif o.type == capstone.x86.X86_OP_IMM and i.mnemonic == "call":   # asyncPreempt2 (ours calls the
                    ops.append(("func", image.func_at(o.imm)[0].removesuffix(".abi0")))    # ABIInternal entry)
                elif o.type == capstone.x86.X86_OP_MEM and o.mem.base == capstone.x86.X86_REG_RIP:
                    ops.append(("abs", i.address + i.size + o.mem.disp))   # internal/cpu.X86's bytes
                elif o.type == capstone.x86.X86_OP_MEM:
                    ops.append(("mem", o.mem.base, o.mem.index, o.mem.disp, o.mem.segment, o.size))
                else:
                    ops.append((o.type, o.reg if o.type == capstone.x86.X86_OP_REG else o.imm, o.size))
            out.append((i.mnemonic, tuple(ops)))
        return out
    theirs = listing(image.text_bytes(at, size))
    mine = listing(ours)
    assert len(mine) == len(theirs) == 202      # 14 GPRs, X/Y/Z/K saves and restores, the dispatches
    for k, (a, b) in enumerate(zip(mine, theirs)):
        assert a == b, f"instruction {k}: ours {a}, the binary's {b}"
    x86 = image.symbols["internal/cpu.X86"][0]
    assert ("cmp", (("abs", x86 + 69), (2, 1, 1))) in mine and ("cmp", (("abs", x86 + 68), (2, 1, 1))) in mine


@pytest.mark.parametrize("level", ["v3", "v4"])
def test_simd_program_sweeps_clean_with_its_own_and_the_generated_stub(level):
    import emu
    for stub in (None, "generated"):
        rep = emu.sweep(str(DATA / "go" / "simdspin"), "main.spin", stub=stub, max_points=40, to_exit=0,
                        args=["20"], cpu=level)
        assert rep.ok, rep.render()
        assert rep.result.injected >= 30
        # the OK line says which vector state every resume compared at the level
        assert ("Y0-15 bit-exact" if level == "v3" else "Z0-31 and K0-7 bit-exact") in rep.render()


@pytest.mark.parametrize("level,names", [("v3", ["Y5"]), ("v4", ["Z5", "Z17", "K3"])])
def test_a_stub_missing_an_avx_restore_is_caught_and_named(level, names):
    from emu.drive import checkstub
    results = checkstub.run_mutants("go1.27", 30, cpu=level)
    assert [r.mutant.name for r in results] == [f"drop-restore-{n}" for n in names]
    assert all(r.killed for r in results), [(r.mutant.name, r.named) for r in results]
    assert [r.named for r in results] == [[n] for n in names]


def test_explain_shows_and_compares_the_levels_registers():
    code, out, _ = cli_run("explain", str(DATA / "go" / "simdspin"), "--func", "main.spin", "--at", "30", "--cpu", "v3",
                           "--", "5")
    assert code == 0 and "32 registers compared with the interrupted state: all equal" in out
    import re
    assert re.search(r" Y0\s+0x", out) and re.search(r" Y15\s+0x", out)       # two to a line, wrapped at 120
    import emu.check.mutants as M
    from emu.core import layout
    stub = next(m for level, m in M.generate_avx(layout.get_layout("go1.27")) if m.name == "drop-restore-Y5")
    path = DATA.parent / "_tmp_drop_y5.s"
    try:
        path.write_text(stub.text)
        code, out, _ = cli_run("explain", str(DATA / "go" / "simdspin"), "--func", "main.spin", "--at", "30",
                               "--cpu", "v3", "--stub", str(path), "--", "5")
    finally:
        path.unlink()
    assert "1 differs" in out and "Y5" in out.split("1 differs", 1)[1].split("\n[", 1)[0]


def test_simd_stub_passes_the_real_corpus_at_v4():
    from emu.core import stubgen
    from emu.drive import checkstub
    rep = checkstub.check(stubgen.stub_path("go1.27", simd=True), "go1.27", 60, ("go:spin", "go:floats"), cpu="v4")
    assert [r.scenario for r in rep.results] == ["go:spin", "go:floats"]
    assert all(r.injected >= 50 and not r.violations for r in rep.results), rep.render()


def test_an_unsupported_instruction_in_a_real_program_stops_it_naming_pc_instruction_level(tmp_path):
    from emu.core import layout, stubgen
    from emu.drive import gstart, realsweep
    text = stubgen.generate(layout.get_layout("go1.27"), simd=True).replace(
        "vmovdqu ymmword ptr [rax + 64], ymm1", ".byte 0xc4, 0xe2, 0x7d, 0xdc, 0xc1", 1)  # vaesenc ymm0, ymm0,
    # ymm1 (VAES, which Keystone lacks): 5 bytes each, it fits
    stub = tmp_path / "shuf.s"
    stub.write_text(text)
    image = elfimage.load(str(gobuild.build(DATA / "go" / "simdspin", goamd64="v3").binary))
    p = gstart.new_process(image, process.Options(argv=["simdspin"], cpu="v3"), None,
                           ("shuf.s", realsweep.stub_code(str(stub), image)))
    p.run()
    msg = str(p.error)
    assert "an instruction of VAES, which the CPU at --cpu v3 does not have (invalid opcode) at 0x" in msg
    assert "vaesenc ymm0, ymm0, ymm1 (--cpu v3)" in msg
    assert "in runtime.asyncPreempt.abi0+0x" in msg
