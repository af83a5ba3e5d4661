"""Stack growth under compiled Go code: copystack adjusts every pointer slot the stack maps and stack
objects name (emu/model/stack.py pointer_slots, as adjustframe does) and a closure's context (adjustctxt), so
the runtime's map and string code, which holds pointers into the caller's stack, and a closure that
reads its captured variables through RDX survive a growth anywhere."""
import pytest
from conftest import DATA, native_output

from emu.drive import loader, sweeper as sweep

DEEP = DATA / "go" / "deepstack"
N = 60


@pytest.fixture(scope="module")
def program():
    return loader.load_program(str(DEEP))


def test_a_stack_grown_inside_map_and_string_code_gives_what_it_gives_natively(program):
    native = native_output(DEEP, N)
    for d in range(40):
        w = loader.build_world(program, "main.deep", registers={"RAX": N, "RBX": d})
        ref = sweep.run_reference(w, 10**8)
        assert str(ref.final["RAX"]) == native[d], d
        assert w.stack_moves, d                      # the 2 KiB stack grew


def test_a_sweep_across_the_growths_holds(program):
    w = loader.build_world(program, "main.deep", registers={"RAX": 20, "RBX": 2}, gc=True)
    res = sweep.sweep(w, "main.deep")
    assert res.ok and res.violation_count == 0 and res.injected > 100



def test_a_stack_object_holding_pointers_into_the_stack_moves_with_it(program):
    """held(n, d) keeps [4]*int{&x, &y, &z, &w}, a stack object (its address is passed down), while d
    frames below it grow the stack: adjustframe adjusts every pointer word of the object
    (stack.go:690-713, base + 8*word), so all four still point at the moved locals."""
    native = native_output(DEEP, N)[40:]
    b = program.binary
    f = b.func_named("main.held")
    assert any(len(ob.ptr_words) == 4 for ob in b.stack_objects(f))       # words 0..3 are pointers
    for d in (0, 5, 12, 25, 39):
        w = loader.build_world(program, "main.held", registers={"RAX": N, "RBX": d})
        ref = sweep.run_reference(w, 10**8)
        assert str(ref.final["RAX"]) == native[d], d
        assert w.stack_moves or d < 5, d
