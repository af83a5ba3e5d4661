"""Results and globals compared through the heap (emu/goruntime/heapgraph.py, emu/goruntime/geffects.py): F's results and
the program's globals are walked by the binary's DWARF types at F's return, as {path: token} with no address in
it. tests/data/go/heapres's build returns the same graph on its first two calls (allocated in another order,
its maps filled in another order) and, on its third, a graph that differs in one deep field."""
from unicorn import x86_const as X

from emu.drive.realsweep import RealSpec
from emu.front import gobuild
from emu.goruntime import geffects, heapgraph, heapmaps

PROG = "tests/data/go/heapres"


def at_return(call: int, monkeypatch, also=None):
    """Run build's `call`-th call uninterrupted from the snapshot at it: its reference (results and globals as
    read at the return), plus what `also(effects, Effects.results)` said at that moment."""
    seen = {}
    results = geffects.Effects.results

    def spy(self):
        seen["rax"] = self.p.uc.reg_read(X.UC_X86_REG_RAX)
        if also is not None:
            seen["also"] = also(self, results)
        return results(self)
    monkeypatch.setattr(geffects.Effects, "results", spy)
    sw = RealSpec(PROG, "main.build", call).build()
    ref = sw.reference(50_000_000)
    return sw, ref, seen


def slot_order(monkeypatch):
    """Record the key order of every swiss map the walks meet, as their slots lie in memory."""
    orders = []
    slots = heapmaps.MapReader.slots

    def spy(self, hb, lay):
        out = slots(self, hb, lay)
        kt = self.cat.ty(lay["key"])
        orders.append([self.key_text(kt, ka, None, 0)[1] for ka, _ in out])
        return out
    monkeypatch.setattr(heapmaps.MapReader, "slots", spy)
    return orders


def main_cfg(globs):
    return {k: v for k, v in globs.items() if k.startswith("main.cfg")}


def diff(a, b):
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def test_every_kind_is_walked_from_a_returned_pointer(monkeypatch):
    _, ref, _ = at_return(1, monkeypatch)
    r = ref.results
    expect = {
        "~r0": "&main.T", "~r0.Count": "5000",                                   # *T followed as Go's selectors do
        "~r0.In.A": "-7", "~r0.In.B": "string 'inner'", "~r0.In.F": "1.5", "~r0.In.Ok": "true",   # nested struct
        "~r0.Items.len": "5", "~r0.Items.cap": "5", "~r0.Pairs{3}.Name": "string 'item3'",
        "~r0.Tags[1]": "string 'bc'",
        "~r0.M.len": "5", '~r0.M{"item3"}': "3",                                   # map[string]int by contents
        "~r0.Pairs{2}": "&main.Item", "~r0.Pairs{2}.N": "4", "~r0.Pairs{102}": "same object as ~r0.Pairs{2}",
        "~r0.Items[2]": "same object as ~r0.Pairs{2}",
        "~r0.ByID.len": "5", "~r0.ByID{2}": "same object as ~r0.Pairs{2}",        # map[int]*Item, aliasing
        "~r0.Big.len": "40", "~r0.Big{39}": "117",                                  # a map of several groups
        "~r0.Any": "type main.Inner", "~r0.Any.(main.Inner).B": "string 'boxed'",  # interface{} holding a struct
        "~r0.Sh": "type main.rect", "~r0.Sh.(main.rect).h": "3",                   # an interface with methods
        "~r0.Next": "&main.T", "~r0.Next.Count": "1", "~r0.Next.Next": "same object as ~r0",   # a cycle ends
        "~r0.Alias": "same object as ~r0.Pairs{2}",
        "~r0.F": "func main.double", "~r0.Ch": "chan int len 1 cap 4",
        "~r0.Arr[1]": "-2", "~r0.Bytes[:]": "bytes 686900", "~r0.U": "non-nil", "~r0.Nilp": "nil",
    }
    assert {k: r.get(k) for k in expect} == expect
    assert [k for k in r if k.startswith("~r0.Big{")] == [f"~r0.Big{{{i}}}" for i in range(40)]   # sorted keys
    assert not any("0x" in v or "0xc" in k for k, v in r.items())                  # no address anywhere
    # the main package's global, though F only set it: walked the same way
    assert ref.globals["main.cfg"] == "&main.T" and ref.globals["main.cfg.Pairs{3}.N"] == "9"
    assert ref.globals["main.cfg.Next.Next"] == "same object as main.cfg"
    assert ref.globals["main.calls"] == "1"
    # a global of another package F changed (fmt's printer pool, first used here), expanded by its DWARF type
    assert ref.globals["fmt.ppFree.New"] == "func fmt.init.func1"


def test_graphs_that_differ_only_in_addresses_and_map_placement_compare_equal(monkeypatch):
    orders1 = slot_order(monkeypatch)
    _, one, s1 = at_return(1, monkeypatch)
    monkeypatch.undo()
    orders2 = slot_order(monkeypatch)
    _, two, s2 = at_return(2, monkeypatch)
    assert s1["rax"] != s2["rax"]                        # ~r0 is at another address ...
    assert orders1[:4] != orders2[:4]                    # ... and the maps' keys lie in other slots
    assert sorted(map(sorted, orders1[:4])) == sorted(map(sorted, orders2[:4]))
    assert one.results == two.results                    # ... yet the walks are equal, token for token
    assert main_cfg(one.globals) == main_cfg(two.globals)


def test_one_deep_field_that_differs_is_named_by_its_path(monkeypatch):
    _, one, _ = at_return(1, monkeypatch)
    monkeypatch.undo()
    _, three, _ = at_return(3, monkeypatch)
    # the old flat rule said `~r0 = non-nil` for both
    assert diff(one.results, three.results) == {"~r0.Pairs{3}.N": ("9", "985148")}
    assert diff(main_cfg(one.globals), main_cfg(three.globals)) == {"main.cfg.Pairs{3}.N": ("9", "985148")}


def test_the_bounds_cut_with_a_token_that_says_so(monkeypatch):
    def bounded(eff, results):
        with monkeypatch.context() as m:
            m.setattr(heapgraph, "MAX_ELEMS", 2)
            m.setattr(heapgraph, "MAX_DEPTH", 2)
            return results(eff)
    _, ref, seen = at_return(1, monkeypatch, also=bounded)
    b = seen["also"]
    assert b["~r0.Items[2:]"] == "3 more elements not compared (bound 2)"
    assert b["~r0.Pairs{0}"] == "&main.Item (not followed: depth bound 2)"
    assert b["~r0.Items[0]"] == "same object as ~r0.Pairs{0}"         # reached, though not followed
    assert b['~r0.M{"item1"}'] == "1" and b["~r0.M{...}"] == "3 more entries not compared (bound 2)"
    assert b["~r0.Next.Next"] == "same object as ~r0"
    assert ref.results["~r0.Pairs{4}.N"] == "16"             # the real bounds are far off
    monkeypatch.setattr(heapgraph, "MAX_TOKENS", 10)
    w = heapgraph.Walk(heapgraph.catalog(gobuild.build(PROG).binary), lambda a, n: None, None, None)
    for i in range(12):
        w.emit(f"x{i}", "1")
    assert len(w.out) == 11 and w.out["x10"].startswith("not compared: the walk's bound of 10 tokens")


def test_a_global_one_run_left_alone_compares_by_its_value_at_the_call(monkeypatch):
    sw, ref, _ = at_return(1, monkeypatch)
    eff = sw.effects
    # fmt's pool is first used by this call: the run that changed it has walked tokens, one that did not would
    # read the words kept at the call, which differ from them
    keys = [k for k in ref.globals if k.startswith("fmt.ppFree.")]
    before = {k: eff.start_token(k) for k in keys}
    assert before["fmt.ppFree.local"] == "nil" and before["fmt.ppFree.localSize"] == "0"
    assert any(before[k] != ref.globals[k] for k in keys)
    assert before["fmt.ppFree.victimSize"] == ref.globals["fmt.ppFree.victimSize"] == "0"
    # main.cfg was nil at the call; a pointer that was not nil there would say so, and equal no walked token
    assert eff.start_token("main.cfg") == "nil" and eff.start_token("main.cfg.Count") == "unchanged since F's call"
    assert eff.start_token("no.such.global") == "?"


def test_the_catalogue_is_cached_per_binary():
    binary = gobuild.build(PROG).binary
    cat = heapgraph.catalog(binary)
    heapgraph._CATALOGS.clear()
    again = heapgraph.catalog(binary)                   # from the JSON file under the build cache
    assert again is not cat and again.globals == cat.globals and again.results["main.build"] == [
        ("~r0", cat.globals["main.cfg"][1])]
    assert again.ty(cat.globals["main.cfg"][1]).name == "*main.T"


def test_results_in_registers_and_on_the_stack_are_assembled_and_walked():
    sw = RealSpec(PROG, "main.multi", 1).build()
    r = sw.reference(50_000_000).results
    assert r == {"f": "2.5", "i": "-5", "a[0]": "5", "a[1]": "-5",
                 "err": "type *errors.errorString", "err.(*errors.errorString)": "&errors.errorString",
                 "err.(*errors.errorString).s": "string 'multi'",
                 "b.len": "2", "b.cap": "2", "b[:]": "bytes 05ff", "ok": "true"}
