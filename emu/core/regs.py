"""THE register table: names, order, widths and Unicorn ids of every register preemu touches.

Mirrors cmd/compile's amd64 register list as copied into runtime/mkpreempt.go (regNamesAMD64):
the asyncPreempt stub saves the 14 general registers AX, CX, DX, BX, SI, DI, R8..R15 in this
order (SP and BP are handled by the frame itself) and X0..X15. Every other module (frame layout,
stub generator, state dumps, verifiers, reports) derives order and offsets from here.

Left out: x87/MMX, MXCSR, YMM upper halves, AVX-512 Z/K registers (Go's SSE stub path never saves
them either; see emu/FACTS.md §6 item 11).
"""
from __future__ import annotations

from dataclasses import dataclass

import unicorn.x86_const as X


@dataclass(frozen=True)
class Reg:
    name: str      # Intel name, upper case: "RAX", "XMM3", "RFLAGS"
    go_name: str   # Go assembler name: "AX", "X3", "FLAGS"
    uc_id: int     # unicorn.x86_const id
    size: int      # bytes
    kind: str      # "gp" | "xmm" | "flags" | "bp" | "sp" | "ip"

    @property
    def asm(self) -> str:
        """Return the register's name as written in Intel-syntax assembly."""
        return self.name.lower()


_GP = [("RAX", "AX"), ("RCX", "CX"), ("RDX", "DX"), ("RBX", "BX"), ("RSI", "SI"), ("RDI", "DI"),
       ("R8", "R8"), ("R9", "R9"), ("R10", "R10"), ("R11", "R11"), ("R12", "R12"), ("R13", "R13"),
       ("R14", "R14"), ("R15", "R15")]

#: The 14 general registers the stub saves, in Go's order.
GP_REGS: tuple[Reg, ...] = tuple(Reg(n, g, getattr(X, f"UC_X86_REG_{n}"), 8, "gp") for n, g in _GP)
#: XMM0..XMM15 (128 bits each).
XMM_REGS: tuple[Reg, ...] = tuple(Reg(f"XMM{i}", f"X{i}", getattr(X, f"UC_X86_REG_XMM{i}"), 16, "xmm")
                                  for i in range(16))
RFLAGS = Reg("RFLAGS", "FLAGS", X.UC_X86_REG_RFLAGS, 8, "flags")
RBP = Reg("RBP", "BP", X.UC_X86_REG_RBP, 8, "bp")
RSP = Reg("RSP", "SP", X.UC_X86_REG_RSP, 8, "sp")
RIP = Reg("RIP", "PC", X.UC_X86_REG_RIP, 8, "ip")

#: Registers whose values the verifier compares, in dump order: the 14 GPRs, RBP, RSP, RFLAGS, XMM0-15.
#: (RIP is not dumpable by guest code; it is compared separately.)
DUMPED: tuple[Reg, ...] = GP_REGS + (RBP, RSP, RFLAGS) + XMM_REGS

#: R14 holds the current g under ABIInternal (Go >= 1.17); X15 holds zero.
G_REG = GP_REGS[12]
ZERO_XMM = XMM_REGS[15]

BY_NAME: dict[str, Reg] = {r.name: r for r in DUMPED + (RIP,)}
BY_NAME.update({r.go_name: r for r in DUMPED + (RIP,)})

# RFLAGS bits (Intel SDM vol. 1 §3.4.3)
FLAG_BITS = {"CF": 0, "PF": 2, "AF": 4, "ZF": 6, "SF": 7, "TF": 8, "IF": 9, "DF": 10, "OF": 11, "AC": 18}
#: Flags a user program can change and that the stub must preserve.
USER_FLAGS_MASK = sum(1 << FLAG_BITS[f] for f in ("CF", "PF", "AF", "ZF", "SF", "DF", "OF"))


def lookup(name: str) -> Reg:
    """Return the register called `name` (Intel or Go spelling, any case); raise KeyError."""
    return BY_NAME[name.upper()]


def describe_flags(value: int) -> str:
    """Return the set flags of an RFLAGS value as text, e.g. 'CF ZF DF'."""
    return " ".join(f for f, b in FLAG_BITS.items() if value >> b & 1) or "-"
