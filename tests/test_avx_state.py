"""--cpu v3/v4 (issue #46 item 3): a resume is compared on the vector state the binary's own asyncPreempt saves
(goruntime/stubsaves.py), and the AVX instructions preemu executes itself reach memory through the engine's page
protections and memory hooks (engine/avxmem.py)."""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import keystone
import pytest
from unicorn import (UC_ARCH_X86, UC_ERR_WRITE_PROT, UC_HOOK_INTR, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UC_MODE_64,
                     UC_PROT_READ, Uc)
from unicorn import x86_const as X

import emu
from emu import cli
from emu.core import cpulevel, stubgen
from emu.engine import avx, avxmem
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.goruntime.goprocess import GoProcess
from emu.goruntime import stubsaves

from conftest import DATA, ROOT

CORPUS = ROOT / "scenarios" / "go" / "stubcorpus"
HOST_AVX512 = "avx512f" in Path("/proc/cpuinfo").read_text()


def _image(level: str, simd: bool | None):
    return elfimage.load(str(gobuild.build(CORPUS, goamd64=level, simd=simd).binary))


# --- what is compared: the stub's own dispatch -------------------------------------------------------------
@pytest.mark.parametrize("level", ["v3", "v4"])
def test_the_compared_state_is_read_from_the_stubs_dispatch(level):
    default, simd = _image(level, False), _image(level, None)
    for image, paths in ((default, frozenset()), (simd, frozenset({"avx2", "avx512"}))):
        at, size = image.symbols["runtime.asyncPreempt.abi0"]
        assert stubsaves.dispatch(image.text_bytes(at, size), at, image.symbols["internal/cpu.X86"][0]) == paths
    for name, want in (("v1", "XMM0-15"), ("v3", "Y0-15"), ("v4", "Z0-31 and K0-7")):
        lvl = cpulevel.level(name)
        at = simd.symbols["runtime.asyncPreempt.abi0"][0]
        assert stubsaves.compared(lvl, simd, at).describe() == want
        assert stubsaves.compared(lvl, default, default.symbols["runtime.asyncPreempt.abi0"][0]).describe() == "XMM0-15"
        assert stubsaves.compared(lvl, default, at, b"\xc3") == lvl.state         # a --stub: all the level has


@pytest.mark.parametrize("level", ["v3", "v4"])
def test_a_default_build_at_its_level_sweeps_clean_on_what_its_stub_saves(level):
    """A GOAMD64=v3/v4 build without GOEXPERIMENT=simd: its stub keeps X0-15 only, so Y/Z/K are neither
    compared nor poisoned (they were: 16-180 `register Y0..Y15` violations at boundary 0)."""
    binary = gobuild.build(CORPUS, goamd64=level, simd=False).binary
    rep = emu.sweep(str(binary), "main.spin", max_points=40, to_exit=0, cpu=level)
    assert rep.ok, rep.render()
    assert rep.result.injected >= 30
    text = rep.render()
    assert "RFLAGS and XMM0-15 bit-exact" in text
    assert f"At --cpu {level} the binary's asyncPreempt saves only XMM0-15 (no AVX save path" in text


def test_explain_at_v3_compares_a_default_builds_xmm_registers():
    from conftest import cli_run
    binary = gobuild.build(CORPUS, goamd64="v3", simd=False).binary
    code, out, _ = cli_run("explain", str(binary), "--func", "main.spin", "--at", "30", "--cpu", "v3")
    assert code == 0 and "32 registers compared with the interrupted state: all equal" in out
    assert "XMM15 0x" in out and "    Y0 0x" not in out


def test_a_users_stub_is_held_to_the_whole_level():
    """--stub: the SSE-only generated stub over the same default v3 build must keep Y0-15 (and fails)."""
    binary = gobuild.build(CORPUS, goamd64="v3", simd=False).binary
    rep = emu.sweep(str(binary), "main.spin", stub=str(stubgen.stub_path("go1.27")), max_points=10, to_exit=0,
                    cpu="v3")
    assert not rep.ok
    named = {v.what for v in rep.result.violations if v.kind == "register"}
    assert named and all(n.startswith("register Y") or n.startswith("Y") for n in named), named


# --- memory: page protections ------------------------------------------------------------------------------
@pytest.mark.parametrize("level", ["v3", "v4"])
def test_avx_stores_and_loads_fault_as_natively(level):
    """memmove/memclr's VMOVDQU/VMOVDQA into a read-only page and out of an unmapped one: SIGSEGV with nothing
    written (before: a 512-byte copy into a read-only page wrote 415 bytes), the fault's address as natively."""
    if level == "v4" and not HOST_AVX512:
        pytest.skip("this host has no AVX-512: no native v4 run to compare with")
    binary = gobuild.build(DATA / "go" / "avxfault", goamd64=level).binary
    native = subprocess.run([str(binary)], capture_output=True, timeout=60).stdout
    out = []
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["avxfault"], cpu=level,
                        passthrough=lambda _s, b: out.append(b)))
    p.run()
    assert p.error is None and p.exit_code == 0
    assert b"".join(out) == native
    assert b"read-only page changed: 0\n" in native and b"writable page got: 192 read-only page changed: 0" in native
    assert sum(s.sig == 11 for s in p.watch.signals) == 4


def _uc() -> Uc:
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(0x1000, 0x1000)
    uc.mem_map(0x10000, 0x1000)                        # writable
    uc.mem_map(0x11000, 0x1000, UC_PROT_READ)          # read-only
    return uc


def test_a_vector_store_to_a_read_only_page_faults_before_writing_anything():
    uc = _uc()
    mem = avxmem.VectorMemory(uc)
    with pytest.raises(avxmem.VectorFault) as e:
        mem.write(0x11000 - 16, b"\x55" * 32)           # crosses into the read-only page
    assert (e.value.errno, e.value.addr) == (UC_ERR_WRITE_PROT, 0x11000)
    assert bytes(uc.mem_read(0x11000 - 16, 16)) == bytes(16)          # its writable half untouched too


@pytest.mark.parametrize("text,size", [("vmovsd qword ptr [rax], xmm3", 8),            # on the host (hostexec)
                                       ("vpextrq qword ptr [rax], xmm3, 1", 8),
                                       ("vmovdqu ymmword ptr [rax], ymm3", 32)])        # in Python (avxexec._mov)
def test_a_store_over_a_read_only_page_faults_on_the_instruction_with_nothing_written(text, size):
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(text, 0x1000)[0])
    uc = _uc()
    uc.mem_write(0x1000, code + b"\x90")
    unit = avx.VectorUnit(uc, cpulevel.level("v3"))
    unit.patch([(0x1000, code)])
    uc.reg_write(X.UC_X86_REG_RAX, 0x11000 - size // 2)
    uc.reg_write(X.UC_X86_REG_YMM3, (1 << 256) - 1)
    uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: unit.trap() and unit.fault is None or uc.emu_stop())
    uc.emu_start(0x1000, 0x1000 + len(code))
    assert unit.fault is not None and (unit.fault.errno, unit.fault.addr) == (UC_ERR_WRITE_PROT, 0x11000)
    assert uc.reg_read(X.UC_X86_REG_RIP) == 0x1000                               # on the instruction
    assert bytes(uc.mem_read(0x11000 - size // 2, size // 2)) == bytes(size // 2)   # its writable half untouched


def test_a_masked_store_touches_only_its_elements_and_faults_only_for_them():
    """vmovdqu8 [rax] {k1}, zmm0 over a page boundary: masked-off bytes on the read-only page do not fault."""
    code = bytes.fromhex("62f17f497f00")               # vmovdqu8 zmmword ptr [rax] {k1}, zmm0
    for k1, faults in ((0xFFFF, False), (1 << 40, True)):
        uc = _uc()
        uc.mem_write(0x1000, code + b"\x90")
        unit = avx.VectorUnit(uc, cpulevel.level("v4"))
        unit.patch([(0x1000, code)])
        uc.reg_write(X.UC_X86_REG_RAX, 0x11000 - 32)
        uc.reg_write(X.UC_X86_REG_ZMM0, int.from_bytes(bytes(range(1, 65)), "little"))
        unit.vf.k[1] = k1
        seen = []
        unit.mem.hook_add(UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, lambda _uc, acc, a, n, v, _u: seen.append((a, n)),
                          None, 0x10000, 0x11FFF)
        uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: unit.trap() and unit.fault is None or uc.emu_stop())
        uc.emu_start(0x1000, 0x1000 + len(code))
        if faults:
            assert unit.fault is not None and unit.fault.addr == 0x11000 + 8 and seen == []
            assert uc.reg_read(X.UC_X86_REG_RIP) == 0x1000                       # on the instruction
        else:
            assert unit.fault is None
            assert bytes(uc.mem_read(0x11000 - 32, 32)) == bytes(range(1, 17)) + bytes(16)
            assert seen == [(0x11000 - 32, 8), (0x11000 - 24, 8)]


def test_vpinsrq_replaces_one_lane_and_zeroes_the_upper_bits():
    """VPINSRQ (the runtime's inlined map hash at v3 builds its input with it)."""
    import keystone
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm("vpinsrq xmm0, xmm1, rcx, 1", 0x1000)[0])
    uc = _uc()
    uc.mem_write(0x1000, code + b"\x90")
    unit = avx.VectorUnit(uc, cpulevel.level("v3"))
    unit.patch([(0x1000, code)])
    uc.reg_write(X.UC_X86_REG_ZMM0, (1 << 300) | 5)
    uc.reg_write(X.UC_X86_REG_XMM1, (7 << 64) | 0x1234)
    uc.reg_write(X.UC_X86_REG_RCX, 0xABCD)
    uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: unit.trap() and unit.error is None or uc.emu_stop())
    uc.emu_start(0x1000, 0x1000 + len(code))
    assert unit.error is None and uc.reg_read(X.UC_X86_REG_ZMM0) == (0xABCD << 64) | 0x1234


# --- memory: the --gc watch ----------------------------------------------------------------------------------
def test_an_avx_load_of_freed_memory_is_a_use_after_free():
    """bytes.IndexByte over a buffer the GC freed: at v3 its first access is VMOVDQU, run by preemu (before,
    unseen by the watch: it hooked the engine's accesses only)."""
    out = io.StringIO()
    code = cli.main(["sweep", str(DATA / "go" / "gcavx"), "--func", "hidden", "--gc=scan", "--cpu", "v3",
                     "--max-points", "40", "--to-exit", "0", "--json"], out)
    j = json.loads(out.getvalue())
    uaf = [v for v in j["violations"] if v["kind"] == "use-after-free"]
    assert code == 1 and uaf, j["violations"]
    assert all(v["insn"].startswith("vmovdqu ymm") and v["where"].endswith("indexbyte_amd64.s:131") for v in uaf)


# --- the signal frame's XSTATE_BV and the handler's FPU state, as Linux has them (issue #48) -------------------
SIGUSR1 = 10
_SA = 0x04000000 | 4                       # SA_RESTORER | SA_SIGINFO


def _signalled(level: str, zmm: dict, kregs=(), mxcsr=0x1F80):
    """A process at `level` (loaded, not run) whose main thread, with `zmm` ({i: 512-bit value}), K0-K7 `kregs`
    and `mxcsr` loaded, has just been delivered SIGUSR1: (process, thread, the frame's fpstate address)."""
    from guestkernel import image
    p = GoProcess(image(), process.Options(argv=["prog"], cpu=level), oracle=None)
    t = p.threads[p.pid]
    p.cur = t
    p.uc.context_restore(t.ctx)
    for i, v in zmm.items():
        p.avx.vf.set_zmm(i, v)
    p.avx.set_kregs(kregs or (0,) * 8)
    p.uc.reg_write(X.UC_X86_REG_MXCSR, mxcsr)
    p.sigactions[SIGUSR1] = (0x401100, _SA, 0x401200, 0)
    assert p.send_signal(t, t.tid, SIGUSR1) == 0
    p._deliver(t, SIGUSR1)
    return p, t, t.frames[-1].fpstate


def _xstate_bv(p, fpstate: int) -> int:
    return int.from_bytes(p.read(fpstate + 512, 8), "little")


def _sigreturn(p, t):
    p.uc.reg_write(X.UC_X86_REG_RSP, t.frames[-1].frame + 8)        # the handler returned to the restorer
    p._finish_sigreturn(t)


def _zmms(p, n=32):
    return [p.avx.vf.zmm(i) for i in range(n)]


@pytest.mark.parametrize("level", ["v3", "v4"])
def test_xstate_bv_is_xinuse_with_x87_and_sse_always_set(level):
    """copy_fpstate_to_sigframe: XSAVE writes XINUSE (0 only for a component in its initial configuration,
    here exactly then), save_xstate_epilog sets the x87 and SSE bits whatever they are."""
    xcr0 = cpulevel.level(level).xcr0
    p, _, fp = _signalled(level, {})
    assert _xstate_bv(p, fp) == 0x3                               # nothing above the XMM halves in use
    p, _, fp = _signalled(level, {3: 5})
    assert _xstate_bv(p, fp) == 0x3                               # an XMM register alone: SSE
    p, _, fp = _signalled(level, {3: 5 << 128})
    assert _xstate_bv(p, fp) == 0x7                               # a Y upper half: AVX
    if level == "v4":
        assert _xstate_bv(_signalled(level, {7: 1 << 300})[0], _signalled(level, {7: 1 << 300})[2]) == 0x43
        p, _, fp = _signalled(level, {20: 1}, kregs=(0, 0, 9, 0, 0, 0, 0, 0))
        assert _xstate_bv(p, fp) == 0x3 | 0x20 | 0x80 and xcr0 == 0xE7
    else:
        assert xcr0 == 0x7


@pytest.mark.parametrize("level", ["v3", "v4"])
def test_the_handler_starts_from_linuxs_init_fpu_state(level):
    """handle_signal's fpu__clear_user_states: the handler sees every vector and mask register zero, MXCSR
    0x1F80 and FCW 0x37F, not the interrupted state (which the frame keeps, and rt_sigreturn puts back)."""
    z = {0: (1 << 511 if level == "v4" else 1 << 255) | 3, 9: 7 << 130, 15: 1 << 200}
    if level == "v4":
        z[31] = 1 << 77
    k = (0, 1, 2, 3, 4, 5, 6, 7) if level == "v4" else ()
    p, t, _ = _signalled(level, z, kregs=k, mxcsr=0x9FC0)
    assert _zmms(p) == [0] * 32 and p.avx.kregs() == (0,) * 8
    assert p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x1F80 and p.uc.reg_read(X.UC_X86_REG_FPCW) == 0x37F
    _sigreturn(p, t)
    assert _zmms(p) == [z.get(i, 0) for i in range(32)] and p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x9FC0
    assert p.avx.kregs() == (k or (0,) * 8) and not p.watch.violations and 11 not in t.pending


def test_rt_sigreturn_honours_xstate_bv_and_the_features_the_frame_names():
    """XRSTOR from the frame (restore_fpregs_from_user): a component whose XSTATE_BV bit the handler cleared comes
    back in its initial configuration, so does one the software bytes' xfeatures leave out; the rest loads."""
    z = {1: (1 << 400) | (1 << 200) | 1, 2: 1 << 140, 18: 5}
    p, t, fp = _signalled("v4", z, kregs=(0, 0, 0, 9, 0, 0, 0, 0))
    assert _xstate_bv(p, fp) == 0xE7
    p.write(fp + 512, (0xE7 & ~(1 << 6)).to_bytes(8, "little"))   # ZMM_Hi256 initialised: bits 256-511 of Z0-15
    _sigreturn(p, t)
    assert _zmms(p)[:3] == [0, (1 << 200) | 1, 1 << 140] and p.avx.vf.zmm(18) == 5 and p.avx.kregs()[3] == 9
    p, t, fp = _signalled("v4", z, kregs=(0, 0, 0, 9, 0, 0, 0, 0))
    p.write(fp + 512, (0xE7 & ~(1 << 1) & ~(1 << 5)).to_bytes(8, "little"))   # the XMM halves and K0-K7
    p.write(fp + 464 + 8, (0xE7 & ~(1 << 7)).to_bytes(8, "little"))          # fx_sw.xfeatures without Hi16_ZMM
    _sigreturn(p, t)
    assert _zmms(p)[:3] == [0, (1 << 400) | (1 << 200), 1 << 140] and p.avx.vf.zmm(18) == 0
    assert p.avx.kregs() == (0,) * 8 and not p.watch.violations


def test_a_frame_whose_software_bytes_do_not_check_out_restores_the_fxsave_image_alone():
    """check_xstate_in_sigframe: a wrong FP_XSTATE_MAGIC2 makes it fx_only; FXRSTOR loads the XMM halves and
    MXCSR and every extended component is initialised."""
    z = {4: (3 << 300) | (2 << 130) | 1, 20: 9}
    p, t, fp = _signalled("v4", z, kregs=(1,) * 8, mxcsr=0x1FC0)
    size = int.from_bytes(p.read(fp + 464 + 16, 4), "little")
    p.write(fp + size, b"\0\0\0\0")
    _sigreturn(p, t)
    assert p.avx.vf.zmm(4) == 1 and p.avx.vf.zmm(20) == 0 and p.avx.kregs() == (0,) * 8
    assert p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x1FC0 and 11 not in t.pending


@pytest.mark.parametrize("level,bv", [("v3", 0x23), ("v4", 0xE7 | 1 << 9)])
def test_an_xstate_bv_bit_xcr0_lacks_is_xrstors_gp_and_a_sigsegv(level, bv):
    """XRSTOR raises #GP for an XSTATE_BV bit XCR0 does not enable (the opmask at v3, bit 9 anywhere); the
    restore fails, the FPU is reset (fpu__clear_user_states) and rt_sigreturn's badframe forces SIGSEGV."""
    p, t, fp = _signalled(level, {2: 1 << 140}, mxcsr=0x9FC0)
    p.write(fp + 512, bv.to_bytes(8, "little"))
    _sigreturn(p, t)
    assert 11 in t.pending and t.pending[11].forced and "XCR0" in t.pending[11].fault
    assert p.avx.vf.zmm(2) == 0 and p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x1F80


def test_mxcsr_reserved_bits_in_the_frame_are_a_sigsegv_and_a_valid_mxcsr_loads():
    """XRSTOR loads MXCSR when SSE or AVX is requested and raises #GP for its reserved bits (bits 16-31)."""
    p, t, fp = _signalled("v3", {}, mxcsr=0x1F80)
    p.write(fp + 24, (0x9FC0 | 1 << 16).to_bytes(4, "little"))
    _sigreturn(p, t)
    assert 11 in t.pending and "MXCSR" in t.pending[11].fault and p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x1F80
    p, t, fp = _signalled("v3", {}, mxcsr=0x1F80)
    p.write(fp + 24, (0x9FC0).to_bytes(4, "little"))
    _sigreturn(p, t)
    assert 11 not in t.pending and p.uc.reg_read(X.UC_X86_REG_MXCSR) == 0x9FC0
