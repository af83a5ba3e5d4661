"""The host CPU as preemu's vector unit's arithmetic: one guest instruction executed natively, against a register
file in a buffer.

An arena (an anonymous RWX mapping, Python's mmap) holds a data page and the routines. The data page:
    0x000  the scratch memory operand (64 bytes, 64-aligned: every guest memory operand is redirected here)
    0x100  RAX..R15 (8 bytes each, in the x86 register-number order; RSP's slot unused)
    0x180  RFLAGS   0x188 MXCSR (the guest's)   0x18C the host's MXCSR, kept across the call
    0x1C0  K0..K7 (8 bytes each)
    0x200  ZMM0..ZMM31 (64 bytes each)
A routine (`routine(insn)`) is: save the callee-saved registers; keep the host's MXCSR; load ZMM0-31 and K0-7
(vmovdqu64/kmovq: an AVX-512 host; YMM0-15 on an AVX2 host, where hostexec.py zeroes bits 256-511 of what
a VEX instruction writes, as the CPU does up to its widest register), the guest's MXCSR and arithmetic flags, and
every GPR but RSP from the buffer; the instruction; store them all back (PUSHFQ first, so nothing clobbers the
flags); the host's MXCSR back; VZEROUPPER; return. The instruction bytes are the caller's (hostexec.py
re-encodes the memory operand as RIP-relative to the scratch, whose displacement `routine` patches in).
Routines are cached per instruction encoding; a call costs one ctypes call. One buffer per process: the
mapping is private (a forked worker gets its own copy), and no two threads may run routines at once (preemu
runs its engines in one thread; its parallel sweeps are processes).

`features()` is the host's CPUID and XGETBV, executed natively here too (Intel SDM vol. 2A CPUID, tables
3-8/3-10; an AVX feature counts only with OSXSAVE and the XCR0 bits the OS enabled, as Go's internal/cpu
reads them). Mirrors no Go source. Left out: hosts without AVX2 (nothing runs natively then), x87 state.
"""
from __future__ import annotations

import ctypes
import mmap

from ..core import assembler

SCRATCH, GPR, FLAGS, MXCSR, HOST_MXCSR, KREG, ZREG = 0x000, 0x100, 0x180, 0x188, 0x18C, 0x1C0, 0x200
GPR_NAMES = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15")
#: routines go in [CODE0, CODE_END); the rest of the SIZE bytes is free for a caller's data (bench/avx_diff.py's)
CODE0, CODE_END, SIZE = 0x1000, 0xC00000, 1 << 24
#: the flags a routine loads and stores: CF PF AF ZF SF OF (the rest of the host's RFLAGS is left alone)
ARITH = 0x8D5

_ks = assembler.x86_64()


def _asm(text: str) -> bytes:
    return bytes(_ks.asm(text)[0])


class ArenaFull(Exception):
    """No room for another routine (hostexec.py refuses the instruction, naming this)."""


def _evex_zmm(n: int, disp: int, store: bool) -> bytes:
    """vmovdqu64 zmmN, [rdi + disp32] (or the store): EVEX.512.F3.0F.W1 6F/7F (SDM vol. 2C VMOVDQU64)."""
    p0 = 0x01 | ((~(n >> 3) & 1) << 7) | 0x60 | ((~(n >> 4) & 1) << 4)
    return bytes((0x62, p0, 0xFE, 0x48, 0x7F if store else 0x6F, 0x87 | ((n & 7) << 3))) + disp.to_bytes(4, "little")


def _kmovq(n: int, disp: int, store: bool) -> bytes:
    """kmovq kN, [rdi + disp32] (or the store): VEX.L0.0F.W1 90/91 (SDM vol. 2A KMOVQ)."""
    return bytes((0xC4, 0xE1, 0xF8, 0x91 if store else 0x90, 0x87 | (n << 3))) + disp.to_bytes(4, "little")


def feature_names(c1: int, b7: int, c7: int, xcr0: int) -> frozenset[str]:
    """The features CPUID.1:ECX `c1`, CPUID.(7,0):EBX/ECX `b7`/`c7` and XCR0 `xcr0` give: an AVX one only with
    XCR0's SSE and AVX bits, an AVX-512 one only with its opmask and ZMM bits too (the guest's CPU at a level,
    from core/cpuid.py, is read the same way: `guest_features`)."""
    f = {name for name, word, bit in (
        ("AES", c1, 25), ("PCLMULQDQ", c1, 1), ("BMI1", b7, 3), ("BMI2", b7, 8), ("ADX", b7, 19),
        ("SHA", b7, 29)) if word >> bit & 1}
    if xcr0 & 6 == 6 and c1 >> 27 & 1:
        f |= {name for name, word, bit in (
            ("AVX", c1, 28), ("FMA", c1, 12), ("F16C", c1, 29), ("AVX2", b7, 5), ("VAES", c7, 9),
            ("VPCLMULQDQ", c7, 10), ("GFNI", c7, 8)) if word >> bit & 1}
    if xcr0 & 0xE6 == 0xE6 and c1 >> 27 & 1:
        f |= {name for name, word, bit in (
            ("AVX512F", b7, 16), ("AVX512DQ", b7, 17), ("AVX512IFMA", b7, 21), ("AVX512CD", b7, 28),
            ("AVX512BW", b7, 30), ("AVX512VL", b7, 31), ("AVX512VBMI", c7, 1), ("AVX512VBMI2", c7, 6),
            ("AVX512VNNI", c7, 11), ("AVX512BITALG", c7, 12), ("AVX512VPOPCNTDQ", c7, 14)) if word >> bit & 1}
    return frozenset(f)


def guest_features(level) -> frozenset[str]:
    """The features of preemu's CPU at `level` (a cpulevel.CpuLevel), read from the CPUID it shows the guest."""
    from ..core import cpuid
    _, _, c1, _ = cpuid.cpuid(1, 0, level)
    _, b7, c7, _ = cpuid.cpuid(7, 0, level)
    return feature_names(c1, b7, c7, level.xcr0)


class HostCpu:
    """The arena, the host's features and the routine cache (one per process: `get()`)."""

    def __init__(self, hide: frozenset[str] = frozenset()):
        # private: Python's default is MAP_SHARED, which a fork (a sweep's worker processes) would share, and
        # processes running instructions at once would clobber each other's registers in the one buffer
        self.mm = mmap.mmap(-1, SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))
        self._top = CODE0
        self._routines: dict[bytes, object] = {}
        self._probe = self._place(_asm(
            "push rbx; mov rsi, rdi; mov eax, dword ptr [rsi]; mov ecx, dword ptr [rsi + 4]; cpuid; "
            "mov dword ptr [rsi], eax; mov dword ptr [rsi + 4], ebx; mov dword ptr [rsi + 8], ecx; "
            "mov dword ptr [rsi + 12], edx; pop rbx; ret"))
        self._xgetbv = self._place(_asm("xor ecx, ecx; xgetbv; mov dword ptr [rdi], eax; "
                                        "mov dword ptr [rdi + 4], edx; ret"))
        self.features = self._features() - hide        # hide: what to treat as absent (tests: an AVX2-only host)
        self.wide = {"AVX512F", "AVX512BW"} <= self.features
        self._pro, self._epi = self._frame()

    # --- placing and calling code -------------------------------------------------------------------------
    def _place(self, code: bytes):
        at = self._top
        if at + len(code) > CODE_END:
            raise ArenaFull(f"preemu's arena of host routines ({CODE_END >> 20} MiB) is full")
        self.mm[at:at + len(code)] = code
        self._top = (at + len(code) + 15) & ~15
        return ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.base + at), at

    def cpuid(self, leaf: int, sub: int = 0) -> tuple[int, int, int, int]:
        buf = (ctypes.c_uint32 * 4)(leaf, sub, 0, 0)
        self._probe[0](ctypes.addressof(buf))
        return tuple(buf)

    def _features(self) -> frozenset[str]:
        mx = self.cpuid(0)[0]
        _, _, c1, _ = self.cpuid(1)
        _, b7, c7, _ = self.cpuid(7) if mx >= 7 else (0, 0, 0, 0)
        xcr0 = 0
        if c1 & (1 << 27):                                  # OSXSAVE: XGETBV exists
            buf = (ctypes.c_uint32 * 2)()
            self._xgetbv[0](ctypes.addressof(buf))
            xcr0 = buf[0] | buf[1] << 32
        return feature_names(c1, b7, c7, xcr0)

    def _frame(self) -> tuple[bytes, bytes]:
        gprs = [(i, r) for i, r in enumerate(GPR_NAMES) if r not in ("rsp", "rdi")]
        pro = _asm(f"push rbx; push rbp; push r12; push r13; push r14; push r15; push rdi; "
                   f"stmxcsr dword ptr [rdi + {HOST_MXCSR}]; ldmxcsr dword ptr [rdi + {MXCSR}]")
        epi_vec = b""
        if self.wide:
            pro += b"".join(_evex_zmm(n, ZREG + 64 * n, False) for n in range(32))
            pro += b"".join(_kmovq(n, KREG + 8 * n, False) for n in range(8))
            epi_vec = (b"".join(_evex_zmm(n, ZREG + 64 * n, True) for n in range(32))
                       + b"".join(_kmovq(n, KREG + 8 * n, True) for n in range(8)))
        elif "AVX2" in self.features:
            pro += _asm("; ".join(f"vmovdqu ymm{n}, ymmword ptr [rdi + {ZREG + 64 * n}]" for n in range(16)))
            epi_vec = _asm("; ".join(f"vmovdqu ymmword ptr [rdi + {ZREG + 64 * n}], ymm{n}" for n in range(16)))
        pro += _asm(f"push qword ptr [rdi + {FLAGS}]; popfq; "
                    + "; ".join(f"mov {r}, qword ptr [rdi + {GPR + 8 * i}]" for i, r in gprs)
                    + f"; mov rdi, qword ptr [rdi + {GPR + 8 * 7}]")
        epi = _asm("pushfq; xchg rdi, qword ptr [rsp + 8]; "
                   + "; ".join(f"mov qword ptr [rdi + {GPR + 8 * i}], {r}" for i, r in gprs)
                   + f"; pop rax; mov qword ptr [rdi + {FLAGS}], rax; pop rax; mov qword ptr [rdi + {GPR + 56}], rax; "
                   f"stmxcsr dword ptr [rdi + {MXCSR}]")
        epi += epi_vec + _asm(f"ldmxcsr dword ptr [rdi + {HOST_MXCSR}]; "
                              + ("vzeroupper; " if "AVX" in self.features else "")
                              + "pop r15; pop r14; pop r13; pop r12; pop rbp; pop rbx; ret")
        return pro, epi

    def routine(self, insn: bytes, disp_at: int | None = None):
        """The callable running `insn` between the frame's loads and stores; `disp_at`: the offset in `insn` of a
        RIP-relative disp32 to point at the scratch operand. Cached per (insn, disp_at)."""
        key = insn + bytes((255 if disp_at is None else disp_at,))
        got = self._routines.get(key)
        if got is None:
            code = bytearray(self._pro + insn + self._epi)
            at = self._top
            if disp_at is not None:
                end = at + len(self._pro) + len(insn)            # RIP after the instruction
                code[len(self._pro) + disp_at:len(self._pro) + disp_at + 4] = \
                    ((SCRATCH - end) & 0xFFFFFFFF).to_bytes(4, "little")
            got = self._routines[key] = self._place(bytes(code))[0]
        return got

    def run(self, fn) -> None:
        fn(self.base)


_HOST: HostCpu | None = None


def get() -> HostCpu:
    """The process's HostCpu (made at the first AVX instruction); EmuError when no executable mapping can be made."""
    global _HOST
    if _HOST is None:
        try:
            _HOST = HostCpu()
        except (OSError, ValueError) as e:
            from ..core.errors import EmuError
            raise EmuError(f"--cpu v3/v4 runs AVX instructions on the host CPU, from an executable mapping this host "
                           f"refuses ({e})") from None
    return _HOST
