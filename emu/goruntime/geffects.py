"""What a Go function leaves behind when it returns, as comparable text: its results and the globals it changed.

A real-program sweep compares these between an uninterrupted run and a run preempted at every boundary.
The rule (docs/explanation/real-program-sweep.md):
- results are read where ABIInternal puts them at the return (registers, or the caller's stack area; goabi.py
  over the binary's DWARF), then walked through the heap by their DWARF types (heapgraph.py): {path: token},
  paths starting with the result's name (`~r0`, `~r0.Count`, `~r0.Items[3].Name`, `~r0.M{"key"}`), tokens free
  of addresses, so two runs that allocated at other addresses (a goroutine resumed on another P) compare
  equal when their object graphs are equal, aliasing and cycles included (`same object as ~r0.Next`);
  integers, booleans and floats by value, a string by its bytes, a map by its contents, an interface by its
  dynamic type and value, a func by the function it names, a chan by its element type, length and capacity;
- globals: every global of the main package (its words may be unchanged while F changed the heap behind them)
  and every other global with an 8-byte word of the writable segments that differs from the snapshot at F's
  call, except the runtime's own bookkeeping (BOOKKEEPING) and, with gc, the global sync.Pools (a GC cycle
  empties them); each walked like a result from its symbol name (`main.cfg.Items[3].Name`), all in one walk
  (so `same object as main.a` links two globals). A global DWARF does not type keeps one token per changed
  word, keyed `symbol+0xOFF` (pointer words, by the binary's GC bitmaps, as nil or not nil). start_token gives
  a key only the other run has its value at F's call.
A binary without DWARF keeps NO_DWARF for its results and the per-word tokens for its globals.
"""
from __future__ import annotations

import bisect
import struct

from unicorn import x86_const as X

from ..core.errors import EmuError
from . import heapgraph
from ..linux.regbatch import changed_pages, mem_read_into, read_reg

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


class _Typed:
    """What a typed walk needs of one binary, carried by Effects.slots so a copy of the slots (modelcheck.py)
    walks the same way: the DWARF catalogue, F's results' types, runtime type names and function names."""

    def __init__(self, cat, results, image, binary):
        self.cat, self.results, self.image, self._binary = cat, results, image, binary
        self._rtypes: dict[int, tuple | None] = {}

    def binary(self):
        if self._binary is None:
            from ..front.gobinary import GoBinary
            self._binary = GoBinary.open(self.image.path)
        return self._binary

    def rtype(self, addr: int):
        """(name, tflag, DIE offset) of the runtime type descriptor at addr (gotypes.py), None if unreadable."""
        if addr not in self._rtypes:
            try:
                b = self.binary()
                t = b.go_type(addr)
                die = self.cat.by_rt.get(addr - b.moduledata["types"])
                if die is None:
                    die = self.cat.by_name.get(t.name)
                self._rtypes[addr] = (t.name, t.tflag, die)
            except Exception:            # not a descriptor of this binary (a wild word): say so, do not fail
                self._rtypes[addr] = None
        return self._rtypes[addr]

    def func_name(self, pc: int) -> str | None:
        f = self.image.func_at(pc)
        if f is None:
            return None
        return f[0] if f[1] == 0 else f"{f[0]}+{f[1]:#x}"

    def walk(self, read) -> heapgraph.Walk:
        return heapgraph.Walk(self.cat, read, self.rtype, self.func_name)


class _Slots(list):
    """goabi.Slots of F's results, with the _Typed that walks them (None without DWARF types)."""
    typed: _Typed | None = None


class Effects:
    """F's effects in process `p` (an image and, when the oracle has one, the binary's GoProgram)."""

    def __init__(self, p, func: str, binary=None, gc: bool = False):
        self.p, self.image = p, p.image
        self.gc = gc                          # the runtime's GC runs at injections: what it clears is its own
        self._pool_ranges: list | None = None
        try:
            self.catalog = heapgraph.catalog(self.image.path)
        except Exception:                     # DWARF pyelftools cannot read: the per-word rule, as without DWARF
            self.catalog = None
        self.slots = self._result_slots(func)
        self.typed = None
        if self.catalog is not None:
            self.typed = _Typed(self.catalog, self.catalog.results.get(func), self.image, binary)
            if self.slots is not None:
                self.slots = _Slots(self.slots)
                self.slots.typed = self.typed
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
        self._now: list[bytearray] = []     # the segments read again at F's return (changed_pages' buffers)
        self._held_bufs: list[tuple[bytearray, bytearray]] = []   # written_meanwhile's (before, after) a segment

    def _result_slots(self, func: str):
        from ..front import goabi, godwarf
        try:
            with godwarf.GoDwarf.open(self.image.path) as d:
                pr = d.func_params(func)
        except EmuError:
            pr = None
        return None if pr is None else goabi.result_slots(*pr)

    # --- globals ---------------------------------------------------------------------------------------
    def mark_start(self) -> None:
        """Keep the globals as they are now (at F's call) to diff against (bytearrays, never changed: a
        segment of tens of MB read in one copy)."""
        self.start = [mem_read_into(self.p.uc, a, bytearray(n)) for a, n in self.segments]

    def symbol_of(self, addr) -> str | None:
        """The symbol holding addr (`name` or `name+0xOFF`); a path (a str key of changed_globals) as it is."""
        if isinstance(addr, str):
            return addr
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and self._rows[i][0] <= addr < self._rows[i][0] + self._rows[i][2]:
            a, name, _ = self._rows[i]
            return name if addr == a else f"{name}+{addr - a:#x}"
        return None

    def _symbol_start(self, addr: int) -> tuple[str, int] | None:
        i = bisect.bisect_right(self._starts, addr) - 1
        if i >= 0 and self._rows[i][0] <= addr < self._rows[i][0] + self._rows[i][2]:
            return self._rows[i][1], self._rows[i][0]
        return None

    def _token(self, addr: int, raw: bytes) -> str:
        v = int.from_bytes(raw, "little")
        if addr in self._ptr_words:
            return "nil" if v == 0 else "non-nil pointer"
        return f"{v:#x}"

    def _start_bytes(self, addr: int, n: int) -> bytes | None:
        for (a, size), data in zip(self.segments, self.start):
            if a <= addr and addr + n <= a + size:
                return bytes(data[addr - a:addr - a + n])
        return None

    def start_token(self, key) -> str:
        """The value at F's call of a key of changed_globals (a path, or a global word's address): for a key
        one run's dict has and the other's has not, its global was unchanged in the other run. A path inside the
        global's own memory gets its typed token from the words kept by mark_start (equal to a run's token when
        that run left it so); a pointer-shaped word that was not nil, and anything behind it, gets `unchanged
        since F's call`, which no walked token equals."""
        if isinstance(key, int):
            b = self._start_bytes(key, 8)
            return "?" if b is None else self._token(key, b)
        root = self._root_of(key)
        if root is None:
            name, _, off = key.partition("+0x")
            sym = self.image.symbols.get(name)
            if sym is None:
                return "?"
            addr = sym[0] + (int(off, 16) if off else 0)
            b = self._start_bytes(addr, 8)
            return "?" if b is None else self._token(addr, b)
        addr, toff = self.catalog.globals[root]
        t = self.catalog.ty(toff)
        if t is None:
            return "?"
        start = self._start_bytes(addr, t.size)
        if start is None:
            return "?"
        w = _StartWalk(self.typed, start, addr, t.size, self.p.read)
        w.root(root, toff, addr)
        if key in w.out:
            return w.out[key]
        return "unchanged since F's call"

    def _root_of(self, path: str) -> str | None:
        """The global a path starts with: the longest prefix, ended by `.`, `[`, `{` or `(`, that DWARF names."""
        if self.catalog is None:
            return None
        best = None
        for i, ch in enumerate(path):
            if ch in ".[{(" and path[:i] in self.catalog.globals:
                best = path[:i]
        return path if path in self.catalog.globals else best

    def _pools(self) -> list[tuple[int, int]]:
        """[start, end) of every global sync.Pool (the binary's DWARF): a GC cycle empties them (poolCleanup,
        sync/pool.go:276-300), so with the runtime's GC at injections their words are its doing, not F's."""
        if self._pool_ranges is None:
            self._pool_ranges = [(a, a + POOL_SIZE) for a in pool_globals(self.image.path)]
        return self._pool_ranges

    def _changed_words(self) -> list[tuple[int, bytes]]:
        """(address, word now) of every global word changed since mark_start (bookkeeping excluded; with gc, the
        words of sync.Pools too)."""
        pools = self._pools() if self.gc else []
        out = []
        if len(self._now) != len(self.start):
            self._now = [bytearray(len(b)) for b in self.start]
        for (a, n), before, buf in zip(self.segments, self.start, self._now):
            for page in changed_pages(self.p.uc, a, before, buf):
                now = bytes(buf[page:page + 4096])
                for off in range(page, min(n, page + 4096) - 7, 8):
                    word = now[off - page:off - page + 8]
                    if before[off:off + 8] == word:                 # (a bytearray slice against bytes)
                        continue
                    name = self.symbol_of(a + off)
                    if name is None or name.startswith(BOOKKEEPING):
                        continue
                    if pools and any(lo <= a + off < hi for lo, hi in pools):
                        continue
                    out.append((a + off, word))
        return out

    def written_meanwhile(self, run) -> set[str]:
        """Call run() (G's thread held while the other threads run: gsweep.held_reference) and return the
        globals whose words changed meanwhile, by name (the runtime's bookkeeping left out, as in
        changed_globals): other goroutines wrote them while F was part-way."""
        if len(self._held_bufs) != len(self.segments):     # two buffers a segment, kept: a reference makes a
            self._held_bufs = [(bytearray(n), bytearray(n)) for _, n in self.segments]   # dozen held runs, and
        for (a, _), (old, _) in zip(self.segments, self._held_bufs):      # fresh 34 MB buffers cost ~30 ms each
            mem_read_into(self.p.uc, a, old)
        run()
        out = set()
        for (a, n), (old, now) in zip(self.segments, self._held_bufs):
            for page in changed_pages(self.p.uc, a, old, now):
                for off in range(page, min(n, page + 4096) - 7, 8):
                    if old[off:off + 8] != now[off:off + 8] and (sym := self._symbol_start(a + off)) is not None \
                            and not sym[0].startswith(BOOKKEEPING):
                        out.add(sym[0])
        return out

    def global_of(self, key) -> str | None:
        """The global a key of changed_globals belongs to (a path's root, a word's symbol)."""
        if isinstance(key, int):
            sym = self._symbol_start(key)
            return sym[0] if sym is not None else None
        return self._root_of(key) or key.partition("+0x")[0]

    def changed_globals(self) -> dict[str, str]:
        """{path: token} of every main-package global and every other global F changed (see the module
        docstring), walked through the heap by DWARF type; words DWARF does not type as `symbol+0xOFF`."""
        cat = self.catalog
        roots: dict[str, tuple[int, int]] = {}
        flat: dict[str, str] = {}
        pools = self._pools() if self.gc else []
        if cat is not None:
            for name, (addr, toff) in cat.globals.items():
                if name.startswith("main.") and not any(lo <= addr < hi for lo, hi in pools):
                    roots[name] = (addr, toff)
        for addr, word in self._changed_words():
            sym = self._symbol_start(addr)
            g = cat.globals.get(sym[0]) if cat is not None and sym is not None else None
            if g is not None and g[0] == sym[1]:
                roots[sym[0]] = g
            else:
                flat[self.symbol_of(addr)] = self._token(addr, word)
        out: dict[str, str] = {}
        if roots:
            w = self.typed.walk(self.p.read)
            for name in sorted(roots):
                addr, toff = roots[name]
                w.root(name, toff, addr)
            out.update(w.out)
        out.update(flat)
        return out

    # --- results ---------------------------------------------------------------------------------------
    def results(self) -> dict[str, str]:
        """F's results as {path: token}, read at its return address (RSP = the caller's SP) and walked through
        the heap (heapgraph.py); without DWARF types for them, one token per result as the leaves say."""
        if self.slots is None:
            return dict(NO_DWARF)
        typed = getattr(self.slots, "typed", None)
        if typed is None or typed.results is None:
            return self._flat_results()
        p, uc = self.p, self.p.uc
        base = read_reg(uc, X.UC_X86_REG_RSP)
        bufs: dict[str, bytearray] = {}
        for name, toff in typed.results:
            t = typed.cat.ty(toff)
            bufs[name] = bytearray(t.size if t is not None else 0)
        for s in self.slots:
            buf = bufs.get(s.result)
            if buf is None:
                return self._flat_results()
            lf = s.leaf
            if s.where is not None:
                raw = uc.reg_read(_REGS[s.where])
                data = (raw & ((1 << (8 * min(lf.size, 16))) - 1)).to_bytes(max(lf.size, 16), "little")[:lf.size]
            else:
                data = p.read(base + s.offset, lf.size)
            buf[lf.offset:lf.offset + lf.size] = data
        w = typed.walk(p.read)
        for name, toff in typed.results:
            w.root(name, toff, None, bytes(bufs[name]))
        return w.out

    def _flat_results(self) -> dict[str, str]:
        """One token per result from its leaves: scalars by value, a string by its bytes, other pointer-shaped
        words as nil or not nil (the rule before heapgraph; for results the catalogue does not type)."""
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


class _StartWalk(heapgraph.Walk):
    """A walk of one global as it was at F's call: its own bytes from mark_start's copy; a non-nil pointer-shaped
    word is not followed (the heap behind it is not kept)."""

    def __init__(self, typed: _Typed, start: bytes, addr: int, size: int, live_read):
        self._lo, self._hi, self._start, self._live = addr, addr + size, start, live_read
        super().__init__(typed.cat, self._from_start, typed.rtype, typed.func_name)

    def _from_start(self, addr: int, n: int) -> bytes | None:
        if self._lo <= addr and addr + n <= self._hi:
            return self._start[addr - self._lo:addr - self._lo + n]
        return self._live(addr, n) if self._strings else None

    _strings = False

    def _string(self, p: int, n: int) -> str:
        """A string's bytes as they are now: Go strings are immutable."""
        self._strings = True
        try:
            return super()._string(p, n)
        finally:
            self._strings = False

    def value(self, path, t, addr, raw, depth):
        if t.kind in ("ptr", "slice", "map", "chan", "func", "iface") and depth == 0:
            b = raw if raw is not None else self.read(addr, t.size) if addr is not None else None
            if b is not None and any(b[:8]):
                self.emit(path, "unchanged since F's call")
                return
        super().value(path, t, addr, raw, depth)
