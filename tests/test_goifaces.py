"""Interfaces in compiled Go functions: values boxed by runtime.convT* (run for real) and read back
through type switches and itab method calls give what they give natively, and a GC at every injection
finds a string's bytes through its box -- which needs runtime.stringType, set by runtime.init and
replayed by preemu (gofront.RUNTIME_INIT)."""
import pytest
from conftest import DATA, native_vs_preemu

from emu.front import gofront
from emu.drive import loader, sweeper as sweep

IFACES = DATA / "go" / "ifaces"


@pytest.fixture(scope="module")
def program():
    return loader.load_program(str(IFACES))


@pytest.mark.parametrize("n", [1, 3, 40, 300])
def test_boxed_values_give_what_they_give_natively(program, n):
    native, ours = native_vs_preemu(IFACES, program, [("boxes", n), ("shapes", n)], n)
    assert ours == native


def test_the_runtime_type_globals_are_set_as_runtime_init_sets_them(program):
    w = loader.build_world(program, "main.boxes", registers={"RAX": 3})
    b = program.binary
    for var, eface in gofront.RUNTIME_INIT:
        typ = w.machine.read_u64(b.symbol(var)[0])
        assert typ and typ == w.machine.read_u64(b.symbol(eface)[0])
    assert b.go_type(w.machine.read_u64(b.symbol("runtime.stringType")[0])).ptrbytes == 8


def test_a_gc_at_every_injection_finds_the_bytes_of_a_boxed_string(program):
    """Without the replayed runtime.stringType, convTstring's box is pointer-free: the GC frees the
    string's bytes while the box still points at them (use-after-free)."""
    w = loader.build_world(program, "main.boxes", registers={"RAX": 20}, gc=True)
    res = sweep.sweep(w, "main.boxes")
    assert res.ok and res.violation_count == 0 and res.gc.cycles == res.injected > 500
