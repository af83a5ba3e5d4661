"""Known-bug scenarios that need more than a scenario file: the headroom boundary (B14), a signal
storm over mostly-unsafe code (B13 / golang/go#37741), and the scenarios' citations."""
import pytest
from conftest import ASM, ROOT, assemble, world_for

from emu.drive import episode, loader, scenario
from emu.core import gostructs as gs
from emu.core.structref import read_field


@pytest.mark.parametrize("lay", ["go1.14", "go1.27"])
@pytest.mark.parametrize("delta,verdict", [(-8, "stack-headroom"), (0, "safe"), (8, "safe")])
def test_headroom_boundary_refuse_accept_accept(lay, delta, verdict):
    # compute the frame so that SP - stack.lo == asyncPreemptStack + delta at the NOP
    probe = world_for(assemble("f:\n ret\n"), "f", lay)
    h = probe.headroom
    frame = (probe.start_sp - probe.stack_lo) - (h + delta)
    src = f";@nosplit\nf:\n sub rsp, {frame}\n;@safe\n nop\n add rsp, {frame}\n ret\n"
    prog = assemble(src.replace(";@nosplit\n", ""))
    w = world_for(prog, "f", lay)
    w.machine.run(w.entry, 1)
    nop = prog.get_func("f").insns[1].addr
    assert w.machine.pc == nop and w.machine.reg("RSP") - w.stack_lo == h + delta
    from emu.drive.sweeper import sweep
    res = sweep(w, "f")
    assert res.per_pc[nop].verdicts == {verdict: 1} and res.ok


def test_signal_storm_over_mostly_unsafe_code_still_progresses_and_acks_every_signal():
    w = loader.build_world(loader.load_program(ASM / "unsafe_points.s"), "unsafe_tour", registers={"RCX": 3})
    at = episode.resolve_at(w, "memclr")
    ep = episode.run_episode(w, at, retry=1)            # a signal at every single boundary
    assert ep.ok and ep.outcome == "async" and ep.signals > 20
    assert read_field(w.machine, w.mps[0][0], gs.M_FIELDS, "preemptGen") + \
        read_field(w.machine, w.mps[1][0], gs.M_FIELDS, "preemptGen") == ep.signals      # one ack per signal
    assert read_field(w.machine, w.mps[w.cur][0], gs.M_FIELDS, "signalPending") == 0


def test_every_known_bug_scenario_cites_its_source():
    cited = {p.stem: scenario.load(p).cites for p in (ROOT / "scenarios").glob("*.toml")}
    for name in ("checksum", "rep_copy", "call_loop", "below_sp", "asyncpreemptoff", "nested_signal",
                 "unsafe_points", "starvation"):
        assert cited[name], name
