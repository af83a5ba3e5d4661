"""Several Unicorn C calls made by one ctypes call: a call chain, run by a routine in x86-64 machine code.

Why: a ctypes call costs ~0.4-0.6 µs on this machine before the C function runs (argument conversion,
GIL release, libffi), more than most of the Unicorn calls preemu makes (a register write, a batched
register read, a 1-instruction run). The sweep's point makes about ten of them in three bursts with no
Python decision inside a burst: set RSP and run the stub to asyncPreempt2, run on and dump the
registers, run the goroutine on and dump them. A CallChain is such a burst: a table of (function,
up to six integer arguments) records in ctypes memory that one native call walks, stopping at the first
call that returns nonzero (every uc_* function returns a uc_err, 0 = OK). The caller patches the
arguments that change (a run's start and count) in place through a memoryview, as plain integers.

Hooks that call back into Python still run inside a chain's emu_start, as in a plain ctypes call (the
chain is called through CFUNCTYPE, which releases the GIL; a callback takes it back).
Mirrors no Go source.
"""
from __future__ import annotations

import ctypes

from .nativehook import code_address

#: 64-bit words per record: the function's address, then six arguments (rdi, rsi, rdx, rcx, r8, r9)
RECORD_WORDS = 7

# rdi = first record, esi = number of records. Returns 0, or (index of the failing call + 1) << 32 | its
# nonzero return value (a uc_err). rbx, r12, r13 are callee-saved; three pushes keep rsp 16-aligned.
_RUN_ASM = f"""
    push rbx
    push r12
    push r13
    mov rbx, rdi
    mov r12d, esi
    xor r13d, r13d
next:
    cmp r13d, r12d
    jae done
    mov rdi, qword ptr [rbx + 8]
    mov rsi, qword ptr [rbx + 16]
    mov rdx, qword ptr [rbx + 24]
    mov rcx, qword ptr [rbx + 32]
    mov r8, qword ptr [rbx + 40]
    mov r9, qword ptr [rbx + 48]
    call qword ptr [rbx]
    inc r13d
    test eax, eax
    jnz failed
    add rbx, {RECORD_WORDS * 8}
    jmp next
failed:
    mov eax, eax
    shl r13, 32
    or rax, r13
    jmp out
done:
    xor eax, eax
out:
    pop r13
    pop r12
    pop rbx
    ret
"""

# xor_words(dst, a, b, n): dst[i] = a[i] ^ b[i] for n 64-bit words; returns 0 (a chain can call it)
_XOR_WORDS_ASM = """
    test ecx, ecx
    jz done
again:
    mov rax, qword ptr [rsi]
    xor rax, qword ptr [rdx]
    mov qword ptr [rdi], rax
    add rdi, 8
    add rsi, 8
    add rdx, 8
    dec ecx
    jnz again
done:
    xor eax, eax
    ret
"""

_run = None


def runner():
    """The native chain runner as a ctypes function: runner()(chain.ptr, chain.n) is chain.run_raw()."""
    global _run
    if _run is None:
        _run = ctypes.CFUNCTYPE(ctypes.c_uint64)(code_address(_RUN_ASM))
    return _run


def xor_words_address() -> int:
    """The address of the native xor_words(dst, a, b, n) for a chain's record: dst = a XOR b, n words."""
    return code_address(_XOR_WORDS_ASM)


class CallChain:
    """A fixed sequence of C calls with integer (or pointer) arguments, run by one ctypes call.

    `calls` is a list of (function address, [arguments]); an argument is an int (a value or an address:
    the caller keeps alive what it points into). `words` is a writable memoryview of 64-bit words over the
    records: the arguments of call i are words[i * RECORD_WORDS + 1 ...] (see `slot`)."""

    __slots__ = ("n", "_buf", "ptr", "words")

    def __init__(self, calls: list[tuple[int, list[int]]]):
        self.n = len(calls)
        self._buf = (ctypes.c_uint64 * (RECORD_WORDS * self.n))()
        for i, (fn, args) in enumerate(calls):
            if len(args) > RECORD_WORDS - 1:
                raise ValueError("a chained call takes at most six arguments")
            base = i * RECORD_WORDS
            self._buf[base] = fn
            for j, a in enumerate(args):
                self._buf[base + 1 + j] = a & 0xFFFF_FFFF_FFFF_FFFF
        self.ptr = ctypes.c_void_p(ctypes.addressof(self._buf))
        self.words = memoryview(self._buf).cast("B").cast("Q")

    @staticmethod
    def slot(call: int, arg: int) -> int:
        """The index in `words` of argument `arg` of call `call`."""
        return call * RECORD_WORDS + 1 + arg

    def run(self) -> tuple[int, int]:
        """Make the calls in order; return (0, 0) when all returned 0, else (index of the call that
        did not, what it returned)."""
        r = runner()(self.ptr, self.n)
        if not r:
            return 0, 0
        return (r >> 32) - 1, r & 0xFFFF_FFFF

    def run_raw(self) -> int:
        """run() without unpacking: 0 when every call returned 0 (the hot path tests this)."""
        return runner()(self.ptr, self.n)
