"""Go runtime struct offsets and constants, one table each (Go 1.27.3 linux/amd64 default build).

Mirrors runtime/runtime2.go as laid out by the compiler (go_asm.h of that build; facts Appendix A)
and the constants of runtime/stack.go, runtime/preempt.go and internal/abi/symtab.go. Only the
fields preemu reads or writes are listed; the emulated structs are large enough for real Go 1.27
stub machine code (`MOVQ 0x30(R14), AX; MOVQ 0xd0(AX), AX; LEAQ 0x35e8(AX), AX`) to run unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    size: int


def _fields(*spec: tuple[str, int, int]) -> dict[str, Field]:
    return {n: Field(n, o, s) for n, o, s in spec}


#: runtime.g
G_FIELDS = _fields(
    ("stack.lo", 0, 8), ("stack.hi", 8, 8), ("stackguard0", 16, 8), ("stackguard1", 24, 8),
    ("m", 48, 8), ("sched.sp", 56, 8), ("sched.pc", 64, 8), ("sched.g", 72, 8), ("sched.bp", 96, 8),
    ("atomicstatus", 144, 4), ("goid", 152, 8),  # goid offset: not in facts Appendix A; preemu's own slot
    ("preempt", 177, 1), ("preemptStop", 178, 1), ("preemptShrink", 179, 1), ("asyncSafePoint", 180, 1),
    ("xRegs.state", 400, 8),
)
G_SIZE = 0x200

#: runtime.m
M_FIELDS = _fields(
    ("g0", 0, 8), ("procid", 64, 8), ("gsignal", 72, 8), ("mstartfn", 176, 8), ("curg", 184, 8), ("p", 208, 8),
    ("id", 232, 8),
    # preemptoff is a Go string header (runtime2.go:649): data pointer at 248, length at 256
    ("mallocing", 240, 4), ("preemptoff.str", 248, 8), ("preemptoff.len", 256, 8),
    ("locks", 264, 4), ("preemptGen", 912, 4), ("signalPending", 916, 4),
)
M_SIZE = 0x400

#: runtime.p ; xRegs = xRegPerP{scratch xRegs (2112 bytes); cache *xRegState}
P_FIELDS = _fields(
    ("id", 0, 4), ("status", 4, 4), ("schedtick", 16, 4), ("m", 48, 8), ("preempt", 13776, 1),
    ("xRegs.scratch", 13800, 2112), ("xRegs.cache", 13800 + 2112, 8),
)
P_SIZE = 0x4000

@dataclass(frozen=True)
class StructTables:
    """One program's layout of the runtime structs preemu writes: g, m and p as field tables (the fields
    above, at that program's offsets). Intel `.s` input uses TYPED; a Go binary's come from its DWARF
    (golayout.struct_tables)."""
    g: dict
    m: dict
    p: dict
    source: str = "preemu's typed Go 1.27.3 table"

    def of(self, struct: str) -> dict:
        return {"runtime.g": self.g, "runtime.m": self.m, "runtime.p": self.p}[struct]


def typed_tables() -> StructTables:
    """The typed Go 1.27.3 tables (read at call time, so a test may substitute one)."""
    return StructTables(G_FIELDS, M_FIELDS, P_FIELDS)


#: An M's TLS block, from its FS base: non-cgo linux/amd64 keeps the current g at FS:-8 (runtime/go_tls.h,
#: runtime/asm_amd64.s get_tls; -8 is runtime.tlsg's offset under the internal linker)
TLS_FIELDS = _fields(("g", -8, 8))

#: Size of one xRegs block (Z0..Z31 at i*64, K0..K7 at 2048..2104) and of one vector slot in it.
XREGS_SIZE = 2112
XREGS_SLOT = 64
XREGS_Z = 32                            # xRegs: Z0..Z31 at i*64, then K0..K7 at 2048 + 8*i (preempt_amd64.go)
XREGS_K = 8
#: internal/cpu.X86's HasAVX2 and HasAVX512 bytes (internal/cpu/cpu.go X86 struct; the const_offsetX86HasAVX2/
#: ...HasAVX512 that runtime/preempt_amd64.s:40-43 CMPBs under GOEXPERIMENT=simd, Go 1.27.3)
X86_HAS_AVX2 = 68
X86_HAS_AVX512 = 69

# G status values (runtime2.go)
G_IDLE, G_RUNNABLE, G_RUNNING, G_SYSCALL, G_WAITING, G_DEAD = 0, 1, 2, 3, 4, 6
G_COPYSTACK, G_PREEMPTED, G_SCAN = 8, 9, 0x1000
# P status values (1.27)
P_IDLE, P_RUNNING, P_GCSTOP, P_DEAD = 0, 1, 3, 4

# runtime/stack.go, internal/abi/stack.go (linux/amd64, no race)
STACK_PREEMPT = 0xFFFFFFFFFFFFFADE      # uintptrMask & -1314
STACK_NOSPLIT = 800
STACK_SMALL = 128
STACK_GUARD = 928                       # stackNosplit + stackSystem(0) + StackSmall
FIXED_STACK = 2048                      # fixedStack (stack.go:82-89): a new goroutine's stack, the shrink floor
PTR_SIZE = 8

# internal/abi/symtab.go: PCDATA_UnsafePoint values
UNSAFE_POINT_SAFE = -1
UNSAFE_POINT_UNSAFE = -2

SIG_PREEMPT = 23                        # _SIGURG on linux/amd64
