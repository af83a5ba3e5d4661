"""g, m and p as a Go binary lays them out: every field preemu models (core/gostructs' names) at the offset and
width the binary's DWARF gives (runtime/runtime2.go's type g struct, type m struct, type p struct as the
compiler laid them out), read once per binary and remembered as JSON under the build cache.

Apart from gofront.py (the program model over the pclntab) so that `preemu exec`, which needs the layout at
start-up, does not import the program model or Capstone. Left out: structs other than g, m and p.
"""
from __future__ import annotations

from pathlib import Path

from ..core import gostructs, memmap
from ..core.errors import EmuError


_SLOTS = {"runtime.g": memmap.G_SLOT, "runtime.m": memmap.M_SLOT, "runtime.p": memmap.P_SLOT}


def _release(binary_path, raw: bytes):
    """The Go release that built the binary (its .go.buildinfo), without reading its function tables."""
    from . import goreleases
    return goreleases.release_of(goreleases.elf_version(raw), str(binary_path))


def struct_tables(binary_path, raw: bytes | None = None) -> gostructs.StructTables:
    """g, m and p as this binary's DWARF lays them out: every field preemu models (gostructs' names) at
    the binary's offset and width, each struct checked to fit the memory preemu gives it. A Go 1.27
    binary without DWARF (-ldflags=-w) gets the typed Go 1.27.3 tables; one of another release is an
    error (its offsets are its own). Parsed once per binary: the result is
    cached as JSON under the build cache (DWARF is slow to read). `raw`: the binary's bytes when the caller
    has read them already."""
    import hashlib
    import json

    from . import gobuild
    typed = gostructs.typed_tables()
    model = {s: sorted(typed.of(s).items()) for s in _SLOTS}
    raw = Path(binary_path).read_bytes() if raw is None else raw
    digest = hashlib.sha256(raw + repr(model).encode()).hexdigest()
    cache = gobuild.cache_dir() / "layout" / f"{digest}.json"
    if cache.exists():
        d = json.loads(cache.read_text())
        tables = {s: {n: gostructs.Field(n, o, z) for n, (o, z) in d[s].items()} for s in _SLOTS}
        return gostructs.StructTables(tables["runtime.g"], tables["runtime.m"], tables["runtime.p"], d["source"])
    from . import godwarf                # pyelftools: only when the layout is not cached yet
    release = _release(binary_path, raw)
    try:
        dw = godwarf.GoDwarf.open(binary_path)
    except godwarf.DwarfError:
        if release.minor != 27:
            raise EmuError(f"{binary_path}: built by {release.name} without DWARF (-ldflags=-w): preemu takes "
                           f"this release's g/m/p offsets from the DWARF; build it without -w") from None
        return gostructs.StructTables(typed.g, typed.m, typed.p,
                                      "no DWARF: struct offsets from preemu's typed Go 1.27.3 table")
    tables: dict[str, dict] = {}
    with dw:
        for sname, slot in _SLOTS.items():
            size = dw.struct(sname).size
            if size > slot:
                raise EmuError(f"{binary_path}: {sname} is {size} bytes in this binary's DWARF; preemu gives it "
                               f"{slot}")
            fields = tables[sname] = {}
            for name, f in typed.of(sname).items():
                if name.startswith("xRegs.") and release.layout != "go1.27":
                    continue                 # before Go 1.26 asyncPreempt keeps X0-X15 in its frame
                try:
                    m = dw.field(sname, name)
                except EmuError:
                    raise EmuError(f"{binary_path}: {sname} has no field {name} in its DWARF; preemu's model "
                                   f"of {release.name} needs it") from None
                if m.size < f.size:
                    raise EmuError(f"{binary_path}: {sname}.{name} is {m.size} bytes in this binary's DWARF; "
                                   f"preemu's model of it needs {f.size}")
                fields[name] = gostructs.Field(name, m.offset, m.size if m.size in (1, 2, 4, 8) else f.size)
    same = all(tables[s] == typed.of(s) for s in _SLOTS)
    source = "struct offsets from the binary's DWARF" + (" (equal to Go 1.27.3's)" if same else
                                                         " (they differ from Go 1.27.3's)")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"source": source, **{s: {n: [f.offset, f.size] for n, f in t.items()}
                                                      for s, t in tables.items()}}))
    return gostructs.StructTables(tables["runtime.g"], tables["runtime.m"], tables["runtime.p"], source)
