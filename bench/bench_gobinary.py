"""Benchmark (not a test): the Go-input path's fixed costs. Run with
`.venv/bin/python bench/bench_gobinary.py` (builds tests/go/corpus through the content cache first).

Targets (issue #9): a cached build returns without the compiler in < 0.3 s; opening a ~2 MB binary and
decoding what one function needs (pcsp, UnsafePoint, lines, stack maps, inline tree) well under 1 s;
DWARF struct layouts of g/m/p/xRegs/wbBuf in well under 1 s.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emu.front import gobinary, gobuild, gopclntab, godwarf  # noqa: E402

CORPUS = ROOT / "tests" / "go" / "corpus"


def timed(what: str, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"  {what}: {time.perf_counter() - t0:.3f} s")
    return out


def one_function(b: gobinary.GoBinary, name: str) -> None:
    f = b.func_named(name)
    b.pcsp(f), b.pcdata(f, gopclntab.PCDATA_UnsafePoint), b.lines(f), b.inline_tree(f)
    b.stackmap(f, gopclntab.FUNCDATA_LocalsPointerMaps), b.stackmap(f, gopclntab.FUNCDATA_ArgsPointerMaps)


def main() -> None:
    gobuild.build(CORPUS)       # warm the cache (cold: compiles the runtime once, ~15-20 s)
    r = timed("cached build (no go command)", lambda: gobuild.build(CORPUS))
    assert r.cached
    size = r.binary.stat().st_size
    b = timed(f"GoBinary.open ({size / 1e6:.1f} MB, {len(gobinary.GoBinary.open(r.binary).funcs)} funcs)",
              lambda: gobinary.GoBinary.open(r.binary))
    timed("decode main.buildList's tables", lambda: one_function(b, "main.buildList"))
    timed(".symtab", lambda: b.symbols)
    timed("data/bss GC programs", b.global_pointer_words)
    timed("decode every function's pcsp + UnsafePoint + lines",
          lambda: [(b.pcsp(f), b.pcdata(f, 0), b.lines(f)) for f in b.funcs])
    timed("DWARF runtime struct layouts", lambda: godwarf.struct_layouts(r.binary))


if __name__ == "__main__":
    main()
