"""Runtime text: the sentinel routines that stand in for Go runtime functions.

Sentinels trap into Python with INT3 (an interrupt hook costs nothing per instruction, whereas
every address-scoped code hook slows all count= execution by ~20%).

* asyncPreempt2 -- where the stub calls. Its first instruction, INT3, is the trap into the
  scheduler (runtime/preempt.go asyncPreempt2 -> mcall(gopreempt_m | preemptPark)). Then guest
  code models what running other goroutines does to the CPU: it builds and scribbles a 24-byte
  frame (like Go's `PUSHQ BP; SUBQ $0x10, SP`), then loads every GPR, RFLAGS (DF included) and
  every XMM register from the clobber table, so a stub that forgets anything is caught. RBP is
  callee-saved in Go's ABI and comes back intact. In the go1.27 layout it ends like the ABI0
  wrapper leaves things for ABIInternal: R14 = g (from FS:-8) and X15 = 0.
* morestack_noctxt -- the prologue's call target; a Python hook plays newstack.
* gcWriteBarrier2 -- the write barrier's slow path; `writeBarrier` is the runtime's enabled flag.
* nanosleep -- RAX = nanoseconds: the scheduler parks the G on a timer.
* parkspin -- preemu's own: a counted idle loop used for exact instruction accounting.
* newobject -- RAX = size: the heap allocates (Python hook) and returns the object in RAX.
* mallocgc, gonewobject, gcWriteBarrier1..8 -- where a real Go binary's allocation entry points
  (RAX = size, RBX = type / RAX = type) and write barriers jump (gofront patches them).
* makeslice, growslice, growsliceBuf, moveSlice*, makeslicecopy -- the same for the slice runtime
  (memmap.GO_CALLS): a Python hook computes them as runtime/slice.go does (goslice.py).
* goexit -- the return address of every goroutine entry function (runtime.goexit).

Left out: the real asyncPreempt2/xRegSave bodies (modelled in Python by the hook).
"""
from __future__ import annotations

from functools import lru_cache

from ..front import asmfront
from ..core import dump, memmap, regs, stubgen
from ..core.program import Program

def _abs(addr: int) -> str:
    return f"[{addr:#x}]"


def _asyncpreempt2(layout_name: str) -> list[str]:
    t = memmap.CLOBBER_TABLE
    o = dump.OFFSETS
    out = [";@asm", ";@nosplit", ";@goname runtime.asyncPreempt2", "asyncPreempt2:", "int3",
           "push rbp", "mov rbp, rsp", "sub rsp, 16",
           f"mov rax, qword ptr {_abs(t + o['RAX'])}",
           "mov qword ptr [rsp], rax", "mov qword ptr [rsp + 8], rax",
           "add rsp, 16", "pop rbp",
           f"push qword ptr {_abs(t + o['RFLAGS'])}", "popfq"]
    for r in regs.GP_REGS:
        out.append(f"mov {r.asm}, qword ptr {_abs(t + o[r.name])}")
    for r in regs.XMM_REGS:
        out.append(f"movups {r.asm}, xmmword ptr {_abs(t + o[r.name])}")
    if layout_name != "go1.14":
        out += ["call xRegRestore", "mov r14, qword ptr fs:[0xfffffffffffffff8]", "xorps xmm15, xmm15"]
    out.append("ret")
    return out


def _xregrestore() -> list[str]:
    # Go 1.27's xRegRestore frame (BP + SUBQ $0x28): counted in asyncPreemptStack, work done in Python.
    return [";@asm", ";@nosplit", ";@goname runtime.xRegRestore", "xRegRestore:",
            "push rbp", "mov rbp, rsp", "sub rsp, 40", "mov qword ptr [rsp], rbp", "add rsp, 40", "pop rbp", "ret"]


def _trap(goname: str, label: str) -> list[str]:
    """A routine that traps into a Python hook (INT3) and returns: what it computes is the hook's."""
    return [";@asm", ";@nosplit", f";@goname {goname}", f"{label}:", "int3", "ret"]


def _gcwritebarrier_n(n: int) -> list[str]:
    # runtime.gcWriteBarrier1..8 (asm_amd64.s): R11 = room for n pointers in the buffer; clobbers no
    # register but R11 and no flag. Real Go binaries' entry points jump here.
    return [";@asm", ";@nosplit", f";@goname runtime.gcWriteBarrier{n}", f"gcWriteBarrier{n}:", "int3",
            f"lea r11, [{memmap.WB_BUF:#x}]", "ret"]


def _park_spin() -> list[str]:
    # Where an M's CPU idles after its G trapped mid-quantum: 2 instructions per counted iteration,
    # so the scheduler can tell exactly how many instructions the G ran before the trap.
    return [";@asm", ";@goname preemu.parkSpin", "parkspin:",
            f"inc qword ptr [{memmap.SPIN_COUNTER:#x}]", "jmp parkspin"]


def _goexit() -> list[str]:
    return [";@asm", ";@goname runtime.goexit", "goexit:", "int3"]


@lru_cache(maxsize=None)
def runtime_program(layout_name: str) -> Program:
    """Return the assembled runtime text for `layout_name`, each routine at its fixed slot."""
    prog = Program()
    parts = [(memmap.ASYNC_PREEMPT2, _asyncpreempt2(layout_name)), (memmap.GOEXIT, _goexit()),
             # runtime.morestack_noctxt: a Python hook decides (newstack); in the preempt case it returns
             # to the prologue's spill block, which jumps back to the function entry and re-runs the check
             (memmap.MORESTACK, _trap("runtime.morestack_noctxt", "morestack_noctxt")),
             # nanosleep: RAX = nanoseconds; the scheduler parks the G on a timer (time.Sleep -> gopark)
             (memmap.NANOSLEEP, _trap("runtime.nanosleep", "nanosleep")), (memmap.PARK_SPIN, _park_spin()),
             # runtime.newobject of a .s program: RAX = size in bytes -> RAX = zeroed heap memory
             (memmap.NEWOBJECT, _trap("runtime.newobject", "newobject")),
             # Go 1.27's mallocgcSmallScanNoHeaderSC*/mallocgcSmallNoScanSC*/mallocgcTinySC2
             # (malloc_generated.go): RAX = size, RBX = *abi.Type, RCX = needzero -> RAX = the object
             (memmap.MALLOCGC, _trap("runtime.mallocgc", "mallocgc")),
             # a Go binary's runtime.newobject(typ *_type) (malloc.go): RAX = *abi.Type -> RAX = the object
             (memmap.GO_NEWOBJECT, _trap("runtime.newobject", "gonewobject"))]
    parts += [(a, _gcwritebarrier_n(n)) for n, a in memmap.GC_WRITE_BARRIER.items()]
    # runtime.makeslice, growslice, ..., rand (memmap.GO_CALLS): arguments and results in ABIInternal's
    # integer registers (goslice.py, gcworld._rand)
    parts += [(a, _trap(f"runtime.{name}", name)) for name, a in memmap.GO_CALLS.items()]
    if layout_name != "go1.14":
        parts.append((memmap.XREG_RESTORE, _xregrestore()))
    for addr, lines in parts:
        externs = {"xRegRestore": memmap.XREG_RESTORE} if addr == memmap.ASYNC_PREEMPT2 else {}
        part = asmfront.assemble_text("\n".join(lines) + "\n", "<preemu runtime>", addr, externs)
        if part.funcs[0].end - addr > memmap.RT_SLOT:
            raise AssertionError(f"runtime routine at {addr:#x} overflows its slot")
        prog = prog.merged(part)
    return prog


#: Symbols every user program and stub may reference.
def runtime_externs() -> dict[str, int]:
    return {"asyncPreempt2": memmap.ASYNC_PREEMPT2, "goexit": memmap.GOEXIT, "morestack_noctxt": memmap.MORESTACK,
            "gcWriteBarrier2": memmap.GC_WRITE_BARRIER2, "writeBarrier": memmap.WRITE_BARRIER_FLAG,
            "nanosleep": memmap.NANOSLEEP, "newobject": memmap.NEWOBJECT,
            **{name: memmap.CPU_X86 + off for name, off in stubgen.X86_SYMBOLS.items()}}
