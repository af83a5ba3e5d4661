"""Where preemu follows the Go runtime it claims to model (issue 12): the stub is runtime code whatever
its file says, qualified labels are Go names, runtime packages are unsafe everywhere, and the
go1.14 layout means the Go 1.14 runtime's rules."""
import dataclasses
import re

import pytest
from conftest import FakeSigContext, assemble, sweep_text

from emu import checkstub, gmp, loader, stubgen
from emu import gostructs as gs
from emu.inject import do_sig_preempt
from emu.safepoint import GO114, GO127, SchedState, is_async_safe_point, package_of, rules_for

LO, HI = 0x100000, 0x102000
OK = SchedState(gp=0x800, g_status=gs.G_RUNNING, g_preempt=True, stack_lo=LO, stack_hi=HI, m_curg=0x800,
                m_p=0xA00, m_locks=0, m_mallocing=0, m_preemptoff=0, p_status=gs.P_RUNNING, p_preempt=True)


def _undirected_stub(tmp_path, layout):
    """The generated stub with every ;@ directive removed: an independently written file."""
    text = "".join(l for l in stubgen.stub_path(layout).read_text().splitlines(True) if not l.startswith(";@"))
    assert ";@" not in text
    p = tmp_path / "plain_stub.s"
    p.write_text(text)
    return p


# --- 1. the stub is runtime.asyncPreempt, whatever its file says --------------------------------
@pytest.mark.parametrize("layout", ["go1.14", "go1.27"])
def test_a_stub_file_without_directives_is_runtime_assembly(tmp_path, layout):
    stub = loader.load_stub(layout, _undirected_stub(tmp_path, layout))
    f = stub.get_func("asyncPreempt")
    assert f.asm and f.goname == "runtime.asyncPreempt"


def test_check_stub_passes_a_correct_stub_without_directives(tmp_path):
    rep = checkstub.check(_undirected_stub(tmp_path, "go1.14"), "go1.14", 60, ("nested_signal", "sum_loop"))
    assert rep.ok, [(r.scenario, r.violations[:1]) for r in rep.results if r.violations]
    nested = next(r for r in rep.results if r.scenario == "nested_signal")
    assert nested.refused.get("nested:asm-func", 0) > 0      # the second signal is refused as Go refuses it


LOOP = """{name}:
    mov eax, 0
.loop:
    add rax, rcx
    dec rcx
    jnz .loop
    ret
"""


@pytest.mark.parametrize("name,injected", [("runtime.spinloop", False), ("internal/bytealg.count", False),
                                           ("reflect.f", False), ("main.spinloop", True), ("spinloop", True)])
def test_a_qualified_label_is_that_go_name(name, injected):
    res = sweep_text(LOOP.format(name=name), name, RCX=5)
    assert res.ok
    if injected:
        assert res.injected == res.points and not res.refused
    else:
        assert res.injected == 0 and res.refused and res.points == res.boundaries


def test_qualified_labels_keep_their_names_and_can_be_called():
    prog = assemble("internal/bytealg.count:\n ret\nmain.f:\n call internal/bytealg.count\n ret\ng:\n ret\n")
    assert [f.goname for f in prog.funcs] == ["internal/bytealg.count", "main.f", "main.g"]
    call = prog.get_func("main.f").insns[0]
    assert call.mnemonic == "call" and int(call.op_str, 0) == prog.symbol("internal/bytealg.count")


# --- 2. runtime packages are unsafe everywhere --------------------------------------------------
@pytest.mark.parametrize("goname,pkg", [("runtime.add", "runtime"), ("internal/runtime/atomic.(*Uint32).Load",
                                        "internal/runtime/atomic"), ("main.f", "main"), ("reflect.Value.Int", "reflect"),
                                        ("internal/bytealg.IndexByte", "internal/bytealg")])
def test_package_of_a_go_symbol(goname, pkg):
    assert package_of(goname) == pkg


PKGS = assemble(";@goname runtime.procyield\nry:\n nop\n ret\n"
                ";@goname internal/stringslite.Index\nsl:\n nop\n ret\n"
                ";@goname internal/runtime/atomic.Or32\nira:\n nop\n ret\n"
                ";@goname runtime/internal/atomic.Or\nria:\n nop\n ret\n"
                ";@goname reflect.f\nrf:\n nop\n ret\n"
                ";@asm\n;@goname runtime.memclrNoHeapPointers\nmc:\n nop\n ret\n"
                "u:\n nop\n;@inline internal/runtime/atomic.Load\n nop\n;@inline runtime/internal/atomic.Load\n nop\n"
                ";@inline-end\n ret\n")


def _verdict(rules, pc, **change):
    st = dataclasses.replace(OK, rules=rules, **change)
    return is_async_safe_point(PKGS, st, pc, HI - 0x100, 472).reason


@pytest.mark.parametrize("func,go127,go114", [
    ("ry", "unsafe-point", "unsafe-point"),          # Go code of package runtime: every PC unsafe
    ("sl", "unsafe-point", "safe"),                  # internal/stringslite: a runtime package since Go 1.2x
    ("ira", "unsafe-point", "safe"),                 # internal/runtime/... did not exist in 1.14
    ("ria", "safe", "unsafe-point"),                 # runtime/internal/... is gone in 1.27
    ("rf", "runtime-func", "runtime-func"),          # reflect: only the name rule
    ("mc", "asm-func", "asm-func"),                  # assembly: no compiler PCDATA, refused as assembly
])
def test_runtime_packages_are_unsafe_points_in_each_version(func, go127, go114):
    pc = PKGS.symbol(func)
    assert (_verdict(GO127, pc), _verdict(GO114, pc)) == (go127, go114)


def test_inlined_runtime_code_keeps_runtime_func_with_each_versions_prefix():
    u = PKGS.get_func("u").insns
    assert [_verdict(GO127, i.addr) for i in u[:3]] == ["safe", "runtime-func", "safe"]
    assert [_verdict(GO114, i.addr) for i in u[:3]] == ["safe", "safe", "runtime-func"]


# --- 3. a version-aware oracle ------------------------------------------------------------------
def test_go114_can_preempt_m_has_four_terms():
    # The curg/syscall terms of Go 1.27's canPreemptM are absent in Go 1.14 (a G other than the
    # signalled one is in a syscall: only canPreemptM sees it).
    pc = PKGS.symbol("u")
    st = dict(m_curg=0x800, g_status=gs.G_RUNNING)
    assert _verdict(GO127, pc, **st) == "safe"
    from emu.safepoint import can_preempt_m
    no_curg = dataclasses.replace(OK, m_curg=0)
    assert can_preempt_m(dataclasses.replace(no_curg, rules=GO127)) == "g-syscall"
    assert can_preempt_m(dataclasses.replace(no_curg, rules=GO114)) is None


def test_go114_has_no_signal_pending(tmp_path):
    prog = assemble(LOOP.format(name="spin"))
    for layout, resent in (("go1.27", False), ("go1.14", True)):
        w = loader.build_world(prog, "spin", layout, None, 1, {"RCX": 3})
        assert w.rules is rules_for(layout)
        assert gmp.preempt_m(w.machine, w.mp, w.pp, w.rules)             # first request: signalled
        assert gmp.preempt_m(w.machine, w.mp, w.pp, w.rules) == resent   # 1.27 coalesces; 1.14 sends again
        gmp.ack_sigurg(w.machine, w.mp, w.rules)
        assert gmp.read_field(w.machine, w.mp, gs.M_FIELDS, "signalPending") == 0


def test_the_two_layouts_refuse_different_pcs():
    text = ";@goname internal/stringslite.count\ncount:\n" + "\n".join(LOOP.splitlines()[1:]) + "\n"
    r127 = sweep_text(text, "count", "go1.27", RCX=4)
    r114 = sweep_text(text, "count", "go1.14", RCX=4)
    assert r127.ok and r114.ok
    assert r127.injected == 0 and set(r127.refused) == {"unsafe-point"}
    assert r114.injected == r114.points and not r114.refused


def test_do_sig_preempt_uses_the_states_rules():
    pc = PKGS.symbol("ria")
    for rules, ok in ((GO127, True), (GO114, False)):
        c = FakeSigContext(HI - 0x100)
        v = do_sig_preempt(c, PKGS, dataclasses.replace(OK, rules=rules), pc, c.sp, 472, 0x500000, lambda: None)
        assert v.ok == ok and bool(c.stores) == ok


def test_reports_name_the_runtime_they_modelled():
    import io

    from emu import cli
    out = io.StringIO()
    code = cli.main(["sweep", "asm/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=3", "--layout", "go1.27"], out)
    assert code == 0 and re.search(r"runtime Go 1\.27", out.getvalue())


# --- 7. the facts ship with the repository --------------------------------------------------------
def test_no_project_file_points_outside_the_repository_and_cites_are_public():
    from conftest import ROOT

    from emu import scenario
    files = [p for pat in ("emu/*.py", "emu/*.md", "tests/*.py", "asm/*.s", "asm/*.md", "scenarios/*.toml",
                           "scenarios/*.md", "README.md", "bench/*.py") for p in ROOT.glob(pat)]
    internal = re.compile(r"shared/reference|known-bugs [A-E]\d|\bfacts §|anchors §")
    assert not [p.name for p in files if p.name != "test_fidelity.py" and internal.search(p.read_text())]
    for p in sorted((ROOT / "scenarios").glob("*.toml")):
        cites = scenario.load(p).cites
        assert not cites or re.search(r"golang/go|golang/proposal|[\w-]+/[\w-]+#\d+|FACTS\.md", cites), (p.name, cites)
    assert (ROOT / "emu" / "FACTS.md").exists()


# --- 5. GC and stacks ---------------------------------------------------------------------------
def _gc_world(text, entry, stack_size=None, **regs):
    prog = assemble(text)
    w = loader.build_world(prog, entry, "go1.14", None, 1, regs, gc=True)
    return prog, w


def test_shrinkstack_counts_stack_nosplit_as_used():
    from emu.gcworld import would_shrink
    lo, hi = 0x10000, 0x12000                        # 8 KiB: shrink only if hi - sp + 800 < 2 KiB
    assert would_shrink(lo, hi, hi - 1000)
    assert not would_shrink(lo, hi, hi - 1300)      # 1300 + stackNosplit >= 2048 (stack.go:1326)
    assert not would_shrink(0x10000, 0x10800, 0x10800 - 16)   # half of 2 KiB < fixedStack


SPIN = """spin:
    push rbp
    mov rbp, rsp
.loop:
    dec rcx
    jnz .loop
    pop rbp
    ret
"""


def test_preempt_shrink_is_set_whenever_the_shrink_is_unsafe():
    # the GC at an async safe point must defer the shrink even when shrinkstack would then find
    # nothing to do (mgcmark.go:944-950): here more than a quarter of the 8 KiB stack is in use
    from emu.sweep import sweep
    big = SPIN.replace("    mov rbp, rsp\n", "    mov rbp, rsp\n    sub rsp, 1800\n").replace("    pop rbp\n",
                                                                                            "    add rsp, 1800\n    pop rbp\n")
    prog, w = _gc_world(big, "spin", RCX=3)
    res = sweep(w, "spin", 1, 100)
    assert res.ok and res.gc.cycles > 0
    assert w.shrink_deferred == res.gc.cycles
    assert gmp.read_field(w.machine, w.gp, gs.G_FIELDS, "preemptShrink") == 1


def test_the_saved_bp_slot_of_the_interrupted_frame_is_not_scanned():
    # A pointer parked where Go expects the interrupted frame's saved BP (the top word of a non-empty
    # frame) is outside [sp, varp): Go does not scan it, so the object is freed and the later use
    # is a use-after-free. (Compiled Go code never keeps a pointer there.)
    text = """hold:
    mov eax, 32
    call newobject
    mov qword ptr [rax], 7
    push rax
    xor eax, eax
.loop:
    dec rcx
    jnz .loop
    pop rax
    mov rax, qword ptr [rax]
    ret
"""
    from emu.sweep import sweep
    prog, w = _gc_world(text, "hold", RCX=4)
    res = sweep(w, "hold", 1, 1000)
    assert {v.kind for v in res.violations} >= {"use-after-free"}


TYPED = """;@type node 16 {ptrs}
keep:
    lea rax, [node]
    call newobject
    mov r12, rax                    ; r12 = A (a node)
    mov eax, 16
    call newobject
    mov qword ptr [rax], 7
    mov qword ptr [r12 + 8], rax    ; A.word1 = B; then B lives only in A
    xor eax, eax
.loop:
    dec rcx
    jnz .loop
    mov rax, qword ptr [r12 + 8]
    mov rax, qword ptr [rax]
    ret
"""


@pytest.mark.parametrize("ptrs,survives", [("8", True), ("", False), ("0", False)])
def test_heap_objects_are_scanned_through_their_types_pointer_mask(ptrs, survives):
    from emu.sweep import sweep
    prog, w = _gc_world(TYPED.format(ptrs=ptrs), "keep", RCX=4)
    res = sweep(w, "keep", 1, 1000)
    assert res.gc.cycles > 0
    uaf = [v for v in res.violations if v.kind == "use-after-free"]
    assert (not uaf) == survives
    assert res.ok == survives


def test_type_directive_errors_name_the_line():
    from emu.errors import AsmError
    for bad in (";@type t\n", ";@type t 16 4\n", ";@type t 16 16\n", ";@type 9t 16\n"):
        with pytest.raises(AsmError) as e:
            assemble(bad + "f:\n ret\n")
        assert e.value.line == 1


# --- 6. details ---------------------------------------------------------------------------------
def test_m_preemptoff_is_read_as_a_string_length():
    # canPreemptM compares mp.preemptoff with "": the length word at 256 decides, not the pointer at 248
    prog = assemble(LOOP.format(name="spin"))
    w = loader.build_world(prog, "spin", "go1.27", None, 1, {"RCX": 3})
    M = gs.M_FIELDS
    assert (M["preemptoff.str"].offset, M["preemptoff.len"].offset) == (248, 256)
    w.machine.write_u64(w.mp + 248, 0x7000)            # a stale pointer with an empty string: still ""
    assert w.sched_state().m_preemptoff == 0
    w.machine.write_u64(w.mp + 256, len("gcstart"))
    assert w.sched_state().m_preemptoff == 7
    w.preempt_one()
    from emu.safepoint import is_async_safe_point
    st = w.sched_state()
    assert is_async_safe_point(w.machine.all, st, w.machine.pc, w.machine.reg("RSP"), w.headroom).reason == "m-preemptoff"
