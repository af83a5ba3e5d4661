"""--each-pc (issue #39 item 2, emu/drive/eachpc.py): every distinct PC F's goroutine executes is decided once,
at its first occurrence, in one chain, with the checks of a full sweep."""
import emu
import pytest
from emu.core.errors import EmuError
from emu.drive import eachpc, realsweep
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.drive.gsweep import RealSweep

KINDS = "tests/data/go/kinds"


def test_a_loop_is_decided_pc_by_pc_for_a_fraction_of_the_points():
    full = emu.sweep(KINDS, "spin", to_exit=1)
    each = emu.sweep(KINDS, "spin", to_exit=1, each_pc=True)
    assert full.ok and each.ok
    assert set(each.result.per_pc) == set(full.result.per_pc)          # every PC the full sweep reaches
    assert each.result.points == len(full.result.per_pc) < full.result.points // 100
    n = each.result.points
    assert each.result.each_pc == {"distinct": n, "decided": n, "reference": n, "reference_decided": n, "beyond": 0,
                                   "rounds": 0, "capped": False}        # a loop: its first pass decides them all
    assert all(sum(c.values()) == 1 for c in each.result.per_pc.values())  # each PC decided once


def test_each_pc_decides_the_pcs_of_its_own_run_and_catches_a_broken_stub():
    each = emu.sweep(KINDS, "spawn", to_exit=1, each_pc=True, max_points=100_000)
    e = each.result.each_pc
    assert each.ok and e["decided"] == e["distinct"] == each.result.points > 1000
    bad = emu.sweep(KINDS, "spin", to_exit=0, each_pc=True, stub="tests/data/stub_no_pushfq.s")
    assert not bad.ok and any(v.kind == "flags" for v in bad.violations)


def test_max_points_caps_the_pcs_decided_and_gc_is_refused():
    each = emu.sweep(KINDS, "spawn", to_exit=0, each_pc=True, max_points=50)
    e = each.result.each_pc
    assert each.result.points == e["decided"] == 50 < e["distinct"] and e["capped"] and e["rounds"] == 0
    assert e["reference_decided"] <= 50 < e["reference"]         # the promise is up to the cap, and said so
    assert f"{e['reference'] - e['reference_decided']:,} NOT decided" in each.render()
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


def _reference_pcs(func: str) -> set[int]:
    res = gobuild.build(KINDS)
    sw = RealSweep(elfimage.load(str(res.binary)), process.Options(argv=["prog"]), func, source_path=res.source_path)
    sw.reference(10**9)
    return eachpc.reference_pcs(sw)


@pytest.mark.parametrize("func", ["spawn", "mixed"])
def test_every_pc_of_the_reference_run_is_decided_once(func):
    """The promise (eachpc.py): every PC F's goroutine executes in the uninterrupted run is decided, once, although
    the first pass's injections take G off that path (spawn: 247 of its 1,592 PCs not reached by the first pass; mixed:
    55 of 3,358 once, as many as the run's path allows); the PCs decided beyond them are reported apart."""
    ref = _reference_pcs(func)
    each = emu.sweep(KINDS, func, to_exit=0, each_pc=True)
    e = each.result.each_pc
    assert each.ok
    assert ref <= set(each.result.per_pc)                      # every reference PC has its point
    assert all(sum(c.values()) == 1 for c in each.result.per_pc.values())   # each decided once
    assert e["reference"] == e["reference_decided"] == len(ref)
    assert e["rounds"] >= (1 if func == "spawn" else 0)          # spawn's first pass leaves some (test below)
    assert e["beyond"] == len(set(each.result.per_pc) - ref) and e["decided"] == each.result.points
    text = each.render()
    assert "every one decided" in text and f"{e['beyond']:>9,}   PCs decided that the uninterrupted run" in text


def test_reference_pcs_not_reached_are_reported_as_not_decided(monkeypatch):
    """Without the passes after the first (EACH_PC_ROUNDS 0), spawn's reference PCs that the first pass did not
    reach stay undecided, and the report names how many."""
    monkeypatch.setattr(realsweep, "EACH_PC_ROUNDS", 0)
    each = emu.sweep(KINDS, "spawn", to_exit=0, each_pc=True)
    e = each.result.each_pc
    assert e["rounds"] == 0 and 0 < e["reference"] - e["reference_decided"]
    assert f"{e['reference'] - e['reference_decided']:,} NOT decided" in each.render()


def test_the_reference_pcs_of_a_loop_are_those_the_full_sweep_reaches():
    """reference_pcs against an independent account: main.spin's full sweep injects at every boundary and its
    loop's path does not depend on them, so its PCs are the uninterrupted run's."""
    full = emu.sweep(KINDS, "spin", to_exit=0)
    assert _reference_pcs("spin") == set(full.result.per_pc)
