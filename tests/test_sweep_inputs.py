"""What a real-program sweep counts and accepts (issue #35 items 5 and 6): calls the runtime could never
preempt are not counted, a generic function's instances and closures are suggested by name, a global is an
argument, and --gc's points tried say what they count."""
import json

from conftest import cli_run

KINDS, CORPUS, NONDET = "tests/data/go/kinds", "tests/go/corpus", "tests/data/go/nondet"


def run(*args):
    code, out, err = cli_run(*args)
    return code, out + err


def test_calls_during_start_up_or_on_a_system_stack_are_not_counted():
    """runtime.memmove's first calls are the runtime's start-up and g0's: a SIGURG there is no preemption Go
    makes (before initsig the signal's default action; g0 is never preempted). The first counted call is on a
    user goroutine once runtime.main runs, and the sweep of it finds nothing wrong; the runtime refuses every
    point of runtime code, so nothing is injected, which is no OK (issue #46 item 5)."""
    code, text = run("sweep", KINDS, "--func", "runtime.memmove", "--max-points", "20", "--to-exit", "1", "--json")
    j = json.loads(text)
    assert code == 1 and j["violation_count"] == 0 and j["injected"] == 0, j["violations"]
    assert set(j["refused"]) <= {"runtime-func", "asm-func", "unsafe-point", "m-locks"}
    code, text = run("sweep", KINDS, "--func", "runtime.memmove", "--call", "100000000")
    assert code == 2
    assert "more call(s) during the runtime's start-up or on a system stack" in text and "not counted" in text


def test_a_generic_function_and_closures_are_suggested_by_their_names(tmp_path):
    src = tmp_path / "main.go"
    src.write_text('package main\n\nimport "fmt"\n\n//go:noinline\nfunc Max[T int | float64](a, b T) T {\n'
                   '\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n\nfunc main() {\n'
                   '\tgo func() {}()\n\tfmt.Println(Max(3, 4), Max(1.5, 0.5))\n}\n')
    code, text = run("sweep", str(src), "--func", "Max")
    assert code == 2
    assert "main.Max[go.shape.int]" in text and "main.Max[go.shape.float64]" in text
    code, text = run("sweep", str(src), "--func", "main.main")
    assert code == 0
    code, text = run("sweep", str(src), "--func", "mainx")
    assert code == 2 and "did you mean" not in text
    from emu.drive.gstart import similar
    syms = {"main.main": (1, 10), "main.main.func1": (2, 10), "main.main.gowrap1": (3, 5), "main.mainly": (4, 5),
            "main.main.func1.abi0": (5, 5)}
    assert similar(syms, "main") == ["main.main", "main.main.func1", "main.main.gowrap1"]


def test_a_global_is_an_argument_by_its_name():
    """The README's `--reg RAX=main.counter`: a global's address, not an instruction boundary."""
    code, text = run("sweep", CORPUS, "--func", "atomicOr", "--reg", "RAX=main.counter", "--reg", "RBX=5",
                     "--max-points", "30", "--to-exit", "1", "--json")
    j = json.loads(text)
    assert code == 0 and j["ok"] and j["injected"] > 0
    code, text = run("sweep", CORPUS, "--func", "atomicOr", "--reg", "RAX=main.nosuch")
    assert code == 2 and "no function or global 'main.nosuch'" in text
