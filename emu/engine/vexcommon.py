"""What the vector unit's two halves share (avxexec.py decodes and runs what Python runs, hostexec.py prepares
what the host CPU runs, and each needs these): the error naming a refused instruction, which prefix a VEX or
EVEX instruction has, and Unicorn's ids of the ZMM registers. Mirrors nothing of Go's; the prefix rules are the
SDM's (vol. 2A 2.3 VEX, 2.7 EVEX)."""
from __future__ import annotations

from unicorn import x86_const as X

from ..core.errors import EmuError


class Unsupported(EmuError):
    """An instruction preemu does not execute (or one the CPU level does not have)."""

    def __init__(self, pc: int, text: str, level: str, why: str):
        self.pc, self.text, self.level = pc, text, level
        super().__init__(f"{why} at {pc:#x}: {text} (--cpu {level})")


def prefix_kind(code: bytes) -> tuple[str, int]:
    """("vex"|"evex"|"", index of the VEX/EVEX prefix byte) for one instruction's bytes."""
    i = 0
    while i < len(code) and code[i] in (0x66, 0xF2, 0xF3, 0xF0, 0x2E, 0x3E, 0x26, 0x64, 0x65, 0x36):
        i += 1
    if i < len(code) and 0x40 <= code[i] <= 0x4F:
        i += 1
    if i < len(code):
        if code[i] in (0xC4, 0xC5):
            return "vex", i
        if code[i] == 0x62:
            return "evex", i
    return "", i


_IDS: dict[str, int] = {}


def uc_id(name: str) -> int:
    """Unicorn's id of an x86 register named as Capstone names it ("zmm5", "k3", "rax")."""
    i = _IDS.get(name)
    if i is None:
        i = _IDS[name] = getattr(X, f"UC_X86_REG_{name.upper()}")
    return i


ZMM = [uc_id(f"zmm{i}") for i in range(32)]
