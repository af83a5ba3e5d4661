"""Maps in compiled Go functions: the runtime's own map code runs for real (emu/front/gofront.py
PLAIN_RUNTIME) and returns what it returns natively; runtime.rand is one generator for the world's Ms
(gcworld._rand), so a goroutine resumed on the other M after a preemption takes the path it would have
taken uninterrupted; a GC at every injection finds heap nodes held only by a map's values."""
import pytest
from conftest import DATA, native_vs_preemu

from emu.front import gofront
from emu.drive import loader, sweeper as sweep

MAPS = DATA / "go" / "maps"
FUNCS = ("sumByKey", "names", "chains", "pairs", "floats", "anys", "holder", "hidden")


@pytest.fixture(scope="module")
def program():
    return loader.load_program(str(MAPS))


@pytest.mark.parametrize("n", [1, 11, 40, 300])
def test_maps_give_what_they_give_natively(program, n):
    native, ours = native_vs_preemu(MAPS, program, [(f, n) for f in FUNCS], n)
    assert ours == native


def test_a_map_seeded_by_runtime_rand_survives_a_preemption_at_every_boundary(program):
    """Go seeds each map and each iteration from the running M's generator; the sweep resumes the
    goroutine on the other M, which with a generator per M took another path (a final-state
    violation: the run did not end where the reference run ended)."""
    w = loader.build_world(program, "main.sumByKey", registers={"RAX": 12})
    res = sweep.sweep(w, "main.sumByKey")
    assert res.ok and res.injected > 300 and res.refused["runtime-func"] > 0   # map code itself is refused


def test_a_gc_at_every_injection_finds_nodes_held_only_by_map_values(program):
    w = loader.build_world(program, "main.chains", registers={"RAX": 20}, gc=True)
    res = sweep.sweep(w, "main.chains")
    assert res.ok and res.violation_count == 0 and res.gc.cycles == res.injected > 500
    assert res.gc.allocated > 20                     # the nodes, the map's table and groups


def test_a_gc_in_a_callee_scans_the_callers_map_through_its_stack_object(program):
    """holder's map lives in its frame (a stack object, FUNCDATA_StackObjects), and the call site's
    stack map holds only a pointer to it: without stack objects every node was freed while spin ran."""
    w = loader.build_world(program, "main.holder", registers={"RAX": 5}, gc=True)
    res = sweep.sweep(w, "main.holder")
    assert res.ok and res.violation_count == 0 and res.gc.cycles == res.injected > 100


def test_a_stack_object_found_conservatively_is_scanned_through_its_pointer_mask(program):
    """hidden's rec{u uintptr; p *node} is reached from spinRec's (conservative) frame: Go scans it
    conservatively but only at its pointer word, so the node held as a uintptr is freed, the other not."""
    w = loader.build_world(program, "main.hidden", registers={"RAX": 5}, gc=True)
    res = sweep.sweep(w, "main.hidden")
    assert res.ok and res.violation_count == 0
    first, second = sorted(w.heap.objs, key=lambda o: o.base)     # mk(n), then mk(2n)
    # freed at the first GC inside spinRec, not kept with the rec until hidden's frame is gone
    assert second.freed_at is not None and first.freed_at is not None and second.freed_at < first.freed_at


def test_runtime_rand_is_one_deterministic_generator_reset_with_the_world(program):
    w = loader.build_world(program, "main.sumByKey", registers={"RAX": 12})
    first = [w._rand() for _ in range(3)]
    assert len(set(first)) == 3
    w.reset()
    assert [w._rand() for _ in range(3)] == first


def test_the_hash_key_is_set_as_alginit_sets_it(program):
    """internal/runtime/maps.hashkey keys the portable hashes; left zero, every [2]int key whose first
    word is 0 hashes alike and pairs(300) takes ~9,000 boundaries a key instead of ~750."""
    w = loader.build_world(program, "main.pairs", registers={"RAX": 300})
    key = w.machine.read(program.binary.symbol("internal/runtime/maps.hashkey")[0], 32)
    assert key == gofront.HASH_KEY and all(key[i:i + 8] != bytes(8) for i in range(0, 32, 8))
    assert sweep.run_reference(w, 10**8).boundaries < 1000 * 300
