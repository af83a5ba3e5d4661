"""The slice runtime (emu/model/goslice.py) against the real one: the same compiled Go functions return the
same values -- capacities included -- natively and under preemu, a GC at every injection finds every
pointer stored through the slices they grow, and what Go would panic on is a clear error."""
import io

import pytest
from conftest import DATA, native_vs_preemu

from emu import cli
from emu.model import goslice
from emu.drive import loader, sweeper as sweep

SLICES = DATA / "go" / "slices"
#: main.go's functions and the multiple of n main passes each
FUNCS = (("fill", 1), ("growPtrs", 1), ("growBytes", 10), ("growTriples", 1), ("moved", 1), ("copied", 1))


@pytest.fixture(scope="module")
def program():
    return loader.load_program(str(SLICES))


@pytest.mark.parametrize("n", [1, 3, 11, 40, 300, 700])
def test_slices_come_out_as_the_real_runtime_makes_them(program, n):
    """The sums, len()s and cap()s the binary prints when it runs natively with n arguments: makeslice,
    makeslicecopy, growsliceBuf, growslice (past its 256 threshold at 700), and, while the slice still
    fits its stack buffer (n <= 3), moveSlice, moveSliceNoScan, moveSliceNoCap, moveSliceNoCapNoScan."""
    native, ours = native_vs_preemu(SLICES, program, [(func, k * n) for func, k in FUNCS], n)
    assert ours == native


def test_every_slice_function_is_run_by_the_test_above(program):
    called = set()
    for n in (1, 3, 11, 40, 300, 700):
        for func, k in FUNCS:
            w = loader.build_world(program, f"main.{func}", registers={"RAX": k * n})
            go_call = w.machine.on_go_call
            w.machine.on_go_call = lambda name, args, _f=go_call: called.add(name) or _f(name, args)
            sweep.run_reference(w, 10**8)
    assert called == set(goslice.ARITY)


@pytest.mark.parametrize("func", ["growPtrs", "growTriples"])
def test_a_gc_at_every_injection_keeps_every_element_a_slice_points_to(program, func):
    w = loader.build_world(program, f"main.{func}", registers={"RAX": 40}, gc=True)
    res = sweep.sweep(w, f"main.{func}")
    assert res.ok and res.violation_count == 0 and res.gc.cycles == res.injected > 500
    assert res.gc.freed > 0                          # the arrays outgrown on the way are garbage, and freed


def test_a_pointer_array_is_scanned_through_its_element_type(program):
    """growslice of []*int allocates with the element type: every word of the array is a pointer word."""
    w = loader.build_world(program, "main.growPtrs", registers={"RAX": 40}, gc=True)
    sweep.run_reference(w, 10**8)
    arrays = [o for o in w.heap.objs if o.ptr_words]
    cells = [o for o in w.heap.objs if not o.ptr_words]            # the ints (newobject(int): no pointers)
    # every word of the requested size (the heap rounds the object up to 16 bytes) is a pointer word
    assert len(arrays) >= 3 and all(o.ptr_words == tuple(range(len(o.ptr_words))) for o in arrays)
    assert all(o.size - 16 < 8 * len(o.ptr_words) <= o.size for o in arrays)
    assert len(cells) == 40
    w = loader.build_world(program, "main.growBytes", registers={"RAX": 400}, gc=True)
    sweep.run_reference(w, 10**8)
    assert w.heap.objs and all(o.ptr_words == () for o in w.heap.objs)    # noscan: no pointer words


def test_roundupsize_is_the_binarys_size_classes(program):
    classes = goslice.SizeClasses.from_binary(program.binary)
    assert classes.class_to_size[:4] == (0, 8, 16, 24) and len(classes.class_to_size) == 68
    assert [classes.roundupsize(n, True) for n in (1, 9, 100, 1025, 32760, 40000)] == [8, 16, 112, 1152, 32768, 40960]
    assert classes.roundupsize(600, False) == 640 - 8          # a malloc header above 512 bytes, not handed out


def test_a_length_go_would_panic_on_is_a_clear_error(capsys):
    code = cli.main(["sweep", str(SLICES), "--func", "main.fill", "--reg", "RAX=-1"], io.StringIO())
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "main.fill never returned" in err[0]
    assert "exit status 2: panic: runtime error: makeslice: len out of range" in err[0]   # Go's own panic


def test_what_go_would_panic_on_inside_the_model_is_a_guest_fault_not_a_traceback(program):
    from emu.model.faults import GuestFaultInHook
    classes = goslice.SizeClasses.from_binary(program.binary)
    rt = goslice.SliceRuntime(classes, program.binary.go_type, lambda *a: 0, lambda a, n: bytes(n),
                              lambda a, d: None, 0x1000)
    with pytest.raises(GuestFaultInHook, match="moveSliceNoCapNoScan: integer divide by zero"):
        rt.call("moveSliceNoCapNoScan", [0, 0x2000, 3, 0, 0, 0, 0])
    with pytest.raises(GuestFaultInHook, match="runtime.makeslice: .*not inside one section"):
        rt.call("makeslice", [0x10, 1, 1, 0, 0, 0, 0])


def test_a_copy_the_slice_runtime_makes_from_freed_memory_is_a_use_after_free(program):
    """growslice copies the old array in Python: the heap watch must see that read as it sees the
    guest's own. A (deliberately wrong) GC frees the old array just before the third growslice."""
    from emu.model import gcscan
    w = loader.build_world(program, "main.growBytes", registers={"RAX": 200}, gc=True)
    w.reset()
    go_call, calls = w.machine.on_go_call, []

    def free_everything_before_the_third(name, args):
        calls.append(name)
        if calls.count("growslice") == 3:
            gcscan.sweep_heap(w.heap, set(), w.machine.write, 1)
        return go_call(name, args)
    w.machine.on_go_call = free_everything_before_the_third
    w.machine.run(w.machine.pc, 10**6)
    [(base, _size, kind, addr, pc, freed_at)] = w.uaf
    assert kind == "read" and addr == base and freed_at == 1
    assert program.func_for(pc).name == "main.growBytes" and program.insn_at(pc).mnemonic == "call"
