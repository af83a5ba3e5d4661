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
"""
from __future__ import annotations

import struct

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


def leaves(level: CpuLevel | None) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """The CPUID leaves of the CPU at `level` (None or v1/v2: LEAVES)."""
    if level is None or not level.xcr0:
        return LEAVES
    out = dict(LEAVES)
    out[(0, 0)] = (0xD,) + LEAVES[(0, 0)][1:]
    a, b, c, d = LEAVES[(1, 0)]
    out[(1, 0)] = (a, b, c | level.leaf1_ecx, d)
    a, b, c, d = LEAVES[(7, 0)]
    out[(7, 0)] = (a, b | level.leaf7_ebx, c, d)
    size = XSAVE_SIZE[level.xcr0]
    out[(0xD, 0)] = (level.xcr0, size, size, 0)
    return out


def cpuid(leaf: int, subleaf: int, level: CpuLevel | None = None) -> tuple[int, int, int, int]:
    """(EAX, EBX, ECX, EDX) for CPUID with EAX=leaf, ECX=subleaf, on the CPU at `level` (default v1)."""
    if level is None or not level.xcr0:
        return LEAVES.get((leaf, subleaf if leaf in SUBLEAF_MATTERS else 0), (0, 0, 0, 0))
    return leaves(level).get((leaf, subleaf if leaf in SUBLEAF_MATTERS_XSAVE else 0), (0, 0, 0, 0))
