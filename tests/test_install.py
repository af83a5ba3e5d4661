"""A real install: build the wheel, install it (not editable) in a fresh venv, and run the commands
from a directory that is not the checkout. The venv sees the engines already installed here through
a .pth file (the wheel goes in with --no-deps), so the test needs no network."""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("install")
    wheels = tmp / "wheels"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, ROOT],
             cwd=tmp)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("preemu-*.whl")
    venv = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp).stdout.strip())
    (site / "engines.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    r = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "-q", wheel], cwd=tmp)
    assert r.returncode == 0, r.stderr
    work = tmp / "elsewhere"
    work.mkdir()
    return venv, work, site


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    venv, work, site = installed
    assert (site / "emu" / "scenarios" / "go" / "stubcorpus" / "main.go").is_file()   # check-stub's real part
    r = _run([venv / "bin" / "python", "-c", "import emu, emu.core.paths as p; print(emu.__file__); print(p.ASM_DIR)"],
             work)
    assert r.returncode == 0, r.stderr
    mod, asm = r.stdout.split()
    assert Path(mod).is_relative_to(site) and Path(asm).is_relative_to(site)
    assert (Path(asm) / "preempt_amd64_go114.s").is_file()


def test_the_wheel_carries_the_compiled_module(installed):
    """emu/engine/_native.c is compiled into the wheel (issue #49) and loaded from the installed package."""
    venv, work, site = installed
    r = _run([venv / "bin" / "python", "-c", "import emu.engine.native as n; print(n.lib.__file__)"], work)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).is_relative_to(site / "emu" / "engine")


def test_commands_work_from_another_directory(installed):
    venv, work, site = installed
    preemu = venv / "bin" / "preemu"
    (work / "loop.s").write_text("count:\n    xor eax, eax\n.l:\n    inc rax\n    cmp rax, rcx\n    jb .l\n    ret\n")
    r = _run([preemu, "sweep", "loop.s", "--func", "count", "--reg", "RCX=5"], work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: every injection" in r.stdout

    (work / "loop.toml").write_text('name = "loop"\ndescription = "d"\nasm = "loop.s"\nentry = "count"\n'
                                    '[registers]\nRCX = 4\n[expect]\nviolations = 0\n')
    r = _run([preemu, "run", "loop.toml"], work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scenario loop: PASS" in r.stdout

    r = _run([preemu, "gen-stub", "--check"], work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("up to date") == 3       # go1.14, go1.27 and go1.27's simd flavour

    stub = site / "emu" / "asm" / "preempt_amd64_go114.s"
    (work / "my_stub.s").write_text(stub.read_text())
    r = _run([preemu, "check-stub", "my_stub.s", "--max-points", "3"], work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sum_loop" in r.stdout and "corpus is empty" not in r.stdout + r.stderr


def _forgetful_stub(site: Path, work: Path) -> Path:
    """The shipped go1.14 stub without the save and the restore of R12."""
    lines = (site / "emu" / "asm" / "preempt_amd64_go114.s").read_text().splitlines(keepends=True)
    kept = [ln for ln in lines if " r12" not in ln.split(";")[0] and "r12," not in ln.split(";")[0]]
    assert len(lines) - len(kept) == 2
    (work / "forgot.s").write_text("".join(kept))
    return work / "forgot.s"


def test_pytest_plugin_in_a_project_that_only_installed_preemu(installed):
    """Issue #15's done-when: `pytest --preemu-stub=its_stub.s` gives one passing item per corpus loop,
    and failing items naming the register for a stub that forgets it."""
    venv, work, site = installed
    py = venv / "bin" / "python"
    (work / "its_stub.s").write_text((site / "emu" / "asm" / "preempt_amd64_go114.s").read_text())
    loops = _run([py, "-c", "import emu; print(' '.join(emu.corpus_loops('go1.14')))"], work).stdout.split()
    assert len(loops) > 10
    r = _run([py, "-m", "pytest", "--preemu-stub=its_stub.s", "--preemu-max-points=3", "-v", "-p", "no:cacheprovider"],
             work)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    for name in loops:
        assert f"its_stub.s::{name} PASSED" in r.stdout, name
    assert f"{len(loops)} passed" in r.stdout

    _forgetful_stub(site, work)
    r = _run([py, "-m", "pytest", "--preemu-stub=forgot.s", "--preemu-max-points=3", "-rf", "-p", "no:cacheprovider"],
             work)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    import re
    failed = re.findall(r"^FAILED forgot\.s::(\w+) - register R12", r.stdout, re.M)
    named = re.findall(r"^register R12 \(corpus loop (\w+)\)$", r.stdout, re.M)   # each failure's first line
    assert failed and sorted(failed) == sorted(named) and set(failed) <= set(loops), r.stdout[-3000:]


def test_sarif_from_the_installed_cli_points_at_the_stub_line(installed):
    import json
    venv, work, site = installed
    stub = _forgetful_stub(site, work)
    r = _run([venv / "bin" / "preemu", "check-stub", "forgot.s", "--max-points", "3", "--sarif", "out.sarif"], work)
    assert r.returncode == 1, r.stdout + r.stderr
    (res,) = json.loads((work / "out.sarif").read_text())["runs"][0]["results"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "forgot.s" and "register R12" in res["message"]["text"]
    line = stub.read_text().splitlines()[loc["region"]["startLine"] - 1]
    assert line.split(";")[0].strip() == "call asyncPreempt2"      # nothing after the call restores R12
