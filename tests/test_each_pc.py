"""--each-pc (issue #39 item 2, emu/drive/eachpc.py): every distinct PC F's goroutine executes is decided once,
at its first occurrence, in one chain, with the checks of a full sweep."""
import emu
import pytest
from emu.core.errors import EmuError

KINDS = "tests/data/go/kinds"


def test_a_loop_is_decided_pc_by_pc_for_a_fraction_of_the_points():
    full = emu.sweep(KINDS, "spin", to_exit=1)
    each = emu.sweep(KINDS, "spin", to_exit=1, each_pc=True)
    assert full.ok and each.ok
    assert set(each.result.per_pc) == set(full.result.per_pc)          # every PC the full sweep reaches
    assert each.result.points == len(full.result.per_pc) < full.result.points // 100
    assert each.result.each_pc == {"distinct": each.result.points, "decided": each.result.points}
    assert all(sum(c.values()) == 1 for c in each.result.per_pc.values())  # each PC decided once


def test_each_pc_decides_the_pcs_of_its_own_run_and_catches_a_broken_stub():
    each = emu.sweep(KINDS, "spawn", to_exit=1, each_pc=True, max_points=100_000)
    e = each.result.each_pc
    assert each.ok and e["decided"] == e["distinct"] == each.result.points > 1000
    bad = emu.sweep(KINDS, "spin", to_exit=0, each_pc=True, stub="tests/data/stub_no_pushfq.s")
    assert not bad.ok and any(v.kind == "flags" for v in bad.violations)


def test_max_points_caps_the_pcs_decided_and_gc_is_refused():
    each = emu.sweep(KINDS, "spawn", to_exit=0, each_pc=True, max_points=50)
    assert each.result.points == each.result.each_pc["decided"] == 50 < each.result.each_pc["distinct"]
    with pytest.raises(EmuError, match="--each-pc and --gc"):
        emu.sweep("tests/data/go/gcreal", "hidden", each_pc=True, gc=True)


def test_each_pc_covers_every_pc_the_full_sweep_of_ledger_6_reaches():
    # main.ledger 6 (tests/data/go/ledger: a map, fmt, errors, a channel, sha256): 32,567 boundaries, ~6,800 PCs.
    # Not in general: with 27 each-pc decides 96.8 % of the full sweep's PCs (bench/bench_eachpc.py), the rest
    # paths only the full sweep's dense chains lead to (eachpc.py's docstring)
    full = emu.sweep("tests/data/go/ledger", "ledger", to_exit=0, args=["6"])
    each = emu.sweep("tests/data/go/ledger", "ledger", to_exit=0, args=["6"], each_pc=True)
    assert full.ok and each.ok
    assert set(each.result.per_pc) >= set(full.result.per_pc)
    e = each.result.each_pc
    assert e["decided"] == e["distinct"] == each.result.points < full.result.points // 4
    assert all(sum(c.values()) == 1 for c in each.result.per_pc.values())  # each PC decided once
