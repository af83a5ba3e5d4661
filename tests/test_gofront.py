"""Real Go programs (emu/front/gofront.py): compiled functions swept with the compiler's own tables, the
binary's own runtime.asyncPreempt, precise GC maps, and agreement with the compiler's -S listing."""
from __future__ import annotations

import io
import json

import pytest
from conftest import ASM
from golisting import parse_listing

from emu import cli
from emu.front import gofront
from emu.core import gostructs
from emu.drive import loader
from emu.core.errors import EmuError
from emu.drive.sweeper import sweep

GO = "tests/go"


def run_cli(*argv) -> tuple[int, str]:
    out = io.StringIO()
    return cli.main(list(argv), out), out.getvalue()


@pytest.fixture(scope="module")
def corpus_prog():
    return loader.load_program(f"{GO}/corpus")


def test_disasm_json_unsafe_points_and_verdicts_agree_with_the_compiler_listing(go_corpus):
    listed = {k: v[0] for k, v in parse_listing(go_corpus.listing).items()}
    code, text = run_cli("disasm", f"{GO}/corpus", "--json")
    assert code == 0
    funcs = {f["name"]: f for f in json.loads(text)["functions"]}
    checked = 0
    for name, lf in listed.items():
        if name not in funcs:      # listed but not linked (inlined everywhere, dead)
            continue
        rows = {r["offset"]: r for r in funcs[name]["instructions"]}
        real = [i for i in lf.insns if i.off in rows]
        assert {i.off for i in real} == set(rows), name            # same instruction starts
        for ins in real:
            r = rows[ins.off]
            want = ins.pcdata.get(0, -1)
            assert r["unsafe"] == want, (name, hex(ins.off))
            if want == gostructs.UNSAFE_POINT_UNSAFE:
                assert (r["verdict"], r["reason"]) == ("refuse", "unsafe-point"), (name, hex(ins.off))
            elif r["inline"] and r["inline"].startswith("runtime."):
                assert (r["verdict"], r["reason"]) == ("refuse", "runtime-func"), (name, hex(ins.off))
            else:
                assert r["verdict"] == "inject", (name, hex(ins.off), r)
            checked += 1
    assert checked > 300 and "main.buildList" in funcs and "main.numCPUs" in funcs


SWEEPS = [("main.sumsq", {"RAX": 40}), ("main.buildList", {"RAX": 6}), ("main.honestList", {"RAX": 6}),
          ("main.nosplitAdd", {"RAX": 3, "RBX": 4}), ("main.bigFrame", {"RAX": 5}),
          ("main.numCPUs", {"RAX": 4}), ("main.inlineCaller", {"RAX": 3, "RBX": 5}), ("main.makeBig", {}),
          ("main.hideXor", {"RAX": 5})]


@pytest.mark.parametrize("func, registers", SWEEPS, ids=[s[0] for s in SWEEPS])
def test_compiled_functions_survive_the_real_stub_at_every_boundary(corpus_prog, func, registers):
    world = loader.build_world(corpus_prog, func, None, None, 1, registers)
    assert world.machine.stub.funcs[0].goname == "runtime.asyncPreempt"
    assert world.headroom == 264                     # Go 1.27.3's asyncPreemptStack, from the binary
    res = sweep(world, func, 1, 3000)
    assert res.ok, res.violations[:2]
    assert res.injected > 0 or func == "main.nosplitAdd"
    f = corpus_prog.get_func(func)
    for pc, ps in res.per_pc.items():
        if not f.start <= pc < f.end:
            continue                      # runtime code the function calls: refused by Go's rules too
        insn = corpus_prog.insn_at(pc)
        for reason in ps.verdicts:
            if reason == "safe":
                assert not insn.unsafe, hex(pc)
            elif reason == "unsafe-point":
                assert insn.unsafe, hex(pc)
            else:
                assert reason == "runtime-func" and insn.inline.startswith("runtime."), (hex(pc), reason)


def test_the_atomic_loop_works_on_a_global_of_the_binary(corpus_prog):
    world = loader.build_world(corpus_prog, "main.atomicOr", None, None, 1, {"RAX": "main.counter", "RBX": 5})
    res = sweep(world, "main.atomicOr", 1, 3000)
    assert res.ok and res.injected > 0
    assert res.reference.final_memory        # the binary's writable sections are compared after the run


def test_the_real_stub_is_the_binarys_bytes(corpus_prog):
    world = loader.build_world(corpus_prog, "main.sumsq", None, None, 1, {"RAX": 3})
    stub = world.machine.stub.funcs[0]
    assert world.machine.read(stub.start, stub.end - stub.start) == corpus_prog.binary.read(stub.start,
                                                                                           stub.end - stub.start)
    assert stub.max_sp_delta == 128 and stub.asm


def test_generated_stub_instead_of_the_real_one():
    code, text = run_cli("sweep", f"{GO}/corpus", "--func", "sumsq", "--reg", "RAX=20", "--stub", "generated")
    assert code == 0 and "preempt_amd64_go127.s (loaded over runtime.asyncPreempt)  real program" in text
    code, text = run_cli("sweep", f"{GO}/corpus", "--func", "sumsq", "--reg", "RAX=20")
    assert code == 0 and "runtime.asyncPreempt from the binary (go1.27.3, real)  real program" in text


def test_go_syntax_assembly_is_refused_as_an_asm_function():
    code, text = run_cli("sweep", f"{GO}/asmpkg", "--func", "callSum", "--reg", "RAX=10", "--json")
    d = json.loads(text)
    assert code == 0 and d["engine"] == "real-program" and d["results"] == {"~r0": str(sum(range(10)) + 1)}
    assert d["refused"].get("asm-func", 0) > 40
    code, text = run_cli("sweep", f"{GO}/asmpkg", "--func", "callSum", "--reg", "RAX=10", "--json", "--stub", "generated")
    d = json.loads(text)                                      # preemu's stub in the binary: the same verdicts
    assert code == 0 and d["results"] == {"~r0": str(sum(range(10)) + 1)} and d["refused"].get("asm-func", 0) > 40


def test_the_real_gc_keeps_what_hidexor_hides_in_its_innermost_frame():
    """hideXor keeps its only pointer XOR-masked across a loop in its own frame. preemu's model GC called that a
    use-after-free; the runtime's own collector scans the innermost frame conservatively and finds a stale
    copy of the pointer there, so nothing is freed: the real program is right (tests/test_realgc.py has the
    case where a callee runs the loop)."""
    code, text = run_cli("sweep", f"{GO}/corpus", "--func", "hideXor", "--reg", "RAX=20", "--gc=scan", "--json")
    d = json.loads(text)
    assert code == 0 and d["violation_count"] == 0
    assert d["gc"]["cycles"] >= d["gc"]["injections"] == d["gc"]["scans_at_injection"] > 100


def test_gc_keeps_an_honest_list_alive():
    code, text = run_cli("sweep", f"{GO}/corpus", "--func", "honestList", "--reg", "RAX=6", "--gc=scan", "--json")
    d = json.loads(text)
    assert code == 0 and d["violation_count"] == 0 and d["gc"]["uses_after_free"] == 0


def test_precise_heap_scan_follows_the_type_bitmap(corpus_prog):
    """Objects of a Go program carry their type's pointer words: a Node (next, name, val) has words 0, 1."""
    world = loader.build_world(corpus_prog, "honestList", None, None, 1, {"RAX": 3})
    ref_objs = []
    orig = world.heap.alloc
    world.heap.alloc = lambda size, words=None: ref_objs.append((size, words)) or orig(size, words)
    sweep(world, "main.honestList", 1, 5)
    assert ref_objs and all(words == (0, 1) for size, words in ref_objs)


def test_check_stub_on_a_go_program_checks_its_runtime_asyncpreempt():
    """Over the .s corpus in the go1.27 model world, and moved into the real-program corpus (go: rows)."""
    code, text = run_cli("check-stub", f"{GO}/corpus", "--max-points", "40")
    assert code == 0, text
    assert "go1.27 world" in text and "PASS" in text
    rows = [ln.split() for ln in text.splitlines() if ln.strip().startswith("go:") and "rows:" not in ln]
    assert [r[0] for r in rows] == ["go:spin", "go:floats", "go:compare", "go:calls", "go:walk"]
    assert all(int(r[3].replace(",", "")) > 0 and r[5] == "0" for r in rows)        # injected, no violation


def test_a_stub_without_popfq_fails_the_real_program_corpus_with_the_real_consequence():
    from emu import api
    rep = api.check_stub("tests/data/stub_no_pushfq.s", layout="go1.27", loops=["go:compare"], max_points=200)
    assert not rep.ok and [r.scenario for r in rep.results] == ["go:compare"]
    kinds = {(v.kind, v.what) for v in rep.violations}
    assert ("flags", "RFLAGS") in kinds and ("final-state", "result ~r0") in kinds     # the comparison goes wrong


def test_the_real_program_loops_need_the_go127_layout():
    from emu import api
    assert not any(n.startswith("go:") for n in api.corpus_loops("go1.14"))
    with pytest.raises(Exception, match="use the go1.27 layout"):
        api.check_stub("asm/preempt_amd64_go114.s", layout="go1.14", loops=["go:spin"])


def test_preempt_episode_on_compiled_code():
    code, text = run_cli("preempt", f"{GO}/corpus", "--func", "buildList", "--reg", "RAX=5",
                         "--at", "main.buildList+0x4")
    assert code == 0
    words = " ".join(text.split())                             # the episode's lines wrap at 120 columns
    assert "refused (unsafe-point" in words and "preempted asynchronously" in words


@pytest.mark.parametrize("argv, message", [
    (["sweep", f"{GO}/corpus", "--func", "nosuch", "--stub", "generated"], "--func 'nosuch': no such function"),
    (["sweep", f"{GO}/corpus", "--func", "nosuch"], "--func 'nosuch': no such function in the program"),
    (["sweep", f"{GO}/corpus", "--func", "sumsq", "--layout", "go1.14"], "--layout: preemu's model world only"),
    (["sweep", f"{GO}/corpus", "--func", "sumsq", "--force-unsafe", "--nested-signals"],
     "--force-unsafe, --nested-signals: preemu's model world only"),
    (["sweep", f"{GO}/corpus", "--func", "sumsq", "--gc", "--gc-scanner", "skip-save-area"],
     "--gc-scanner: preemu's model world only"),
    (["sweep", f"{GO}/broken", "--func", "main.f"], "main.go:"),
])
def test_bad_go_input_is_exit_2_with_one_line(capsys, argv, message):
    code, _ = run_cli(*argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_struct_tables_from_dwarf_agree_with_the_typed_go1273_table(go_corpus):
    """Issue #9 item 3: a Go binary's g/m/p come from its DWARF; for Go 1.27.3 they equal the typed
    table the Intel `.s` input uses."""
    t = gofront.struct_tables(go_corpus.prog)
    typed = gostructs.typed_tables()
    assert (t.g, t.m, t.p) == (typed.g, typed.m, typed.p)
    assert "DWARF" in t.source and "equal to Go 1.27.3" in t.source


def test_a_go_world_writes_g_m_p_where_the_binary_says_not_where_the_typed_table_does(go_corpus, monkeypatch):
    """With the typed table wrong (g.preempt at 176), a Go program still runs with the DWARF offset (177),
    and the report says the two differ; Intel `.s` input keeps the typed table."""
    bad = dict(gostructs.G_FIELDS)
    bad["preempt"] = gostructs.Field("preempt", 176, 1)
    monkeypatch.setattr(gostructs, "G_FIELDS", bad)
    prog = gofront.load(go_corpus.root / "corpus")
    assert prog.structs.g["preempt"].offset == 177 and "differ" in prog.structs.source
    w = loader.build_world(prog, "main.sumsq", registers={"RAX": 3})
    w.preempt_one()
    assert w.machine.read(w.gp + 177, 1) == b"\x01" and w.machine.read(w.gp + 176, 1) == b"\x00"
    assert w.sched_state().g_preempt
    asm = loader.build_world(loader.load_program(ASM / "sum_loop.s"), "sum_loop", registers={"RCX": 2})
    assert asm.structs.g["preempt"].offset == 176


def test_a_field_the_binary_lacks_is_a_clear_error(go_corpus, monkeypatch):
    bad = dict(gostructs.G_FIELDS)
    bad["noSuchField"] = gostructs.Field("noSuchField", 500, 8)
    monkeypatch.setattr(gostructs, "G_FIELDS", bad)
    with pytest.raises(EmuError, match=r"runtime.g has no field noSuchField"):
        gofront.struct_tables(go_corpus.prog)


@pytest.mark.parametrize("name, user", [
    ("main.f", True), ("main.(*T).m", True), ("github.com/a/b.F", True), ("example.com/m/lib.(*T).M", True),
    ("sync/atomic.StorePointer", False), ("runtime.f", False), ("io/fs.init", False), ("strings.(*Builder).Write", False),
])
def test_user_functions_are_main_or_a_module_path_with_a_dot(name, user):
    assert gofront._is_user(name) is user
