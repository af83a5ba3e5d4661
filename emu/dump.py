"""Register snapshots as flat byte records, in the order of regs.DUMPED.

Reading 34 registers through Unicorn's API costs ~140 µs; a 37-instruction guest routine (the
dumper in rtcode) stores them all into preemu's private page in ~10 µs, and one mem_read brings
them back. The same record layout serves as the clobber table asyncPreempt2 loads registers from.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import regs

OFFSETS: dict[str, int] = {}
_off = 0
for _r in regs.DUMPED:
    OFFSETS[_r.name] = _off
    _off += _r.size
SIZE = _off            # bytes in one record
RESUME_SLOT = SIZE     # the dumper jumps through the 8-byte slot right after the record


@dataclass(frozen=True)
class RegState:
    """Architectural state of one CPU at one boundary (RIP kept apart: guest code cannot dump it)."""

    values: dict[str, int]
    rip: int

    def __getitem__(self, name: str) -> int:
        return self.values[regs.lookup(name).name]

    def diff(self, other: "RegState") -> list[tuple[str, int, int]]:
        """Return (register, self value, other value) for every register that differs."""
        out = [(n, v, other.values[n]) for n, v in self.values.items() if other.values[n] != v]
        if self.rip != other.rip:
            out.insert(0, ("RIP", self.rip, other.rip))
        return out


def unpack(raw: bytes, rip: int) -> RegState:
    """Decode a dump record."""
    vals = {}
    for r in regs.DUMPED:
        o = OFFSETS[r.name]
        vals[r.name] = int.from_bytes(raw[o:o + r.size], "little")
    return RegState(vals, rip)


def pack(values: dict[str, int]) -> bytes:
    """Encode register values (missing ones as zero) into a dump record."""
    out = bytearray(SIZE)
    for r in regs.DUMPED:
        v = values.get(r.name, 0) & ((1 << (8 * r.size)) - 1)
        out[OFFSETS[r.name]:OFFSETS[r.name] + r.size] = v.to_bytes(r.size, "little")
    return bytes(out)
