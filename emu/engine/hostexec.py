"""One guest instruction executed on the host CPU (hostcpu.py): exact by construction.

For an instruction at a site (avx.py), `plan` decodes it once (Capstone) and prepares:
- the features it needs: Capstone's groups (avx, avx2, fma, bmi2, avx512, bwi, ...) plus the extensions its
  groups do not name (VAES and VPCLMULQDQ for their 256/512-bit or EVEX forms, GFNI, VBMI, VBMI2, VNNI,
  BITALG, VPOPCNTDQ, IFMA); one the guest's CPU at the level lacks (its CPUID, core/cpuid.py) is the
  invalid opcode the CPU would raise, one the host lacks is refused: Unsupported naming both;
- the registers it names or Capstone says it reads or writes implicitly (MULX's RDX, VPCMPESTRI's RCX; and
  XMM0 of VPCMPISTRM/VPCMPESTRM, which Capstone leaves out): the vector ones by number (all 512 bits move),
  the opmasks, the GPRs as their 64-bit registers;
- its memory operand, re-encoded: ModRM becomes mod=00 rm=101 (RIP-relative) with a disp32 that reaches
  the routine's scratch operand, the SIB byte and displacement dropped, VEX/EVEX.X and .B (REX.X/.B) cleared,
  a segment prefix dropped (preemu computes the address, FS/GS base included); a source operand's bytes are
  read into the scratch through avxmem (protections, hooks, VectorFault before any effect); a destination
  (the first operand, in Intel's order) is written back through it after the routine, every page checked before
  a byte is written and before the registers take the routine's results (so is a source the instruction
  changed, which none should).
`run` then loads the registers into the routine's buffer, the guest's MXCSR and arithmetic flags too, calls
the routine, and stores back the registers, CF/PF/AF/ZF/SF/OF and MXCSR (its exception flags included).

A store of selected elements only (masked EVEX stores other than the moves avxexec.py executes itself,
VMASKMOV/VPMASKMOV stores, compress stores: GOEXPERIMENT=simd's archsimd emits them) runs twice over two scratch
fillings to learn which bytes it writes; only those are checked and written (`_partial_store`).
Refused (Unsupported, naming the instruction): VMASKMOVDQU (its implicit [RDI]), RSP as a register operand (the
routine runs on the host's stack), VSIB addressing (gathers/scatters), 32-bit addressing (0x67), a guest MXCSR with an exception unmasked (the host would trap), VLDMXCSR of reserved
bits, and VMOVDQA/VMOVAPS/VMOVNT* or a legacy-encoded (SHA-NI) m128 of a misaligned address (#GP). Left out: the fault suppression of masked-off
elements of a masked load other than the EVEX moves (EVEX {k} sources, VMASKMOV/VPMASKMOV loads: the whole
operand is read and checked; no Go binary measured has one).
Mirrors no Go source: the CPU's side.
"""
from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import capstone
from unicorn import x86_const as X
from unicorn.unicorn_py3.unicorn import uclib

from . import hostcpu
from .capi import unconverted

_md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_md.detail = True
_reg_read, _reg_write = unconverted(uclib.uc_reg_read), unconverted(uclib.uc_reg_write)

_GROUP_FEATURE = {"avx": "AVX", "avx2": "AVX2", "fma": "FMA", "f16c": "F16C", "bmi": "BMI1", "bmi2": "BMI2",
                  "adx": "ADX", "aes": "AES", "pclmul": "PCLMULQDQ", "avx512": "AVX512F", "bwi": "AVX512BW",
                  "dqi": "AVX512DQ", "cdi": "AVX512CD", "vlx": "AVX512VL", "sha": "SHA", "eri": "AVX512ER",
                  "pfi": "AVX512PF", "fma4": "FMA4", "xop": "XOP", "tbm": "TBM"}
_EXTRA = {**{m: "GFNI" for m in ("vgf2p8affineinvqb", "vgf2p8affineqb", "vgf2p8mulb")},
          **{m: "AVX512VBMI" for m in ("vpermb", "vpermi2b", "vpermt2b", "vpmultishiftqb")},
          **{m: "AVX512VBMI2" for m in ("vpcompressb", "vpcompressw", "vpexpandb", "vpexpandw") + tuple(
              f"vpsh{d}{v}{w}" for d in ("ld", "rd") for v in ("", "v") for w in "wdq")},
          **{m: "AVX512VNNI" for m in ("vpdpbusd", "vpdpbusds", "vpdpwssd", "vpdpwssds")},
          **{m: "AVX512BITALG" for m in ("vpopcntb", "vpopcntw", "vpshufbitqmb")},
          **{m: "AVX512VPOPCNTDQ" for m in ("vpopcntd", "vpopcntq")},
          **{m: "AVX512IFMA" for m in ("vpmadd52luq", "vpmadd52huq")}}
_WIDE_ONLY = {**{m: "VAES" for m in ("vaesenc", "vaesenclast", "vaesdec", "vaesdeclast")},
              "vpclmulqdq": "VPCLMULQDQ"}
_V4 = frozenset(("AVX512F", "AVX512DQ", "AVX512CD", "AVX512BW", "AVX512VL"))
#: the moves whose memory operand must be aligned to its size (#GP otherwise; avxexec._mov checks them too)
ALIGNED = frozenset(("vmovdqa", "vmovdqa32", "vmovdqa64", "vmovaps", "vmovapd", "vmovntdq", "vmovntdqa",
                     "vmovntps", "vmovntpd"))
_PARTIAL_STORES = re.compile(r"^(vp?maskmov|vp?compress|vp?scatter)")
_LOW = {"rax": ("eax", "ax", "al", "ah"), "rcx": ("ecx", "cx", "cl", "ch"), "rdx": ("edx", "dx", "dl", "dh"),
        "rbx": ("ebx", "bx", "bl", "bh"), "rsp": ("esp", "sp", "spl"), "rbp": ("ebp", "bp", "bpl"),
        "rsi": ("esi", "si", "sil"), "rdi": ("edi", "di", "dil")}
#: every GPR name Capstone prints -> its register's number (RAX 0 .. R15 15)
_GPR64 = {n: i for i, r in enumerate(hostcpu.GPR_NAMES)
          for n in (r, *(_LOW.get(r) or (r + "d", r + "w", r + "b")))}
_VEC = re.compile(r"^[xyz]mm(\d+)$")


class Refused(Exception):
    """Why the host cannot run an instruction (avxexec.py turns it into Unsupported with the PC and level)."""


@dataclass
class Plan:
    fn: object                     # the routine
    vecs: tuple                    # ZMM numbers it touches
    kregs: tuple                   # opmask numbers
    gprs: tuple                    # (buffer slot, Unicorn id) of the GPRs it touches
    mem: object | None = None      # avxexec.Operand of its memory operand
    size: int = 0                  # the memory operand's bytes
    read: bool = False
    write: bool = False
    align: int = 0                 # the alignment the instruction demands of its address (0: none)
    partial: bool = False          # a store of selected elements only (masked, VMASKMOV/VPMASKMOV, compress)
    addr: tuple | None = None      # (base slot or -1 for RIP or None, index slot or None, scale, disp); None: FS/GS
    loads: tuple = ()              # (Unicorn id, pointer to its slot) of every register moved, GPRs and vectors
    upper: tuple = ()              # buffer offsets of bits 256-511 of the vectors a VEX instruction writes, zeroed
                                   # after the routine on an AVX2 host (its frame moves YMM only: SDM vol. 1 15.5)
    mm: object = None              # the routine buffer (hostcpu's arena)
    p_base: object = None          # pointers: the buffer, its MXCSR slot, its spare slot
    p_mxcsr: object = None
    p_tmp: object = None


def features_of(insn, evex: bool) -> frozenset[str]:
    need = {_GROUP_FEATURE[g] for g in (insn.group_name(x) for x in insn.groups) if g in _GROUP_FEATURE}
    if evex:
        need.add("AVX512F")
    m = insn.mnemonic
    if m in _EXTRA:
        need.add(_EXTRA[m])
    wide = evex or any(insn.reg_name(o.reg)[:1] in "yz" for o in insn.operands if o.type == capstone.x86.X86_OP_REG)
    if m in _WIDE_ONLY and wide:
        need.add(_WIDE_ONLY[m])
    return frozenset(need)


def _rewrite(insn, code: bytes, kind: str, at: int) -> tuple[bytes, int]:
    """`code` with its memory operand made [rip + disp32] (the disp32 zero, at the offset returned)."""
    mo = insn.modrm_offset
    modrm = code[mo]
    mod, rm = modrm >> 6, modrm & 7
    end = mo + 1
    if rm == 4:                                     # SIB
        sib = code[end]
        end += 1
        if mod == 0 and sib & 7 == 5:
            end += 4
    if mod == 1:
        end += 1
    elif mod == 2 or (mod == 0 and rm == 5):
        end += 4
    out = bytearray(code)
    if kind == "vex" and out[at] == 0xC4 or kind == "evex":
        out[at + 1] |= 0x60                        # X̄ and B̄ set: no extension
    elif kind == "":
        for i in range(at):
            if 0x40 <= out[i] <= 0x4F:
                out[i] &= 0xFC                     # REX.X and REX.B cleared
    out[mo] = (modrm & 0x38) | 0x05
    new = bytes(out[:mo + 1]) + bytes(4) + bytes(out[end:])
    keep = bytes(b for i, b in enumerate(new[:at]) if b not in (0x64, 0x65, 0x2E, 0x3E, 0x26, 0x36))
    drop = at - len(keep)
    return keep + new[at:], mo + 1 - drop


def plan(code: bytes, pc: int, d, guest: frozenset[str], level: str) -> Plan:
    """The Plan for the instruction `code` (avxexec.Decoded `d`) on a guest with features `guest`; Refused when
    it cannot run (the reason, naming the feature)."""
    from ..core.errors import EmuError
    from .vexcommon import prefix_kind
    try:
        host = hostcpu.get()
    except EmuError as e:
        raise Refused(str(e)) from None
    insn = next(_md.disasm(code, pc, 1))
    kind, at = prefix_kind(code)
    need = features_of(insn, kind == "evex")
    missing = need - guest
    if missing:
        if missing & _V4 and not guest & _V4:
            raise Refused("an instruction of x86-64-v4 (invalid opcode at this level)")
        raise Refused(f"an instruction of {'+'.join(sorted(missing))}, which the CPU at --cpu {level} does not "
                      f"have (invalid opcode)")
    lacking = need - host.features
    if lacking:
        raise Refused(f"an instruction of {'+'.join(sorted(lacking))}, which the host CPU lacks (preemu executes "
                      f"it natively)")
    if 0x67 in code[:at]:
        raise Refused("an instruction with 32-bit addressing, which preemu does not execute")
    names = [insn.reg_name(o.reg) for o in insn.operands if o.type == capstone.x86.X86_OP_REG]
    read, written = insn.regs_access()
    implicit = [insn.reg_name(r) for r in read + written]
    if any(_GPR64.get(n) == 4 for n in names) or any(_GPR64.get(insn.reg_name(r)) == 4 for r in written):
        raise Refused("an instruction with RSP as a register operand, which preemu does not execute")
    if insn.mnemonic == "vmaskmovdqu":
        raise Refused("VMASKMOVDQU (a store to [RDI] Capstone lists no operand for), which preemu does not execute")
    mems = [o for o in insn.operands if o.type == capstone.x86.X86_OP_MEM]
    if mems and insn.mnemonic.startswith(("vgather", "vpgather", "vscatter", "vpscatter")):
        raise Refused("a gather or scatter (VSIB addressing), which preemu does not execute")
    vecs, kregs, gprs = set(), set(), set()
    for n in names + implicit:
        v = _VEC.match(n)
        if v:
            vecs.add(int(v.group(1)))
        elif re.fullmatch(r"k[0-7]", n):
            kregs.add(int(n[1:]))
        elif n in _GPR64 and _GPR64[n] != 4:
            gprs.add(_GPR64[n])
    if d.mask:
        kregs.add(d.mask)
    if insn.mnemonic in ("vpcmpistrm", "vpcmpestrm"):
        vecs.add(0)                                 # their result goes to XMM0, which Capstone does not list
    mop = next((o for o in d.ops if o.kind == "mem"), None)
    if mop is not None:
        for n in (mop.base, mop.index):
            if n in _GPR64:
                gprs.add(_GPR64[n])
    p = Plan(None, tuple(sorted(vecs)), tuple(sorted(kregs)),
             tuple((i, getattr(X, f"UC_X86_REG_{hostcpu.GPR_NAMES[i].upper()}")) for i in sorted(gprs)))
    from .vexcommon import ZMM
    p.loads = tuple((rid, _ptr(hostcpu.GPR + 8 * i)) for i, rid in p.gprs) + \
        tuple((ZMM[i], _ptr(hostcpu.ZREG + 64 * i)) for i in p.vecs)
    p.mm, p.p_base, p.p_mxcsr, p.p_tmp = host.mm, _ptr(0), _ptr(hostcpu.MXCSR), _ptr(_TMP)
    if not host.wide and kind == "vex":
        out = {int(v.group(1)) for v in map(_VEC.match, (insn.reg_name(r) for r in written)) if v}
        if insn.mnemonic in ("vpcmpistrm", "vpcmpestrm"):
            out.add(0)
        p.upper = tuple(hostcpu.ZREG + 64 * i + 32 for i in sorted(out))
    if mop is not None and not mop.seg:
        p.addr = (-1 if mop.base == "rip" else _GPR64.get(mop.base), _GPR64.get(mop.index), mop.scale, mop.disp)
    try:
        return _finish(p, d, insn, code, kind, at, mems, host)
    except hostcpu.ArenaFull as e:
        raise Refused(str(e)) from None


def _finish(p: Plan, d, insn, code: bytes, kind: str, at: int, mems, host) -> Plan:
    """The routine and the memory operand's handling of plan `p` (plan's second half)."""
    if not mems:
        p.fn = host.routine(code)
        return p
    m = mems[0]
    p.mem = next(o for o in d.ops if o.kind == "mem")
    p.size = m.size
    # Intel's operand order: a memory destination is the first operand, and a VEX/EVEX store does not read it
    # (Capstone's access bits are not used: for some EVEX forms they are garbage, e.g. vmovsd xmm{k}{z}, m64's)
    p.write = insn.operands[0].type == capstone.x86.X86_OP_MEM
    p.read = not p.write
    p.partial = p.write and bool(d.mask or _PARTIAL_STORES.match(insn.mnemonic))
    if not 0 < p.size <= 64:
        raise Refused(f"a {p.size}-byte memory operand, which preemu does not execute")
    p.align = p.size if insn.mnemonic in ALIGNED or (kind == "" and p.size == 16) else 0   # legacy SSE m128: #GP
    new, disp_at = _rewrite(insn, code, kind, at)
    p.fn = host.routine(new, disp_at)
    return p


_MXCSR_ID, _EFLAGS_ID = X.UC_X86_REG_MXCSR, X.UC_X86_REG_EFLAGS
_F, _M, _TMP = hostcpu.FLAGS, hostcpu.MXCSR, 0x1A0          # _TMP: a free slot of the data page (8 bytes)


def _ptr(off: int):
    return ctypes.c_void_p(hostcpu.get().base + off)


def run(ex, d, p: Plan) -> None:
    """Execute plan `p` of instruction `d` on Executor `ex`'s registers and memory: every Unicorn register moves
    through the routine's buffer by pointer (uc_reg_read/write straight into its slots)."""
    mm, uch, vf = p.mm, ex.uc._uch, ex.vf
    _reg_read(uch, _MXCSR_ID, p.p_mxcsr)
    mx = int.from_bytes(mm[_M:_M + 4], "little")
    if mx & 0x1F80 != 0x1F80 or mx >> 16:
        from .vexcommon import Unsupported
        raise Unsupported(d.pc, d.text, vf.level.name, f"MXCSR {mx:#x} (an exception unmasked) at an instruction "
                                                       f"preemu executes natively")
    mm[_TMP:_TMP + 8] = bytes(8)
    _reg_read(uch, _EFLAGS_ID, p.p_tmp)
    flags = int.from_bytes(mm[_TMP:_TMP + 8], "little")
    mm[_F:_F + 8] = (0x202 | (flags & hostcpu.ARITH)).to_bytes(8, "little")
    for rid, ptr in p.loads:
        _reg_read(uch, rid, ptr)
    for k in p.kregs:
        mm[hostcpu.KREG + 8 * k:hostcpu.KREG + 8 * k + 8] = vf.k[k].to_bytes(8, "little")
    if p.mem is not None:
        addr = _address(ex, d, p, mm)
        if p.align and addr % p.align:
            from .vexcommon import Unsupported
            raise Unsupported(d.pc, d.text, vf.level.name, f"a misaligned {d.mnemonic} of {addr:#x} (#GP)")
        if p.read:
            data = ex.mem.read(addr, p.size)
            if d.mnemonic == "vldmxcsr" and int.from_bytes(data, "little") >> 16:
                from .vexcommon import Unsupported
                raise Unsupported(d.pc, d.text, vf.level.name, f"VLDMXCSR of reserved bits ({data.hex()}: #GP)")
            mm[0:p.size] = data
        if p.partial:
            _partial_store(ex, p, mm, addr)
            return _after(ex, p, mm, vf, flags, mx)
        before = mm[0:p.size]
    p.fn(p.p_base)
    for off in p.upper:
        mm[off:off + 32] = bytes(32)
    if p.mem is not None and (p.write or mm[0:p.size] != before):
        ex.mem.write(addr, mm[0:p.size])
    _after(ex, p, mm, vf, flags, mx)


def _partial_store(ex, p: Plan, mm, addr: int) -> None:
    """A store of selected elements: which bytes it writes is found by running it twice, over a scratch of zeros
    and one of 0xFF bytes (a byte it writes differs from one of the two; it changes no register, flag or MXCSR).
    Only those bytes are checked writable (a masked-off element neither faults nor is touched, SDM vol. 1
    15.6.5, vol. 2 VMASKMOV/VPMASKMOV), then written, run by run, through avxmem."""
    n = p.size
    mm[0:n] = bytes(n)
    p.fn(p.p_base)
    zeros = bytes(mm[0:n])
    mm[0:n] = b"\xff" * n
    p.fn(p.p_base)
    ones = bytes(mm[0:n])
    runs, i = [], 0
    while i < n:
        if zeros[i] != 0 or ones[i] != 0xFF:
            j = i
            while j < n and (zeros[j] != 0 or ones[j] != 0xFF):
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    for a, b in runs:
        ex.mem.check_write(addr + a, b - a)
    for a, b in runs:
        ex.mem.write(addr + a, zeros[a:b])


def _after(ex, p: Plan, mm, vf, flags: int, mx: int) -> None:
    """run's second half: the registers, K0-K7, flags and MXCSR back from the routine's buffer."""
    uch = ex.uc._uch
    for rid, ptr in p.loads:
        _reg_write(uch, rid, ptr)
    for k in p.kregs:
        vf.k[k] = int.from_bytes(mm[hostcpu.KREG + 8 * k:hostcpu.KREG + 8 * k + 8], "little")
    out = int.from_bytes(mm[_F:_F + 8], "little")
    if (out ^ flags) & hostcpu.ARITH:
        vf._set(_EFLAGS_ID, (flags & ~hostcpu.ARITH) | (out & hostcpu.ARITH), 8)
    if int.from_bytes(mm[_M:_M + 4], "little") != mx:
        _reg_write(uch, _MXCSR_ID, p.p_mxcsr)


def _address(ex, d, p: Plan, mm) -> int:
    """The memory operand's address: base and index from the buffer the GPRs were just loaded into."""
    if p.addr is None:                               # a segment base: the executor's general rule
        return ex.address(d, p.mem)
    base, index, scale, disp = p.addr
    a = disp
    if base == -1:
        a += d.pc + d.size
    elif base is not None:
        a += int.from_bytes(mm[hostcpu.GPR + 8 * base:hostcpu.GPR + 8 * base + 8], "little")
    if index is not None:
        a += int.from_bytes(mm[hostcpu.GPR + 8 * index:hostcpu.GPR + 8 * index + 8], "little") * scale
    return a & ((1 << 64) - 1)
