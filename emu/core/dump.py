"""Register snapshots as flat byte records, in the order of regs.DUMPED.

Machine.dump_state fills one record with a single batched register read (uc_reg_read_batch into
a preallocated buffer, ~2 µs for all 34 registers). The same record layout serves as the clobber
table asyncPreempt2 loads registers from.
"""
from __future__ import annotations

from . import regs

OFFSETS: dict[str, int] = {}
_off = 0
for _r in regs.DUMPED:
    OFFSETS[_r.name] = _off
    _off += _r.size
SIZE = _off            # bytes in one record


class RegState:
    """Architectural state of one CPU at one boundary (RIP kept apart: it is compared separately).

    Holds the raw dump record; registers are decoded only when asked for (the sweep's fast path
    compares raw records).
    """

    __slots__ = ("raw", "rip", "_values")

    def __init__(self, raw: bytes, rip: int):
        self.raw, self.rip, self._values = raw, rip, None

    @property
    def values(self) -> dict[str, int]:
        if self._values is None:
            self._values = {r.name: int.from_bytes(self.raw[OFFSETS[r.name]:OFFSETS[r.name] + r.size], "little")
                            for r in regs.DUMPED}
        return self._values

    def get(self, name: str) -> int:
        """Return one register's value without decoding the others."""
        r = regs.lookup(name)
        o = OFFSETS[r.name]
        return int.from_bytes(self.raw[o:o + r.size], "little")

    def __getitem__(self, name: str) -> int:
        return self.values[regs.lookup(name).name]

    def __eq__(self, other) -> bool:
        return isinstance(other, RegState) and self.raw == other.raw and self.rip == other.rip

    def diff(self, other: "RegState") -> list[tuple[str, int, int]]:
        """Return (register, self value, other value) for every register that differs."""
        out = [(n, v, other.values[n]) for n, v in self.values.items() if other.values[n] != v]
        if self.rip != other.rip:
            out.insert(0, ("RIP", self.rip, other.rip))
        return out


def unpack(raw: bytes, rip: int) -> RegState:
    """Wrap a dump record."""
    return RegState(bytes(raw), rip)


def pack(values: dict[str, int]) -> bytes:
    """Encode register values (missing ones as zero) into a dump record."""
    out = bytearray(SIZE)
    for r in regs.DUMPED:
        v = values.get(r.name, 0) & ((1 << (8 * r.size)) - 1)
        out[OFFSETS[r.name]:OFFSETS[r.name] + r.size] = v.to_bytes(r.size, "little")
    return bytes(out)
