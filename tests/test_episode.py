"""One preemption request followed step by step: pending requests, retries, the cooperative path,
starvation without async preemption, and stack growth."""
import pytest
from conftest import ASM

from emu.drive import episode, loader, sweeper as sweep


def _world(file, func, **regs):
    return loader.build_world(loader.load_program(ASM / file), func, registers=regs)


def test_cooperative_path_preempts_a_calling_loop_with_async_preemption_off():
    w = _world("call_loop.s", "call_loop", RCX=20)
    ep = episode.run_episode(w, 3, async_preemption=False)
    assert ep.outcome == "cooperative" and ep.signals == 0 and ep.ok
    assert w.cooperative_preemptions == 1


def test_call_free_loop_starves_without_async_preemption_and_is_stopped_with_it():
    w = _world("sum_loop.s", "sum_loop", RCX=100_000)
    off = episode.run_episode(w, 50, async_preemption=False, max_wait=5_000)
    assert off.outcome == "not-preempted" and off.preempted_at is None
    on = episode.run_episode(w, 50)
    assert on.outcome == "async" and on.latency == 0 and on.ok


def test_refused_request_stays_pending_and_sysmon_resends_until_a_safe_point():
    w = _world("unsafe_points.s", "unsafe_tour", RCX=3)
    at = episode.resolve_at(w, "memclr+3")           # inside REP STOSB of an assembly function
    ep = episode.run_episode(w, at, retry=10)
    refusals = [e for e in ep.events if e.kind == "refuse"]
    assert len(refusals) >= 2 and "asm-func" in refusals[0].text
    assert ep.outcome == "async" and ep.signals == len(refusals) + 1 and ep.ok
    assert [e.boundary for e in refusals][:2] == [at, at + 10]


def test_stack_check_prologue_takes_a_pending_request_even_when_the_signal_was_refused():
    w = _world("call_loop.s", "call_loop", RCX=20)
    at = episode.resolve_at(w, "square_add")
    ep = episode.run_episode(w, at, signal_delay=1, retry=1000)
    assert [e.kind for e in ep.events] == ["request", "refuse", "cooperative"]


def test_deep_recursion_grows_the_stack_and_still_computes_the_right_sum():
    w = _world("recurse.s", "sum_rec", RDI=400)
    ref = sweep.run_reference(w)
    assert ref.final.values["RAX"] == 400 * 401 // 2
    # from Go's 2 KiB fixedStack, doubling at each growth (newstack: newsize = oldsize * 2)
    assert [(hi - lo, nhi - nlo) for lo, hi, nlo, nhi in w.stack_moves] == [
        (2048, 4096), (4096, 8192), (8192, 16384), (16384, 32768)]
    assert w.stack_hi - w.stack_lo == 32768


def test_recursion_with_growth_sweeps_clean():
    w = _world("recurse.s", "sum_rec", RDI=200)
    res = sweep.sweep(w, "sum_rec", max_points=1500)
    assert res.ok and set(res.refused) == {"unsafe-point"}
    w.reset()
    assert w.stack_hi - w.stack_lo == 2048        # reset puts the stack back


@pytest.mark.parametrize("spec,err", [("line:999", "no instruction"), ("nope+4", "expected a boundary"),
                                      ("square_add+1", "not the start")])
def test_bad_at_specs_are_clear_errors(spec, err):
    w = _world("call_loop.s", "call_loop", RCX=3)
    with pytest.raises(ValueError, match=err):
        episode.resolve_at(w, spec)


def test_the_cooperative_path_waits_while_the_m_holds_locks():
    """newstack (runtime/stack.go:1122-1129): with stackguard0 == stackPreempt but canPreemptM false (here
    m.locks > 0), the goroutine is not preempted: the guard goes back to stack.lo + stackGuard and it runs on.
    Without the gate the prologue preempted it anyway (#23 N4)."""
    w = _world("call_loop.s", "call_loop", RCX=20)
    reset = w.reset

    def reset_holding_locks():
        reset()
        for m_ref, _, _ in w.refs:
            m_ref.set("locks", 1)
    w.reset = reset_holding_locks
    ep = episode.run_episode(w, 3, async_preemption=False, max_wait=2_000)
    assert ep.outcome == "finished" and w.cooperative_preemptions == 0          # it ran to its end
    w.reset = reset
    assert episode.run_episode(w, 3, async_preemption=False).outcome == "cooperative"   # the same, no locks


def test_the_scheduler_takes_no_cooperative_preemption_while_the_m_holds_locks():
    """The same gate in the scheduler world (runtime/stack.go:1122-1129): the cooperative scenario's caller is
    preempted at its prologues; with m.locks held on every M it never is (#23 N4)."""
    from emu.drive import scenario
    sc = scenario.load(ASM.parent / "scenarios" / "cooperative.toml")
    free = scenario.build_sched(sc).run(*scenario.sched_limits(sc))
    assert free.preemptions["cooperative"] >= 4
    s = scenario.build_sched(sc)
    for m in s.ms:
        m.ref.set("locks", 1)
    held = s.run(*scenario.sched_limits(sc))
    assert held.preemptions["cooperative"] == 0
