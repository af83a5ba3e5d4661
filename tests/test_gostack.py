"""Stack growth under compiled Go code: copystack adjusts every pointer slot the stack maps and stack
objects name (emu/stack.py pointer_slots, as adjustframe does) and a closure's context (adjustctxt), so
the runtime's map and string code, which holds pointers into the caller's stack, and a closure that
reads its captured variables through RDX survive a growth anywhere."""
import pytest
from conftest import DATA, native_output

from emu import loader, sweep

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

