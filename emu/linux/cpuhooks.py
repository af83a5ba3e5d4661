"""The engine hooks that stand in for the CPU where Unicorn's own would differ: RDTSC/RDTSCP from virtual
time, CPUID from preemu's model CPU (at the --cpu level), the interrupt hook (which also runs the AVX
instructions of engine/avx.py at v3/v4), and single-stepping one instruction by the trap flag.

CpuHooks is a mixin of process.Process (it uses the process's engine, image, counter and clock); the
hooks are installed by Process._load. Mirrors the x86 instructions' architectural effects (the Intel SDM:
RDTSC/RDTSCP, CPUID, EFLAGS.TF and #DB), not a Linux source; the CPUID leaves are cpuid.py's. Left out:
a TSC frequency other than one tick per virtual ns, TSC_AUX (RDTSCP's ECX is 0), debug registers.
"""
from __future__ import annotations

from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from ..core.errors import EmuError
from ..engine import x86decode
from ..core import cpuid
from .regbatch import RegBatch, read_reg
from .sigframe import X86_TRAP_PF

TF = 0x100                              # EFLAGS trap flag: #DB after the next instruction
_EFLAGS = RegBatch([X.UC_X86_REG_EFLAGS])


class CpuHooks:
    """RDTSC and CPUID answered by preemu, the interrupt hook, and one instruction run with TF set."""

    def _hook_rdtsc(self) -> None:
        """RDTSC/RDTSCP read the host clock in Unicorn; answer them from virtual time instead."""
        for a, n in self.image.find_insns(("rdtsc", "rdtscp")):
            self.uc.hook_add(UC_HOOK_CODE, self._on_rdtsc, n, a, a)

    def _on_rdtsc(self, uc, addr, size, n) -> None:
        if self.counter.stopping(addr):
            return                      # the counter is stopping the engine before this instruction
        tsc = self.now()
        uc.reg_write(X.UC_X86_REG_RAX, tsc & 0xFFFFFFFF)
        uc.reg_write(X.UC_X86_REG_RDX, (tsc >> 32) & 0xFFFFFFFF)
        if n == 3:
            uc.reg_write(X.UC_X86_REG_RCX, 0)
        self.counter.cut_after(addr)             # the block is left here: the jump below starts a new one
        uc.reg_write(X.UC_X86_REG_RIP, addr + n)

    def _on_cpuid(self, uc, _) -> int:
        a, b, c, d = cpuid.cpuid(uc.reg_read(X.UC_X86_REG_EAX) & 0xFFFFFFFF, uc.reg_read(X.UC_X86_REG_ECX) & 0xFFFFFFFF,
                                 self.level)
        for r, v in ((X.UC_X86_REG_RAX, a), (X.UC_X86_REG_RBX, b), (X.UC_X86_REG_RCX, c), (X.UC_X86_REG_RDX, d)):
            uc.reg_write(r, v)
        return 1                        # skip the engine's own CPUID

    # --- one instruction, then stop (the real-program sweep's next boundary) ----------------------------
    #: instructions that read or change TF, trap, or enter the kernel: never run single-stepped
    _NO_STEP = frozenset(("pushf", "pushfq", "popf", "popfq", "syscall", "sysenter", "int", "int3", "int1", "into",
                          "iret", "iretq", "ud2", "hlt", "cpuid", "rdtsc", "rdtscp", "sti", "cli"))

    def single_step(self, target: int) -> bool:
        """Inside a code hook for an instruction that ends its block (asyncPreempt's RET): make the engine stop
        after exactly one more instruction, the one at `target`, by the trap flag (a translated block of one
        instruction that raises #DB, kept in the cache under its flags) instead of the counter's cut-short
        block, which is translated anew and dropped each time. The limit still stands behind it. False (and
        nothing done) for an instruction that reads or changes TF, traps or enters the kernel."""
        ok = self._step_ok.get(target)
        if ok is None:                  # the shared decoder: a Capstone handle made here cost ~100 us a target
            i = x86decode.first(self.read_or_empty(target, 16), target)
            ok = self._step_ok[target] = i is not None and i[2] not in self._NO_STEP and not i[2].startswith("rep")
        if not ok or self._stepping:
            return False
        _EFLAGS.write(self.uc, (read_reg(self.uc, X.UC_X86_REG_EFLAGS) | TF,))
        self._stepping = True
        return True

    def _on_intr(self, uc, intno, _) -> None:
        """The engine's interrupt hook (always installed: adding one costs ~50 us). #DB while single-stepping
        ends the step; any other interrupt or exception stops the engine and is raised as the engine's own
        UC_ERR_EXCEPTION would have been without a hook (run's caller handles it as before)."""
        if intno == 3 and self.avx is not None and self.avx.trap():
            if self.avx.fault is not None:       # its access faulted (engine/avxmem.py): a page fault, counted
                self.counter.stop_here(True)     # as the engine counts its own faulting instruction; RIP is on
                self._exception = X86_TRAP_PF    # it, and the run's caller raises SIGSEGV (sigdeliver._trap)
                return
            if self.avx.error is None:           # an AVX instruction preemu ran (engine/avx.py): go on
                return
            e, self.avx.error = self.avx.error, None
            self.counter.stop_here(False)        # it did not run
            self.error = EmuError(f"{e} in {self.image.describe(e.pc)}")
            return
        if intno == 1 and self._stepping:
            self.counter.block_ran()             # its one instruction ran (RIP may be a jump's target)
            self._end_step()
        else:
            self._exception = intno
        uc.emu_stop()

    def _end_step(self) -> None:
        if self._stepping:
            _EFLAGS.write(self.uc, (read_reg(self.uc, X.UC_X86_REG_EFLAGS) & ~TF,))
            self._stepping = False
