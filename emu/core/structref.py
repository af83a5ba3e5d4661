"""Named fields of one runtime struct (a g, m or p) in emulated memory, by its gostructs table.

The runtime's structs are plain memory the guest reads too (R14 = g, `MOVQ g_m(R14), AX`), so the model
keeps them there; what it saves is the lookups. A StructRef binds each field, on first use, to a typed
memoryview of the host buffer the region is mapped on (Machine.field_view), so a read or write is one
index operation instead of a table lookup, an address computation and a struct call (0.4 -> 0.15 µs,
issue #11); hot runtime effects index `ref.f` directly (0.06 µs). Fields are little-endian unsigned
integers of 1, 2, 4 or 8 bytes, like the host (x86-64). Machine.struct() hands out one StructRef per
(base, table) and drops them when memory is unmapped. Over any other memory with `read(addr, n)` and
`write(addr, data)` (a whole-program process) fields go through those calls.
"""
from __future__ import annotations

import struct
from typing import Callable


_GAP = 256      # fields further apart than this are read separately (p.preempt is 13 KiB after p.status)


class FieldViews(dict):
    """name -> an object whose [0] reads and writes that field, made on first use: `ref.f["preempt"][0] = 1`
    is two C-level subscripts, no Python call (0.25 -> 0.06 µs). Values stored this way must already
    fit the field (a typed memoryview refuses others); StructRef.set truncates."""

    __slots__ = ("ref",)

    def __init__(self, ref: "StructRef"):
        super().__init__()
        self.ref = ref

    def __missing__(self, name: str):
        ref = self.ref
        f = ref.fields[name]
        addr, view_of = ref.base + f.offset, getattr(ref.machine, "field_view", None)
        view = self[name] = view_of(addr, f.size) if view_of is not None else SlowField(ref.machine, addr, f.size)
        return view


class StructRef:
    """The struct at `base` laid out as `fields` (name -> gostructs.Field)."""

    __slots__ = ("base", "fields", "machine", "f", "_bytes", "_readers")

    def __init__(self, machine, base: int, fields: dict):
        self.base, self.fields, self.machine = base, fields, machine
        self.f = FieldViews(self)        # the hot path's field access (see FieldViews)
        self._bytes: dict[str, memoryview] = {}
        self._readers: dict[int, Callable[[], tuple[int, ...]]] = {}

    def get(self, name: str) -> int:
        return self.f[name][0]

    def set(self, name: str, value: int) -> None:
        """Store `value` (truncated to the field's width, as a Go store of that type would)."""
        self.f[name][0] = value & ((1 << (8 * self.fields[name].size)) - 1)

    def bytes_view(self, name: str):
        """A writable byte view of a field too wide for an integer (e.g. p.xRegs.scratch), or of any
        field; slices assign and copy without going through the machine."""
        v = self._bytes.get(name)
        if v is None:
            f = self.fields[name]
            v = self._bytes[name] = self.machine.byte_view(self.base + f.offset, f.size)
        return v

    def reader(self, names: tuple[str, ...]) -> Callable[[], tuple[int, ...]]:
        """A function returning the fields `names` (in offset order) with one unpack of the memory
        that spans them (through `machine.read`: one read per run of fields less than _GAP bytes apart).
        Readers are kept by the identity of `names` (pass a module constant)."""
        r = self._readers.get(id(names))
        if r is None:
            unpacker = getattr(self.machine, "unpacker", None)
            runs: list[list] = []                  # [first offset, format, end]
            for n in names:
                f = self.fields[n]
                code = {1: "B", 2: "H", 4: "I", 8: "Q"}[f.size]
                if runs:
                    assert f.offset >= runs[-1][2], "fields must be listed in offset order"
                if runs and (unpacker is not None or f.offset - runs[-1][2] < _GAP):
                    runs[-1][1] += f"{f.offset - runs[-1][2]}x" + code
                    runs[-1][2] = f.offset + f.size
                else:
                    runs.append([f.offset, "<" + code, f.offset + f.size])
            if unpacker is not None:
                off, fmt, end = runs[0]                    # one run, read from the struct's base
                r = unpacker(self.base, struct.Struct(f"<{off}x{fmt[1:]}"), end)
            else:
                mem, base = self.machine, self.base
                parts = [(base + off, struct.Struct(fmt), end - off) for off, fmt, end in runs]
                if len(parts) == 1:
                    (addr, st, size), = parts
                    r = lambda: st.unpack(mem.read(addr, size))      # noqa: E731
                elif len(parts) == 2:                                # (a generator costs ~2 us a call)
                    (a1, st1, n1), (a2, st2, n2) = parts
                    r = lambda: st1.unpack(mem.read(a1, n1)) + st2.unpack(mem.read(a2, n2))   # noqa: E731
                else:
                    r = lambda: tuple(v for addr, st, size in parts for v in st.unpack(mem.read(addr, size)))  # noqa: E731
            self._readers[id(names)] = r
        return r


def read_field(machine, base: int, fields: dict, name: str) -> int:
    """Field `name` of the struct at `base` laid out as `fields` (through machine.struct's StructRef)."""
    return machine.struct(base, fields).get(name)


def write_field(machine, base: int, fields: dict, name: str, value: int) -> None:
    """Store `value` into field `name` of the struct at `base` (truncated to its width)."""
    machine.struct(base, fields).set(name, value)


class SlowField:
    """A field view through `read`/`write` calls: [0] reads and writes the little-endian integer."""

    __slots__ = ("mem", "addr", "size", "itemsize")

    def __init__(self, mem, addr: int, size: int):
        self.mem, self.addr, self.size = mem, addr, size
        self.itemsize = size             # as a typed memoryview's

    def __getitem__(self, i: int) -> int:
        return int.from_bytes(self.mem.read(self.addr, self.size), "little")

    def __setitem__(self, i: int, value: int) -> None:
        self.mem.write(self.addr, value.to_bytes(self.size, "little"))
