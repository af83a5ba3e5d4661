"""Done when: a project that only pip-installs preemu (a wheel, not this checkout) runs
`pytest --preemu-stub=its_stub.s`: one passing item per corpus loop for a good stub, failing items
naming the register for a stub that forgets it, and `preemu check-stub --sarif` locating the
failure at the stub's line.

The wheel is built from a copy of the sources and installed with --no-deps into a fresh venv; the
engines and pytest come from this venv's site-packages through a .pth of symlinks that leaves out
preemu itself, so the corpus must come from the wheel's package data.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import ASM, ROOT


def _sh(*cmd, cwd=None, ok=(0,)) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True)
    assert p.returncode in ok, f"{cmd}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv with the preemu wheel installed; returns its python."""
    tmp = tmp_path_factory.mktemp("installed")
    src = tmp / "src"
    src.mkdir()
    for name in ("emu", "asm", "scenarios"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.svg"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    _sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src)
    (wheel,) = (tmp / "dist").glob("preemu-*.whl")
    venv = tmp / "venv"
    _sh(getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", venv)
    py = venv / "bin" / "python"
    _sh(sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "-q", wheel)
    deps = tmp / "deps"
    deps.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        if not re.match(r"(preemu|__editable__|emu$|_virtualenv)", entry.name) and not entry.name.endswith(".pth"):
            (deps / entry.name).symlink_to(entry)
    purelib = _sh(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    Path(purelib, "zz_dev_deps.pth").write_text(f"{deps}\n")
    return py


@pytest.fixture
def project(tmp_path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    go114 = (ASM / "preempt_amd64_go114.s").read_text()
    (d / "its_stub.s").write_text(go114)
    forgot = [ln for ln in go114.splitlines(keepends=True) if not re.search(r"\br12\b", ln.split(";")[0])]
    assert len(forgot) == len(go114.splitlines()) - 2
    (d / "forgot.s").write_text("".join(forgot))
    return d


def test_the_wheel_carries_the_corpus(installed, project):
    out = _sh(installed, "-c", "import emu, emu.paths as d; print(emu.__file__); print(d.SCENARIOS_DIR); "
              "print(len(emu.corpus_loops()))", cwd=project).stdout.split()
    venv = installed.parent.parent
    assert Path(out[0]).is_relative_to(venv) and Path(out[1]).is_relative_to(venv), out
    from emu import api
    assert int(out[2]) == len(api.corpus_loops())


def test_pytest_in_a_project_that_only_installed_preemu(installed, project):
    from emu import api
    loops = api.corpus_loops()
    good = _sh(installed, "-m", "pytest", "--preemu-stub=its_stub.s", "--preemu-max-points=3", "-v",
               "-p", "no:cacheprovider", cwd=project)
    for name in loops:
        assert re.search(rf"^its_stub\.s::{name} PASSED", good.stdout, re.M), name
    assert f"{len(loops)} passed" in good.stdout

    bad = _sh(installed, "-m", "pytest", "--preemu-stub=forgot.s", "--preemu-max-points=3", "-rf",
              "-p", "no:cacheprovider", cwd=project, ok=(1,))
    failed = re.findall(r"^FAILED forgot\.s::(\w+) - register R12 \(corpus loop \1\)$", bad.stdout, re.M)
    assert failed and set(failed) <= set(loops)


def test_sarif_from_the_installed_cli_points_at_the_stub_line(installed, project):
    preemu = installed.parent / "preemu"
    _sh(preemu, "check-stub", "forgot.s", "--max-points", "3", "--sarif", "out.sarif", cwd=project, ok=(1,))
    log = json.loads((project / "out.sarif").read_text())
    (res,) = log["runs"][0]["results"]
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "forgot.s"
    line = (project / "forgot.s").read_text().splitlines()[loc["region"]["startLine"] - 1]
    assert line.split(";")[0].strip() == "call asyncPreempt2"
    assert "register R12" in res["message"]["text"]
