"""GC stack scan of an asynchronously preempted goroutine: conservative inner frames, precise outer
frames, the use-after-free oracle, mutant scanners, and the deferred stack shrink."""
import pytest
from conftest import ASM, ROOT

from emu.core import gostructs as gs
from emu.check import inject
from emu.drive import loader, scenario, sweeper as sweep
from emu.core.structref import read_field
from emu.model.hooks import STOP_STUB_RET
from emu.model.unwind import unwind

GC_SCENARIOS = sorted((ROOT / "scenarios").glob("gc_ptr*.toml")) + [ROOT / "scenarios" / "gc_stale_ptr.toml"]


@pytest.mark.parametrize("lay", ["go1.14", "go1.27"])
@pytest.mark.parametrize("path", GC_SCENARIOS, ids=[p.stem for p in GC_SCENARIOS])
def test_gc_at_every_injection_point_keeps_every_live_object(path, lay):
    sc = scenario.load(path)
    program, world, res, checks = scenario.run(sc, lay)
    assert all(c.ok for c in checks), [c for c in checks if not c.ok]
    assert res.gc.cycles == res.injected > 0


def _gc_sweep(entry, scanner):
    prog = loader.load_program(ASM / "gc_roots.s")
    w = loader.build_world(prog, entry, registers={"RCX": 20}, gc=True, scanner=scanner)
    return sweep.sweep(w, entry)


@pytest.mark.parametrize("scanner,entries", [
    ("precise-interrupted", ["ptr_in_frame_slot", "ptr_in_caller_slot"]),
    ("skip-save-area", ["ptr_in_reg", "ptr_in_xmm", "ptr_interior"]),
])
def test_mutant_scanners_are_caught_as_use_after_free(scanner, entries):
    for entry in entries:
        res = _gc_sweep(entry, scanner)
        uaf = [v for v in res.violations if v.kind == "use-after-free"]
        assert uaf, (scanner, entry)
        assert uaf[0].what.startswith("object 0x28000000") and "freed by the GC" in uaf[0].detail


def test_the_real_scanner_frees_dead_objects_and_nothing_live():
    res = _gc_sweep("ptr_in_caller_slot", "go")
    assert res.ok and res.gc.freed == 1          # freed after its last use, never before


def test_unwinder_walks_stub_interrupted_and_precise_caller_frames():
    prog = loader.load_program(ASM / "gc_roots.s")
    w = loader.build_world(prog, "ptr_in_caller_slot", registers={"RCX": 20})
    seen = {}

    def grab(machine):
        seen["frames"] = unwind(machine.all, machine.read_u64, machine.reg("RSP"), machine.pc)
        return False
    w.machine.on_async_preempt2 = grab
    spin = prog.get_func("spin_no_ptrs")
    loop_pc = spin.insns[6].addr                      # inside the callee's loop
    k = sweep.first_boundaries(w, sweep.run_reference(w).boundaries)[loop_pc]
    w.reset()
    w.machine.run(w.machine.pc, k)
    w.preempt_one()
    v = inject.do_sig_preempt(w.sigctx, w.machine.all, w.sched_state(), loop_pc, w.machine.reg("RSP"), w.headroom,
                              w.machine.stub_entry, w.ack)
    assert v.ok
    w.machine.run(w.machine.stub_entry, 10_000)
    fr = seen["frames"]
    assert [(f.kind, f.func, f.size) for f in fr] == [
        ("asyncPreempt2", "asyncPreempt2", 0), ("asyncPreempt", "asyncPreempt", 384),
        ("interrupted", "spin_no_ptrs", 0), ("caller", "ptr_in_caller_slot", 24)]
    assert prog.insn_at(fr[3].call_pc).ptr_slots == (0,)


def test_stack_shrink_is_deferred_at_an_async_safe_point_and_done_at_the_next_sync_preemption():
    prog = loader.load_program(ASM / "call_loop.s")
    w = loader.build_world(prog, "call_loop", registers={"RCX": 40}, gc=True, stack_size=8192)   # room to shrink
    m = w.machine
    body = prog.get_func("square_add").insns[5].addr   # after the prologue: a safe point
    k = sweep.first_boundaries(w, sweep.run_reference(w).boundaries)[body]
    w.reset()
    m.run(m.pc, k)
    w.preempt_one()
    assert inject.do_sig_preempt(w.sigctx, m.all, w.sched_state(), body, m.reg("RSP"), w.headroom, m.stub_entry,
                                 w.ack).ok
    m.stub_ret_armed = True
    assert m.run(m.stub_entry, 10_000) == STOP_STUB_RET
    m.run(m.pc, 1)
    assert w.gc_cycles == 1 and w.shrink_deferred == 1
    assert read_field(m, w.gp, gs.G_FIELDS, "preemptShrink") == 1 and w.stack_hi - w.stack_lo == 8192
    w.preempt_one(signal=False)                       # a cooperative request: the next prologue
    for _ in range(200):
        m.run(m.pc, 1)
        if w.cooperative_preemptions:
            break
    assert w.shrinks == 1 and w.stack_hi - w.stack_lo == 4096
    assert read_field(m, w.gp, gs.G_FIELDS, "preemptShrink") == 0
    m.run(m.pc, 100_000)
    assert m.reg("RAX") == sum(i * i + 1 for i in range(1, 41))


WATCH_LATE = """
;@data cell 8 0
; The same load runs first on a global, then on a heap object allocated in between: the watch comes
; on at the allocation and must see the load through code translated before it existed.
late:
    push rbp
    mov rbp, rsp
    lea rbx, [cell]
    mov r8, 2
.again:
    mov ecx, 50
.loop:
    mov rax, qword ptr [rbx]
    dec ecx
    jnz .loop
    dec r8
    jz .done
    mov eax, 32
    call newobject
    mov rbx, rax
    jmp .again
.done:
    pop rbp
    ret
"""


def test_heap_watch_is_on_exactly_while_the_heap_holds_objects():
    """GC mode watches heap accesses with a memory hook (it slows every access), so only from the first
    allocation of a run; code translated before then must still be watched (the cache is flushed)."""
    from conftest import assemble
    w = loader.build_world(assemble(WATCH_LATE), "late", "go1.14", None, 1, {}, gc=True)
    m = w.machine
    assert m._heap_hook is None
    w.reset()
    assert m.run(w.entry, 10_000) == "goexit"
    [obj] = w.heap.objs
    assert m._heap_hook is not None and w._last_access.get(obj.base) == 0     # the load after the allocation
    w.reset()
    assert m._heap_hook is None and not w.heap.objs                             # back to an empty heap
    res = sweep.sweep(w, "late", 1, 10**6)
    assert res.ok and res.injected > 0 and not w.uaf
