"""Bad input found by trying preemu as a newcomer would (issue #23): each case ends in exit 2 with one line
naming the option or file, before any work where the problem is knowable up front."""
from __future__ import annotations

import io
import struct
import subprocess
import sys

import pytest
from conftest import ROOT

from emu import cli
from emu.front import gobuild

SC = ROOT / "scenarios"
SUM = str(ROOT / "asm" / "sum_loop.s")


def _run(argv, capsys) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv], io.StringIO())
    return code, capsys.readouterr().err


def _static_elf(path) -> None:
    """A static x86-64 executable that is not Go: exit(0) in two instructions."""
    code = bytes([0xB8, 60, 0, 0, 0, 0x31, 0xFF, 0x0F, 0x05])          # mov eax, 60; xor edi, edi; syscall
    base, off = 0x400000, 0x78
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9), 2, 62, 1, base + off, 64, 0, 0,
                       64, 56, 1, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, off + len(code), off + len(code), 0x1000)
    path.write_bytes(ehdr + phdr + code)


def _hello() -> bytes:
    return gobuild.build(SC / "go" / "hello").binary.read_bytes()


CASES = [
    ("junit into /proc", lambda t: ["sweep", SUM, "--func", "sum_loop", "--junit-xml", "/proc/preemu.xml"],
     "--junit-xml /proc/preemu.xml: cannot write there"),
    ("timeline into /sys", lambda t: ["run", SC / "starvation.toml", "--timeline", "/sys/preemu.svg"],
     "--timeline /sys/preemu.svg: cannot write there"),
    ("two outputs, one path", lambda t: ["run", SC / "starvation.toml", "--trace", t / "x.out", "--timeline",
                                         t / "x.out"], "--timeline"),
    ("exec --max-virtual-ms nan", lambda t: ["exec", SC / "go" / "hello", "--max-virtual-ms", "nan"],
     "--max-virtual-ms must be a positive number, got nan"),
    ("exec --max-virtual-ms inf", lambda t: ["exec", SC / "go" / "hello", "--max-virtual-ms", "inf"],
     "--max-virtual-ms must be a positive number, got inf"),
    ("exec --max-virtual-ms negative", lambda t: ["exec", SC / "go" / "hello", "--max-virtual-ms", "-5"],
     "--max-virtual-ms must be a positive number, got -5"),
    ("exec --ns-per-insn huge", lambda t: ["exec", SC / "go" / "hello", "--ns-per-insn", str(10 ** 12)],
     "--ns-per-insn must be at most 1,000,000"),
    ("dask address without a port", lambda t: ["sweep", SUM, "--func", "sum_loop", "--executor",
                                               "dask://localhost:notaport"], "write dask://HOST:PORT"),
    ("run of an exec scenario", lambda t: ["run", SC / "go" / "hello.toml"], "run it with `preemu exec"),
]


@pytest.mark.parametrize("name, argv, first", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(name, argv, first, tmp_path, capsys):
    code, err = _run(argv(tmp_path), capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and first in lines[0], err
    assert "internal error" not in err


def test_nothing_is_left_behind_by_the_output_check(tmp_path, capsys):
    out = tmp_path / "j.xml"
    code, _ = _run(["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=2", "--junit-xml", out,
                    "--sarif", "/proc/preemu.sarif"], capsys)
    assert code == 2 and not out.exists()          # the check opened j.xml, then removed what it created


def test_a_binary_results_file(tmp_path, capsys):
    bad = tmp_path / "r.jsonl"
    bad.write_bytes(b"\xff\xfe\x00\x01binary")
    code, err = _run(["sweep", SUM, "--func", "sum_loop", "--reg", "RCX=2", "--results", bad], capsys)
    assert code == 2 and "not a preemu results file" in err


def test_an_unusable_cache(tmp_path, capsys, monkeypatch):
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv("PREEMU_CACHE", str(f))
    code, err = _run(["sweep", ROOT / "tests" / "go" / "corpus", "--func", "sumsq"], capsys)
    assert code == 2 and f"PREEMU_CACHE={f}: cannot use it as preemu's build cache" in err


def test_elf_files_that_are_not_static_go_programs(tmp_path, capsys):
    data = _hello()
    cut = tmp_path / "truncated"
    cut.write_bytes(data[:3000])
    code, err = _run(["exec", cut], capsys)
    assert code == 2 and "truncated or damaged ELF" in err and "Traceback" not in err
    pie = tmp_path / "pie"
    pie.write_bytes(data[:16] + struct.pack("<H", 3) + data[18:])               # e_type ET_DYN, no PT_INTERP
    code, err = _run(["exec", pie], capsys)
    assert code == 2 and "position-independent" in err and "CGO_ENABLED" not in err
    c_binary = tmp_path / "c_static"
    _static_elf(c_binary)
    code, err = _run(["exec", c_binary], capsys)
    assert code == 2 and "not a Go program" in err and "stripped" not in err


def test_a_package_that_is_not_main(tmp_path, capsys):
    pkg = tmp_path / "lib"
    pkg.mkdir()
    (pkg / "lib.go").write_text("package lib\n\nfunc F() int { return 1 }\n")
    code, err = _run(["exec", pkg], capsys)
    assert code == 2 and "not a main package" in err and "not an ELF" not in err


def test_traceback_keeps_the_exit_status(capsys):
    code, err = _run(["sweep", "nosuch.s", "--func", "f", "--traceback"], capsys)
    assert code == 2 and "Traceback" in err and "preemu: error:" in err


def test_a_scheduler_scenario_has_a_duration_cap(tmp_path, capsys):
    sc = (SC / "starvation.toml").read_text()
    bad = tmp_path / "long.toml"
    bad.write_text("duration_ms = 1e9\n" + "\n".join(ln for ln in sc.splitlines() if not ln.startswith("duration_ms")))
    code, err = _run(["run", bad], capsys)
    assert code == 2 and "duration_ms" in err and "at most 10,000 ms" in err


def test_not_covered_says_when_it_lists_only_some(tmp_path, capsys):
    src = tmp_path / "dead.s"                 # twelve instructions after an unconditional jump never run
    src.write_text("f:\n  mov rax, 1\n  jmp done\n" + "  add rax, 2\n" * 12 + "done:\n  ret\n")
    out = io.StringIO()
    cli.main(["sweep", str(src), "--func", "f"], out)
    line = next(ln for ln in out.getvalue().splitlines() if "not covered" in ln)
    shown = [w for w in line.split() if w.startswith("0x")]
    assert int(line.split()[2]) == 12 and len(line) <= 120 and 0 < len(shown) < 12
    assert line.rstrip().endswith(f"... and {12 - len(shown)} more in --json")


def test_the_plugin_runs_the_projects_own_scenarios(tmp_path):
    """The README's plugin command pointed at scenarios/, which holds exec scenarios too (scenarios/go/)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        f"--preemu-scenarios={SC}"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:]
    assert " passed" in r.stdout and "error" not in r.stdout.lower()


def test_exec_takes_options_after_the_target_and_program_arguments_after_a_double_dash(capsys):
    out = io.StringIO()
    code = cli.main(["exec", str(SC / "go" / "hello"), "--json", "--", "-x", "y"], out)
    import json
    j = json.loads(out.getvalue())
    assert code == 0 and j["argv"][1:] == ["-x", "y"] and j["exit_code"] == 0


_EXEC_CTRL_C = """
import os, signal, sys
from emu import cli
from emu.linux import process
orig, n = process.Process._run_slice, [0]
def run_slice(self, *a):
    orig(self, *a)
    n[0] += 1
    if n[0] == 200:                      # a real SIGINT, 200 slices into a program that never ends
        os.kill(os.getpid(), signal.SIGINT)
process.Process._run_slice = run_slice
sys.exit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_during_exec_stops_between_slices_with_the_partial_report():
    r = subprocess.run([sys.executable, "-c", _EXEC_CTRL_C, "exec", str(SC / "go" / "starve"), "--env",
                        "GODEBUG=asyncpreemptoff=1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("preemu: interrupted (Ctrl-C) after ") and "partial" in lines[-1]
    assert any("instructions at 1 ns each" in ln for ln in lines)


def test_a_scheduler_scenario_of_a_go_program_is_refused(tmp_path, capsys):
    """#23 N1: the model scheduler would run a Go 1.27 binary with the go1.14 stub and rules (its name rule then
    calls internal/runtime prologues safe, where runtime/preempt.go:463-465 refuses them)."""
    from emu.front import gobuild
    binary = gobuild.build(ROOT / "tests" / "go" / "corpus").binary
    bad = tmp_path / "gosched.toml"
    bad.write_text(f'name = "g"\nasm = "{binary}"\n[[goroutines]]\nentry = "sumsq"\n')
    code, err = _run(["run", bad], capsys)
    assert code == 2 and "asm" in err and "preemu exec" in err and len(err.strip().splitlines()) == 1


def test_a_scheduler_scenario_shows_its_progress():
    """#23 item 4: a long scheduler scenario says on a terminal how much of its virtual time has run."""
    from emu.drive import scenario
    sc = scenario.load(SC / "starvation.toml")
    out = io.StringIO()
    printer = scenario.progress_printer(sc.duration_ms, out, after_s=0, every_s=0)
    res, _ = scenario.run_sched(sc, None, printer)
    printer.finish()
    shown = [ln for ln in out.getvalue().split("\r") if ln.startswith("preemu: ")]
    assert len(shown) > 10 and all(f"of {sc.duration_ms:,.1f} ms of virtual time" in ln for ln in shown)
    ms = [float(ln.split()[1].replace(",", "")) for ln in shown]
    assert ms == sorted(ms) and 0 < ms[-1] <= sc.duration_ms and res is not None
    assert out.getvalue().endswith("\r\x1b[K")
