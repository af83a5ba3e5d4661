"""asyncPreempt frame layouts, derived from the register table (mirrors runtime/mkpreempt.go).

mkpreempt.go's `layout.add(op, reg, size)` hands out offsets in register order; we do the same.
Two layouts are modelled:

* go1.14 -- everything on the goroutine stack: `PUSHQ BP; MOVQ SP,BP; PUSHFQ; ADJSP $368`, the 14
  GPRs at 0..104(SP), X0..X15 at 112..352(SP) (FACTS.md §3.1).
* go1.27 -- GPRs on the stack (`ADJSP $112`), X0..X15 in the current P's `p.xRegs.scratch` at i*64,
  restored from `p.xRegs.cache` of the P the goroutine resumes on (FACTS.md §3.2).

Addresses are expressed relative to S, the interrupted RSP (before pushCall):
S-8 resume PC, S-16 saved RBP, S-24 saved RFLAGS, then the ADJSP area below.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from . import gostructs, regs

RESUME_PC_OFFSET = -8     # S-relative: slot written by pushCall
SAVED_BP_OFFSET = -16     # PUSHQ BP
SAVED_FLAGS_OFFSET = -24  # PUSHFQ


@dataclass(frozen=True)
class Slot:
    reg: regs.Reg
    offset: int        # byte offset from the save area's base
    home: str          # "stack" (offset from SP after ADJSP) or "xregs" (offset into an xRegs block)


@dataclass(frozen=True)
class StubLayout:
    name: str                    # "go1.14" | "go1.27"
    frame_size: int              # the ADJSP amount
    slots: tuple[Slot, ...]

    def slot(self, name: str) -> Slot:
        """Return the save slot of the register called `name`."""
        reg = regs.lookup(name)
        for s in self.slots:
            if s.reg == reg:
                return s
        raise KeyError(f"{name} has no save slot in the {self.name} layout")

    @cached_property
    def stack_slots(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.home == "stack")

    @cached_property
    def xreg_slots(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.home == "xregs")

    @property
    def below_sp(self) -> int:
        """Bytes the stub occupies below S before it calls asyncPreempt2 (resume PC included)."""
        return 8 + 8 + 8 + self.frame_size

    @property
    def max_sp_delta(self) -> int:
        """funcMaxSPDelta(asyncPreempt): bytes pushed below the SP it was entered with."""
        return 8 + 8 + self.frame_size

    def save_area_base(self, s: int) -> int:
        """Return the address of offset 0 of the stack save area for interrupted RSP `s`."""
        return s + SAVED_FLAGS_OFFSET - self.frame_size

    def stack_slot_address(self, s: int, name: str) -> int:
        """Return where the stub saves register `name` on the stack, for interrupted RSP `s`."""
        slot = self.slot(name)
        if slot.home != "stack":
            raise KeyError(f"{name} is not saved on the stack in the {self.name} layout")
        return self.save_area_base(s) + slot.offset


def _build(name: str, vectors_on_stack: bool) -> StubLayout:
    slots: list[Slot] = []
    off = 0
    for r in regs.GP_REGS:                      # layout.add(MOVQ, reg, 8)
        slots.append(Slot(r, off, "stack"))
        off += r.size
    if vectors_on_stack:
        for r in regs.XMM_REGS:                 # layout.add(MOVUPS, reg, 16)
            slots.append(Slot(r, off, "stack"))
            off += r.size
    else:
        for i, r in enumerate(regs.XMM_REGS):   # xRegs block, one 64-byte Z slot per register
            slots.append(Slot(r, i * gostructs.XREGS_SLOT, "xregs"))
    return StubLayout(name, off, tuple(slots))


GO114 = _build("go1.14", vectors_on_stack=True)
GO127 = _build("go1.27", vectors_on_stack=False)
LAYOUTS = {l.name: l for l in (GO114, GO127)}


def get_layout(name: str) -> StubLayout:
    """Return the layout called `name` ("go1.14" or "go1.27")."""
    try:
        return LAYOUTS[name]
    except KeyError:
        raise KeyError(f"unknown stub layout {name!r}; choose one of {', '.join(LAYOUTS)}") from None
