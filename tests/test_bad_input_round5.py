"""Bad input, round 5 (issue #51 item 4): the internal errors, hangs and misleading messages the round's
547-case pass found, each a one-line error with exit 2 naming the problem, or the right result.

The table has the shape of test_bad_input_round4.py's (its run_case runs each case in-process): (id, files,
argv, exit code, phrase of the message). The cases that need a process or a server beside the command (a FIFO,
a service at --executor) follow it.
"""
from __future__ import annotations

import os
import socket
import threading

import pytest
from conftest import ROOT
from test_bad_input_round4 import GO, SC, SUM, run_case

from emu.core import errors
from emu.drive import shards

LONG = "a" * 5000                       # a file name longer than NAME_MAX (255): ENAMETOOLONG
INLINED = "package main\n\nimport \"fmt\"\n\nfunc add(a, b int) int { return a + b }\n\n" \
          "func main() {\n\ts := 0\n\tfor i := 0; i < 10; i++ {\n\t\ts = add(s, i)\n\t}\n\tfmt.Println(s)\n}\n"
SPIN = "{go}/spinafter"


def _hello_with_byte(offset: int, value: int):
    def make() -> bytes:
        from emu.front import gobuild
        data = bytearray(gobuild.build(SC / "go" / "hello").binary.read_bytes())
        data[offset] = value
        return bytes(data)
    return make


def _stripped() -> bytes:
    """hello world without .symtab, as `go build -ldflags=-s` makes it (its section renamed out of the way)."""
    from emu.front import gobuild
    data = gobuild.build(SC / "go" / "hello").binary.read_bytes()
    assert data.count(b".symtab\0") == 1
    return data.replace(b".symtab\0", b".nosymt\0")


CASES = [
    # --- internal errors ---------------------------------------------------------------------------------
    ("results file holding a JSON list", {"r.jsonl": "[1,2,3]\n"}, SUM + ["--results", "r.jsonl"], 2,
     "r.jsonl:1: not a preemu results line (a JSON list, not the object"),
    ("results file holding a JSON string", {"r.jsonl": '"x"\n'}, SUM + ["--results", "r.jsonl"], 2,
     "r.jsonl:1: not a preemu results line (a JSON str"),
    ("TOML array 5,000 deep: run", {"d.toml": "x = " + "[" * 5000 + "]" * 5000 + "\n"}, ["run", "d.toml"], 2,
     "d.toml: arrays or inline tables nested more deeply than Python's TOML reader can follow"),
    ("TOML inline table 5,000 deep: exec", {"d.toml": "x = " + "{a=" * 5000 + "}" * 5000 + "\n"},
     ["exec", "d.toml"], 2, "d.toml: arrays or inline tables nested more deeply"),
    ("file name too long: sweep .s", {}, ["sweep", LONG + ".s", "--func", "f"], 2, "file name too long"),
    ("file name too long: sweep Go", {}, ["sweep", LONG, "--func", "f"], 2, "file name too long"),
    ("file name too long: exec", {}, ["exec", LONG], 2, "file name too long"),
    ("file name too long: --stub", {}, SUM + ["--stub", LONG + ".s"], 2, "file name too long"),
    # --- misleading messages ------------------------------------------------------------------------------
    ("a scenario given to sweep", {}, ["sweep", "{sc}/sum_loop.toml", "--func", "f"], 2,
     "sum_loop.toml: a scenario file, not assembly or a Go program: run it with `preemu run"),
    ("a scenario given to disasm", {}, ["disasm", "{sc}/go/hello.toml"], 2, "hello.toml: a scenario file"),
    ("a scenario given as --stub", {}, SUM + ["--stub", "{sc}/sum_loop.toml"], 2, "a scenario file"),
    ("a directory without Go files", {}, ["sweep", "{root}/docs", "--func", "f"], 2,
     "docs: a directory without .go files, so not a Go package: give a package directory"),
    ("a README given to disasm", {"README.md": "# Title\n\nSome prose.\n"}, ["disasm", "README.md"], 2,
     "(the file was read as assembly: a program is an Intel-syntax .s file, a Go binary"),
    ("a README given to check-stub", {"README.md": "# Title\n\nSome prose.\n"}, ["check-stub", "README.md"], 2,
     "(the file was read as assembly"),
    ("ELFCLASS32 header: exec", {"prog": _hello_with_byte(4, 1)}, ["exec", "prog"], 2,
     "prog: a 32-bit ELF file (ELFCLASS32); preemu runs 64-bit x86-64 (ELFCLASS64) executables"),
    ("ELFCLASS32 header: disasm", {"prog": _hello_with_byte(4, 1)}, ["disasm", "prog"], 2,
     "a 32-bit ELF file (ELFCLASS32)"),
    ("big-endian header: exec", {"prog": _hello_with_byte(5, 2)}, ["exec", "prog"], 2, "a big-endian ELF file"),
    ("another machine: exec", {"prog": _hello_with_byte(18, 183)}, ["exec", "prog"], 2,
     "built for another machine (EM_AARCH64)"),
    ("/bin/ls: exec", {}, ["exec", "/bin/ls"], 2, "not a Go program (no .go.buildinfo section, and it is linked "
     "dynamically"),
    ("/bin/ls: sweep", {}, ["sweep", "/bin/ls", "--func", "main"], 2, "not a Go program"),
    ("/bin/ls: disasm", {}, ["disasm", "/bin/ls"], 2, "not a Go program (no .go.buildinfo section)"),
    ("a stripped Go binary: exec", {"prog": _stripped}, ["exec", "prog"], 2,
     "prog: a stripped Go binary (no .symtab: built with -ldflags=-s, or strip)"),
    ("a stripped Go binary: sweep", {"prog": _stripped}, ["sweep", "prog", "--func", "main.main"], 2,
     "a stripped Go binary"),
    ("a package with tests given to exec", {}, ["exec", SPIN], 2, "not a main package, so nothing to run (preemu "
     "needs a program: package main with func main); its tests make one: give --test TestEnds (it has TestEnds, "
     "TestSpinAfter)"),
    ("an inlined function", {"inl.go": INLINED}, ["sweep", "inl.go", "--func", "add"], 2,
     "--func 'add': main.add has no code of its own in the program: the compiler inlined it into every caller"),
    ("a loop swept without --reg", {}, ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop"], 2,
     "no --reg was given, so every entry register holds a random 64-bit value from --seed"),
    ("a loop with a huge bound given", {}, ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg",
                                            "RCX=99999999999"], 2,
     "did not finish within 20000000 instructions (stopped at 0x400004 sum_loop+0x4: mov r8, rdx  "
     "({asm}/sum_loop.s:9)); raise the budget with --budget"),
    # --- hangs: a bounded, named error -----------------------------------------------------------------------
    ("a test that spins after F returns", {}, ["sweep", SPIN, "--test", "TestSpinAfter", "--func", "Sum",
                                               "--budget", "100000", "-j", "1"], 2,
     "Sum returned, but the program had not ended 500,000 instructions later"),
]


@pytest.mark.parametrize("files,argv,code,needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, monkeypatch, capsys, files, argv, code, needle):
    run_case(tmp_path, monkeypatch, capsys, files, argv, code, needle)


def test_the_right_results_beside_the_bad_ones(tmp_path, monkeypatch, capsys):
    """The correct inputs next to the cases above still work: a test that ends, a function that is not
    inlined, a real results file read back, a scenario's options (its own budget) when none is given."""
    from emu import cli
    assert cli.main(["sweep", str(GO / "spinafter"), "--test", "TestEnds", "--func", "Sum", "--budget", "100000",
                     "-j", "1", "-q"]) == 0
    (tmp_path / "inl.go").write_text(INLINED)
    assert cli.main(["sweep", str(tmp_path / "inl.go"), "--func", "main.main", "-j", "1", "-q", "--max-points",
                     "50"]) == 0
    res = tmp_path / "r.jsonl"
    argv = [str(ROOT / "asm" / "sum_loop.s"), "--func", "sum_loop", "--reg", "RCX=5", "--results", str(res), "-j", "1"]
    assert cli.main(["sweep", *argv]) == 0 and cli.main(["sweep", *argv]) == 0
    assert "resumed" in capsys.readouterr().err or res.read_text().count("\n") == 1


def test_a_results_line_of_this_sweep_that_cannot_be_read_back(tmp_path, monkeypatch, capsys):
    import json
    res = tmp_path / "r.jsonl"
    argv = ["sweep", str(ROOT / "asm" / "sum_loop.s"), "--func", "sum_loop", "--reg", "RCX=5", "--results",
            str(res), "-j", "1"]
    from emu import cli
    assert cli.main(argv) == 0
    rec = json.loads(res.read_text())
    rec["result"]["per_pc"] = 5
    res.write_text(json.dumps(rec) + "\n")
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "r.jsonl:1: a results line of this sweep whose shard cannot be read back" in err and "internal" not in err


def test_command_line_options_win_over_an_exec_scenarios_keys(capsys):
    """`exec scenario.toml --max-virtual-ms` was silently replaced by the file's max_virtual_ms = 50: now the
    command line's 0.01 ms stops hello world before it prints, and the scenario's expectations fail."""
    from emu import cli
    assert cli.main(["exec", str(SC / "go" / "hello.toml"), "--max-virtual-ms", "0.01"]) == 1
    err = capsys.readouterr().err
    assert "FAILED" in err and "does not match the output ''" in err, err
    assert cli.main(["exec", str(SC / "go" / "hello.toml")]) == 0


# --- a FIFO as input: a bounded wait, not a hang ------------------------------------------------------------
@pytest.mark.parametrize("argv", [["sweep", "in.s", "--func", "f"], ["run", "in.toml"], ["disasm", "in.s"],
                                  ["exec", "in.toml"], SUM + ["--stub", "in.s"]])
def test_a_fifo_nobody_writes_to_is_a_bounded_error(tmp_path, monkeypatch, capsys, argv):
    monkeypatch.setattr(errors, "PIPE_WAIT_S", 0.3)
    for name in ("in.s", "in.toml"):
        os.mkfifo(tmp_path / name)
    run_case(tmp_path, monkeypatch, capsys, {}, argv, 2,
             "cannot read: it is a pipe (FIFO) and nothing came through it for 0.3 s; give the file itself")


def test_a_fifo_with_a_writer_is_read_to_its_end(tmp_path, monkeypatch, capsys):
    """The bound is on silence, not on the pipe: a writer that comes after a while and writes in pieces is read."""
    import time
    monkeypatch.setattr(errors, "PIPE_WAIT_S", 5.0)
    fifo = tmp_path / "in.s"
    os.mkfifo(fifo)
    text = (ROOT / "asm" / "sum_loop.s").read_bytes()

    def write():
        time.sleep(0.5)
        with open(fifo, "wb") as f:
            for i in range(0, len(text), 100):
                f.write(text[i:i + 100])
                f.flush()
    t = threading.Thread(target=write)
    t.start()
    from emu import cli
    try:
        assert cli.main(["disasm", str(fifo)]) == 0
    finally:
        t.join()
    assert "sum_loop" in capsys.readouterr().out


# --- a service at --executor that is not a Dask scheduler -----------------------------------------------------
def _server(first_bytes: bytes | None):
    """A TCP server on a free port that accepts and writes `first_bytes` (None: says nothing) to each client."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    held = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            held.append(c)
            if first_bytes is not None:
                c.sendall(first_bytes)
                c.close()
    threading.Thread(target=serve, daemon=True).start()
    return srv, held


@pytest.mark.parametrize("first, needle", [
    (b"HTTP/1.1 400 Bad Request\r\n\r\n" * 10, "is not a Dask scheduler (its first bytes are b'HTTP/1.1', not a "
     "Dask handshake)"),
    (b"", "is not a Dask scheduler (it closed the connection without a word"),
    (None, "accepted the connection but sent nothing for 0.5 s"),
])
def test_an_executor_that_is_not_a_dask_scheduler(tmp_path, monkeypatch, capsys, first, needle):
    """An HTTP server's first bytes were read by distributed as a frame length (MemoryError), a silent
    service hung the sweep: each is one line naming the address."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(shards, "DASK_WAIT_S", 0.5)
    srv, held = _server(first)
    try:
        port = srv.getsockname()[1]
        run_case(tmp_path, monkeypatch, capsys, {}, SUM + ["--executor", f"dask://127.0.0.1:{port}"], 2,
                 f"--executor: tcp://127.0.0.1:{port} " + needle.replace("0.5 s", f"{0.5} s"))
    finally:
        srv.close()
        for c in held:
            c.close()


def test_the_probe_reads_a_dask_schedulers_handshake_as_one():
    """The passing case: a real scheduler's first frame is its handshake, the probe lets it through."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, host="127.0.0.1", protocol="tcp://",
                                  dashboard_address=None) as cluster:
        shards.probe_scheduler(cluster.scheduler_address)


def test_a_pattern_sweep_whose_only_failures_are_functions_not_swept_says_so():
    """`--func '*'` was 'FAIL: 0 of N swept function(s) failed; 1 could not be swept': the verdict names what
    failed, not a count of zero."""
    from emu.drive.manysweep import FunctionResult, ManyResult
    from emu.output.many_report import ManySweepReport
    r = ManyResult("prog", "*", (), [FunctionResult("main.f", None, "error", "--func 'main.f': something"),
                                      FunctionResult("main.g", None, "not called", "main.g was never called")])
    text = ManySweepReport(r).render()
    assert text.rstrip().splitlines()[-1] == "FAIL: 1 matched function(s) could not be swept (each said why above)"
    assert "0 of" not in text and "--- main.f: not swept: --func 'main.f': something" in text


def test_a_huge_assembly_file_is_refused_before_keystone_takes_gigabytes(tmp_path, monkeypatch, capsys):
    """A 200,001-line .s held Keystone at 1.1 GB for half a minute in every worker: past MAX_INSNS instructions it
    is one line; at the bound it assembles (checked with a bound of 5 on a 5-instruction loop, and the real bound
    on a file one past it)."""
    from emu.front import asmfront
    big = "f:\n" + "    inc rax\n" * asmfront.MAX_INSNS + "    ret\n"
    run_case(tmp_path, monkeypatch, capsys, {"big.s": big}, ["disasm", "big.s"], 2,
             f"big.s: {asmfront.MAX_INSNS + 1:,} instructions, more than the {asmfront.MAX_INSNS:,} preemu assembles")
    from test_bad_input_round4 import LOOP
    monkeypatch.setattr(asmfront, "MAX_INSNS", 5)
    run_case(tmp_path, monkeypatch, capsys, {"t.s": LOOP + "    nop\n"}, ["disasm", "t.s"], 2,
             "t.s: 6 instructions, more than the 5 preemu assembles")
    from emu import cli
    (tmp_path / "t.s").write_text(LOOP)
    assert cli.main(["disasm", str(tmp_path / "t.s")]) == 0


def test_a_packages_program_build_never_gets_its_test_binary_from_the_cache():
    """Outside a module the test binary's sources are the program's: the two builds shared a cache key, so
    `sweep PKG --func F` after `sweep PKG --test T` swept the test binary (and a library package seemed to build)."""
    from emu.core.errors import EmuError
    from emu.front import gobuild
    pkg = GO / "spinafter"
    assert gobuild.build_key(pkg, None, test=True) != gobuild.build_key(pkg, None)
    assert gobuild.build(pkg, test=True).binary.is_file()
    with pytest.raises(EmuError, match="not a main package"):
        gobuild.build(pkg)
