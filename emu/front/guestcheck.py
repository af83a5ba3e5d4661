"""Instructions a goroutine's code may not contain in preemu, checked when a .s file is loaded.

preemu runs one goroutine's user-mode code on an emulated CPU with no kernel behind it and with
virtual time counted in instructions. Instructions that would leave that world (a system call, an
interrupt, port I/O, halting the CPU) or make a run depend on the host (CPUID, the time-stamp
counter, hardware random numbers) have no deterministic meaning here, so they are rejected up front
with the file:line of the instruction: a clear error (exit 2) instead of a silent no-op (SYSCALL
under Unicorn) or a run that stops early (HLT). Code is also mapped read-only (machine.py), so code
cannot write these instructions at run time either.

In a stub, the RET must be a plain RET: it returns to the resume PC pushCall stored at S-8 and must
leave RSP at S (`ret N` would pop N more bytes of the goroutine's frame).
"""
from __future__ import annotations

from ..core.errors import AsmError
from ..core.program import Program

#: mnemonic (Capstone) -> why it is not allowed
FORBIDDEN = {
    "hlt": "halts the CPU (privileged; in user mode a general-protection fault)",
    "syscall": "enters the kernel; preemu models no kernel (system calls are not modelled)",
    "sysenter": "enters the kernel; preemu models no kernel (system calls are not modelled)",
    "sysexit": "is a kernel instruction",
    "sysret": "is a kernel instruction",
    "int": "raises a software interrupt; preemu models no kernel (INT3 is reserved for runtime sentinels)",
    "int1": "raises a debug interrupt; preemu models no kernel",
    "int3": "raises a breakpoint interrupt; INT3 is reserved for preemu's runtime sentinels",
    "into": "raises an overflow interrupt; preemu models no kernel",
    "iret": "is a kernel instruction", "iretd": "is a kernel instruction", "iretq": "is a kernel instruction",
    "in": "does port I/O (privileged)", "out": "does port I/O (privileged)",
    "insb": "does port I/O (privileged)", "insw": "does port I/O (privileged)", "insd": "does port I/O (privileged)",
    "outsb": "does port I/O (privileged)", "outsw": "does port I/O (privileged)",
    "outsd": "does port I/O (privileged)",
    "cli": "is privileged", "sti": "is privileged", "rdmsr": "is privileged", "wrmsr": "is privileged",
    "cpuid": "depends on the host CPU (runs would not be deterministic)",
    "rdtsc": "reads the host's time-stamp counter (runs would not be deterministic; virtual time is "
             "an instruction count)",
    "rdtscp": "reads the host's time-stamp counter (runs would not be deterministic; virtual time is "
              "an instruction count)",
    "rdrand": "returns hardware random numbers (runs would not be deterministic)",
    "rdseed": "returns hardware random numbers (runs would not be deterministic)",
    "rdpid": "depends on the host (runs would not be deterministic)",
}


def check_program(program: Program, what: str = "goroutine code") -> None:
    """Raise AsmError (file:line) at the first instruction `program` may not contain."""
    for insn in program.iter_insns():
        m = insn.mnemonic.split()[-1]        # drop prefixes such as `rep`
        why = FORBIDDEN.get(m)
        if why is not None:
            raise AsmError(insn.file, insn.line, f"`{insn.text}` at {insn.addr:#x} is not allowed in {what}: "
                           f"it {why}")


def check_stub(stub: Program) -> None:
    """A stub follows the same rules, and returns with a plain RET."""
    check_program(stub, "a stub")
    for insn in stub.iter_insns():
        if insn.mnemonic.startswith("ret") and insn.op_str:
            raise AsmError(insn.file, insn.line, f"`{insn.text}`: asyncPreempt must return with a plain RET "
                           "(to the resume PC at S-8, leaving RSP at the interrupted S)")
