"""emu/front/godwarf.py: struct layouts from a Go 1.27.3 binary's DWARF agree with the typed table emu/core/gostructs.py."""
from __future__ import annotations

import pytest
from conftest import elf_copy_without

from emu.front import godwarf
from emu.core import gostructs
from emu.core.errors import EmuError

#: Table entries that deliberately describe only part of a Go field.
#: m.preemptoff is a string {ptr @248, len @256}; the table keeps one word at the field's offset.
PARTIAL = {("runtime.m", "preemptoff")}


@pytest.fixture(scope="module")
def dwarf(go_corpus):
    with godwarf.GoDwarf.open(go_corpus.prog) as d:
        yield d


@pytest.mark.parametrize("struct, table", [("runtime.g", gostructs.G_FIELDS), ("runtime.m", gostructs.M_FIELDS),
                                           ("runtime.p", gostructs.P_FIELDS)])
def test_typed_table_agrees_with_dwarf(dwarf, struct, table):
    for name, f in table.items():
        m = dwarf.field(struct, name)
        if (struct, name) in PARTIAL:
            assert m.offset == f.offset and f.size < m.size, name
        else:
            assert (m.offset, m.size) == (f.offset, f.size), name


def test_xregs_block(dwarf):
    x = dwarf.struct("runtime.xRegs")
    assert x.size == gostructs.XREGS_SIZE
    assert [x.members[f"Z{i}"] for i in range(32)] == [(gostructs.XREGS_SLOT * i, 64) for i in range(32)]
    assert [x.members[f"K{i}"] for i in range(8)] == [(2048 + 8 * i, 8) for i in range(8)]
    assert dwarf.struct("runtime.xRegPerP").members == {"scratch": (0, 2112), "cache": (2112, 8)}


def test_struct_layouts_and_nested_paths(go_corpus):
    layouts = godwarf.struct_layouts(go_corpus.prog)
    assert set(layouts) == set(godwarf.RUNTIME_STRUCTS)
    g = layouts["runtime.g"]
    assert g.size == 456 and g.members["sched"] == (56, 48) and g.member_types["sched"] == "runtime.gobuf"
    assert layouts["runtime.gobuf"].members["ctxt"] == (24, 8)         # unsafe.Pointer: 8 bytes
    assert layouts["runtime.wbBuf"].members == {"next": (0, 8), "end": (8, 8), "buf": (16, 4096)}
    assert layouts["runtime.p"].members["wbBuf"].offset == 9552


def test_global_address_agrees_with_symtab(go_corpus, dwarf):
    b = go_corpus.binary()
    for name in ("runtime.writeBarrier", "main.sink", "main.counter"):
        assert dwarf.global_addr(name) == b.symbols[name][0], name


def test_missing_names_are_clear_errors(dwarf):
    with pytest.raises(EmuError, match="no struct 'runtime.nosuch'"):
        dwarf.struct("runtime.nosuch")
    with pytest.raises(EmuError, match="has no member 'nosuch'"):
        dwarf.field("runtime.g", "sched.nosuch")


def test_stripped_binary_has_no_dwarf(tmp_path, go_corpus):
    p = elf_copy_without(go_corpus.prog, tmp_path / "nodwarf", ".debug_")   # as `-ldflags=-w` builds it
    with pytest.raises(godwarf.DwarfError, match="no DWARF"):
        godwarf.GoDwarf.open(p)
