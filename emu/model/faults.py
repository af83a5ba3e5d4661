"""What a guest fault becomes: a Fault naming the PC, where it was and the register to blame.

Translates the engine's errors (a UcError for an unmapped or read-only access, its address worked out
from the faulting instruction by engine/faultaddr.py: a hook that would report it slows every store),
an exception raised inside a hook (GuestFaultInHook) and an unexpected interrupt (an x86 exception
vector, the single-step trap of a bad POPFQ) into one Fault. Mixed into machine.Machine, whose program
(all), page table (pages), describe_address and the run's records it uses. Mirrors no Go source; the
fault text is preemu's own. Left out: resuming after a fault (a fault ends the run).
"""
from __future__ import annotations

from dataclasses import dataclass

import unicorn

from ..core import memmap
from ..engine.faultaddr import failed_address

#: x86 exception vectors a guest instruction can raise
_EXCEPTIONS = {0: "divide error (#DE: division by zero or quotient overflow)", 3: "breakpoint (INT3)",
               4: "overflow (#OF)", 5: "bound range exceeded (#BR)", 6: "invalid opcode (#UD)",
               13: "general protection fault (#GP)", 17: "alignment check (#AC)"}


class GuestFaultInHook(Exception):
    """Raised inside a hook; Unicorn re-raises it from emu_start and run() reports it as a Fault."""


@dataclass
class Fault(Exception):
    """The guest faulted: Unicorn's error, the PC, where it was, and the register to blame if known."""

    pc: int
    error: str
    where: str
    reg: str | None = None

    def __str__(self) -> str:
        return f"{self.error} at {self.where}"


class FaultMixin:
    """The Machine's fault reporting: where a PC is, and a Fault for each way a run can fail."""

    def where(self, pc: int) -> str:
        """describe_pc, and for a PC outside every function, how control got there if we can tell."""
        if self.all.func_for(pc) is not None:
            return self.all.describe_pc(pc)
        for f in self.all.funcs:
            if f.end == pc and f.insns:
                last = f.insns[-1]
                return (f"{pc:#x}, just past the end of {f.name}: execution fell off the end of the function "
                        f"after `{last.text}` ({last.where}); end it with RET or JMP")
        return f"{pc:#x}, outside any function"

    def _bad_access(self, e: unicorn.UcError) -> tuple[str, int] | None:
        """What the failed access did and its address, for the engine's memory errors."""
        kind = {unicorn.UC_ERR_READ_UNMAPPED: "reading", unicorn.UC_ERR_WRITE_UNMAPPED: "writing",
                unicorn.UC_ERR_FETCH_UNMAPPED: "fetching",
                unicorn.UC_ERR_WRITE_PROT: "writing read-only code (self-modifying code is not supported) at",
                unicorn.UC_ERR_FETCH_PROT: "executing non-code memory at"}.get(e.errno)
        if kind is None:
            return None
        return kind, failed_address(self.uc, e.errno, self.pages.last_fill())

    def _fault_in_hook(self, e: GuestFaultInHook) -> Fault:
        """The Fault for an exception a hook raised: at the current PC."""
        pc = self.pc
        return Fault(pc, str(e), self.where(pc))

    def _engine_fault(self, e: unicorn.UcError) -> Fault:
        """The Fault for Unicorn's error, naming the bad access the hook saw (and whose memory it is)."""
        pc = self.pc
        msg = str(e)
        bad = self._bad_access(e)
        if bad is not None:
            kind, addr = bad
            where = self.describe_address(addr) if self.describe_address else None
            msg += f" {kind} {addr:#x} ({where or memmap.describe_address(addr)})"
        return Fault(pc, msg, self.where(pc))

    def _interrupt_fault(self) -> Fault:
        """The Fault for the unexpected interrupt the INT hook stopped on (#DB, #DE, #UD, #GP, ...)."""
        intno, at = self._unexpected_interrupt
        if intno == 1:       # #DB: the trap flag is set, which only a bad POPFQ does here
            pc = self.pc
            return Fault(pc, "single-step trap: RFLAGS has TF set (a POPFQ loaded a wrong RFLAGS value)",
                         self.where(pc), reg="RFLAGS")
        if intno != 3:       # a fault: RIP still points at the faulting instruction
            at = self.pc
        return Fault(at, f"{_EXCEPTIONS.get(intno, f'interrupt {intno}')} in guest code", self.where(at))
