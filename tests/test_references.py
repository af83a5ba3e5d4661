"""More than one reference run (emu/drive/references.py, emu/goruntime/rngstate.py): what differs between two
legitimate uninterrupted runs is not a violation; what differs only in the swept run still is."""
import io
import json
import random
import subprocess

import pytest

from emu import cli
from emu.drive import references as R
from emu.drive.gsweep import Ending, Reference
from emu.front import gobuild

NONDET = "tests/data/go/nondet"


def run(*args):
    out = io.StringIO()
    code = cli.main(list(args), out)
    return code, out.getvalue()


def sweep_json(func, *more, points="60"):
    code, text = run("sweep", NONDET, "--func", func, "--max-points", points, "--to-exit", "1", "--json", *more)
    return code, json.loads(text)


@pytest.fixture(scope="module")
def native():
    binary = gobuild.build(NONDET).binary
    return subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout


# encoding/json and reflect keep sync.Map caches whose hash-trie seed is drawn from the M's ChaCha8 state at
# first use; a global sync.Map the same; firstKey's result is a map's iteration order.
@pytest.mark.parametrize("func, unstable", [("jsonRoundTrip", "reflect.ptrMap.m.seed"), ("syncMap", "main.M.m.seed"),
                                            ("firstKey", "~r0")])
def test_runtime_randomness_is_listed_not_failed(func, unstable, native):
    code, j = sweep_json(func)
    assert code == 0 and j["ok"], j["violations"]
    nd = j["nondeterministic"]
    assert nd["references"] >= R.REFERENCES
    assert unstable in nd["globals"] + nd["results"]
    assert j["reference"]["stdout"] == native


def test_one_reference_alone_calls_the_seeds_violations(monkeypatch):
    """The mutation 'compare against the primary reference only' is the false failure of issue #35: every
    boundary of jsonRoundTrip (a chain in which G resumes on another M before a cache's first use draws its
    hash-trie seed there; syncMap's chains, since the kernel model wakes threads as Linux does after a slice,
    resume G on its own M)."""
    monkeypatch.setattr(R, "REFERENCES", 1)
    monkeypatch.setattr(R, "CONFIRM", 0)
    code, j = sweep_json("jsonRoundTrip", points="100000")
    assert code == 1 and j["violations"]
    assert {v["kind"] for v in j["violations"]} == {"final-state"}
    assert all(v["what"].endswith(".m.seed") for v in j["violations"]), j["violations"]


def test_a_difference_no_reference_shows_is_confirmed_by_more_reseeded_runs(monkeypatch):
    """With no reseeded reference up front, the chain's difference at jsonRoundTrip's seeds sends the coordinator
    to run more: they differ there too, so the violations are taken back and the keys listed."""
    monkeypatch.setattr(R, "REFERENCES", 1)
    code, j = sweep_json("jsonRoundTrip", points="100000")
    assert code == 0 and j["ok"], j["violations"]
    assert "reflect.ptrMap.m.seed" in j["nondeterministic"]["globals"]
    assert 1 < j["nondeterministic"]["references"] <= 1 + R.CONFIRM


def test_the_reseed_draws_every_m_anew_and_is_the_seeds_alone():
    from emu.drive import realsweep
    from emu.goruntime import rngstate
    spec = realsweep.RealSpec(NONDET, "syncMap", argv=("prog",))
    sw = spec.build()
    lay = rngstate.layout(sw.image.path)
    chacha = next(off for off, _, kind in lay.fields if kind == "chacha8")
    ms = rngstate.all_ms(sw.p, lay)
    assert len(ms) >= 2                                   # m0 and sysmon's at least

    def states():
        return [sw.p.read(m + off, size) for m in ms for off, size, _ in lay.fields]
    before = states()
    rngstate.reseed(sw.p, lay, random.Random(7))
    once = states()
    assert all(a != b for a, b in zip(before, once))
    for m in ms:                                          # a ChaCha8 state left exhausted: Refill uses the new seed
        i, n = (int.from_bytes(sw.p.read(m + chacha + o, 4), "little") for o in (rngstate.CHACHA_I,
                                                                                   rngstate.CHACHA_N))
        assert i == n
    rngstate.reseed(sw.p, lay, random.Random(7))
    assert states() == once


def _ref(results=None, globs=None, stdout=b"a\nb\n", exit_code=0):
    return Reference(10, dict(results or {}), dict(globs or {}), Ending(exit_code, stdout, b"", "exit"))


def test_unstable_keys_are_those_any_reference_disagrees_on():
    a = _ref({"~r0": "1", "~r1": "2"}, {"main.x": "5"}, b"one\ntwo\n")
    b = _ref({"~r0": "1", "~r1": "3"}, {"main.x": "5", "main.y": "1"}, b"one\nTWO\n")
    u = R.Unstable()
    R.add_run(u, a, b)
    assert u.results == {"~r1"} and u.globals == {"main.y"} and u.lines == {"stdout": {1}} and not u.exit_code
    a.unstable = u
    # the unstable line is not compared; a stable one is, by line
    assert R.ending_diff(a, Ending(0, b"one\nzzz\n", b"", "exit")) == []
    assert [w for w, _, _ in R.ending_diff(a, Ending(0, b"uno\ntwo\n", b"", "exit"))] == ["stdout line 1"]
    assert [w for w, _, _ in R.ending_diff(a, Ending(0, b"one\n", b"", "exit"))] == ["stdout"]
    assert [w for w, _, _ in R.ending_diff(a, Ending(3, b"one\ntwo\n", b"", "exit"))] == ["exit_code"]
    c = _ref({"~r0": "1", "~r1": "2"}, {"main.x": "5"}, b"one\ntwo\nthree\n", exit_code=2)
    R.add_run(u, a, c)
    assert u.stream_unstable("stdout") and u.exit_code
    assert R.ending_diff(a, Ending(2, b"anything", b"", "exit")) == []


def test_violation_keys_round_trip():
    u = R.Unstable(results={"~r0"}, globals={"main.M+0x28"}, lines={"stdout": {2}})
    for what, unstable in [("result ~r0", True), ("result ~r1", False), ("main.M+0x28", True),
                           ("main.N", False), ("program stdout line 3", True), ("program stdout line 1", False),
                           ("program stdout", False), ("program exit_code", False)]:
        assert R.is_unstable(u, R.key_of(what)) is unstable, what
    assert R.key_of("control flow") is None


RACE = "tests/data/go/race"


def test_a_race_that_changes_only_the_returned_object_is_named_by_its_field():
    """tally's helper goroutine runs only when tally is preempted (one P): a preemption between the load and
    the store of c.Count loses the helper's updates. The object is returned, never printed: the heap
    comparison names the field (the old nil/non-nil rule called it `~r0 = non-nil`, OK)."""
    code, text = run("sweep", RACE, "--func", "tally", "--to-exit", "1", "--json")
    j = json.loads(text)
    assert code == 1
    bad = [v for v in j["violations"] if v["kind"] == "final-state"]
    assert {v["what"] for v in bad} == {"result ~r0.Count"}
    assert {(v["expected"], v["actual"]) for v in bad} == {("2000", "1000")}
    assert j["nondeterministic"]["results"] == []          # every uninterrupted run agrees: 2000


def test_the_same_race_printed_by_main_fails_on_the_output_too():
    code, text = run("sweep", RACE, "--func", "printed", "--to-exit", "1", "--json")
    j = json.loads(text)
    assert code == 1
    whats = {v["what"] for v in j["violations"] if v["kind"] == "final-state"}
    assert {"result ~r0.Count", "program stdout line 2"} <= whats
