"""A package's own tests as the way in (issue #41 item 1): `--test NAME` / `--bench NAME` build the package's
test binary (`go test -c`, in its module), run only that test in the package directory as `go test` does,
and sweep, exec or explain a function of the package as the test calls it. tests/go/ringmod/ring is a
package of a module (example.com/ringmod) with a method, a generic function, a closure, a test reading
testdata, a benchmark and an example."""
import json
import subprocess

import pytest

from conftest import cli_run
from emu.drive import realsweep
from emu.front import gobuild

PKG = "tests/go/ringmod/ring"


def run(*args):
    code, out, err = cli_run(*args)
    return code, out + err


def sweep(func, *more, test=("--test", "TestSum")):
    code, text = run("sweep", PKG, *test, "--func", func, "--to-exit", "1", "--json", *more)
    return code, json.loads(text) if text.lstrip().startswith("{") else text


@pytest.fixture(scope="module")
def native():
    """The test binary run natively as `go test -run '^TestSum$' -short` runs it: in the package directory."""
    res = gobuild.build(PKG, test=True)
    assert res.package == "example.com/ringmod/ring"
    argv = realsweep.test_argv(PKG, "test", "TestSum")
    return subprocess.run([str(res.binary), *argv[1:]], cwd=PKG, capture_output=True, text=True).stdout


@pytest.mark.parametrize("func, full", [
    ("ring.(*Ring).Sum", "example.com/ringmod/ring.(*Ring).Sum"),                 # a method
    ("Max[go.shape.int]", "example.com/ringmod/ring.Max[go.shape.int]"),          # a generic function's instance
    ("ring.(*Ring).Scale.func1", "example.com/ringmod/ring.(*Ring).Scale.func1"),  # a closure
])
def test_a_function_of_the_package_sweeps_clean_as_its_test_calls_it(func, full, native):
    code, j = sweep(func)
    assert code == 0 and j["ok"], j
    assert j["func"] == full and j["test"] == {"kind": "test", "name": "TestSum"}
    assert j["injected"] > 0 and j["reference"]["stdout"] == native == "PASS\n"


def test_a_broken_stub_fails_in_the_packages_test():
    code, j = sweep("ring.(*Ring).Sum", "--stub", "tests/data/stub_no_pushfq.s")
    assert code == 1 and any(v["kind"] == "flags" for v in j["violations"])


def test_a_benchmark_runs_once_and_its_timing_is_not_compared():
    code, j = sweep("ring.(*Ring).Sum", "--max-points", "60", test=("--bench", "BenchmarkSum"))
    assert code == 0 and j["ok"], j["violations"]
    lines = j["reference"]["stdout"].splitlines()
    timing = next(i for i, ln in enumerate(lines) if ln.startswith("BenchmarkSum") and "ns/op" in ln)
    assert j["nondeterministic"]["output"]["stdout"] == [timing]      # ns/op: the clock's rate varied


def test_an_example_is_a_test():
    code, j = sweep("Max[go.shape.float64]", test=("--test", "ExampleMax"))
    assert code == 0 and j["ok"] and j["reference"]["stdout"] == "PASS\n"


def test_a_fuzz_targets_seed_corpus_is_a_test():
    """go test -run '^FuzzPush$' runs FuzzPush's seeds (f.Add) as subtests, without fuzzing."""
    code, j = sweep("ring.(*Ring).Push", test=("--test", "FuzzPush"))
    assert code == 0 and j["ok"] and j["reference"]["stdout"] == "PASS\n" and j["injected"] > 0


def test_exec_and_explain_take_the_test_too():
    code, text = run("exec", PKG, "--test", "TestSum", "--", "-test.v")
    assert code == 0 and "--- PASS: TestSum" in text
    code, text = run("explain", PKG, "--test", "TestSum", "--func", "ring.(*Ring).Sum", "--at", "20")
    assert code == 0 and "returned what it returns uninterrupted: ~r0 = 372" in text and "checks hold" in text


@pytest.mark.parametrize("args, message", [
    (["--test", "TestSum", "--bench", "BenchmarkSum"], "not allowed with argument"),
    (["--test", "Test Sum"], "give the name of a test or example"),
    (["--test", "TestNope"], "the package has no test or example TestNope (it has ExampleMax, FuzzPush, TestSum)"),
    (["--bench", "BenchmarkNope"], "the package has no benchmark BenchmarkNope (it has BenchmarkSum)"),
])
def test_bad_test_input_is_exit_2_with_what_happened(args, message):
    code, text = run("sweep", PKG, "--func", "ring.(*Ring).Sum", *args)
    assert code == 2 and message in text, text


def test_a_directory_without_tests_has_none_to_run():
    code, text = run("sweep", "tests/data/go/kinds", "--test", "TestX", "--func", "spin")
    assert code == 2 and "no _test.go files" in text


def test_the_tours_first_go_example_runs_as_written(tmp_path):
    """The tutorial's Go step starts from the package's test: its command, as written there, works."""
    import shlex
    from pathlib import Path
    line = next(ln[2:] for ln in Path("docs/tutorial/7-real-program.md").read_text().splitlines()
                if ln.startswith("$ preemu explain tests/go/ringmod/ring --test TestSum"))
    argv = shlex.split(line)[1:]
    argv[argv.index("--html") + 1] = str(tmp_path / "sum.html")
    code, text = run(*argv)
    assert code == 0 and "10 steps, OK" in text and (tmp_path / "sum.html").stat().st_size > 10_000
