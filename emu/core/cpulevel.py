"""THE CPU-level table: the x86-64 microarchitecture levels preemu's CPU can be (`--cpu v1|v2|v3|v4`).

Mirrors the GOAMD64 levels as Go's runtime checks them at start-up (runtime/asm_amd64.s:100-140, the
V2/V3/V4 feature masks of runtime/asm_amd64.h, and the XGETBV check at asm_amd64.s:312-318) and as
internal/cpu reads them (internal/cpu/cpu_x86.go:95-200 doinit: HasAVX needs the CPUID bit, OSXSAVE and
XCR0 bits 1-2; HasAVX512F needs XCR0 bits 5-7). One row per level: the CPUID bits the level adds to
preemu's pinned CPU (core/cpuid.py builds the leaves from it), XCR0 as XGETBV reports it, and the register
state that exists at the level (X0-15; Y0-15; Z0-31 and K0-7: `state`, a VectorState). What a resume is
compared on is the part of it the running stub saves (goruntime/stubsaves.py): a default Go 1.27 build's
asyncPreempt saves X0-15 at every level.

v1 and v2 are the same CPU: the pinned feature set preemu has always had (SSE up to SSE4.2, POPCNT, MOVBE,
BMI1/BMI2, LZCNT, no XSAVE/AVX), which satisfies x86-64-v2 and leaves every result at v1 as it was. v3 adds
AVX, AVX2, FMA, F16C, XSAVE and OSXSAVE with XCR0 = x87|SSE|AVX; v4 adds AVX512F/DQ/CD/BW/VL and XCR0's
opmask, ZMM_Hi256 and Hi16_ZMM bits. These are the level's bits; the CPU at v4 is a real part whose CPUID
adds its own extensions beyond the level (core/cpuid.py ICELAKE_SP: VBMI, GFNI, BITALG, VPOPCNTDQ, VAES, SHA,
ADX, ..., so the runtime's AVX-512 GC scanner runs). Left out: AMX, APX.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import EmuError

# CPUID.1:ECX bits (Intel SDM vol. 2A, table 3-10)
FMA, XSAVE, OSXSAVE, AVX, F16C = 1 << 12, 1 << 26, 1 << 27, 1 << 28, 1 << 29
# CPUID.(7,0):EBX bits (table 3-8)
AVX2, AVX512F, AVX512DQ, AVX512CD, AVX512BW, AVX512VL = 1 << 5, 1 << 16, 1 << 17, 1 << 28, 1 << 30, 1 << 31
# XCR0 components (SDM vol. 1, 13.1): x87, SSE, AVX (YMM_Hi128), opmask, ZMM_Hi256, Hi16_ZMM
XCR0_X87, XCR0_SSE, XCR0_AVX, XCR0_OPMASK, XCR0_ZMM_HI256, XCR0_HI16_ZMM = 1, 2, 4, 32, 64, 128


@dataclass(frozen=True)
class VectorState:
    """A set of vector and mask registers, as a stub saves them and the resume check compares them: X0-15 (the
    SSE path of runtime/preempt_amd64.s, every Go 1.27 build's), Y0-15 (saveAVX2) or Z0-31 and K0-7 (saveAVX512)."""
    vector: str          # "X" (128 bits), "Y" (256) or "Z" (512)
    nvec: int            # 16, or 32 with AVX-512
    nmask: int           # K0..K(n-1): 0 or 8

    @property
    def vector_bytes(self) -> int:
        return {"X": 16, "Y": 32, "Z": 64}[self.vector]

    def vector_names(self) -> tuple[str, ...]:
        """In Go's names: X0..X15, Y0..Y15 or Z0..Z31."""
        return tuple(f"{self.vector}{i}" for i in range(self.nvec))

    def mask_names(self) -> tuple[str, ...]:
        return tuple(f"K{i}" for i in range(self.nmask))

    def describe(self) -> str:
        """"XMM0-15", "Y0-15" or "Z0-31 and K0-7" (what a sweep's OK line says it compared)."""
        names, masks = self.vector_names(), self.mask_names()
        first = "XMM0" if names[0] == "X0" else names[0]
        return f"{first}-{names[-1][1:]}" + (f" and {masks[0]}-{masks[-1][1:]}" if masks else "")


SSE = VectorState("X", 16, 0)


@dataclass(frozen=True)
class CpuLevel:
    name: str            # "v1" .. "v4" (GOAMD64's spelling)
    number: int          # 1 .. 4
    leaf1_ecx: int       # CPUID.1:ECX bits added to the pinned set
    leaf7_ebx: int       # CPUID.(7,0):EBX bits added
    xcr0: int            # XGETBV(0); 0 = no XSAVE (the instruction is #UD)
    vector: str          # the vector registers' name at this level: "X" (128), "Y" (256), "Z" (512 bits)
    nvec: int            # how many: 16, or 32 with AVX-512
    nmask: int           # opmask registers K0..K(n-1): 0 or 8

    @property
    def vector_bytes(self) -> int:
        return {"X": 16, "Y": 32, "Z": 64}[self.vector]

    @property
    def avx(self) -> bool:
        """VEX vector instructions exist at this level (preemu executes them itself: engine/avx*.py)."""
        return self.number >= 3

    @property
    def avx512(self) -> bool:
        return self.number >= 4

    def vector_names(self) -> tuple[str, ...]:
        """The vector registers the level has, in Go's names: X0..X15, Y0..Y15 or Z0..Z31."""
        return tuple(f"{self.vector}{i}" for i in range(self.nvec))

    def mask_names(self) -> tuple[str, ...]:
        return tuple(f"K{i}" for i in range(self.nmask))

    @property
    def state(self) -> VectorState:
        """All the vector state the level has (what a stub loaded with --stub must keep at it)."""
        return VectorState(self.vector, self.nvec, self.nmask)


_V3_ECX = FMA | XSAVE | OSXSAVE | AVX | F16C
_V4_EBX = AVX2 | AVX512F | AVX512DQ | AVX512CD | AVX512BW | AVX512VL
LEVELS: dict[str, CpuLevel] = {
    "v1": CpuLevel("v1", 1, 0, 0, 0, "X", 16, 0),
    "v2": CpuLevel("v2", 2, 0, 0, 0, "X", 16, 0),
    "v3": CpuLevel("v3", 3, _V3_ECX, AVX2, XCR0_X87 | XCR0_SSE | XCR0_AVX, "Y", 16, 0),
    "v4": CpuLevel("v4", 4, _V3_ECX, _V4_EBX, XCR0_X87 | XCR0_SSE | XCR0_AVX | XCR0_OPMASK | XCR0_ZMM_HI256
                   | XCR0_HI16_ZMM, "Z", 32, 8),
}
DEFAULT = "v1"


def level(name: str | None) -> CpuLevel:
    """The level called `name` (None: the default, v1); EmuError naming the choices otherwise."""
    if name is None:
        return LEVELS[DEFAULT]
    got = LEVELS.get(str(name).lower())
    if got is None:
        raise EmuError(f"--cpu {name!r}: not a CPU level (choose one of {', '.join(LEVELS)}, the GOAMD64 levels)")
    return got
