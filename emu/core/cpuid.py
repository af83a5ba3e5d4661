"""CPUID pinned to one documented x86-64 feature set, independent of Unicorn's CPU model.

The guest sees an Intel family-6 CPU with SSE up to SSE4.2, POPCNT, AES, PCLMULQDQ, CX16, MOVBE,
BMI1/BMI2, ERMS, LZCNT, RDTSCP and **no** XSAVE/OSXSAVE, AVX, AVX2, FMA or AVX-512, so Go's
internal/cpu (cpu_x86.go: HasAVX needs the CPUID bit, OSXSAVE and XCR0) takes the SSE paths
that Unicorn 2.1.4 executes correctly. Leaves not listed read as zeros, as for a leaf above the
maximum. The same values feed AT_HWCAP (leaf 1 EDX, what Linux reports on x86).

That is the CPU at --cpu v1 and v2. At v3 and v4 the level's bits (core/cpulevel.py, the one table of
them) are added to leaves 1 and 7, the maximum leaf becomes 0xD and leaf 0xD enumerates the XSAVE state
the level's XCR0 enables (SDM vol. 1 13.2: sub-leaf 0 EAX/EDX the XCR0 bits, EBX/ECX the XSAVE area's size,
Linux's fpu__init_system_xstate reads it; Go does not).

At v4 the CPU is a real AVX-512 part, ICELAKE_SP: an Intel Xeon Platinum 8380 (3rd generation Xeon Scalable,
"Ice Lake-SP"): family 6, model 0x6A, stepping 6 (signature 0x606A6, Linux's INTEL_ICELAKE_X), its brand
string in leaves 0x80000002-4, and the instruction-set bits of leaf 7 that part reports beyond x86-64-v4:
ADX, SHA, AVX512IFMA, AVX512VBMI, AVX512VBMI2, GFNI, VAES, VPCLMULQDQ, AVX512VNNI, AVX512BITALG,
AVX512VPOPCNTDQ and FSRM (leaf 7's sub-leaf maximum 0: no AVX-VNNI, AMX or AVX512_FP16, which came with
Sapphire Rapids). So Go's checks take that part's paths: internal/cpu/cpu_x86.go:165-214 (the AVX-512
extensions, HasSHA, HasADX, HasFSRM), the runtime's REP MOVSB memmove on an Intel CPU with ERMS and FSRM
(runtime/cpuflags_amd64.go:30-36), Green Tea's packed span scanner (internal/runtime/gc/scan/scan_amd64.go:37-43:
VL, BW, GFNI, BITALG, DQ, VBMI, POPCNT; used from runtime/mgcmark_greenteagc.go:892), SHA-NI in crypto/sha1 and
sha256, ADX in math/big, VPCLMULQDQ in hash/crc32. Every instruction those bits enable runs on the host
(engine/hostexec.py; ADX and SHA are sites too, engine/avx.py), which must have them (an AVX-512 host lacking
one refuses its instructions, naming it). Left out of the part's CPUID, as preemu does not execute them
exactly or at all: RDRAND, RDSEED, RDPID, FSGSBASE, CLFLUSHOPT, CLWB, PKU/OSPKE, LA57, SGX, the cache,
topology and address-size leaves (0x4, 0xB, 0x80000005-8); the maximum leaf stays 0xD.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from ..core.cpulevel import CpuLevel

# leaf 0: max leaf 7, "GenuineIntel"
_VENDOR = struct.unpack("<3I", b"GenuineIntel")
LEAF1_EAX = 0x000306C3          # family 6, model 0x3c (a Haswell signature), stepping 3
LEAF1_ECX = (1 << 0) | (1 << 1) | (1 << 9) | (1 << 13) | (1 << 19) | (1 << 20) | (1 << 22) | (1 << 23) | (1 << 25)
#            SSE3      PCLMUL     SSSE3      CX16       SSE4.1      SSE4.2      MOVBE       POPCNT      AES
LEAF1_EDX = 0x078BFBFF          # FPU..SSE2 incl. TSC, CX8, CMOV, MMX, FXSR, SSE, SSE2 (no HTT)
LEAF7_EBX = (1 << 3) | (1 << 8) | (1 << 9)          # BMI1, BMI2, ERMS
EXT1_ECX = (1 << 0) | (1 << 5)                       # LAHF/SAHF, LZCNT (ABM)
EXT1_EDX = (1 << 11) | (1 << 20) | (1 << 27) | (1 << 29)   # SYSCALL, NX, RDTSCP, LM
HWCAP = LEAF1_EDX

LEAVES: dict[tuple[int, int], tuple[int, int, int, int]] = {
    (0, 0): (7, _VENDOR[0], _VENDOR[2], _VENDOR[1]),      # EAX, EBX, ECX, EDX ("Genu" "ineI" "ntel")
    (1, 0): (LEAF1_EAX, 0x00000800, LEAF1_ECX, LEAF1_EDX),  # EBX: CLFLUSH line size 8*8 bytes
    (7, 0): (0, LEAF7_EBX, 0, 0),
    (0x80000000, 0): (0x80000001, 0, 0, 0),
    (0x80000001, 0): (0, 0, EXT1_ECX, EXT1_EDX),
}
SUBLEAF_MATTERS = {7}


SUBLEAF_MATTERS_XSAVE = {7, 0xD}
#: the XSAVE area's size (legacy 512 + header 64 + the components XCR0 enables; sigframe.py lays it out)
XSAVE_SIZE = {0x7: 832, 0xE7: 2688}


#: CPUID.(7,0) bits (Intel SDM vol. 2A table 3-8): EBX ADX 19, AVX512IFMA 21, SHA 29; ECX AVX512VBMI 1,
#: AVX512VBMI2 6, GFNI 8, VAES 9, VPCLMULQDQ 10, AVX512VNNI 11, AVX512BITALG 12, AVX512VPOPCNTDQ 14; EDX FSRM 4
_ICX_B7 = (1 << 19) | (1 << 21) | (1 << 29)
_ICX_C7 = (1 << 1) | (1 << 6) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12) | (1 << 14)
_ICX_D7 = 1 << 4


@dataclass(frozen=True)
class Part:
    """A real CPU the guest's CPUID names at a level: its signature (CPUID.1:EAX), brand string and the leaf-7
    bits it adds to the level's."""
    name: str
    signature: int
    brand: str
    leaf7: tuple[int, int, int]          # EBX, ECX, EDX


ICELAKE_SP = Part("Intel Xeon Platinum 8380 (Ice Lake-SP)", 0x000606A6,
                  "Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", (_ICX_B7, _ICX_C7, _ICX_D7))
#: the part each level is (v1-v3: the pinned Haswell signature, no brand string)
PARTS: dict[str, Part] = {"v4": ICELAKE_SP}


def _brand_leaves(brand: str) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    raw = brand.encode().ljust(48, b"\0")
    return {(0x80000002 + i, 0): struct.unpack("<4I", raw[16 * i:16 * i + 16]) for i in range(3)}


def leaves(level: CpuLevel | None) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """The CPUID leaves of the CPU at `level` (None or v1/v2: LEAVES)."""
    if level is None or not level.xcr0:
        return LEAVES
    out = dict(LEAVES)
    out[(0, 0)] = (0xD,) + LEAVES[(0, 0)][1:]
    a, b, c, d = LEAVES[(1, 0)]
    part = PARTS.get(level.name)
    out[(1, 0)] = (part.signature if part else a, b, c | level.leaf1_ecx, d)
    a, b, c, d = LEAVES[(7, 0)]
    pb, pc, pd = part.leaf7 if part else (0, 0, 0)
    out[(7, 0)] = (a, b | level.leaf7_ebx | pb, c | pc, d | pd)
    size = XSAVE_SIZE[level.xcr0]
    out[(0xD, 0)] = (level.xcr0, size, size, 0)
    if part:
        out[(0x80000000, 0)] = (0x80000004, 0, 0, 0)
        out.update(_brand_leaves(part.brand))
    return out


def cpuid(leaf: int, subleaf: int, level: CpuLevel | None = None) -> tuple[int, int, int, int]:
    """(EAX, EBX, ECX, EDX) for CPUID with EAX=leaf, ECX=subleaf, on the CPU at `level` (default v1)."""
    if level is None or not level.xcr0:
        return LEAVES.get((leaf, subleaf if leaf in SUBLEAF_MATTERS else 0), (0, 0, 0, 0))
    return leaves(level).get((leaf, subleaf if leaf in SUBLEAF_MATTERS_XSAVE else 0), (0, 0, 0, 0))
