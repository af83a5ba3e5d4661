"""The AVX, AVX2, FMA, AVX-512 (and BMI) instructions preemu executes itself, against the full vector state.

Unicorn 2.1.4 (QEMU 5 TCG) implements no AVX: measured here, a VEX.256 or EVEX instruction is an invalid
opcode, and a VEX.128 one runs as its legacy SSE twin, ignoring VEX.vvvv and leaving the upper bits
(`vpxor xmm0,xmm1,xmm2` computes xmm0 ^= xmm2) -- silently wrong. Its CPU state does hold all 512 bits of
ZMM0-31 (uc_reg_read/write of UC_X86_REG_ZMMn, kept by context_save), but not the opmask registers, which
VectorFile.k keeps. Each instruction is executed from its Capstone decoding:
- almost all on the host CPU (hostexec.py: re-encoded against a register buffer and a scratch memory operand
  that avxmem fills and writes back), so the result, flags and MXCSR are the CPU's own, bit for bit;
- here, in Python, what the host cannot run as the guest's CPU would (PYTHON): XGETBV (XCR0 of the
  level, not the host's), VZEROUPPER/VZEROALL (all sixteen registers); and the whole-register moves (MOVES:
  VMOVDQU/VMOVDQA/VMOVUPS/..., their EVEX forms and the non-temporal ones, _mov), a copy exact by construction
  and cheaper here than the host's routine (a ymm store 9.5 against 15.8 µs, a load 6.6 against 7.9, measured
  with Executor.execute in a loop), whose masked forms with a memory operand must be here anyway: only the
  elements the mask selects are read, written, checked and hooked (the SDM's fault suppression).
Where a Go binary's instructions come from: runtime/memmove_amd64.s, memclr_amd64.s, internal/bytealg/
*_amd64.s, runtime/preempt_amd64.s, runtime/asm_amd64.s (aeshash: VAESENC at v3), crypto/*, and the
compiler at GOAMD64=v3 (FMA, scalar VEX, BMI2, cmd/compile/internal/amd64/ssa.go).
Anything refused raises Unsupported naming the PC, the instruction and the level (hostexec.py lists what).
"""
from __future__ import annotations

from dataclasses import dataclass

import ctypes

import capstone
from capstone import x86 as CX
from unicorn import x86_const as X
from unicorn.unicorn_py3.unicorn import uclib

from ..core.cpulevel import CpuLevel
from ..core.errors import EmuError
from . import hostcpu, hostexec
from .vexcommon import ZMM, Unsupported, prefix_kind, uc_id     # noqa: F401 (ZMM, Unsupported: avx's, xstate's)
from .avxmem import VectorMemory
from .capi import unconverted

_FLAGS_ARITH = 0x8D5            # CF PF AF ZF SF OF
_CF, _ZF = 0x1, 0x40


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
    code: bytes = b""   # the instruction's bytes


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
                   mask, zeroing, bytes(insn.bytes))


_SIZES = {"x": 16, "y": 32, "z": 64}
_reg_read, _reg_write = unconverted(uclib.uc_reg_read), unconverted(uclib.uc_reg_write)




_BUF = ctypes.create_string_buffer(64)


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
        return self._get(uc_id(name), 8)

    def set_vector(self, name: str, value: int) -> None:
        """A VEX/EVEX write: the register's bits, zeroes above them to bit 511."""
        self.set_zmm(int(name[3:]), value & ((1 << (8 * _SIZES[name[0]])) - 1))

    def set_gpr(self, name: str, value: int) -> None:
        """A 32-bit destination zero-extends into its 64-bit register (SDM vol. 1 3.4.1.1)."""
        if name.startswith("e") or (name.startswith("r") and name.endswith("d")):
            full = {"eax": "rax", "ebx": "rbx", "ecx": "rcx", "edx": "rdx", "esi": "rsi", "edi": "rdi",
                    "ebp": "rbp", "esp": "rsp"}.get(name, name[:-1])
            self._set(uc_id(full), value & 0xFFFFFFFF, 8)
        else:
            self._set(uc_id(name), value & ((1 << 64) - 1), 8)


class Executor:
    """Executes one decoded instruction on a VectorFile; returns nothing, raises Unsupported, or VectorFault
    (avxmem.py) before any effect when an access faults. Every memory access goes through `mem`, the engine's
    protections and memory hooks (avxmem.VectorMemory)."""

    def __init__(self, vf: VectorFile, mem: VectorMemory | None = None):
        self.vf, self.uc = vf, vf.uc
        self.mem = mem if mem is not None else VectorMemory(vf.uc)
        self.guest = hostcpu.guest_features(vf.level)
        self._plans: dict[bytes, object] = {}        # instruction bytes -> hostexec.Plan, or why it is refused

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
        level = self.vf.level
        if d.evex and not level.avx512:
            raise Unsupported(d.pc, d.text, level.name, "an instruction of x86-64-v4 (invalid opcode at this level)")
        fn = PYTHON.get(d.mnemonic)
        if fn is None and d.mnemonic in MOVES:
            fn = _mov
        if fn is not None:
            fn(self, d)
            return
        key = d.code
        p = self._plans.get(key)
        if p is None:
            try:
                p = hostexec.plan(d.code, d.pc, d, self.guest, level.name)
            except hostexec.Refused as e:
                p = e
            self._plans[key] = p
        if isinstance(p, hostexec.Refused):
            raise Unsupported(d.pc, d.text, level.name, str(p))
        hostexec.run(self, d, p)


# --- the instructions --------------------------------------------------------------------------------
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
    mem = dst if dst.kind == "mem" else src if src.kind == "mem" else None
    if mem is not None and d.mnemonic in hostexec.ALIGNED and ex.address(d, mem) % n:
        raise Unsupported(d.pc, d.text, ex.vf.level.name, f"a misaligned {d.mnemonic} of {ex.address(d, mem):#x} (#GP)")
    if not d.mask:
        ex.put(d, dst, ex.get(d, src, n), n)
        return
    # vmovdqu8/16/32/64 {k}: merge or zero per element; in memory only the selected elements are accessed
    w = MOVES[d.mnemonic]
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


def _vzeroupper(ex: Executor, d: Decoded) -> None:
    for i in range(16):                          # ZMM16-31 keep their bits (SDM VZEROUPPER)
        ex.vf.set_zmm(i, ex.vf.zmm(i) & ((1 << 128) - 1))


def _vzeroall(ex: Executor, d: Decoded) -> None:
    for i in range(16):
        ex.vf.set_zmm(i, 0)


def _xgetbv(ex: Executor, d: Decoded) -> None:
    if ex.uc.reg_read(X.UC_X86_REG_ECX) & 0xFFFFFFFF != 0:
        raise Unsupported(d.pc, d.text, ex.vf.level.name, "XGETBV of an XCR other than XCR0 (#GP)")
    xcr0 = ex.vf.level.xcr0
    ex.uc.reg_write(X.UC_X86_REG_RAX, xcr0 & 0xFFFFFFFF)
    ex.uc.reg_write(X.UC_X86_REG_RDX, xcr0 >> 32)


#: the whole-register moves _mov executes -> their element's bytes (what one bit of an EVEX mask selects)
MOVES = {"vmovdqu8": 1, "vmovdqu16": 2, "vmovdqu32": 4, "vmovdqu64": 8, "vmovdqa32": 4, "vmovdqa64": 8,
         "vmovups": 4, "vmovaps": 4, "vmovupd": 8, "vmovapd": 8, "vmovdqu": 1, "vmovdqa": 1,
         "vmovntdq": 1, "vmovntdqa": 1, "vmovntps": 4, "vmovntpd": 8}
#: mnemonic -> the function executing it in Python (everything else runs on the host: hostexec.py)
PYTHON: dict = {"vzeroupper": _vzeroupper, "vzeroall": _vzeroall, "xgetbv": _xgetbv}
