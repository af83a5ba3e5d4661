"""What `preemu explain` says about each rule and each stub instruction: teaching texts with Go citations.

The questions isAsyncSafePoint asks (runtime/preempt.go, Go 1.27.3), why Go has each refusal, the
classes of compiler-marked unsafe points, and how the stub's instructions group into the steps of
the story (PUSHQ BP, PUSHFQ, ADJSP, the saves, ...). Pure text and classification; the values
always come from the run (explain.py).
"""
from __future__ import annotations

from ..core.program import tests_write_barrier

#: isAsyncSafePoint's checks: what Go asks, and where (Go 1.27.3 source)
CHECK_QUESTIONS = {
    "curg": ("mp.curg == gp (not on g0 or gsignal)", "runtime/preempt.go:396"),
    "canPreemptM": ("mp.p != 0 && canPreemptM(mp)", "runtime/preempt.go:401"),
    "stack": ("sp - stack.lo >= asyncPreemptStack", "runtime/preempt.go:406"),
    "findfunc": ("findfunc(pc).valid(): Go code", "runtime/preempt.go:427"),
    "unsafePoint": ("PCDATA_UnsafePoint(pc) != Unsafe", "runtime/preempt.go:443"),
    "asm": ("not assembly (FuncFlagAsm)", "runtime/preempt.go:450"),
    "runtime": ("not runtime., internal/runtime/, reflect.", "runtime/preempt.go:461"),
    "other": ("a check preemu's explain table does not list", "runtime/preempt.go:390"),
}

#: Why Go has each rule: what would go wrong if it injected there anyway.
WHY = {
    "not-curg": "the handler interrupted runtime code on g0/gsignal; only a user G can be made to call asyncPreempt",
    "no-p": "an M without a P is not running Go code that the scheduler could switch away from",
    "m-locks": "the M holds a runtime lock; switching goroutines now could deadlock the runtime",
    "m-mallocing": "the allocator's state is inconsistent in the middle of malloc",
    "m-preemptoff": "the runtime turned preemption off on this M for a critical section",
    "p-not-running": "the P is being stopped or handed off; there is nothing to preempt",
    "g-syscall": "the G is in a system call; it is not running Go code",
    "stack-headroom": "the stub and asyncPreempt2 need asyncPreemptStack bytes below SP; with less, the injected "
                      "frames would run into the guard page (there is no red zone to borrow)",
    "no-func": "without function metadata the runtime cannot unwind or scan the interrupted frame",
    "asm-func": "assembly has no register maps and may keep state the runtime cannot see (e.g. data below SP)",
    "runtime-func": "the runtime has many 'do not preempt between here and here' sequences (scheduler, defer, "
                    "write barriers)",
    "asyncpreemptoff": "GODEBUG=asyncpreemptoff=1: the handler ignores SIGURG entirely (golang/go#38531)",
    "no-request": "nothing asked for a preemption (a stray or late SIGURG); the handler only acknowledges it",
}

WHY_UNSAFE = {
    "prologue": "the stack-check prologue: between CMPQ SP, 16(R14) and JLS the flags hold a comparison with "
                "stackguard0. If the request set stackguard0 = stackPreempt before the CMP, they say 'call "
                "morestack'; resuming after the preemption (which resets stackguard0) would branch on those stale "
                "flags and grow the stack for nothing (golang/go#35470; --signal-delay 1 --force-unsafe shows it)",
    "write-barrier": "a write-barrier sequence: the flag test, the buffer stores and the pointer store must not be "
                     "split by a GC phase change, or a pointer store escapes the barrier",
    "nosplit": "a //go:nosplit function: it has no stack check, so the compiler marks all of it unsafe",
    "other": "the compiler or assembler marked this PC unsafe (an atomic sequence, a spill block, runtime code "
             "inlined into user code, ...)",
}


def unsafe_class(prog, pc: int) -> str:
    """Which kind of compiler-marked unsafe point pc is (for the explanation only): what the instruction
    just before its unsafe run tests."""
    f = prog.func_for(pc)
    if f is not None and f.nosplit:
        return "nosplit"
    run = prog.unsafe_run(pc)
    prev = run[0] if run is not None else None
    if prev is not None and prev.mnemonic == "cmp":
        ops = prev.op_str.replace(" ", "")
        if ops.startswith("rsp,qwordptr[r14+0x10]") or ops.startswith("rsp,qwordptr[r14+16]"):
            return "prologue"
        if tests_write_barrier(prev):
            return "write-barrier"
    return "other"


def stub_phase(i) -> str:
    m, ops = i.mnemonic, i.op_str.replace(" ", "")
    if m == "call":
        return "call"
    if m.startswith("ret"):
        return "ret"
    if m.startswith("j"):
        return "jump"
    if m == "push" and ops == "rbp" or m == "mov" and ops == "rbp,rsp":
        return "bp"
    if m == "pushfq":
        return "flags"
    if m in ("sub", "lea") and ops.startswith("rsp,"):
        return "adjsp"
    if m == "add" and ops.startswith("rsp,"):
        return "unadjsp"
    if m == "popfq":
        return "rflags"
    if m == "pop" and ops == "rbp":
        return "rbp"
    dst = ops.split(",")[0]
    if "ptr[" in dst:
        return "save"
    return "locate" if m in ("mov", "lea") and dst in ("rax", "r14") and "xmm" not in ops and not _restores(i) \
        else "restore"


def _restores(i) -> bool:
    """A MOV that reloads a saved GPR from the stack frame (mov reg, [rsp + n])."""
    return "[rsp" in i.op_str


STUB_SHORT = {"bp": "PUSHQ BP", "flags": "PUSHFQ", "adjsp": "ADJSP", "save": "save", "locate": "find xRegs",
               "restore": "restore", "unadjsp": "drop frame", "jump": "JMP", "rflags": "POPFQ", "rbp": "POPQ BP"}

STUB_TEXT = {
    "bp": ("asyncPreempt: PUSHQ BP; MOVQ SP, BP",
           lambda lay, s, rsp: f"The stub saves the interrupted RBP at S-16 = {s - 16:#x} and makes RBP point there "
                               "(frame pointer chain for tracebacks)."),
    "flags": ("PUSHFQ: save the flags first",
              lambda lay, s, rsp: f"RFLAGS goes to S-24 = {s - 24:#x} before anything that could change it: the "
                                  "next instruction (ADJSP) is a SUB, which clobbers the flags."),
    "adjsp": ("ADJSP: the save area",
              lambda lay, s, rsp: f"RSP drops by {lay.frame_size} bytes to {rsp:#x}: room for "
                                  + ("the 14 GPRs and X0-X15." if not lay.xreg_slots else "the 14 GPRs (X0-X15 go "
                                                                                          "to p.xRegs in go1.27).")),
    "save": ("Save the registers",
             lambda lay, s, rsp: "MOVQ/MOVUPS store each register in Go's order (runtime/mkpreempt.go); the table "
                                 "shows every slot with the value it now holds."),
    "locate": ("Find this P's xRegs scratch",
               lambda lay, s, rsp: "go1.27: R14 = g from TLS (do not trust R14), then g.m.p, then "
                                   "&p.xRegs.scratch: X0-X15 are saved there, not on the goroutine stack."),
    "restore": ("Restore the registers",
                lambda lay, s, rsp: "The stub reloads every register from its save slots (X0-X15 "
                                    + ("from p.xRegs.cache of the P it resumed on)." if lay.xreg_slots else
                                       "first, then the GPRs).")),
    "unadjsp": ("Drop the save area", lambda lay, s, rsp: f"RSP back up to {rsp:#x}."),
    "jump": ("A jump inside the stub",
             lambda lay, s, rsp: "Go's stub has one vector save/restore sequence per vector width (SSE, AVX, "
                                 "AVX-512) and jumps past the ones this CPU does not use."),
    "rflags": ("POPFQ: the flags come back",
               lambda lay, s, rsp: "Flags are restored after the last ADD/SUB, so nothing can change them again."),
    "rbp": ("POPQ BP", lambda lay, s, rsp: f"RBP is restored; RSP = {rsp:#x} = S-8, pointing at the resume PC."),
}
