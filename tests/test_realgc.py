"""`preemu sweep --gc` on Go input: the runtime's own GC runs a full cycle at every injection inside the real
program (emu/goruntime/realgc.py), and preemu reports every use of an object that cycle freed."""
import io
import json
from pathlib import Path

import pytest

from emu import cli
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.goruntime import realgc
from emu.drive import gsweep

GCREAL = "tests/data/go/gcreal"
SOURCE = Path(GCREAL) / "main.go"


def line_of(text: str, after: str = "") -> int:
    """The 1-based line of `text` in the program's source (the first one after the line holding `after`)."""
    lines = SOURCE.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if after in ln) if after else 0
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def sweep(func, *extra):
    out = io.StringIO()
    code = cli.main(["sweep", GCREAL, "--func", func, "--gc=scan", "--json", *extra], out)
    return code, json.loads(out.getvalue())


@pytest.fixture(scope="module")
def hidden():
    return sweep("hidden")


def test_a_pointer_hidden_as_a_masked_uintptr_is_a_use_after_free_at_the_dereference(hidden):
    code, j = hidden
    assert code == 1 and not j["ok"]
    uaf = [v for v in j["violations"] if v["kind"] == "use-after-free"]
    assert uaf and all(v["where"].endswith(f"main.go:{line_of('for p := (*node)(unsafe.Pointer(x ^ mask2))')}")
                       for v in uaf)
    v = uaf[0]
    assert "16 bytes" in v["what"] and "the GC at boundary" in v["expected"] and v["actual"].startswith("a read of")
    # registers, flags and the stack all held; what F read from freed memory may change its result
    assert {w["kind"] for w in j["violations"]} <= {"use-after-free", "final-state"}
    assert j["gc"]["uses_after_free"] >= 1
    assert j["reference"]["stdout"].startswith("hidden ")


def test_every_injection_is_met_by_a_real_cycle_that_scans_the_goroutine_where_it_was_parked(hidden):
    _, j = hidden
    g = j["gc"]
    assert g["injections"] == j["injected"]
    assert g["scans_at_injection"] == g["injections"] > 0
    assert g["cycles"] >= g["injections"]
    frames = g["sample"]["frames"]
    assert frames[0] == ["runtime.asyncPreempt2", "precise"] and frames[1] == ["runtime.asyncPreempt", "conservative"]
    assert frames[2][1] == "conservative" and all(how == "precise" for _, how in frames[3:])


def test_an_interior_unsafe_pointer_keeps_the_list_alive():
    code, j = sweep("interior")
    assert code == 0 and j["ok"], j["violations"][:3]
    assert j["gc"]["uses_after_free"] == 0 and j["gc"]["scans_at_injection"] == j["gc"]["injections"] > 0


def test_allocation_heavy_code_is_clean_and_each_injection_has_its_cycle():
    code, j = sweep("churn", "--max-points", "400")
    assert code == 0 and j["ok"], j["violations"][:3]
    g = j["gc"]
    assert g["freed"] > 0 and g["uses_after_free"] == 0
    assert g["scans_at_injection"] == g["injections"] > 0
    # the runtime's own count (memstats.numgc): one per injection, and one per call site of the call-site chain
    assert g["cycles_by_kind"].get("async") == g["injections"]
    assert g["cycles"] == sum(g["cycles_by_kind"].values()) == g["injections"] + g["sync_points"]
    assert g["sync_points"] >= 1 and set(g["cycles_by_kind"]) >= {"allocation"}


def test_the_runtimes_conservative_scan_keeps_what_a_precise_scan_frees():
    """keep's object is referenced only by a dead stack slot. Injected in keep's own loop, keep is the innermost
    frame and the runtime scans it conservatively: the object survives the cycle. Injected in spin, keep's frame
    is scanned precisely, with the stack map of its call to spin, where that slot is dead: the cycle frees it."""
    res = gobuild.build(GCREAL)
    img = elfimage.load(str(res.binary))
    sw = gsweep.RealSweep(img, process.Options(argv=["prog"], env=[f"GODEBUG={realgc.GODEBUG}"]), "keep", gc="scan",
                          source_path=res.source_path)
    keep_line = line_of("s += i*i ^ (s >> 3)", "func keep")
    sw.reference(10**8)

    def kind(pc):
        insn = sw.prog.insn_at(pc)
        line = int(insn.where.rsplit(":", 1)[1]) if insn else 0
        fn = img.func_at(pc)[0]
        return "keep" if (fn, line) == ("main.keep", keep_line) else "spin" if fn == "main.spin" else None
    listener, _, end = sw.chain(range(0, 1 << 62), {})            # a cycle at every injection, until keep returns
    assert end.exit_code == 0
    cycle_at = {sc.boundary: sc for sc in sw.gc.scans}
    points = {}
    for pt in listener.points:
        if pt.event.outcome == "injected" and kind(pt.pc) is not None:
            points.setdefault(kind(pt.pc), []).append(pt.boundary)
    assert set(points) == {"keep", "spin"} and max(points["keep"]) < min(points["spin"])
    addr = sw.p.read_u64(img.symbol("main.keepAddr"))
    for k in points["keep"]:                                        # keep innermost: its stale slot is seen
        assert ("main.keep", "conservative") in cycle_at[k].frames and cycle_at[k].async_safe_point
    first_spin = cycle_at[points["spin"][0]]
    assert ("main.keep", "precise") in first_spin.frames and first_spin.async_safe_point
    freed = sw.gc.freed.get(addr) or next(u.obj for u in sw.gc.uaf if u.obj.addr == addr)
    assert freed.boundary == points["spin"][0]       # survived every cycle in keep's loop, freed by the first in spin
    # The precise scan at that cycle used keep's stack map at its call to spin: the slot holding the object
    # (the one keep spilled it to across its calls) is not among the live pointer slots there.
    f = sw.prog.binary.func_named("main.keep")
    call_spin = next(i for i in sw.prog.get_func("main.keep").insns if i.mnemonic == "call"
                     and img.func_at(int(i.op_str, 16))[0] == "main.spin")
    live = sw.prog.binary.live_pointer_slots(f, call_spin.addr + call_spin.size)
    spill = next(int(i.op_str.split("+ ")[1].split("]")[0], 16) for i in sw.prog.get_func("main.keep").insns
                 if i.mnemonic == "mov" and i.op_str.startswith("qword ptr [rsp + ") and i.op_str.endswith(", rax"))
    assert spill not in live


def test_a_chain_after_one_that_changed_the_address_space_starts_from_the_snapshot_without_a_rebuild():
    """A --gc chain maps and unmaps memory in the engine (the heap grows, spans are released). The next chain
    restores the snapshot anyway (snapshot.py puts the engine's regions back onto the blocks' host memory):
    the same process, the same regions as when the snapshot was taken, and the same chain result."""
    from emu.linux import snapshot
    res = gobuild.build(GCREAL)
    img = elfimage.load(str(res.binary))
    sw = gsweep.RealSweep(img, process.Options(argv=["prog"], env=[f"GODEBUG={realgc.GODEBUG}"]), "spin",
                          regs={"RAX": 40}, gc="scan", source_path=res.source_path)
    sw.reference(10**8)
    p, regions = sw.p, sorted(sw.snap.regions)
    got = []
    for _ in range(2):
        listener, reached, end = sw.chain(range(0, 12), {})
        got.append((reached, sw.gc.cycles, end.exit_code, end.stdout, [pt.pc for pt in listener.points]))
        assert sw.p.mem.engine_changes != sw.snap.engine_changes       # the chain did change the engine's map
    assert got[0] == got[1] and got[0][1] == 12 and sw.rebuilt == 0 and sw.p is p
    assert snapshot.restorable(p, sw.snap)
    snapshot.restore(p, sw.snap)
    assert sorted(p.uc.mem_regions()) == regions and p.mem.engine_changes == sw.snap.engine_changes


@pytest.mark.parametrize("insn, rax, over", [
    ("movdqu xmm1, xmmword ptr [rax]", 0x2000 - 12, True),   # memhash's aes0to15: 16 bytes from a 4-byte key
    ("movdqu xmm1, xmmword ptr [rax]", 0x2000 + 8, True),    # a block that runs past the object's end
    ("movdqu xmm1, xmmword ptr [rax]", 0x2000, False),       # the whole operand inside the freed object: a use
    ("mov rbx, qword ptr [rax]", 0x2008, False),
    ("mov rbx, qword ptr [rax]", 0x2000 - 8, False),         # does not touch it at all: not an over-read of it
])
def test_a_vector_load_that_only_runs_into_a_freed_object_is_not_a_use(insn, rax, over):
    """freeduse.over_read: a load whose operand starts or ends outside the freed 16-byte object at 0x2000 read its
    bytes only in passing (jsonMarshal under --gc was a false use-after-free through memHashAES's over-read)."""
    from keystone import KS_ARCH_X86, KS_MODE_64, Ks
    from unicorn import UC_ARCH_X86, UC_MODE_64, Uc
    from unicorn import x86_const as X
    code = bytes(Ks(KS_ARCH_X86, KS_MODE_64).asm(insn, 0x1000)[0])
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(0x1000, 0x2000)
    uc.mem_write(0x1000, code)
    uc.reg_write(X.UC_X86_REG_RIP, 0x1000)
    uc.reg_write(X.UC_X86_REG_RAX, rax)
    from emu.goruntime import freeduse
    assert freeduse.over_read(uc, 0x2000, 16) is over
