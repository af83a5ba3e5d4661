"""Where preemu follows the Go runtime it claims to model (issue 12): the stub is runtime code whatever
its file says, qualified labels are Go names, runtime packages are unsafe everywhere, and the
go1.14 layout means the Go 1.14 runtime's rules."""
import dataclasses
import re

import pytest
from conftest import FakeSigContext, assemble, sweep_text

from emu.drive import checkstub, loader
from emu.model import gmp
from emu.core import structref, stubgen
from emu.core import gostructs as gs
from emu.check.inject import do_sig_preempt
from emu.check.safepoint import GO114, GO127, SchedState, is_async_safe_point, package_of, rules_for

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
    from emu.check.safepoint import can_preempt_m
    no_curg = dataclasses.replace(OK, m_curg=0)
    assert can_preempt_m(dataclasses.replace(no_curg, rules=GO127)) == "g-syscall"
    assert can_preempt_m(dataclasses.replace(no_curg, rules=GO114)) is None


def test_go114_has_no_signal_pending(tmp_path):
    prog = assemble(LOOP.format(name="spin"))
    for layout, resent in (("go1.27", False), ("go1.14", True)):
        w = loader.build_world(prog, "spin", layout, None, 1, {"RCX": 3})
        assert w.rules is rules_for(layout)
        assert gmp.preempt_m(w.m_ref, w.p_ref, w.rules)             # first request: signalled
        assert gmp.preempt_m(w.m_ref, w.p_ref, w.rules) == resent   # 1.27 coalesces; 1.14 sends again
        gmp.ack_sigurg(w.m_ref, w.rules)
        assert structref.read_field(w.machine, w.mp, gs.M_FIELDS, "signalPending") == 0


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
    out = io.StringIO()
    assert cli.main(["preempt", "asm/call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--at", "5"], out) == 0
    assert "runtime Go 1.14" in out.getvalue().splitlines()[0]


# --- 7. the facts ship with the repository --------------------------------------------------------
def test_no_project_file_points_outside_the_repository_and_cites_are_public():
    from conftest import ROOT

    from emu.drive import scenario
    files = [p for pat in ("emu/*.py", "emu/*.md", "tests/*.py", "asm/*.s", "asm/*.md", "scenarios/*.toml",
                           "scenarios/*.md", "README.md", "docs/**/*.md", "bench/*.py") for p in ROOT.glob(pat)]
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
    from emu.model.gcworld import would_shrink
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
    from emu.drive.sweeper import sweep
    big = SPIN.replace("    mov rbp, rsp\n", "    mov rbp, rsp\n    sub rsp, 1800\n").replace("    pop rbp\n",
                                                                                            "    add rsp, 1800\n    pop rbp\n")
    prog, w = _gc_world(big, "spin", RCX=3)
    res = sweep(w, "spin", 1, 100)
    assert res.ok and res.gc.cycles > 0
    assert w.shrink_deferred == res.gc.cycles
    assert structref.read_field(w.machine, w.gp, gs.G_FIELDS, "preemptShrink") == 1


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
    from emu.drive.sweeper import sweep
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
    from emu.drive.sweeper import sweep
    prog, w = _gc_world(TYPED.format(ptrs=ptrs), "keep", RCX=4)
    res = sweep(w, "keep", 1, 1000)
    assert res.gc.cycles > 0
    uaf = [v for v in res.violations if v.kind == "use-after-free"]
    assert (not uaf) == survives
    assert res.ok == survives


def test_type_directive_errors_name_the_line():
    from emu.core.errors import AsmError
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
    from emu.check.safepoint import is_async_safe_point
    st = w.sched_state()
    assert is_async_safe_point(w.machine.all, st, w.machine.pc, w.machine.reg("RSP"), w.headroom).reason == "m-preemptoff"


# --- 4. the scheduler -----------------------------------------------------------------------------
def _sched(gomaxprocs=2, n=4, lay="go1.14"):
    from emu.core import layout
    from emu.model import sched
    from conftest import ASM
    prog = loader.load_program(ASM / "starvation.s")
    specs = [sched.GoSpec(f"g{i}", "spin") for i in range(n)]
    s = sched.Scheduler(prog, loader.load_stub(lay), layout.get_layout(lay), specs, gomaxprocs)
    for p in s.ps:                                   # empty every queue; tests place the Gs themselves
        p.runq.clear()
        p.runnext = None
    return s


def test_runqsteal_takes_the_older_half_from_the_head_and_runs_the_last_one_taken():
    s = _sched()
    p, q = s.ps
    a, b, c, d = s.gs
    q.runq.extend([a, b, c, d])
    g, inherit = s._find_runnable(p.m, 0)
    assert (g, inherit) == (b, False)                # runqgrab took a, b (n - n/2); runqsteal runs b
    assert list(p.runq) == [a] and list(q.runq) == [c, d]


def test_runnext_is_stolen_only_when_the_queue_is_empty_on_the_last_round():
    s = _sched()
    p, q = s.ps
    q.runnext = s.gs[0]
    assert s._find_runnable(p.m, 0) == (s.gs[0], False) and q.runnext is None
    q.runq.append(s.gs[1])
    q.runnext = s.gs[2]
    assert s._find_runnable(p.m, 0) == (s.gs[1], False) and q.runnext is s.gs[2]


def test_sysmon_retakes_first_after_its_first_20us_sleep():
    s = _sched(1, 1)
    assert s.sysmon.next_ns == 20_000 and s.sysmon.delay_us == 20


def test_retake_keeps_the_schedtick_bookkeeping_of_a_p_without_a_g():
    s = _sched(1, 1)
    p = s.ps[0]
    p.schedtick = 5
    s.sysmon.tick(1_000_000)                             # no G on the P: the tick is still recorded
    assert (p.sysmon_tick, p.sysmon_when) == (5, 1_000_000)


def test_suspendg_does_not_set_pp_preempt_and_resends_per_acknowledgement_at_most_every_5us():
    s = _sched(1, 1)
    m, g = s.ms[0], s.gs[0]
    s._execute(m, g, False, 0)
    s.suspender.cycle(0)
    assert structref.read_field(s.machine, g.addr, gs.G_FIELDS, "preempt") == 1
    assert s.machine.read(m.p.addr + gs.P_FIELDS["preempt"].offset, 1) == b"\0"
    assert s.signals_sent == 1
    s.suspender.resend(g, 10_000)                     # no acknowledgement yet: no new signal
    assert s.signals_sent == 1
    gmp.ack_sigurg(m.ref, s.rules)                   # the M acknowledged (preemptGen moved)
    s.suspender.resend(g, 10_000)
    assert s.signals_sent == 2
    gmp.ack_sigurg(m.ref, s.rules)
    s.suspender.resend(g, 12_000)                     # acknowledged, but within 5 us of the last send:
    assert s.signals_sent == 2                       # the pair is consumed unsent (preempt.go:211-232)
    s.suspender.resend(g, 15_000)
    assert s.signals_sent == 2                       # ... and is not sent later either (N2)
    gmp.ack_sigurg(m.ref, s.rules)                   # a later acknowledgement: a new pair
    s.suspender.resend(g, 16_000)
    assert s.signals_sent == 3


def test_resumeg_readies_the_g_on_the_gc_workers_p():
    s = _sched(2, 1)
    m0, m1 = s.ms
    g = s.gs[0]
    s._execute(m0, g, False, 0)
    s.suspender.cycle(0)
    s.suspender.preempt_park(m0, g, 1000)
    assert s.ps[1].runnext is g and s.ps[0].runnext is None


def test_a_sigurg_landing_on_g0_fails_want_async_preempt():
    s = _sched(1, 1)
    s.sysmon.deliver(s.ms[0], 0)                           # no current G: the M runs g0, which is _Gidle
    assert s.refused == {"no-request": 1}


def test_async_safe_point_is_set_from_the_trap_until_after_xreg_restore():
    prog = assemble(LOOP.format(name="spin"))
    seen = []
    for lay in ("go1.14", "go1.27"):
        w = loader.build_world(prog, "spin", lay, None, 1, {"RCX": 50})
        asp = w.gp + gs.G_FIELDS["asyncSafePoint"].offset
        w.on_preempted = lambda: seen.append(w.machine.read(asp, 1)[0])
        from emu.drive.sweeper import sweep
        res = sweep(w, "spin", 1, 20)
        assert res.ok and res.injected and w.machine.read(asp, 1)[0] == 0
    assert seen and set(seen) == {1}


def test_g0_stays_gidle_so_a_signal_on_it_is_no_request():
    from emu.model.gmp import read_sched_state
    prog = assemble(LOOP.format(name="spin"))
    w = loader.build_world(prog, "spin", "go1.27", None, 1, {"RCX": 3})
    w.preempt_one()
    st = read_sched_state(w.machine.struct(w.g0, gs.G_FIELDS), w.m_ref, w.p_ref, w.rules)   # lands while g0 runs
    assert st.g_status == gs.G_IDLE
    c = FakeSigContext(HI - 0x100)
    assert do_sig_preempt(c, w.machine.all, st, w.machine.pc, c.sp, w.headroom, 0x500000, lambda: None).reason == \
        "no-request"
    s = _sched(1, 1)
    assert structref.read_field(s.machine, s.ms[0].g0, gs.G_FIELDS, "atomicstatus") == gs.G_IDLE


def test_go114_preempts_on_a_stray_sigurg_with_asyncpreemptoff():
    # golang/go#38531: Go 1.14's sighandler ran doSigPreempt even with asyncpreemptoff=1
    from conftest import ASM
    prog = loader.load_program(ASM / "sum_loop.s")
    res = {}
    from emu.drive.sweeper import sweep
    for lay in ("go1.14", "go1.27"):
        w = loader.build_world(prog, "sum_loop", lay, None, 1, {"RCX": 5})
        res[lay] = sweep(w, "sum_loop", 1, 1000, async_preemption=False)
    assert res["go1.27"].injected == 0 and set(res["go1.27"].refused) == {"asyncpreemptoff"}
    assert res["go1.14"].injected == res["go1.14"].points > 0 and res["go1.14"].ok


def test_preempt_says_its_resend_cadence_is_compressed_unless_it_is_sysmons():
    import io

    from emu import cli
    argv = ["preempt", "asm/call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--at", "square_add",
            "--signal-delay", "1"]
    out = io.StringIO()
    assert cli.main(argv, out) == 0
    words = " ".join(out.getvalue().split())          # the event's text is wrapped at 120 columns
    assert "re-sends the signal every 50 instructions (compressed: sysmon's tick is 20 us-10 ms" in words
    out = io.StringIO()
    assert cli.main(argv + ["--retry", "20000"], out) == 0
    assert "every 20,000 instructions (sysmon's 20 us tick at 1 ns per instruction)" in " ".join(out.getvalue().split())


def test_the_go127_stub_has_the_real_binarys_offsets_and_dead_avx_blocks():
    # runtime.asyncPreempt.abi0 of Go 1.27.3 (objdump, emu/FACTS.md §3.2): JMP over the AVX blocks at
    # +0xda, CALL asyncPreempt2 at +0x286 (return address +0x28b), JMP restoreGPs at +0x30e, the GPR
    # restores from +0x4ba, RET at +0x505, size 0x506.
    stub = loader.load_stub("go1.27")
    f = stub.get_func("asyncPreempt")
    at = {i.addr - f.start: i for i in f.insns}
    assert at[0xda].mnemonic == "jmp" and int(at[0xda].op_str, 0) - f.start == 0x286
    assert at[0x286].mnemonic == "call" and at[0x286].addr + at[0x286].size - f.start == 0x28b
    assert at[0x30e].mnemonic == "jmp" and int(at[0x30e].op_str, 0) - f.start == 0x4ba
    assert at[0x505].mnemonic == "ret" and f.end - f.start == 0x506
    assert f.max_sp_delta == 128
    dead = [i for i in f.insns if i.source.startswith(".byte")]
    assert len(dead) == 2 * 40
    assert {i.mnemonic for i in dead} == {"vmovdqu64", "kmovq"}
    assert "zmm31, zmmword ptr [rax + 0x7c0]" in {i.op_str for i in dead}       # Z31 at 1984
    assert "qword ptr [rax + 0x838], k7" in {i.op_str for i in dead}            # K7 at 2104


def test_the_interrupted_frames_argument_area_is_scanned_conservatively():
    # scanframeworker (mgcmark.go:1110-1115): [argp, argp+argBytes) of the interrupted frame; the only
    # pointer to the object sits in the interrupted function's argument spill area
    from types import SimpleNamespace

    from emu.model import gcscan
    from emu.model.heap import Heap
    from emu.model.unwind import Frame
    heap = Heap()
    obj = heap.alloc(32)
    sp = 0x10000
    mem = {sp + 24 + 8 + 8: obj}                      # frame of 24 bytes, return address, then arg word 1
    read = lambda a, n: b"".join(mem.get(a + i, 0).to_bytes(8, "little") for i in range(0, n, 8))
    binary = SimpleNamespace(func_for=lambda pc: SimpleNamespace(args=16))
    prog = SimpleNamespace(binary=binary, insn_at=lambda pc: None)
    frames = [Frame("f", 0x400000, sp, 24, "interrupted", None)]
    res = gcscan.scan(read, heap, prog, frames, 0x8000, 0x20000, [], None)
    assert obj in res.marked and obj in res.conservative_only
    res = gcscan.scan(read, heap, SimpleNamespace(insn_at=lambda pc: None), frames, 0x8000, 0x20000, [], None)
    assert obj not in res.marked                       # a .s function declares no arguments


# --- #12 item 5: fresh goroutine stacks are Go's 2 KiB fixedStack unless a scenario asks for more -------
def test_a_fresh_goroutine_stack_is_fixedstack_with_a_guard_page_below_it():
    from unicorn import UcError
    prog = assemble(LOOP.format(name="spin"))
    w = loader.build_world(prog, "spin", "go1.27", None, 1, {"RCX": 3})
    assert w.stack_hi - w.stack_lo == gs.FIXED_STACK == 2048            # runtime/stack.go:78 fixedStack
    assert structref.read_field(w.machine, w.gp, gs.G_FIELDS, "stack.lo") == w.stack_lo
    assert w.stack_lo % 4096 == 0
    w.machine.write(w.stack_lo, b"\x01")                                 # the stack itself is mapped
    with pytest.raises(UcError):
        w.machine.write(w.stack_lo - 8, bytes(8))                        # the page below is the guard page
    s = _sched(1, 2)
    assert {g.stack_hi - g.stack_lo for g in s.gs} == {2048}


def test_a_scenario_may_ask_for_a_bigger_first_stack(tmp_path):
    from conftest import ASM
    from emu.drive import scenario
    from emu.core.errors import ScenarioError
    base = f'name = "t"\nasm = "{ASM / "sum_loop.s"}"\nentry = "sum_loop"\n[registers]\nRCX = 3\n'
    (tmp_path / "big.toml").write_text('stack_size = 8192\n' + base)
    sc = scenario.load(tmp_path / "big.toml")
    _, world, res, checks = scenario.run(sc)
    assert world.stack_hi - world.stack_lo == 8192 and res.ok
    for bad in (1000, 3000, 1024):
        (tmp_path / "bad.toml").write_text(f'stack_size = {bad}\n' + base)
        with pytest.raises(ScenarioError, match=r"stack_size.*power of two from 2048"):
            scenario.load(tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text('stack_size = "big"\n' + base)
    with pytest.raises(ScenarioError, match=r"stack_size: must be an integer \(got str 'big'\)"):
        scenario.load(tmp_path / "bad.toml")


# --- N10 (issue 23): the compiler leaves obj6.go's prologue and post-morestack PCs safe ------------
def _as_dot_s(f) -> str:
    """A compiled function of a real binary written back as preemu `.s`: branches inside it become
    local labels, the JMP back to the entry the function's own label, calls and other far targets
    labels of empty stand-in functions; the goname is the binary's."""
    offs = {i.addr for i in f.insns}
    lines, far = [f";@goname {f.goname}", "fn:"], {}
    for i in f.insns:
        if i.addr != f.start and i.addr in offs:
            lines.append(f".L{i.addr:x}:")
        ops = i.op_str
        if i.mnemonic.startswith(("j", "call")) and re.fullmatch(r"0x[0-9a-f]+", ops):
            t = int(ops, 16)
            ops = "fn" if t == f.start else f".L{t:x}" if t in offs else far.setdefault(t, f"far{len(far)}")
        lines.append(f"    {i.mnemonic} {ops}")
    for name in far.values():
        lines += [name + ":", "    ret"]
    return "\n".join(lines) + "\n"


def test_runtime_package_functions_keep_the_compilers_safe_prologue_and_morestack_pcs(go_corpus):
    """A Go function of a runtime package (internal/cpu, internal/bytealg, runtime ...) written as `.s`
    gets at every PC the verdict the compiler's own PCDATA gives it in the binary: the stack-check CMP,
    the frame setup and the unspill+JMP after morestack_noctxt are safe (then refused by the name rule in
    runtime.*, not by check 5), every other PC unsafe (obj6.go:975-994,1073,1113-1121; plive.go:494-513).
    Before N10 was fixed every PC of such a function was refused as unsafe-point.

    The one difference allowed: defframe's preamble (ssagen/ssa.go:7552-7600: partially live register
    arguments spilled, ambiguously live slots zeroed) and the NOPs of inline marks before the first statement
    also stay safe in the binary, and a `.s` file cannot tell them from compiled code, so preemu refuses
    there: stores to the frame and NOPs right after the frame setup."""
    from emu.front import gofront
    from emu.check.safepoint import compiled_as_runtime
    b = go_corpus.binary()
    exact = preamble = safe_seen = 0
    st = dataclasses.replace(OK, rules=GO127)
    for gf in b.funcs:
        if gf.is_asm or not GO127.is_runtime_package(gf.name) or not 8 <= gf.end - gf.entry <= 200:
            continue
        real = gofront.build_func(b, gf)
        if real.asm or not real.insns[0].text.startswith(("cmp rsp, qword ptr [r14 + 0x10]", "lea r12")):
            continue
        try:
            prog = assemble(_as_dot_s(real))
        except Exception:                           # an instruction Keystone spells differently
            continue
        mine = prog.get_func("fn")
        assert [i.mnemonic for i in mine.insns] == [i.mnemonic for i in real.insns]
        assert compiled_as_runtime(mine, GO127)
        want = ["unsafe-point" if i.unsafe else "runtime-func" if gf.name.startswith(GO127.name_prefixes)
                else "safe" for i in real.insns]
        got = [is_async_safe_point(prog, st, i.addr, HI - 0x100, 472).reason for i in mine.insns]
        differ = [k for k, (w, g) in enumerate(zip(want, got)) if w != g]
        setup = max(k for k, i in enumerate(mine.insns) if i.addr in mine.obj6_pcs and k < 6) + 1
        assert all(got[k] == "unsafe-point" and k - setup < 8 and real.insns[k].text.startswith(
            ("mov qword ptr [rsp", "movq qword ptr [rsp", "movups xmmword ptr [rsp", "mov dword ptr [rsp",
             "xorps", "lea rdi, [rsp", "nop"))
            for k in differ), f"{gf.name}:\n" + "\n".join(
            f"  {r.text:40} binary {w:14} .s {g}" for r, w, g in zip(real.insns, want, got) if w != g)
        exact += not differ
        preamble += bool(differ)
        safe_seen += want.count("safe")
    assert exact >= 50 and safe_seen > 0 and preamble < exact


def test_a_nosplit_function_keeps_its_safe_frame_setup():
    """//go:nosplit marks the SSA values unsafe, not obj6.go's frame setup: a real binary's nosplit main
    function is safe at PUSH RBP, MOV RBP, RSP and SUB RSP, n and unsafe from its first statement on."""
    prog = assemble(";@nosplit\nns:\n push rbp\n mov rbp, rsp\n sub rsp, 0x20\n mov rax, 1\n"
                    " add rsp, 0x20\n pop rbp\n ret\n")
    st = dataclasses.replace(OK, rules=GO127)
    got = [is_async_safe_point(prog, st, i.addr, HI - 0x100, 472).reason for i in prog.get_func("ns").insns]
    assert got == ["safe"] * 3 + ["unsafe-point"] * 4
