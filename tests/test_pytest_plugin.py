"""The pytest plugin, driven by pytest's own pytester: one item per corpus loop or scenario file,
failures with preemu's summary, pytest-xdist's -n, the `preemu` fixture, clear usage errors."""
from __future__ import annotations

import re
from importlib.metadata import entry_points

import pytest

from conftest import ASM
from emu import api

GO114 = (ASM / "preempt_amd64_go114.s").read_text()


def _forget(reg: str) -> str:
    return "".join(ln for ln in GO114.splitlines(keepends=True) if not re.search(rf"\b{reg}\b", ln.split(";")[0]))


def test_registered_through_the_pytest11_entry_point():
    eps = [ep for ep in entry_points(group="pytest11") if ep.name == "preemu"]
    assert [ep.value for ep in eps] == ["emu.pytest_plugin"]


def test_one_passing_item_per_corpus_loop(pytester):
    pytester.makefile(".s", its_stub=GO114)
    res = pytester.runpytest("--preemu-stub=its_stub.s", "--preemu-max-points=3", "-v")
    loops = api.corpus_loops("go1.14")          # a go1.14 stub: the model world's loops only
    res.assert_outcomes(passed=len(loops))
    for name in loops:
        res.stdout.fnmatch_lines([f"its_stub.s::{name} PASSED*"])
    res.stdout.fnmatch_lines(["preemu: stub its_stub.s, layout default, max points 3"])


def test_a_forgotten_register_fails_naming_it(pytester):
    pytester.makefile(".s", its_stub=_forget("rbx"))
    res = pytester.runpytest("--preemu-stub=its_stub.s", "--preemu-max-points=3", "-k", "sum_loop or xmm_loop",
                             "-rf")
    res.assert_outcomes(failed=2)
    res.stdout.fnmatch_lines(["FAILED its_stub.s::sum_loop - register RBX (corpus loop sum_loop)",
                              "FAILED its_stub.s::xmm_loop - register RBX (corpus loop xmm_loop)"])
    res.stdout.fnmatch_lines(["*register RBX: in 1 corpus loop(s) (sum_loop)", "*expected 0x*", "*actual   0x*"])
    assert "Traceback" not in res.stdout.str()


def test_layout_option(pytester):
    pytester.makefile(".s", its_stub=(ASM / "preempt_amd64_go127.s").read_text())
    res = pytester.runpytest("--preemu-stub=its_stub.s", "--preemu-layout=go1.27", "--preemu-max-points=3",
                             "-k", "sum_loop")
    res.assert_outcomes(passed=1)
    told = pytester.runpytest("--preemu-stub=its_stub.s", "--preemu-max-points=3", "-k", "sum_loop")
    told.assert_outcomes(passed=1)       # without the option, the stub's code tells its layout (issue #40)
    wrong = pytester.runpytest("--preemu-stub=its_stub.s", "--preemu-layout=go1.14", "--preemu-max-points=3",
                               "-k", "sum_loop")
    wrong.assert_outcomes(failed=1)      # the go1.27 stub in the go1.14 world restores X0-X15 from nowhere


def test_xdist_spreads_the_items(pytester):
    pytester.makefile(".s", its_stub=GO114)
    res = pytester.runpytest_subprocess("--preemu-stub=its_stub.s", "--preemu-max-points=2", "-n", "2",
                                        "-k", "sum_loop or xmm_loop or adc_chain or rep_copy")
    res.assert_outcomes(passed=5)        # adc_chain and adc_chain_go127 both match
    res.stdout.fnmatch_lines(["*2 workers*"])


def test_scenarios_directory(pytester):
    d = pytester.mkdir("scen")
    (d / "good.toml").write_text(f'name = "good"\nasm = "{ASM / "sum_loop.s"}"\nentry = "sum_loop"\n'
                                 "registers = { RCX = 4 }\n")
    (d / "bad.toml").write_text(f'name = "bad"\nasm = "{ASM / "sum_loop.s"}"\nentry = "sum_loop"\n'
                                "registers = { RCX = 4 }\n[expect]\nfinal = { RAX = 12345 }\n")
    res = pytester.runpytest("--preemu-scenarios=scen", "-rf")
    res.assert_outcomes(passed=1, failed=1)
    res.stdout.fnmatch_lines(["FAILED scen/bad.toml::bad - scenario bad fails final.RAX"])


def test_fixture_gives_the_api(pytester):
    pytester.makepyfile(test_mine='''
        LOOP = """
        f:
            mov rax, 0
        top:
            add rax, rcx
            dec rcx
            jnz top
            ret
        """

        def test_my_loop(preemu):
            path = preemu.write("loop.s", LOOP)
            rep = preemu.sweep(path, "f", registers={"RCX": 5}, stub=None)
            assert rep.ok, rep.summary()
            assert rep.to_json()["schema"] == "preemu/sweep/1"
            broken = preemu.sweep(path, "f", registers={"RCX": 5})   # --preemu-stub by default
            assert {v.what for v in broken.violations} == {"RBX"}

        def test_with_the_command_line_stub(preemu):
            rep = preemu.check_stub(loops=["sum_loop"], max_points=3)
            assert not rep.ok and {v.what for v in rep.violations} == {"RBX"}
        ''')
    pytester.makefile(".s", its_stub=_forget("rbx"))
    res = pytester.runpytest("test_mine.py", "--preemu-stub=its_stub.s", "-k", "test_")
    res.assert_outcomes(passed=2)


def test_a_stub_with_a_syntax_error_is_a_collection_error(pytester):
    pytester.makefile(".s", its_stub=GO114.replace("pushfq", "pushfqq", 1))
    res = pytester.runpytest("--preemu-stub=its_stub.s")
    assert res.ret == pytest.ExitCode.INTERRUPTED
    res.stdout.fnmatch_lines(["*preemu: error: *its_stub.s:*"])
    assert "Traceback" not in res.stdout.str()


@pytest.mark.parametrize("args, message", [
    (["--preemu-stub=missing.s"], "--preemu-stub missing.s: no such file"),
    (["--preemu-scenarios=nodir"], "--preemu-scenarios nodir: not a directory"),
    (["--preemu-layout=go2"], "--preemu-layout go2: use go1.14 or go1.27"),
    (["--preemu-max-points=0"], "--preemu-max-points must be positive"),
])
def test_usage_errors(pytester, args, message):
    res = pytester.runpytest(*args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{message}*"])


def test_plugin_is_inert_without_its_options(pytester):
    pytester.makepyfile(test_x="def test_x():\n    assert True\n")
    res = pytester.runpytest()
    res.assert_outcomes(passed=1)
    assert "preemu:" not in res.stdout.str()
