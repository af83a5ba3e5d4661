"""The AVX, AVX2, FMA and AVX-512 instructions preemu executes itself, against the full vector state.

Unicorn 2.1.4 (QEMU 5 TCG) implements no AVX: measured here, a VEX.256 or EVEX instruction is an invalid
opcode, and a VEX.128 one runs as its legacy SSE twin, ignoring VEX.vvvv and leaving the upper bits
(`vpxor xmm0,xmm1,xmm2` computes xmm0 ^= xmm2) -- silently wrong. Its CPU state does hold all 512 bits of
ZMM0-31 (uc_reg_read/write of UC_X86_REG_ZMMn, kept by context_save), but not the opmask registers. So this
module keeps K0-K7 itself (VectorFile.k) and executes each instruction from its Capstone decoding: operands
read from and written to Unicorn's registers and memory, with the architectural rules of the Intel SDM
(vol. 1 14.1.2 and 15.5: a VEX- or EVEX-encoded write to an XMM/YMM register zeroes the bits above it up to
bit 511; legacy SSE writes leave them, and Unicorn does that itself). Where a Go binary's instructions come
from: runtime/memmove_amd64.s, memclr_amd64.s, internal/bytealg/*_amd64.s (AVX2 paths), runtime/
preempt_amd64.s (saveAVX2/saveAVX512 and the restores), and the compiler at GOAMD64=v3 (FMA scalars,
cmd/compile/internal/amd64/ssa.go).

TABLE is the one list of what is executed: mnemonic -> (the level it needs, the function). Anything else
raises Unsupported naming the PC, the instruction and the level. Left out: masked EVEX operations other than
moves, broadcasts from memory ({1toN}), embedded rounding, MXCSR exception flags and DAZ/FTZ (round to
nearest only, as Go runs), #GP on misaligned VMOVDQA/VMOVNTDQ, packed FMA, AES and shuffles.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import ctypes

import capstone
from capstone import x86 as CX
from unicorn import x86_const as X
from unicorn.unicorn_py3.unicorn import uclib

from ..core.cpulevel import CpuLevel
from ..core.errors import EmuError
from .avxmem import VectorMemory
from .capi import unconverted

_FLAGS_ARITH = 0x8D5            # CF PF AF ZF SF OF
_CF, _ZF = 0x1, 0x40


class Unsupported(EmuError):
    """An instruction preemu does not execute (or one the CPU level does not have)."""

    def __init__(self, pc: int, text: str, level: str, why: str):
        self.pc, self.text, self.level = pc, text, level
        super().__init__(f"{why} at {pc:#x}: {text} (--cpu {level})")


@dataclass(frozen=True)
class Operand:
    kind: str           # "reg" | "mem" | "imm"
    reg: str = ""       # capstone name: "ymm5", "k3", "rax", "eax"
    size: int = 0       # bytes
    base: str = ""
    index: str = ""
    scale: int = 1
    disp: int = 0
    seg: str = ""
    imm: int = 0


@dataclass(frozen=True)
class Decoded:
    pc: int
    size: int
    mnemonic: str
    text: str
    ops: tuple
    evex: bool
    mask: int           # EVEX.aaa: the writemask register (0: none)
    zeroing: bool       # EVEX.z


def prefix_kind(code: bytes) -> tuple[str, int]:
    """("vex"|"evex"|"", index of the VEX/EVEX prefix byte) for one instruction's bytes."""
    i = 0
    while i < len(code) and code[i] in (0x66, 0xF2, 0xF3, 0xF0, 0x2E, 0x3E, 0x26, 0x64, 0x65, 0x36):
        i += 1
    if i < len(code) and 0x40 <= code[i] <= 0x4F:
        i += 1
    if i < len(code):
        if code[i] in (0xC4, 0xC5):
            return "vex", i
        if code[i] == 0x62:
            return "evex", i
    return "", i


_md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_md.detail = True


def decode(code: bytes, pc: int) -> Decoded | None:
    insn = next(_md.disasm(code, pc, 1), None)
    if insn is None:
        return None
    kind, at = prefix_kind(bytes(insn.bytes))
    evex = kind == "evex"
    mask, zeroing = 0, False
    if evex:
        p2 = insn.bytes[at + 3]
        mask, zeroing = p2 & 7, bool(p2 & 0x80)
    ops = []
    for o in insn.operands:
        if o.type == CX.X86_OP_REG:
            name = insn.reg_name(o.reg)
            if evex and mask and name == f"k{mask}" and ops and ops[-1].kind in ("reg", "mem") and len(ops) == 1:
                continue                # the {kN} writemask capstone lists as an operand
            ops.append(Operand("reg", reg=name, size=o.size))
        elif o.type == CX.X86_OP_MEM:
            m = o.mem
            ops.append(Operand("mem", size=o.size, base=insn.reg_name(m.base) if m.base else "",
                               index=insn.reg_name(m.index) if m.index else "", scale=m.scale, disp=m.disp,
                               seg=insn.reg_name(m.segment) if m.segment else ""))
        else:
            ops.append(Operand("imm", imm=o.imm, size=o.size))
    return Decoded(pc, insn.size, insn.mnemonic, f"{insn.mnemonic} {insn.op_str}".strip(), tuple(ops), evex,
                   mask, zeroing)


_IDS: dict[str, int] = {}
_SIZES = {"x": 16, "y": 32, "z": 64}
_reg_read, _reg_write = unconverted(uclib.uc_reg_read), unconverted(uclib.uc_reg_write)


def _uc_id(name: str) -> int:
    i = _IDS.get(name)
    if i is None:
        i = _IDS[name] = getattr(X, f"UC_X86_REG_{name.upper()}")
    return i


_BUF = ctypes.create_string_buffer(64)
ZMM = [_uc_id(f"zmm{i}") for i in range(32)]


def read_reg(uc, rid: int, n: int) -> int:
    """Register `rid` (n bytes: up to a ZMM register's 64) through Unicorn's C API, one buffer for all."""
    ctypes.memset(_BUF, 0, 64)
    if _reg_read(uc._uch, rid, _BUF):
        raise EmuError(f"uc_reg_read of register {rid} failed")
    return int.from_bytes(_BUF.raw[:n], "little")


def write_reg(uc, rid: int, value: int, n: int) -> None:
    _BUF.raw = value.to_bytes(n, "little").ljust(64, b"\0")
    if _reg_write(uc._uch, rid, _BUF):
        raise EmuError(f"uc_reg_write of register {rid} failed")


class VectorFile:
    """The vector state of the running thread: Unicorn's ZMM0-31 (all 512 bits), and K0-K7 kept here.
    Registers go through Unicorn's C API with one preallocated buffer (the binding's reg_read classifies the
    register at every call: 80 % of an AVX instruction's time, measured with cProfile)."""

    def __init__(self, uc, level: CpuLevel):
        self.uc, self.level = uc, level
        self.k = [0] * 8
        self._zmm = ZMM

    def _get(self, rid: int, n: int) -> int:
        return read_reg(self.uc, rid, n)

    def _set(self, rid: int, value: int, n: int) -> None:
        write_reg(self.uc, rid, value, n)

    def zmm(self, i: int) -> int:
        return self._get(self._zmm[i], 64)

    def set_zmm(self, i: int, value: int) -> None:
        self._set(self._zmm[i], value & ((1 << 512) - 1), 64)

    def reg(self, name: str) -> int:
        if name[0] == "k":
            return self.k[int(name[1:])]
        if name[1:3] == "mm" and name[0] in "xyz":
            return self._get(self._zmm[int(name[3:])], _SIZES[name[0]])
        return self._get(_uc_id(name), 8)

    def set_vector(self, name: str, value: int) -> None:
        """A VEX/EVEX write: the register's bits, zeroes above them to bit 511."""
        self.set_zmm(int(name[3:]), value & ((1 << (8 * _SIZES[name[0]])) - 1))

    def set_gpr(self, name: str, value: int) -> None:
        """A 32-bit destination zero-extends into its 64-bit register (SDM vol. 1 3.4.1.1)."""
        if name.startswith("e") or (name.startswith("r") and name.endswith("d")):
            full = {"eax": "rax", "ebx": "rbx", "ecx": "rcx", "edx": "rdx", "esi": "rsi", "edi": "rdi",
                    "ebp": "rbp", "esp": "rsp"}.get(name, name[:-1])
            self._set(_uc_id(full), value & 0xFFFFFFFF, 8)
        else:
            self._set(_uc_id(name), value & ((1 << 64) - 1), 8)


class Executor:
    """Executes one decoded instruction on a VectorFile; returns nothing, raises Unsupported, or VectorFault
    (avxmem.py) before any effect when an access faults. Every memory access goes through `mem`, the engine's
    protections and memory hooks (avxmem.VectorMemory)."""

    def __init__(self, vf: VectorFile, mem: VectorMemory | None = None):
        self.vf, self.uc = vf, vf.uc
        self.mem = mem if mem is not None else VectorMemory(vf.uc)

    # --- operands -----------------------------------------------------------------------------------
    def address(self, d: Decoded, o: Operand) -> int:
        a = o.disp
        if o.base == "rip":
            a += d.pc + d.size
        elif o.base:
            a += self.vf.reg(o.base)
        if o.index:
            a += self.vf.reg(o.index) * o.scale
        if o.seg == "fs":
            a += self.vf._get(X.UC_X86_REG_FS_BASE, 8)
        elif o.seg == "gs":
            a += self.vf._get(X.UC_X86_REG_GS_BASE, 8)
        return a & ((1 << 64) - 1)

    def get(self, d: Decoded, o: Operand, size: int | None = None) -> int:
        if o.kind == "reg":
            return self.vf.reg(o.reg)
        if o.kind == "imm":
            return o.imm
        n = size or o.size
        return int.from_bytes(self.mem.read(self.address(d, o), n), "little")

    def put(self, d: Decoded, o: Operand, value: int, size: int | None = None) -> None:
        n = size or o.size
        if o.kind == "mem":
            self.mem.write(self.address(d, o), (value & ((1 << (8 * n)) - 1)).to_bytes(n, "little"))
        elif o.reg[0] == "k":
            self.vf.k[int(o.reg[1:])] = value & ((1 << 64) - 1)
        elif o.reg[1:3] == "mm":
            self.vf.set_vector(o.reg, value)
        else:
            self.vf.set_gpr(o.reg, value)

    def set_flags(self, bits: int) -> None:
        f = self.vf._get(X.UC_X86_REG_EFLAGS, 8)
        self.vf._set(X.UC_X86_REG_EFLAGS, (f & ~_FLAGS_ARITH) | bits, 8)

    def execute(self, d: Decoded) -> None:
        row = TABLE.get(d.mnemonic)
        if row is None:
            raise Unsupported(d.pc, d.text, self.vf.level.name, "an instruction preemu does not execute")
        need, fn = row
        if need > self.vf.level.number or (d.evex and not self.vf.level.avx512):
            raise Unsupported(d.pc, d.text, self.vf.level.name,
                              f"an instruction of x86-64-v{max(need, 4 if d.evex else 0)} (invalid opcode at this level)")
        if d.mask and d.mnemonic not in _MASKED_MOVES:
            raise Unsupported(d.pc, d.text, self.vf.level.name, "a masked EVEX operation preemu does not execute")
        fn(self, d)


# --- the instructions --------------------------------------------------------------------------------
def _lanes(v: int, n: int, w: int) -> list[int]:
    m = (1 << (8 * w)) - 1
    return [(v >> (8 * w * i)) & m for i in range(n // w)]


def _join(lanes: list[int], w: int) -> int:
    out = 0
    for i, x in enumerate(lanes):
        out |= x << (8 * w * i)
    return out


def _runs(k: int, n: int, w: int) -> list[tuple[int, int]]:
    """(byte offset, byte length) of each run of consecutive elements (w bytes each, n // w of them) that mask
    k selects."""
    out, i = [], 0
    while i < n // w:
        if (k >> i) & 1:
            j = i
            while j < n // w and (k >> j) & 1:
                j += 1
            out.append((i * w, (j - i) * w))
            i = j
        else:
            i += 1
    return out


def _mov(ex: Executor, d: Decoded) -> None:
    dst, src = d.ops
    n = dst.size if dst.kind == "reg" else src.size
    if not d.mask:
        ex.put(d, dst, ex.get(d, src, n), n)
        return
    # vmovdqu8/16/32/64 {k}: merge or zero per element; in memory only the selected elements are accessed
    w = _ELEM[d.mnemonic]
    runs = _runs(ex.vf.k[d.mask], n, w)
    if dst.kind == "mem":
        v, base = ex.get(d, src, n), ex.address(d, dst)
        ex.mem.write_parts([(base + off, ((v >> (8 * off)) & ((1 << (8 * m)) - 1)).to_bytes(m, "little"))
                            for off, m in runs])
        return
    if src.kind == "mem":
        base = ex.address(d, src)
        v = 0
        for (off, _), got in zip(runs, ex.mem.read_parts([(base + off, m) for off, m in runs])):
            v |= int.from_bytes(got, "little") << (8 * off)
    else:
        v = ex.get(d, src, n)
    old = 0 if d.zeroing else ex.get(d, dst, n)
    keep = sum(((1 << (8 * m)) - 1) << (8 * off) for off, m in runs)
    ex.put(d, dst, (v & keep) | (old & ~keep & ((1 << (8 * n)) - 1)), n)


def _movdq(ex: Executor, d: Decoded) -> None:
    """vmovd / vmovq: 32 or 64 bits between a vector register and a GPR, memory or the low lane."""
    dst, src = d.ops
    n = 4 if d.mnemonic == "vmovd" else 8
    v = ex.get(d, src, n if src.kind == "mem" else None) & ((1 << (8 * n)) - 1)
    ex.put(d, dst, v, n if dst.kind == "mem" else None)


def _logic(op):
    def run(ex: Executor, d: Decoded) -> None:
        dst, a, b = d.ops
        n = dst.size
        ex.put(d, dst, op(ex.get(d, a, n), ex.get(d, b, n), (1 << (8 * n)) - 1))
    return run


def _pcmpeq(w: int):
    def run(ex: Executor, d: Decoded) -> None:
        dst, a, b = d.ops
        n = a.size if a.kind == "reg" else b.size
        la, lb = _lanes(ex.get(d, a, n), n, w), _lanes(ex.get(d, b, n), n, w)
        if dst.reg.startswith("k"):          # EVEX: one mask bit per element
            ex.put(d, dst, sum(1 << i for i, (x, y) in enumerate(zip(la, lb)) if x == y))
        else:
            ones = (1 << (8 * w)) - 1
            ex.put(d, dst, _join([ones if x == y else 0 for x, y in zip(la, lb)], w))
    return run


def _padd(w: int, sign: int):
    def run(ex: Executor, d: Decoded) -> None:
        dst, a, b = d.ops
        n = dst.size
        m = (1 << (8 * w)) - 1
        la, lb = _lanes(ex.get(d, a, n), n, w), _lanes(ex.get(d, b, n), n, w)
        ex.put(d, dst, _join([(x + sign * y) & m for x, y in zip(la, lb)], w))
    return run


def _pmovmskb(ex: Executor, d: Decoded) -> None:
    dst, src = d.ops
    v = ex.get(d, src)
    ex.put(d, dst, sum(((v >> (8 * i + 7)) & 1) << i for i in range(src.size)))


def _ptest(ex: Executor, d: Decoded) -> None:
    a, b = d.ops
    n = a.size
    x, y = ex.get(d, a, n), ex.get(d, b, n)
    ex.set_flags((_ZF if x & y == 0 else 0) | (_CF if (~x & y) & ((1 << (8 * n)) - 1) == 0 else 0))


def _broadcast(w: int):
    def run(ex: Executor, d: Decoded) -> None:
        dst, src = d.ops
        v = ex.get(d, src, w if src.kind == "mem" else None) & ((1 << (8 * w)) - 1)
        ex.put(d, dst, _join([v] * (dst.size // w), w))
    return run


def _pinsr(w: int):
    """vpinsrb/w/d/q xmm1, xmm2, r/m, imm8: xmm2 with element imm8 (of w bytes) replaced by the GPR's or memory's
    low w bytes; VEX.128, so bits 128 and up are zeroed."""
    def run(ex: Executor, d: Decoded) -> None:
        dst, a, b, imm = d.ops
        i = imm.imm % (16 // w)
        m = (1 << (8 * w)) - 1
        v = ex.get(d, b, w if b.kind == "mem" else None) & m
        ex.put(d, dst, (ex.get(d, a, 16) & ~(m << (8 * w * i)) & ((1 << 128) - 1)) | (v << (8 * w * i)), 16)
    return run


def _vzeroupper(ex: Executor, d: Decoded) -> None:
    for i in range(16):                          # ZMM16-31 keep their bits (SDM VZEROUPPER)
        ex.vf.set_zmm(i, ex.vf.zmm(i) & ((1 << 128) - 1))


def _vzeroall(ex: Executor, d: Decoded) -> None:
    for i in range(16):
        ex.vf.set_zmm(i, 0)


def _kmov(w: int):
    def run(ex: Executor, d: Decoded) -> None:
        dst, src = d.ops
        ex.put(d, dst, ex.get(d, src, w if src.kind == "mem" else None) & ((1 << (8 * w)) - 1),
               w if dst.kind == "mem" else None)
    return run


def _klogic(op, w: int):
    def run(ex: Executor, d: Decoded) -> None:
        dst, a, b = d.ops
        ex.put(d, dst, op(ex.get(d, a), ex.get(d, b), (1 << (8 * w)) - 1) & ((1 << (8 * w)) - 1))
    return run


def _kortest(w: int):
    def run(ex: Executor, d: Decoded) -> None:
        a, b = d.ops
        v = (ex.get(d, a) | ex.get(d, b)) & ((1 << (8 * w)) - 1)
        ex.set_flags((_ZF if v == 0 else 0) | (_CF if v == (1 << (8 * w)) - 1 else 0))
    return run


def _xgetbv(ex: Executor, d: Decoded) -> None:
    if ex.uc.reg_read(X.UC_X86_REG_ECX) & 0xFFFFFFFF != 0:
        raise Unsupported(d.pc, d.text, ex.vf.level.name, "XGETBV of an XCR other than XCR0 (#GP)")
    xcr0 = ex.vf.level.xcr0
    ex.uc.reg_write(X.UC_X86_REG_RAX, xcr0 & 0xFFFFFFFF)
    ex.uc.reg_write(X.UC_X86_REG_RDX, xcr0 >> 32)


# scalar FMA: the exact a*b+c rounded once (round to nearest even), as VFMADD does
def _to_float(bits: int, double: bool) -> float:
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0] if double else \
        struct.unpack("<f", (bits & 0xFFFFFFFF).to_bytes(4, "little"))[0]


def _to_bits(x: float, double: bool) -> int:
    return int.from_bytes(struct.pack("<d" if double else "<f", x), "little")


def _round(q: Fraction, double: bool) -> float:
    """q rounded to the nearest binary64/binary32 (ties to even), subnormals and overflow included."""
    if q == 0:
        return 0.0
    p, emin, emax = (53, -1022, 1023) if double else (24, -126, 127)
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, emin)
    scaled = q / Fraction(2) ** (e - p + 1)          # the significand, p bits before the point
    m = scaled.numerator // scaled.denominator
    rest = scaled - m
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m & 1):
        m += 1
    if m >= 1 << p:
        m >>= 1
        e += 1
    if e > emax:
        return sign * math.inf
    return sign * math.ldexp(m, e - p + 1)


def _fma(order: str, neg_product: bool, neg_addend: bool, double: bool):
    w = 8 if double else 4
    mask = (1 << (8 * w)) - 1

    def run(ex: Executor, d: Decoded) -> None:
        dst, s2, s3 = d.ops
        v1, v2, v3 = ex.get(d, dst, 16), ex.get(d, s2, 16), ex.get(d, s3, w if s3.kind == "mem" else 16)
        f = {1: _to_float(v1 & mask, double), 2: _to_float(v2 & mask, double), 3: _to_float(v3 & mask, double)}
        a, b, c = f[int(order[0])], f[int(order[1])], f[int(order[2])]      # a*b + c
        if all(math.isfinite(x) for x in (a, b, c)):
            prod = Fraction(a) * Fraction(b)
            q = (-prod if neg_product else prod) + (-Fraction(c) if neg_addend else Fraction(c))
            r = _round(q, double)
            if q == 0:                  # the sign of an exact zero: + unless both terms are -0 (SDM 4.8.3.3)
                pz = math.copysign(1.0, a) * math.copysign(1.0, b) * (-1 if neg_product else 1)
                cz = math.copysign(1.0, c) * (-1 if neg_addend else 1)
                r = -0.0 if (prod == 0 and c == 0 and pz < 0 and cz < 0) else 0.0
        else:                           # inf/NaN: no rounding is involved
            r = (-(a * b) if neg_product else a * b) + (-c if neg_addend else c)
        ex.put(d, dst, (v1 & ~mask & ((1 << 128) - 1)) | _to_bits(r, double), 16)
    return run


def _fma_rows() -> dict:
    rows = {}
    for name, np_, na in (("fmadd", False, False), ("fmsub", False, True), ("fnmadd", True, False),
                          ("fnmsub", True, True)):
        for order, operands in (("132", "132"), ("213", "213"), ("231", "231")):
            # vfmaddXYZ: dst = src_X * src_Y + src_Z (operands numbered dst=1, second=2, third=3)
            for suffix, double in (("sd", True), ("ss", False)):
                rows[f"v{name}{order}{suffix}"] = (3, _fma(operands, np_, na, double))
    return rows


_ELEM = {"vmovdqu8": 1, "vmovdqu16": 2, "vmovdqu32": 4, "vmovdqu64": 8, "vmovdqa32": 4, "vmovdqa64": 8,
         "vmovups": 4, "vmovaps": 4, "vmovupd": 8, "vmovapd": 8}
_MASKED_MOVES = frozenset(_ELEM)
_AND = (lambda a, b, m: a & b)
_OR = (lambda a, b, m: a | b)
_XOR = (lambda a, b, m: a ^ b)
_ANDN = (lambda a, b, m: ~a & b & m)

#: mnemonic -> (the lowest level that has it, how it runs): THE list of instructions preemu executes
TABLE: dict = {
    **{m: (3, _mov) for m in ("vmovdqu", "vmovdqa", "vmovups", "vmovaps", "vmovupd", "vmovapd", "vmovntdq",
                              "vmovntdqa", "vlddqu", "vmovntps", "vmovntpd")},
    **{m: (4, _mov) for m in ("vmovdqu8", "vmovdqu16", "vmovdqu32", "vmovdqu64", "vmovdqa32", "vmovdqa64")},
    "vmovd": (3, _movdq), "vmovq": (3, _movdq),
    **{m: (3, _logic(_XOR)) for m in ("vpxor", "vxorps", "vxorpd")},
    **{m: (3, _logic(_AND)) for m in ("vpand", "vandps", "vandpd")},
    **{m: (3, _logic(_OR)) for m in ("vpor", "vorps", "vorpd")},
    **{m: (3, _logic(_ANDN)) for m in ("vpandn", "vandnps", "vandnpd")},
    **{m: (4, _logic(_XOR)) for m in ("vpxord", "vpxorq")},
    **{m: (4, _logic(_AND)) for m in ("vpandd", "vpandq")},
    **{m: (4, _logic(_OR)) for m in ("vpord", "vporq")},
    **{m: (4, _logic(_ANDN)) for m in ("vpandnd", "vpandnq")},
    "vpcmpeqb": (3, _pcmpeq(1)), "vpcmpeqw": (3, _pcmpeq(2)), "vpcmpeqd": (3, _pcmpeq(4)),
    "vpcmpeqq": (3, _pcmpeq(8)),
    **{f"vp{op}{c}": (3, _padd(w, sign)) for op, sign in (("add", 1), ("sub", -1))
       for c, w in (("b", 1), ("w", 2), ("d", 4), ("q", 8))},
    "vpmovmskb": (3, _pmovmskb), "vptest": (3, _ptest),
    "vpinsrb": (3, _pinsr(1)), "vpinsrw": (3, _pinsr(2)), "vpinsrd": (3, _pinsr(4)), "vpinsrq": (3, _pinsr(8)),
    "vpbroadcastb": (3, _broadcast(1)), "vpbroadcastw": (3, _broadcast(2)), "vpbroadcastd": (3, _broadcast(4)),
    "vpbroadcastq": (3, _broadcast(8)),
    "vzeroupper": (3, _vzeroupper), "vzeroall": (3, _vzeroall),
    "kmovb": (4, _kmov(1)), "kmovw": (4, _kmov(2)), "kmovd": (4, _kmov(4)), "kmovq": (4, _kmov(8)),
    "kxorq": (4, _klogic(_XOR, 8)), "kandq": (4, _klogic(_AND, 8)), "korq": (4, _klogic(_OR, 8)),
    "kxord": (4, _klogic(_XOR, 4)), "kxorw": (4, _klogic(_XOR, 2)),
    "kortestq": (4, _kortest(8)), "kortestd": (4, _kortest(4)), "kortestw": (4, _kortest(2)),
    "xgetbv": (3, _xgetbv),
    **_fma_rows(),
}
