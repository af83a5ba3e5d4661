"""Why unsafe is unsafe: each class Go refuses is refused by the oracle, and forcing the injection
produces a violation the verifiers detect (issue: safe points, item 4)."""
from conftest import ASM, sweep_file

from emu.drive import episode, loader


def _episode(file, func, at, regs, **kw):
    prog = loader.load_program(ASM / file)
    w = loader.build_world(prog, func, registers=regs)
    return episode.run_episode(w, episode.resolve_at(w, at), **kw)


def test_prologue_window_is_refused_and_forcing_it_grows_the_stack_for_nothing():
    # request lands just before the CMP (stackguard0 = stackPreempt), the signal on the JLS
    ok = _episode("call_loop.s", "call_loop", "square_add", {"RCX": 5}, signal_delay=1)
    assert ok.ok and ok.outcome == "cooperative"
    assert any(e.kind == "refuse" and "unsafe-point" in e.text for e in ok.events)
    bad = _episode("call_loop.s", "call_loop", "square_add", {"RCX": 5}, signal_delay=1, force_unsafe=True)
    assert [v.kind for v in bad.violations][0] == "needless-stack-growth"


def test_write_barrier_window_is_refused_and_forcing_it_tears_the_sequence():
    ok = _episode("unsafe_points.s", "unsafe_tour", "store_pointer", {"RCX": 2}, signal_delay=1, retry=1,
                  gc_during_preemption=True)
    assert ok.ok and ok.outcome == "async"
    assert any(e.kind == "refuse" and "unsafe-point" in e.text for e in ok.events)
    bad = _episode("unsafe_points.s", "unsafe_tour", "store_pointer", {"RCX": 2}, signal_delay=1,
                   force_unsafe=True, gc_during_preemption=True)
    assert [v.kind for v in bad.violations] == ["missed-write-barrier"]
    assert "mov qword ptr [rdi], rsi" in bad.violations[0].detail


def test_too_little_headroom_is_refused_and_forcing_it_writes_into_the_guard_page():
    res = sweep_file(ASM / "unsafe_damage.s", "big_frame", RCX=3)
    assert res.ok and res.refused.get("stack-headroom", 0) > 0
    forced = sweep_file(ASM / "unsafe_damage.s", "big_frame", RCX=3, force_unsafe=True)
    faults = [v for v in forced.violations if v.kind == "stub-fault"]
    assert len(faults) == forced.refused["stack-headroom"]
    assert "guard page" in faults[0].actual and "writing" in faults[0].actual


def test_data_below_sp_is_refused_and_forcing_it_clobbers_the_saved_bp():
    res = sweep_file(ASM / "unsafe_damage.s", "below_sp", RCX=3)
    assert res.ok and res.refused.get("asm-func", 0) == res.boundaries
    forced = sweep_file(ASM / "unsafe_damage.s", "below_sp", RCX=3, force_unsafe=True)
    assert [(v.kind, v.what) for v in forced.violations] == [("final-state", "RBP")]
    assert "first diverging injection: boundary 2" in forced.violations[0].detail   # right after the save
