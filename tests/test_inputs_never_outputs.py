"""An output path that resolves to an input is refused before anything is written (issue #51 item 2)."""
import shutil

import pytest
from conftest import cli_run

from emu.front import gobuild


@pytest.fixture
def pkg(tmp_path):
    d = tmp_path / "kinds"
    shutil.copytree("tests/data/go/kinds", d)
    return d


@pytest.mark.parametrize("cmd, opt", [("sweep", "--junit-xml"), ("sweep", "--sarif"), ("sweep", "--results"),
                                      ("exec", "--trace"), ("explain", "--html")])
def test_an_output_over_a_source_of_the_input_package_is_refused(pkg, cmd, opt):
    src = pkg / "main.go"
    before = src.read_bytes()
    args = {"sweep": ("--func", "mixed", "--max-points", "5"), "exec": (),
            "explain": ("--func", "spin", "--reg", "RAX=3", "--at", "5")}[cmd]
    code, out, err = cli_run(cmd, pkg, *args, opt, src)
    assert code == 2 and "never writes over its inputs" in err
    assert src.read_bytes() == before


def test_exec_trace_over_the_binary_it_runs_is_refused(tmp_path):
    binary = tmp_path / "prog"
    shutil.copy(gobuild.build("tests/data/go/kinds").binary, binary)
    before = binary.read_bytes()
    code, out, err = cli_run("exec", binary, "--trace", binary)
    assert code == 2 and "that is the input" in err and binary.read_bytes() == before


def test_check_stub_sarif_over_the_stub_is_refused(tmp_path):
    stub = tmp_path / "stub.s"
    shutil.copy("asm/preempt_amd64_go114.s", stub)
    before = stub.read_bytes()
    code, out, err = cli_run("check-stub", stub, "--sarif", stub)
    assert code == 2 and stub.read_bytes() == before


def test_an_output_beside_the_sources_is_still_allowed(pkg, tmp_path):
    code, out, err = cli_run("sweep", pkg, "--func", "mixed", "--max-points", "5", "--junit-xml", pkg / "report.xml")
    assert code == 0, err
    assert (pkg / "report.xml").exists()
