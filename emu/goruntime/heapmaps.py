"""Go's swiss maps in guest memory, for heapgraph.py's walk: a map's layout from the DWARF structs the linker
synthesizes for map[K]V, the full slots of one map, and a map key's canonical text (the walk sorts a map's
entries by it, so insertion order and slot placement do not matter).

Mirrors internal/runtime/maps (Go 1.24+): the Map header (map.go:214-265: used, dirPtr, dirLen), a small map's
single group (dirLen == 0, map.go:233-243) or the directory of tables (map.go:364-366; a table may sit at
several directory entries, table.go:34-72), each table's groups (groupsReference, group.go:313-344), a group's
control word and slots (group.go:246-310; a slot is full iff its control byte's bit 7 is clear, group.go:233-241);
keys and elements at the offsets of the compiler's group struct (cmd/link/internal/ld/dwarf.go:874-934).
Left out: the older hmap layout (Go <= 1.23: map_layout says so, the walk compares the length only); a map of
more than MAX_MAP_SLOTS slots (compared by its length); key text deeper than three indirections.
"""
from __future__ import annotations

import json
import math
import struct

MAX_BYTES = 4_096        # bytes of one string, byte array or byte slice
MAX_MAP_SLOTS = 1 << 14  # slots read from one map (8 per group): a bigger map is compared by its length
TFLAG_DIRECT_IFACE = 0x20    # internal/abi/type.go:127
SCALARS = ("bool", "int", "uint", "float", "complex")


def _deref(cat: Catalog, off: int | None, times: int = 1) -> Ty | None:
    t = cat.ty(off)
    for _ in range(times):
        if t is None or t.kind != "ptr":
            return None
        t = cat.ty(t.elem)
    return t


def map_layout(cat: Catalog, hdr: dict | None, key: int | None, elem: int | None) -> dict:
    """Offsets of a swiss map's header, tables and groups from the DWARF structs the linker synthesizes for
    map[K]V (map<K,V>, table<K,V>, groupReference<K,V>, the compiler's group struct)."""
    if hdr is None:
        return {"old": "the map's DWARF header type is missing"}
    m = {f[0]: (f[1], f[2]) for f in hdr.get("m", [])}
    if "dirPtr" not in m:
        used = m.get("count", m.get("used", (0, None)))[0]
        return {"old": "a pre-swiss map layout (Go 1.23 or earlier): entries not compared", "used": used}
    try:
        table = _deref(cat, m["dirPtr"][1], 2)
        tf = {f[0]: (f[1], f[2]) for f in table.fields}
        gref = cat.ty(tf["groups"][1])
        gf = {f[0]: (f[1], f[2]) for f in gref.fields}
        group = _deref(cat, gf["data"][1])
        grp = {f[0]: (f[1], f[2]) for f in group.fields}
        out = {"used": m["used"][0], "dirPtr": m["dirPtr"][0], "dirLen": m["dirLen"][0],
               "tdata": tf["groups"][0] + gf["data"][0], "tmask": tf["groups"][0] + gf["lengthMask"][0],
               "gsize": group.size, "ctrl": grp["ctrl"][0], "key": key, "elem": elem}
        if "slots" in grp:                    # interleaved: slots [8]struct{key K; elem V}
            arr = cat.ty(grp["slots"][1])
            slot = cat.ty(arr.elem)
            sf = {f[0]: (f[1], f[2]) for f in slot.fields}
            out.update(koff=grp["slots"][0] + sf["key"][0], kstride=slot.size, kty=sf["key"][1],
                       eoff=grp["slots"][0] + sf["elem"][0], estride=slot.size, ety=sf["elem"][1])
        else:                                 # GOEXPERIMENT=mapsplitgroup: keys [8]K; elems [8]V
            ka, ea = cat.ty(grp["keys"][1]), cat.ty(grp["elems"][1])
            out.update(koff=grp["keys"][0], kstride=ka.size // 8, kty=ka.elem,
                       eoff=grp["elems"][0], estride=ea.size // 8, ety=ea.elem)
        return out
    except (KeyError, AttributeError, TypeError, ZeroDivisionError):
        return {"old": "the map's DWARF layout is not one preemu reads: entries not compared",
                "used": m.get("used", (0, None))[0]}


def scalar_token(kind: str, b: bytes) -> str:
    """A bool, integer, float or complex value's token (geffects' tokens for results and globals)."""
    if kind == "bool":
        return "true" if b[0] else "false"
    if kind in ("int", "uint"):
        return str(int.from_bytes(b, "little", signed=kind == "int"))
    if kind == "float":
        return repr(struct.unpack("<d" if len(b) == 8 else "<f", b)[0])
    if kind == "complex":
        h = len(b) // 2
        f = "<d" if h == 8 else "<f"
        return repr(complex(struct.unpack(f, b[:h])[0], struct.unpack(f, b[h:])[0]))
    return b.hex()


class MapReader:
    """Reads maps and keys for one walk: cat, the type catalog (heapgraph.Catalog); read(addr, n) -> bytes or
    None; rtype(addr) -> (name, tflag, DIE offset or None) of a runtime type descriptor."""

    def __init__(self, cat, read, rtype) -> None:
        self.cat, self.read, self.rtype = cat, read, rtype

    def slots(self, hb: bytes, lay: dict):
        """(key address, elem address) of every full slot (internal/runtime/maps: see the module docstring),
        or a token saying why the entries are not compared."""
        dirptr = int.from_bytes(hb[lay["dirPtr"]:lay["dirPtr"] + 8], "little")
        dirlen = int.from_bytes(hb[lay["dirLen"]:lay["dirLen"] + 8], "little", signed=True)
        gsize = lay["gsize"]
        groups: list[int] = []
        if dirlen == 0:                                   # a small map: dirPtr is its one group
            groups = [dirptr] if dirptr else []
        else:
            if dirlen < 0 or dirlen * 8 * 8 > MAX_MAP_SLOTS * 8:
                return f"entries not compared: a directory of {dirlen} tables"
            d = self.read(dirptr, 8 * dirlen)
            if d is None:
                return "entries not compared: its directory is unreadable"
            tables = list(dict.fromkeys(struct.unpack(f"<{dirlen}Q", d)))
            for tab in tables:
                tb = self.read(tab, max(lay["tdata"], lay["tmask"]) + 8)
                if tb is None:
                    return "entries not compared: a table is unreadable"
                data = int.from_bytes(tb[lay["tdata"]:lay["tdata"] + 8], "little")
                n = int.from_bytes(tb[lay["tmask"]:lay["tmask"] + 8], "little") + 1
                if (len(groups) + n) * 8 > MAX_MAP_SLOTS:
                    return f"entries not compared: more than {MAX_MAP_SLOTS:,} slots"
                groups += [data + i * gsize for i in range(n)]
        out = []
        c0 = lay["ctrl"]
        for g in groups:
            cb = self.read(g + c0, 8)
            if cb is None:
                return "entries not compared: a group is unreadable"
            ctrl = int.from_bytes(cb, "little")
            for i in range(8):
                if not (ctrl >> (8 * i)) & 0x80:          # full: bit 7 clear (group.go:233-241)
                    out.append((g + lay["koff"] + i * lay["kstride"], g + lay["eoff"] + i * lay["estride"]))
        return out

    def key_text(self, t, addr: int | None, raw: bytes | None, depth: int) -> tuple[tuple, str]:
        """(sort key, canonical text) of a map key's value."""
        b = raw[:t.size] if raw is not None and len(raw) >= t.size else (
            self.read(addr, t.size) if addr is not None else None)
        if b is None:
            return (2, 0), "?"
        k = t.kind
        if k in ("int", "uint"):
            v = int.from_bytes(b, "little", signed=k == "int")
            return (0, v), str(v)
        if k == "float":
            v = struct.unpack("<d" if t.size == 8 else "<f", b)[0]
            return ((0, v) if math.isfinite(v) else (1, 0)), repr(v)
        if k in SCALARS:
            return (1, 0), scalar_token(k, b)
        if k == "string":
            p, n = struct.unpack("<QQ", b[:16])
            data = self.read(p, min(n, MAX_BYTES)) if n else b""
            text = json.dumps((data or b"").decode(errors="replace"), ensure_ascii=False)
            return (1, 0), text + ("..." if n > MAX_BYTES else "")
        if k == "ptr":
            p = int.from_bytes(b[:8], "little")
            e = self.cat.ty(t.elem)
            if p == 0:
                return (1, 0), "nil"
            if e is None or depth >= 3:
                return (1, 0), f"&{e.name if e else '?'}"
            return (1, 0), "&" + self.key_text(e, p, None, depth + 1)[1]
        if k == "iface":
            w0, data = struct.unpack("<QQ", b[:16])
            if w0 == 0:
                return (1, 0), "nil"
            tp = w0 if t.eface else int.from_bytes(self.read(w0 + 8, 8) or bytes(8), "little")
            info = self.rtype(tp) if tp else None
            if info is None:
                return (1, 0), "?"
            name, tflag, die = info
            dt = self.cat.ty(die)
            if dt is None or depth >= 3:
                return (1, 0), f"{name}(?)"
            inner = (self.key_text(dt, None, data.to_bytes(8, "little"), depth + 1) if tflag & TFLAG_DIRECT_IFACE
                     else self.key_text(dt, data, None, depth + 1))[1]
            return (1, 0), f"{name}({inner})"
        if k == "struct":
            parts = [self.key_text(ft, None, b[off:off + ft.size], depth)[1]
                     for _, off, toff in t.fields if (ft := self.cat.ty(toff)) is not None]
            return (1, 0), "{" + ", ".join(parts) + "}"
        if k == "array":
            e = self.cat.ty(t.elem)
            if e is None:
                return (1, 0), b.hex()
            parts = [self.key_text(e, None, b[i * e.size:(i + 1) * e.size], depth)[1] for i in range(t.count)]
            return (1, 0), "[" + " ".join(parts) + "]"
        if k == "uptr" or k == "chan":
            return (1, 0), "nil" if not int.from_bytes(b[:8], "little") else f"non-nil {k}"
        return (1, 0), b.hex()
