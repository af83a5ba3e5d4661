"""What a Go function leaves behind when it returns, as comparable text: its results and the globals it changed.

A real-program sweep compares these between an uninterrupted run and a run preempted at every boundary.
The rule (README "Go code swept inside its real program"):
- results are read where ABIInternal puts them at the return (registers, or the caller's stack area; goabi.py
  over the binary's DWARF): integers, booleans, floats, lengths and interface type words bit-exact in their
  size; a string by its bytes; any other pointer-shaped word (pointer, map, chan, func, slice or interface
  data) as nil or not nil, since a goroutine resumed on another P allocates at other addresses; an array of
  more than one element, or a part DWARF does not type, by its bytes;
- globals: every 8-byte word of the writable segments that differs from the snapshot at F's call, except the
  runtime's own bookkeeping (BOOKKEEPING); pointer words (the binary's data/bss GC bitmaps) as nil or not nil.
Heap memory is not compared word by word (its addresses depend on the P); the program's output is, after F.
"""
from __future__ import annotations

import bisect
import struct

from unicorn import x86_const as X

from ..core.errors import EmuError
from .regbatch import read_reg

#: Globals whose changes are the runtime's own bookkeeping, not F's effect: runtime packages, the internal/
#: tree, sync's pool registry, os/syscall/time state and the linker's symbols.
BOOKKEEPING = ("runtime.", "internal/", "sync.", "sync/", "syscall.", "go:", "type:", "os.", "time.")
_REGS = {n: getattr(X, f"UC_X86_REG_{n}") for n in ("RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11")}
_REGS.update({f"XMM{i}": getattr(X, f"UC_X86_REG_XMM{i}") for i in range(16)})
NO_DWARF = {"(results)": "not read: no DWARF entry for the function"}
#: sizeof(sync.Pool) on linux/amd64: noCopy, local, localSize, victim, victimSize, New (sync/pool.go:52-65)
POOL_SIZE = 40


def pool_globals(binary_path: str) -> list[int]:
    """Addresses of the binary's global sync.Pool variables (DWARF, cached under the build cache by content)."""
    import hashlib
    import json
    from pathlib import Path

    from ..front import gobuild, godwarf
    raw = Path(binary_path).read_bytes()
    cache = gobuild.cache_dir() / "layout" / f"pools-{hashlib.sha256(raw).hexdigest()}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    try:
        with godwarf.GoDwarf.open(binary_path) as d:
            found = d.globals_of_type("sync.Pool")
    except EmuError:
        found = []
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found))
    return found


class Effects:
    """F's effects in process `p` (an image and, when the oracle has one, the binary's GoProgram)."""

    def __init__(self, p, func: str, binary=None, gc: bool = False):
        self.p, self.image = p, p.image
        self.gc = gc                          # the runtime's GC runs at injections: what it clears is its own
        self._pool_ranges: list | None = None
        self.slots = self._result_slots(func)
        rows = sorted((a, n, s) for n, (a, s) in self.image.symbols.items() if s > 0)
        self._starts, self._rows = [r[0] for r in rows], rows
        self._ptr_words: set[int] = set()
        if binary is not None:
            try:
                self._ptr_words = set(binary.global_pointer_words())
            except EmuError:                    # GC bitmaps preemu cannot read: every word compares exactly
                pass
        self.segments = [(s.vaddr, s.memsz) for s in self.image.segments if s.flags & 2]     # PF_W
        self.start: list[bytes] = []

    def _result_slots(self, func: str):
        from ..front import goabi, godwarf
        try:
            with godwarf.GoDwarf.open(self.image.path) as d:
                pr = d.func_params(func)
        except EmuError:
            pr = None
        return None if pr is None else goabi.result_slots(*pr)

    # --- globals ---------------------------------------------------------------------------------------
    def _read(self) -> list[bytes]:
        return [self.p.read(a, n) for a, n in self.segments]

    def mark_start(self) -> None:
        """Keep the globals as they are now (at F's call) to diff against."""
        self.start = self._read()

    def symbol_of(self, addr: int) -> str | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and self._rows[i][0] <= addr < self._rows[i][0] + self._rows[i][2]:
            a, name, _ = self._rows[i]
            return name if addr == a else f"{name}+{addr - a:#x}"
        return None

    def _token(self, addr: int, raw: bytes) -> str:
        v = int.from_bytes(raw, "little")
        if addr in self._ptr_words:
            return "nil" if v == 0 else "non-nil pointer"
        return f"{v:#x}"

    def start_token(self, addr: int) -> str:
        for (a, n), data in zip(self.segments, self.start):
            if a <= addr < a + n:
                return self._token(addr, data[addr - a:addr - a + 8])
        return "?"

    def _pools(self) -> list[tuple[int, int]]:
        """[start, end) of every global sync.Pool (the binary's DWARF): a GC cycle empties them (poolCleanup,
        sync/pool.go:276-300), so with the runtime's GC at injections their words are its doing, not F's."""
        if self._pool_ranges is None:
            self._pool_ranges = [(a, a + POOL_SIZE) for a in pool_globals(self.image.path)]
        return self._pool_ranges

    def changed_globals(self) -> dict[int, str]:
        """{address: value token} of every global word changed since mark_start (bookkeeping excluded; with gc,
        the words of sync.Pools too)."""
        pools = self._pools() if self.gc else []
        out = {}
        for (a, n), before, now in zip(self.segments, self.start, self._read()):
            if before == now:
                continue
            for page in range(0, n, 4096):
                if before[page:page + 4096] == now[page:page + 4096]:
                    continue
                for off in range(page, min(n, page + 4096) - 7, 8):
                    if before[off:off + 8] == now[off:off + 8]:
                        continue
                    name = self.symbol_of(a + off)
                    if name is None or name.startswith(BOOKKEEPING):
                        continue
                    if pools and any(lo <= a + off < hi for lo, hi in pools):
                        continue
                    out[a + off] = self._token(a + off, now[off:off + 8])
        return out

    # --- results ---------------------------------------------------------------------------------------
    def results(self) -> dict[str, str]:
        """F's results as text, read at its return address (RSP = the caller's SP)."""
        if self.slots is None:
            return dict(NO_DWARF)
        p, uc = self.p, self.p.uc
        base = read_reg(uc, X.UC_X86_REG_RSP)
        vals: list[tuple] = []
        for s in self.slots:
            if s.where is not None:
                raw = uc.reg_read(_REGS[s.where])
                vals.append((s, raw & ((1 << (8 * s.leaf.size)) - 1) if s.leaf.size < 16 else raw, None))
            else:
                data = p.read(base + s.offset, s.leaf.size)
                vals.append((s, int.from_bytes(data, "little"), data))
        out: dict[str, list[str]] = {}
        i = 0
        while i < len(vals):
            s, v, data = vals[i]
            k = s.leaf.kind
            if k == "strptr" and i + 1 < len(vals):
                n = vals[i + 1][1]
                text = p.read_or_empty(v, min(n, 4096)) if v and n else b""
                out.setdefault(s.result, []).append(f"string {text.decode(errors='replace')!r}"
                                                    + ("..." if n > 4096 else ""))
                i += 2
                continue
            if k == "ptr":
                tok = "nil" if v == 0 else "non-nil"
            elif k in ("array", "other"):
                tok = (data or v.to_bytes(s.leaf.size, "little")).hex()
            elif k == "bool":
                tok = str(bool(v & 0xFF)).lower()
            elif k == "float":
                fmt = "<d" if s.leaf.size == 8 else "<f"
                tok = repr(struct.unpack(fmt, v.to_bytes(s.leaf.size, "little"))[0])
            else:
                tok = str(v - (1 << 64) if s.leaf.size == 8 and v >= 1 << 63 else v)
            out.setdefault(s.result, []).append(tok)
            i += 1
        return {k: ", ".join(v) for k, v in out.items()}
