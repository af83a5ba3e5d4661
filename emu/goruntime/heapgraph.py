"""The typed graph of a Go value in guest memory, as flat text: {path: token}, equal for two runs whose object
graphs are equal up to a renaming of addresses.

A real-program sweep compares F's results and the program's globals between runs whose goroutines ran on other
Ps and so allocated at other addresses (geffects.py). This module follows pointers from such a value, typed by
the binary's own type information, and says what it finds without an address in it:

- types: the binary's DWARF (godwarf.GoDwarf.type_catalog: every type DIE, global and function result, read in
  one pass and cached per binary under the build cache by content hash); the dynamic type of an interface from
  the runtime's own descriptors: eface._type or iface.tab->Type (runtime/runtime2.go:184-192,
  internal/abi/iface.go:17-22), whose name and TFlagDirectIface (internal/abi/type.go:124-127) gotypes.py
  reads, and whose DWARF type is the DIE with that DW_AT_go_runtime_type (an offset from moduledata.types,
  cmd/link/internal/ld/dwarf.go:711-713).
- maps (read by heapmaps.py): Go 1.24+ swiss maps (internal/runtime/maps): the Map header (map.go:214-265: used, dirPtr, dirLen), a
  small map's single group (dirLen == 0, map.go:233-243) or the directory of tables (map.go:364-366; a table
  may sit at several directory entries, table.go:34-72), each table's groups (groupsReference, group.go:313-
  344), a group's control word and slots (group.go:246-310; a slot is full iff its control byte's bit 7 is
  clear, group.go:233-241); keys and elements at the offsets of the DWARF group struct the linker synthesizes
  (cmd/link/internal/ld/dwarf.go:874-934), indirect when larger than 128 bytes (internal/abi/map.go:20-23).
  Older layouts (hmap, Go <= 1.23) are reduced to their length, with a token saying so.
- chans: runtime.hchan's qcount, dataqsiz, closed (runtime/chan.go:34-46); funcs: funcval.fn
  (runtime/runtime2.go:179-182) named by the ELF symbol table.

Paths and tokens (the contract geffects.py and the sweep use):
- a path starts with the root's name (`~r0`, `main.cfg`); a struct field is `.name`, an array or slice element
  `[i]`, a map entry `{key}` (the key rendered canonically: `"text"`, `42`, `true`, `{a, b}` for a struct,
  `&...` through a pointer; entries in the sorted order of their rendering, so insertion order and bucket
  placement do not matter), an interface's dynamic value `.(T)`, a pointer's target `.*` -- except that, as
  Go's selectors do, a pointer to a struct or an array is followed without `.*` (`~r0.Items[3].Name` where
  Items is []*Item);
- tokens: integers in decimal (signed by their type), `true`/`false`, floats as Python's repr, `string '...'`
  (its bytes, up to MAX_BYTES, then `...`), `bytes <hex>` for an array of bytes and `P[:]` of a byte slice,
  `nil`, `&T` for a non-nil pointer whose target T is walked, `same object as <path>` for a pointer, slice, map
  or chan reaching an object already reached at <path> (so aliasing is compared, and cycles end), `P.len` and
  `P.cap` of a non-nil slice, `P.len` of a non-nil map, `type T` for a non-nil interface, `func main.f` (the
  function a func value's code pointer names; a closure's context is not followed), `chan T len N cap M` (with
  `closed`), `non-nil` for an unsafe.Pointer (not followed). A struct has no token of its own, only its fields
  (an empty struct is `{}`).

Bounds (cost: two walks per run at F's return, one of the results and one of the globals, never per point):
MAX_DEPTH (16) indirections from the root, MAX_TOKENS (20,000) tokens per walk, MAX_ELEMS (1,000) elements of
an array or slice and entries of a map (the rest is one token saying how many were not compared; a map's first
entries in key order), MAX_BYTES (4 KiB) of a string or byte run, MAX_MAP_SLOTS (16,384) slots read from one
map (a bigger one is compared by its length). Each cut is a token that says so, the same in two runs whose
graphs agree up to the cut.

Left out: the elements of a chan's buffer, a closure's captured variables, unsafe.Pointer and uintptr targets,
aliasing through interior pointers (a pointer into the middle of an object already reached is walked again, not
named `same object as`) and through values boxed in interfaces (immutable in Go), maps whose distinct keys
render alike (e.g. pointer keys to equal values: their entries are numbered `#2`, `#3` in bucket order),
and the runtime's own objects behind unsafe.Pointer words.
"""
from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .heapmaps import SCALARS, MAX_BYTES, TFLAG_DIRECT_IFACE, MapReader, map_layout, scalar_token

MAX_DEPTH = 16           # indirections (pointer, slice, map entry, boxed interface value) from the root
MAX_TOKENS = 20_000      # tokens one walk emits
MAX_ELEMS = 1_000        # elements of one array or slice, entries of one map
CATALOG_VERSION = 2

# reflect kinds (internal/abi/type.go:50-80) -> the walker's kinds
_KINDS = {1: "bool", **{k: "int" for k in range(2, 7)}, **{k: "uint" for k in range(7, 13)}, 13: "float",
          14: "float", 15: "complex", 16: "complex", 17: "array", 18: "chan", 19: "func", 20: "iface", 21: "map",
          22: "ptr", 23: "slice", 24: "string", 25: "struct", 26: "uptr"}
_ENCODINGS = {2: "bool", 3: "complex", 4: "float", 5: "int", 6: "int", 7: "uint", 8: "uint"}   # DW_ATE_*


# ---- the type catalogue of one binary ------------------------------------------------------------------
class Catalog:
    """godwarf's type catalogue of one binary, interpreted: Ty views of its type DIEs, its globals, its
    functions' results, and the DIE of each runtime type descriptor."""

    def __init__(self, raw: dict):
        self.recs = {int(k): v for k, v in raw["types"].items()}
        self.globals = {k: (v[0], v[1]) for k, v in raw["globals"].items()}
        self.results = {k: [(n, t) for n, t in v] for k, v in raw["results"].items()}
        self.by_rt: dict[int, int] = {}
        self.by_name: dict[str, int] = {}
        for off, r in self.recs.items():
            if r.get("rt"):
                self.by_rt.setdefault(r["rt"], off)
            if "n" in r:
                self.by_name.setdefault(r["n"], off)
        self._tys: dict[int, Ty] = {}

    def ty(self, off: int | None) -> Ty | None:
        if off is None or off not in self.recs:
            return None
        t = self._tys.get(off)
        if t is None:
            t = self._tys[off] = Ty(self, off)
            t.resolve()
        return t


def catalog(path: str | Path) -> Catalog | None:
    """The binary's Catalog (None without DWARF): memoized per process, cached on disk by content hash."""
    from ..core.errors import EmuError
    from ..front import gobuild, godwarf
    raw = Path(path).read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    if sha in _CATALOGS:
        return _CATALOGS[sha]
    cache = gobuild.cache_dir() / "layout" / f"heapgraph-v{CATALOG_VERSION}-{sha}.json"
    try:
        data = json.loads(cache.read_text())            # {"dwarf": None} for a binary without DWARF
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or "dwarf" not in data:
        try:
            with godwarf.GoDwarf.open(path) as d:
                data = {"dwarf": d.type_catalog()}
        except EmuError:
            data = {"dwarf": None}
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{id(data)}.tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(cache)
    cat = _CATALOGS[sha] = Catalog(data["dwarf"]) if data["dwarf"] is not None else None
    return cat


_CATALOGS: dict[str, Catalog | None] = {}


@dataclass(eq=False)
class Ty:
    """One Go type as the walker needs it (from its DIE, typedefs followed; name is the outermost one's)."""
    cat: Catalog
    off: int
    kind: str = "unknown"
    name: str = "?"
    size: int = 0
    elem: int | None = None        # ptr, slice, array, chan: the element's DIE
    count: int = 0                 # array
    fields: list = field(default_factory=list)     # struct: (name, offset, DIE)
    eface: bool = False            # iface: interface{} (runtime.eface) or with methods (runtime.iface)
    map: dict | None = None        # map: the swiss layout (heapmaps.map_layout), or {"old": why}
    chan: dict | None = None       # chan: hchan offsets

    def resolve(self) -> None:
        recs = self.cat.recs
        r = recs[self.off]
        self.name = r.get("n", "?")
        gk = r.get("k") or None
        elem, key = r.get("el"), r.get("key")
        seen = 0
        while r["t"] == "typedef" and r.get("ty") in recs and seen < 16:
            r = recs[r["ty"]]
            gk = gk or r.get("k") or None
            elem = elem if elem is not None else r.get("el")
            key = key if key is not None else r.get("key")
            seen += 1
        self.size = r.get("s", 8 if r["t"] in ("ptr", "func") else 0)
        if gk in _KINDS:
            kind = _KINDS[gk]
        elif r["t"] == "base":
            kind = _ENCODINGS.get(r.get("enc"), "unknown")
        elif r["t"] == "ptr":
            kind = "ptr" if "ty" in r else "uptr"
        else:
            kind = {"struct": "struct", "array": "array", "func": "func"}.get(r["t"], "unknown")
        if kind == "ptr" and "ty" not in r:
            kind = "uptr"
        self.kind = kind
        if kind == "ptr":
            self.elem = r["ty"]
        elif kind == "array":
            self.elem, self.count = r.get("ty"), r.get("c", 0)
        elif kind in ("slice", "chan"):
            self.elem = elem
        elif kind == "struct":
            self.fields = [tuple(m) for m in r.get("m", [])]
        elif kind == "iface":
            names = {m[0] for m in r.get("m", [])}
            self.eface = "_type" in names
            self.size = self.size or 16
        if kind in ("map", "chan"):
            self.size = 8
            hdr = self._struct_behind(r)          # the synthesized map<K,V> / hchan<T> struct
            if kind == "map":
                self.map = map_layout(self.cat, hdr, key, elem)
            else:
                self.chan = {m[0]: m[1] for m in hdr.get("m", [])} if hdr else {}
                self.chan["elem"] = (self.cat.recs.get(elem) or {}).get("n", "?")

    def _struct_behind(self, r: dict) -> dict | None:
        """The struct a pointer-typed record points at (typedefs followed)."""
        recs = self.cat.recs
        for _ in range(8):
            if r is None:
                return None
            if r["t"] == "struct":
                return r
            r = recs.get(r.get("ty"))
        return None

    def member(self, name: str):
        return next((f for f in self.fields if f[0] == name), None)


# ---- the walk ------------------------------------------------------------------------------------------
class Walk:
    """One walk: roots added in order share the aliasing record and the bounds.

    read(addr, n) -> bytes or None; rtype(addr) -> (name, tflag, DIE offset or None) of a runtime type
    descriptor; func_name(pc) -> str or None."""

    def __init__(self, cat: Catalog, read, rtype, func_name):
        self.cat, self._read, self.rtype, self.func_name = cat, read, rtype, func_name
        self.maps = MapReader(cat, self.read, rtype)     # a swiss map's slots and its keys' text (heapmaps.py)
        self.out: dict[str, str] = {}
        self.seen: dict[tuple, str] = {}
        self.left = MAX_TOKENS
        self.cut = False

    # --- plumbing
    def read(self, addr: int, n: int) -> bytes | None:
        if n == 0:
            return b""
        if addr == 0:
            return None
        try:
            b = self._read(addr, n)
        except Exception:                  # an unmapped address: a wild pointer in the guest
            return None
        return bytes(b) if b is not None and len(b) == n else None

    def emit(self, path: str, tok: str) -> None:
        if self.cut:
            return
        if self.left <= 0:
            self.out[path] = f"not compared: the walk's bound of {MAX_TOKENS:,} tokens was reached"
            self.cut = True
            return
        self.out[path] = tok
        self.left -= 1

    def root(self, name: str, toff: int | None, addr: int | None = None, raw: bytes | None = None) -> None:
        t = self.cat.ty(toff)
        if t is None:
            self.emit(name, "not compared: no DWARF type")
            return
        self.value(name, t, addr, raw, 0)

    # --- values
    def value(self, path: str, t: Ty, addr: int | None, raw: bytes | None, depth: int) -> None:
        if self.cut:
            return
        k = t.kind
        if k == "struct":
            self._struct(path, t, addr, raw, depth)
            return
        if k == "array":
            self._array(path, t, addr, raw, depth)
            return
        b = raw[:t.size] if raw is not None and len(raw) >= t.size else (
            self.read(addr, t.size) if addr is not None else None)
        if b is None:
            self.emit(path, "unreadable")
            return
        if k in SCALARS:
            self.emit(path, scalar_token(k, b))
        elif k == "string":
            p, n = struct.unpack("<QQ", b[:16])
            self.emit(path, self._string(p, n))
        elif k == "uptr":
            self.emit(path, "nil" if not int.from_bytes(b[:8], "little") else "non-nil")
        elif k == "ptr":
            self._pointer(path, t, int.from_bytes(b[:8], "little"), depth)
        elif k == "slice":
            self._slice(path, t, *struct.unpack("<QQQ", b[:24]), depth)
        elif k == "map":
            self._map(path, t, int.from_bytes(b[:8], "little"), depth)
        elif k == "chan":
            self._chan(path, t, int.from_bytes(b[:8], "little"))
        elif k == "func":
            self._func(path, int.from_bytes(b[:8], "little"))
        elif k == "iface":
            self._iface(path, t, *struct.unpack("<QQ", b[:16]), depth)
        else:
            self.emit(path, b.hex() if t.size else "{}")

    def _string(self, p: int, n: int) -> str:
        if n == 0:
            return "string ''"
        data = self.read(p, min(n, MAX_BYTES))
        if data is None:
            return f"string of {n} bytes (unreadable)"
        return f"string {data.decode(errors='replace')!r}" + ("..." if n > MAX_BYTES else "")

    def _struct(self, path, t, addr, raw, depth):
        if not t.fields:
            self.emit(path, "{}")
            return
        if raw is None or len(raw) < t.size:
            raw = self.read(addr, t.size) if addr is not None and t.size <= 1 << 16 else None
        for name, off, toff in t.fields:
            ft = self.cat.ty(toff)
            if ft is None:
                continue
            self.value(f"{path}.{name}", ft, addr + off if addr is not None else None,
                       raw[off:off + ft.size] if raw is not None else None, depth)

    def _array(self, path, t, addr, raw, depth):
        e = self.cat.ty(t.elem)
        if e is None or t.count == 0:
            self.emit(path, "[]")
            return
        self._elements(path, e, t.count, addr, raw, depth, inline=True)

    def _elements(self, path, e: Ty, n: int, addr, raw, depth, inline: bool) -> None:
        """n elements of type e from addr (or raw): an array's inline, a slice's behind its pointer."""
        if e.kind in ("int", "uint") and e.size == 1:
            m = min(n, MAX_BYTES)
            b = raw[:m] if raw is not None and len(raw) >= m else self.read(addr, m) if addr is not None else None
            self.emit(path if inline else f"{path}[:]",
                      "unreadable" if b is None else f"bytes {b.hex()}" + ("..." if n > MAX_BYTES else ""))
            return
        m = min(n, MAX_ELEMS)
        es = e.size
        chunk = raw if raw is not None and len(raw) >= m * es else (
            self.read(addr, m * es) if addr is not None and m * es <= 1 << 20 else None)
        for i in range(m):
            if self.cut:
                return
            self.value(f"{path}[{i}]", e, addr + i * es if addr is not None else None,
                       chunk[i * es:(i + 1) * es] if chunk is not None else None, depth)
        if n > m:
            self.emit(f"{path}[{m}:]", f"{n - m:,} more elements not compared (bound {MAX_ELEMS:,})")

    def _seen(self, path: str, key: tuple) -> bool:
        first = self.seen.get(key)
        if first is not None:
            self.emit(path, f"same object as {first}")
            return True
        self.seen[key] = path
        return False

    def _pointer(self, path, t, p, depth):
        if p == 0:
            self.emit(path, "nil")
            return
        e = self.cat.ty(t.elem)
        if e is None:
            self.emit(path, "non-nil")
            return
        if e.size and self._seen(path, ("obj", p, e.off)):
            return
        if depth >= MAX_DEPTH:
            self.emit(path, f"&{e.name} (not followed: depth bound {MAX_DEPTH})")
            return
        self.emit(path, f"&{e.name}")
        inline = (e.kind == "struct" and e.fields) or (
            e.kind == "array" and e.count and not (self._byte_elems(e)))
        self.value(path if inline else f"{path}.*", e, p, None, depth + 1)

    def _byte_elems(self, arr: Ty) -> bool:
        e = self.cat.ty(arr.elem)
        return e is not None and e.kind in ("int", "uint") and e.size == 1

    def _slice(self, path, t, data, n, c, depth):
        if data == 0:
            self.emit(path, "nil" if n == 0 else f"nil with len {n}")
            return
        e = self.cat.ty(t.elem)
        if e is None:
            self.emit(path, f"slice len {n} cap {c} (elements not compared: no DWARF type)")
            return
        if self._seen(path, ("slice", data, e.off, n, c)):
            return
        self.emit(f"{path}.len", str(n))
        self.emit(f"{path}.cap", str(c))
        if n == 0:
            return
        if depth >= MAX_DEPTH:
            self.emit(f"{path}[:]", f"elements not compared: depth bound {MAX_DEPTH}")
            return
        self._elements(path, e, n, data, None, depth + 1, inline=False)

    def _chan(self, path, t, c):
        if c == 0:
            self.emit(path, "nil")
            return
        if self._seen(path, ("chan", c)):
            return
        lay = t.chan or {}
        hdr = self.read(c, max(lay.get("closed", 28), lay.get("dataqsiz", 8)) + 8)
        if hdr is None:
            self.emit(path, f"chan {lay.get('elem', '?')} (unreadable)")
            return

        def word(name, default, size=8):
            off = lay.get(name, default)
            return int.from_bytes(hdr[off:off + size], "little")
        closed = word("closed", 28, 4)
        self.emit(path, f"chan {lay.get('elem', '?')} len {word('qcount', 0)} cap {word('dataqsiz', 8)}"
                  + (" closed" if closed else ""))

    def _func(self, path, f):
        if f == 0:
            self.emit(path, "nil")
            return
        pc = self.read(f, 8)
        name = self.func_name(int.from_bytes(pc, "little")) if pc is not None else None
        self.emit(path, f"func {name}" if name else "func (code pointer names no function)")

    def _iface(self, path, t, w0, data, depth):
        if w0 == 0:
            self.emit(path, "nil")
            return
        if t.eface:
            tp = w0
        else:
            b = self.read(w0 + 8, 8)                    # itab.Type (internal/abi/iface.go:17-22)
            tp = int.from_bytes(b, "little") if b is not None else 0
        info = self.rtype(tp) if tp else None
        if info is None:
            self.emit(path, "type unknown (its descriptor is unreadable)")
            return
        name, tflag, die = info
        self.emit(path, f"type {name}")
        sub = f"{path}.({name})"
        dt = self.cat.ty(die)
        if dt is None:
            self.emit(sub, "not compared: no DWARF type for it")
            return
        if tflag & TFLAG_DIRECT_IFACE:                    # the data word is the value (a pointer shape)
            self.value(sub, dt, None, data.to_bytes(8, "little"), depth)
        elif depth >= MAX_DEPTH:
            self.emit(sub, f"not followed: depth bound {MAX_DEPTH}")
        else:
            self.value(sub, dt, data, None, depth + 1)

    def _map(self, path, t, h, depth):
        if h == 0:
            self.emit(path, "nil")
            return
        if self._seen(path, ("map", h)):
            return
        lay = t.map or {"old": "no DWARF layout"}
        used_off = lay.get("used", 0)
        hb = self.read(h, max(used_off, lay.get("dirLen", 0)) + 8)
        if hb is None:
            self.emit(path, "map (unreadable)")
            return
        used = int.from_bytes(hb[used_off:used_off + 8], "little")
        self.emit(f"{path}.len", str(used))
        if "old" in lay:
            self.emit(f"{path}{{...}}", lay["old"])
            return
        if used == 0:
            return
        if depth >= MAX_DEPTH:
            self.emit(f"{path}{{...}}", f"entries not compared: depth bound {MAX_DEPTH}")
            return
        slots = self.maps.slots(hb, lay)
        if isinstance(slots, str):
            self.emit(f"{path}{{...}}", slots)
            return
        kt, et = self.cat.ty(lay["key"]), self.cat.ty(lay["elem"])
        gkt, get_ = self.cat.ty(lay["kty"]), self.cat.ty(lay["ety"])
        if None in (kt, et, gkt, get_):
            self.emit(f"{path}{{...}}", "entries not compared: no DWARF type for the key or element")
            return
        kind_k = kt.size > 128 and gkt.size == 8          # indirect key / elem (internal/abi/map.go:19-22)
        kind_e = et.size > 128 and get_.size == 8
        entries = []
        for ka, ea in slots:
            if kind_k:
                b = self.read(ka, 8)
                ka = int.from_bytes(b, "little") if b else 0
            if kind_e:
                b = self.read(ea, 8)
                ea = int.from_bytes(b, "little") if b else 0
            sk, text = self.maps.key_text(kt, ka, None, 0)
            entries.append((sk, text, ea))
        entries.sort(key=lambda x: (x[0], x[1]))
        prev, dup = None, 1
        shown = entries[:MAX_ELEMS]
        for sk, text, ea in shown:
            if self.cut:
                return
            dup = dup + 1 if text == prev else 1
            prev = text
            self.value(f"{path}{{{text}}}" if dup == 1 else f"{path}{{{text}#{dup}}}", et, ea, None, depth + 1)
        if len(entries) > len(shown):
            self.emit(f"{path}{{...}}", f"{len(entries) - len(shown):,} more entries not compared "
                      f"(bound {MAX_ELEMS:,})")
