"""Shared fixtures: assemble snippets and build worlds without repeating setup in every test."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from emu.front import asmfront
from emu.drive import loader, sweeper as sweep
from emu.core import memmap
from emu.model import rtcode

ROOT = Path(__file__).resolve().parent.parent

# A suite started in the background by a shell without job control (`make test &`, `nohup`) inherits SIGINT
# ignored, and so would every program the Ctrl-C tests start (an ignored signal stays ignored across exec):
# the tests send SIGINT and need its default action in their children, as a terminal gives it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
ASM = ROOT / "asm"
DATA = Path(__file__).resolve().parent / "data"


def cli_run(*args) -> tuple[int, str, str]:
    """`preemu ARGS` in this process: (exit status, stdout, stderr), argparse's own exits included."""
    import contextlib
    import io
    from emu import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in args], out)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def assemble(text: str, name: str = "t.s"):
    """Assemble a snippet as a user program."""
    return asmfront.assemble_text(text, name, memmap.TEXT_BASE, rtcode.runtime_externs(), memmap.DATA_BASE)


def world_for(program, entry: str, layout: str = "go1.14", stub=None, seed: int = 1, **registers):
    return loader.build_world(program, entry, layout, stub, seed, registers)


def sweep_text(text: str, entry: str, layout: str = "go1.14", stub=None, max_points: int = 100_000, **registers):
    prog = assemble(text)
    w = world_for(prog, entry, layout, stub, **registers)
    return sweep.sweep(w, entry, 1, max_points)


def sweep_file(path, entry: str, layout: str = "go1.14", stub=None, max_points: int = 100_000,
               force_unsafe: bool = False, **registers):
    prog = loader.load_program(path)
    w = world_for(prog, entry, layout, stub, **registers)
    return sweep.sweep(w, entry, 1, max_points, force_unsafe=force_unsafe)


def native_output(src, n: int) -> list[str]:
    """What a test program in tests/data/go prints (println, to stderr) when its binary runs natively
    with n arguments, word by word."""
    import subprocess

    from emu.front import gobuild
    binary = gobuild.build(src).binary
    return subprocess.run([str(binary)] + ["x"] * n, capture_output=True, text=True, check=True).stderr.split()


def native_vs_preemu(src, program, calls, n: int) -> tuple[list[str], list[str]]:
    """native_output(src, n), and what preemu's runs of the same functions return (RAX at goexit):
    calls = [(func, argument)]."""
    ours = [str(sweep.run_reference(loader.build_world(program, f"main.{func}", registers={"RAX": arg}), 10**8)
                .final["RAX"]) for func, arg in calls]
    return native_output(src, n), ours


@pytest.fixture
def tmp_stub(tmp_path):
    """Write a variant of a generated stub: tmp_stub(edit) with edit(text) -> text; returns the path."""
    def make(edit, layout: str = "go1.14", name: str = "stub.s"):
        from emu.core import stubgen
        src = stubgen.stub_path(layout).read_text()
        out = edit(src)
        assert out != src, "the edit changed nothing"
        p = tmp_path / name
        p.write_text(out)
        return p
    return make


class FakeSigContext:
    """A sigctxt stand-in for oracle/injector tests: records stores, SP and PC writes."""

    def __init__(self, sp: int):
        self.sp, self.rip, self.stores = sp, None, []

    @property
    def pushed(self) -> bool:
        return self.rip is not None

    def rsp(self) -> int:
        return self.sp

    def set_rsp(self, v: int) -> None:
        self.sp = v

    def set_rip(self, v: int) -> None:
        self.rip = v

    def store64(self, a: int, v: int) -> None:
        self.stores.append((a, v))


# ---- Go corpus (tests/go): built once per session through gobuild's content cache ------------------
GO_CORPUS = Path(__file__).resolve().parent / "go"


class GoCorpus:
    """The Go corpus: `prog` is tests/go/corpus built with -gcflags=-S (its listing in `listing`),
    `asm_prog` the Go-syntax assembly package tests/go/asmpkg; `build(name, gcflags)` builds any entry,
    `binary(path)` opens a GoBinary once per path."""

    root = GO_CORPUS

    def __init__(self):
        from emu.front import gobuild
        self._gobuild = gobuild
        r = gobuild.build(GO_CORPUS / "corpus", "-S")
        self.prog, self.listing = r.binary, r.listing
        self.asm_prog = gobuild.build(GO_CORPUS / "asmpkg").binary
        self._open: dict = {}

    def build(self, name: str, gcflags: str | None = None):
        return self._gobuild.build(GO_CORPUS / name, gcflags)

    def binary(self, path=None):
        from emu.front.gobinary import GoBinary
        path = Path(path or self.prog)
        if path not in self._open:
            self._open[path] = GoBinary.open(path)
        return self._open[path]


def elf_copy_without(src: Path, dst: Path, prefix: str) -> Path:
    """Copy an ELF file, renaming every section whose name starts with prefix (same length, so the
    string table keeps its layout): what a reader sees of a binary built without those sections."""
    from elftools.elf.elffile import ELFFile
    raw = bytearray(src.read_bytes())
    with src.open("rb") as fh:
        elf = ELFFile(fh)
        names = elf.get_section(elf["e_shstrndx"])["sh_offset"]
        for sec in elf.iter_sections():
            if sec.name.startswith(prefix):
                o = names + sec["sh_name"]
                raw[o:o + len(prefix)] = b"X" * len(prefix)
    dst.write_bytes(bytes(raw))
    return dst


@pytest.fixture(scope="session")
def go_corpus() -> GoCorpus:
    return GoCorpus()
