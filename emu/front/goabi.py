"""Where a Go function's results are when it returns: ABIInternal's assignment on amd64.

Mirrors the algorithm of Go's internal ABI specification (src/cmd/compile/abi-internal.md, "Function call
argument and result passing"): arguments, then results, are assigned in order; a value goes to registers
when all of its parts fit in the registers left (integer parts: RAX, RBX, RCX, RDI, RSI, R8-R11; floating
parts: X0-X14), else whole to the stack, after the previous stack-assigned values (aligned); results start
again from the first registers, and their stack area follows the arguments', aligned to a pointer. An array
of more than one element never goes to registers. Values come from the binary's DWARF (godwarf.Param).
Left out: alignment finer than the value's size (a struct is aligned to 8 when it is 8 bytes or more).
"""
from __future__ import annotations

from typing import NamedTuple

INT_REGS = ("RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11")
FLOAT_REGS = tuple(f"XMM{i}" for i in range(15))
INT_KINDS = ("int", "bool", "ptr", "strptr", "len", "itab")


class Slot(NamedTuple):
    """One part of one result: `where` is a register name, or None with `offset` from the entry SP + 8."""
    result: str
    leaf: object           # godwarf.Leaf
    where: str | None
    offset: int = 0


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def _fits(leaves, ints: int, floats: int) -> tuple[int, int] | None:
    for lf in leaves:
        if lf.kind in INT_KINDS:
            ints += 1
        elif lf.kind == "float":
            floats += 1
        else:
            return None
    return (ints, floats) if ints <= len(INT_REGS) and floats <= len(FLOAT_REGS) else None


def result_slots(args, results) -> list[Slot]:
    """The Slots of every result of a function with these godwarf.Params."""
    stack = 0

    def assign(params, record: bool) -> list[Slot]:
        nonlocal stack
        ints = floats = 0
        out = []
        for p in params:
            if p.size == 0:
                continue
            got = _fits(p.leaves, ints, floats)
            if got is not None:
                i, f = ints, floats
                for lf in p.leaves:
                    if lf.kind == "float":
                        out.append(Slot(p.name, lf, FLOAT_REGS[f]))
                        f += 1
                    else:
                        out.append(Slot(p.name, lf, INT_REGS[i]))
                        i += 1
                ints, floats = got
            else:
                stack = _align(stack, min(8, p.size) if p.size in (1, 2, 4) else 8)
                out += [Slot(p.name, lf, None, stack + lf.offset) for lf in p.leaves]
                stack += p.size
        return out if record else []

    assign(args, False)
    stack = _align(stack, 8)
    return assign(results, True)
