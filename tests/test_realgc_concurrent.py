"""`preemu sweep --gc=concurrent` on Go input: the runtime's default (concurrent) cycle, G's stack scanned at
the chosen boundary by a mark worker's suspendG (preemptPark -> _Gpreempted), G running on during mark
(emu/goruntime/realgc.py, emu/drive/grequest.py)."""
import io
import json
import subprocess

import pytest

from emu import cli
from emu.front import gobuild

GCREAL = "tests/data/go/gcreal"
GCNOWB = "tests/data/go/gcnowb"


def sweep(path, func, *extra):
    out = io.StringIO()
    code = cli.main(["sweep", path, "--func", func, "--json", *extra], out)
    return code, json.loads(out.getvalue())


def test_hidden_pointer_is_a_use_after_free_once_the_cycle_ends_before_the_dereference():
    """spin runs long enough (-- 100000) for a cycle that scanned G inside spin (hidden's frame precise) to end
    before hidden's loop reads the list: the read is a use of freed memory."""
    code, j = sweep(GCREAL, "hidden", "--gc=concurrent", "--max-points", "300", "--", "100000")
    assert code == 1
    uaf = [v for v in j["violations"] if v["kind"] == "use-after-free"]
    assert uaf and all(v["where"].endswith("main.go:59") for v in uaf)
    g = j["gc"]
    assert g["mode"] == "concurrent" and g["uses_after_free"] >= 1 and g["cycles"] >= 2
    # every scan of G came through suspendG's preemptStop at the point: preemptPark, _Gpreempted, in mark
    assert g["stopped_by"] == {"preemptPark": g["scans_at_injection"]}
    assert g["scans_at_injection"] >= g["cycles_by_kind"]["async"]
    # the call-site chain's scans: newstack parked G in the callee's prologue, every frame precise
    assert g["sync_points"] >= 1 and set(g["sync_stopped_by"]) <= {"preemptPark", "gopreempt_m"}
    assert g["scan_phases"] == {"_GCmark": sum(g["scans_by_kind"].values())}      # every scan in mark
    assert g["stw_at_point"] >= 1                      # the sweep-termination stop-the-world's SIGURG landed at k too
    assert g["mark_instructions"] > 0 and g["write_barriers"] > 0     # G ran during mark, its barriers on


def test_allocation_heavy_code_is_clean_in_the_concurrent_mode():
    code, j = sweep(GCREAL, "churn", "--gc=concurrent", "--max-points", "400")
    assert code == 0 and j["ok"], j["violations"][:3]
    g = j["gc"]
    assert g["cycles"] >= 1 and g["freed"] > 0 and g["uses_after_free"] == 0
    assert g["stopped_by"].get("preemptPark", 0) >= 1


def test_the_scan_is_at_the_chosen_boundary_through_preemptPark():
    """The chain's point k gets the stop-the-world's SIGURG (gopreempt_m), then, G back at k in _GCmark, the
    mark worker's (preemptPark): both injections at k's PC, the scan's frames those of k."""
    from emu.drive import gsweep
    from emu.linux import elfimage, process
    res = gobuild.build(GCREAL)
    img = elfimage.load(str(res.binary))
    sw = gsweep.RealSweep(img, process.Options(argv=["prog", "2000"]), "spin", regs={"RAX": 2000},
                          gc="concurrent", source_path=res.source_path)
    sw.reference(10**8)
    listener, reached, end = sw.chain(range(0, 30), {})
    assert end.exit_code == 0 and not listener.violations
    k = next(pt for pt in listener.points if pt.stw is not None)
    assert k.stw.outcome == "injected" and k.event.outcome == "injected" and k.stw.pc == k.event.pc == k.pc
    scan = sw.gc.scans[0]
    assert scan.boundary == k.boundary and scan.path == "preemptPark" and scan.status == "_Gwaiting"
    assert scan.phase == 1 and scan.async_safe_point
    assert scan.frames[:3] == [("runtime.asyncPreempt2", "precise"), ("runtime.asyncPreempt", "conservative"),
                               ("main.spin", "conservative")]
    p = [w for w in sw.p.watch.preemptions if w.pc == k.pc]
    assert [w.descheduled for w in p[:2]] == ["goschedImpl", "preemptPark"]


@pytest.fixture(scope="module")
def nowb():
    return {mode: sweep(GCNOWB, "moveNoWB", f"--gc={mode}", "--max-points", "200") for mode in ("scan", "concurrent")}


def test_an_assembly_pointer_move_without_a_write_barrier_is_caught_by_the_concurrent_cycle_only(nowb):
    code, j = nowb["concurrent"]
    assert code == 1
    uaf = [v for v in j["violations"] if v["kind"] == "use-after-free"]
    assert uaf and uaf[0]["where"].endswith("gcnowb/main.go:68") and "32 bytes" in uaf[0]["what"]
    code, j = nowb["scan"]                  # G never runs while the GC marks: the move cannot matter
    assert code == 0 and j["ok"] and j["gc"]["mode"] == "scan" and j["gc"]["cycles"] > 0


def test_the_move_without_a_write_barrier_is_a_real_bug_the_runtimes_checkmark_confirms():
    """Natively, with another goroutine running runtime.GC() back to back: GODEBUG=gccheckmark=1 finds the node
    reachable but unmarked in some of the runs (a third to most of them on this machine)."""
    binary = str(gobuild.build(GCNOWB).binary)
    found = 0
    for _ in range(20):
        r = subprocess.run([binary, "stress", "1000"], capture_output=True, text=True, timeout=120,
                           env={"GODEBUG": "gccheckmark=1", "PATH": "/usr/bin:/bin"})
        found += "checkmarks found unexpected unmarked object" in r.stderr
        if found:
            break
    assert found
