"""Every guest address preemu uses, defined once.

A Go-like address space: user program text and data (.s input) at the addresses a small Go binary
would use, and preemu's own regions far above them so that a real Go binary (linked at 0x400000,
growing upward) can be loaded at its link addresses instead (gofront): runtime text (the
asyncPreempt stub and the sentinel routines that stand in for Go runtime functions), preemu's
private dump/clobber area, g/m/p structs, per-M TLS blocks (FS base so that FS:-8 holds the current
g), goroutine stacks with an unmapped guard page below each, and the heap. All addresses are below
2 GiB so 32-bit absolute addressing works.
"""
from __future__ import annotations

from dataclasses import dataclass

PAGE = 0x1000


def page_down(addr: int) -> int:
    return addr & ~(PAGE - 1)


def page_up(addr: int) -> int:
    return (addr + PAGE - 1) & ~(PAGE - 1)


TEXT_BASE = 0x0040_0000          # user program text (.s files)
TEXT_SIZE = 0x0010_0000
STUB_BASE = 0x2000_0000          # asyncPreempt stub (generated or --stub)
STUB_SIZE = 0x0001_0000
RT_BASE = 0x2001_0000            # runtime sentinels (asyncPreempt2, goexit, ...)
RT_SIZE = 0x0001_0000
PRIV_BASE = 0x2010_0000          # preemu-private data: clobber table, runtime globals
PRIV_SIZE = 0x0001_0000
DATA_BASE = 0x0070_0000          # user data buffers declared with ;@data
DATA_SIZE = 0x0010_0000
G_BASE = 0x2020_0000             # g structs, G_SLOT apart
G_SLOT = 0x1000
M_BASE = 0x2030_0000             # m structs
M_SLOT = 0x1000
P_BASE = 0x2040_0000             # p structs
P_SLOT = 0x4000
XREG_BASE = 0x2050_0000          # off-heap xRegState blocks (Go 1.27 layout)
XREG_SLOT = 0x1000
XREG_SIZE = 0x0010_0000
TLS_BASE = 0x2060_0000           # one page per M; FS base = page + TLS_FS_OFFSET
TLS_FS_OFFSET = 0x800
HEAP_BASE = 0x2800_0000         # the GC'd heap arena (bump-allocated objects, 16-byte aligned); above the stacks
HEAP_SIZE = 0x0040_0000
STACK_BASE = 0x2100_0000         # goroutine stacks: [guard page][stack]... one slot per G
STACK_SLOT = 0x0010_0000
STACK_GUARD_SIZE = PAGE
DEFAULT_STACK_SIZE = 0x800       # 2 KiB: a fresh Go stack is fixedStack (runtime/stack.go:78, linux/amd64)

MAX_GS = 64
MAX_MS = 16
MAX_PS = 16


@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size

    def contains(self, addr: int) -> bool:
        return self.base <= addr < self.end


TEXT = Region("text", TEXT_BASE, TEXT_SIZE)
STUB = Region("stub", STUB_BASE, STUB_SIZE)
RT = Region("runtime", RT_BASE, RT_SIZE)
PRIV = Region("preemu", PRIV_BASE, PRIV_SIZE)
DATA = Region("data", DATA_BASE, DATA_SIZE)
GS = Region("g", G_BASE, G_SLOT * MAX_GS)
MS = Region("m", M_BASE, M_SLOT * MAX_MS)
PS = Region("p", P_BASE, P_SLOT * MAX_PS)
XREGS = Region("xregs", XREG_BASE, XREG_SIZE)
HEAP = Region("heap", HEAP_BASE, HEAP_SIZE)
TLS = Region("tls", TLS_BASE, PAGE * MAX_MS)

#: Regions mapped at machine creation (stacks are mapped per goroutine): preemu's own, always;
#: the user regions only for programs assembled from .s files (a Go binary maps its own sections).
RUNTIME_REGIONS = (STUB, RT, PRIV, GS, MS, PS, XREGS, TLS, HEAP)
USER_REGIONS = (TEXT, DATA)
FIXED_REGIONS = USER_REGIONS + RUNTIME_REGIONS

# Runtime sentinel entry points (fixed slots inside RT; rtcode.py fills them).
RT_SLOT = 0x400
ASYNC_PREEMPT2 = RT_BASE + 0 * RT_SLOT
GOEXIT = RT_BASE + 1 * RT_SLOT
MORESTACK = RT_BASE + 2 * RT_SLOT
XREG_RESTORE = RT_BASE + 4 * RT_SLOT
GC_WRITE_BARRIER2 = RT_BASE + 5 * RT_SLOT
NANOSLEEP = RT_BASE + 6 * RT_SLOT
PARK_SPIN = RT_BASE + 7 * RT_SLOT
NEWOBJECT = RT_BASE + 8 * RT_SLOT
MALLOCGC = RT_BASE + 9 * RT_SLOT          # Go 1.27's size-class mallocgc entry points (RAX size, RBX type)
GO_NEWOBJECT = RT_BASE + 10 * RT_SLOT     # the real runtime.newobject(typ) (RAX = *abi.Type)
#: runtime.gcWriteBarrier1..8 of a real Go binary (each hands out N slots in R11)
GC_WRITE_BARRIER = {n: GC_WRITE_BARRIER2 if n == 2 else RT_BASE + (10 + n) * RT_SLOT for n in range(1, 9)}
#: runtime functions of a real Go binary computed in Python: the slice runtime (emu/model/goslice.py) and
#: runtime.rand (gcworld): name -> entry
GO_CALLS = {name: RT_BASE + (19 + i) * RT_SLOT for i, name in enumerate((
    "makeslice", "makeslicecopy", "growslice", "growsliceBuf", "moveSlice", "moveSliceNoScan", "moveSliceNoCap",
    "moveSliceNoCapNoScan", "rand"))}

# preemu-private data layout inside PRIV
CLOBBER_TABLE = PRIV_BASE + 0x400  # values asyncPreempt2 loads into every register
RT_DATA = PRIV_BASE + 0x2000       # runtime globals the guest reads
WRITE_BARRIER_FLAG = RT_DATA       # runtime.writeBarrier.enabled (4 bytes)
WB_BUF = RT_DATA + 0x100           # the write-barrier buffer gcWriteBarrier2 hands out (R11)
WB_BUF_SIZE = 0x100
SPIN_COUNTER = RT_DATA + 0x200     # iterations of the park spin loop (exact instruction accounting)
RAND_STATE = RT_DATA + 0x300       # runtime.rand's generator state (one for the world's Ms)
#: internal/cpu.X86 (its feature bytes at gostructs.X86_HAS_*): all zero, the model world's CPU has no AVX, so
#: a simd stub (stubgen) takes its SSE path there
CPU_X86 = RT_DATA + 0x400


def g_addr(goid_index: int) -> int:
    return G_BASE + goid_index * G_SLOT


def m_addr(index: int) -> int:
    return M_BASE + index * M_SLOT


def p_addr(index: int) -> int:
    return P_BASE + index * P_SLOT


def tls_fs_base(m_index: int) -> int:
    return TLS_BASE + m_index * PAGE + TLS_FS_OFFSET


def stack_bounds(g_index: int, size: int = DEFAULT_STACK_SIZE) -> tuple[int, int]:
    """Return (stack.lo, stack.hi) of goroutine slot `g_index`, at the top of the slot. stack.lo is
    page-aligned, so the page below it is unmapped (a guard page); a stack smaller than a page sits at
    the bottom of its page and the rest of the page above hi is mapped slack."""
    lo = STACK_BASE + (g_index + 1) * STACK_SLOT - page_up(size)
    return lo, lo + size


def describe_address(addr: int) -> str:
    """Return a short name for the region holding `addr` (for reports)."""
    for r in FIXED_REGIONS:
        if r.contains(addr):
            return r.name
    if STACK_BASE <= addr < STACK_BASE + STACK_SLOT * MAX_GS:
        return f"stack of g slot {(addr - STACK_BASE) // STACK_SLOT}"
    return "unmapped"
