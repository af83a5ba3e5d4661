"""`preemu exec` start-up (issue #39 item 3): what is made lazy or remembered on disk gives what the eager work
gave, a damaged cache entry is ignored, and a trivial program's run imports none of the heavy libraries."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import capstone
import keystone
import pytest

from emu.core.errors import EmuError
from emu.engine import diskmemo, nativehook, x86decode
from emu.front import gobuild
from emu.front.elfheaders import ElfFormatError, ElfHeaders, NotElfError
from emu.linux import elfimage, process
from emu.goruntime.goprocess import GoProcess

from conftest import ROOT


@pytest.fixture(scope="module")
def hello():
    return str(gobuild.build(ROOT / "scenarios" / "go" / "hello").binary)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh preemu cache directory for one test."""
    monkeypatch.setenv("PREEMU_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# --- x86decode: Capstone's library without the package ----------------------------------------------------
def test_the_binding_decodes_every_function_of_a_go_binary_as_the_capstone_package_does(hello):
    assert isinstance(x86decode.decoder(), x86decode._Library)        # the binding, not the fallback
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    n = 0
    for start, code in elfimage.load(hello).functions():
        want = list(md.disasm_lite(code, start))
        assert list(x86decode.disasm_lite(code, start)) == want
        n += len(want)
    assert n > 100_000
    assert list(x86decode.disasm_lite(b"\x90\x0f\x0b\xff\xff", 0x10)) == [(0x10, 1, "nop", ""), (0x11, 2, "ud2", "")]
    assert list(x86decode.disasm_lite(b"", 0)) == []


def test_a_library_of_another_major_version_falls_back_to_the_package(monkeypatch):
    monkeypatch.setattr(x86decode, "_decoder", None)
    monkeypatch.setattr(x86decode, "CS_MAJOR", 4)
    d = x86decode.decoder()
    assert isinstance(d, capstone.Cs)
    assert x86decode.identity() == f"capstone {capstone.__version__}"
    assert list(x86decode.disasm_lite(b"\xc3", 0)) == [(0, 1, "ret", "")]
    monkeypatch.setattr(x86decode, "_decoder", None)


# --- diskmemo: remembered, never trusted when damaged ---------------------------------------------------------
def test_a_remembered_value_is_computed_once_and_read_back(cache):
    calls = []

    def compute():
        calls.append(1)
        return [[1, 2], "x"]
    k = diskmemo.key("a", b"\x00", 3)
    assert diskmemo.remembered("kind", k, compute) == [[1, 2], "x"]
    assert diskmemo.remembered("kind", k, compute) == [[1, 2], "x"]
    assert len(calls) == 1
    assert diskmemo.key("a", b"\x00", 3) != diskmemo.key("a\x00", 3)          # parts are length-prefixed


@pytest.mark.parametrize("damage", ["cut short", "another value", "not JSON", "no digest", "a list"])
def test_a_damaged_entry_is_ignored_computed_again_and_rewritten(cache, damage):
    k = diskmemo.key("damage")
    diskmemo.remembered("kind", k, lambda: [1, 2, 3])
    f = cache / "kind" / f"{k}.json"
    text = f.read_text()
    f.write_text({"cut short": text[:len(text) // 2],
                  "another value": text.replace("[1, 2, 3]", "[1, 2, 4]"),
                  "not JSON": "\x00\xff garbage",
                  "no digest": json.dumps({"value": [1, 2, 4]}),
                  "a list": "[1, 2, 4]"}[damage])
    assert diskmemo.remembered("kind", k, lambda: [1, 2, 3]) == [1, 2, 3]
    assert json.loads(f.read_text())["value"] == [1, 2, 3]                      # rewritten whole


def test_an_unusable_cache_directory_only_costs_the_work(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PREEMU_CACHE", str(blocker))                # a file: cache_dir() refuses it
    assert diskmemo.cache_root() is None
    assert diskmemo.remembered("kind", "k", lambda: 7) == 7


def test_machine_code_is_keystones_and_a_damaged_entry_is_not_used(cache):
    asm = "mov rax, 1; ret"
    want = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(asm, 0x1000)[0])
    assert nativehook.assemble(asm, 0x1000) == want
    [f] = (cache / "machinecode").iterdir()
    entry = json.loads(f.read_text())
    entry["value"] = "cc" * len(want)                                 # INT3s, with the old digest
    f.write_text(json.dumps(entry))
    assert nativehook.assemble(asm, 0x1000) == want
    nativehook.assemble(asm, 0x2000)                                  # another address: another entry
    assert len(list((cache / "machinecode").iterdir())) == 2


def test_rdtsc_sites_remembered_are_the_sites_found(cache, hello):
    image = elfimage.load(hello)
    sites = image.find_insns(("rdtsc", "rdtscp"))
    assert sites and all(image.text_bytes(a, n) in (b"\x0f\x31", b"\x0f\x01\xf9") for a, n in sites)
    [f] = (cache / "insnsites").iterdir()
    entry = json.loads(f.read_text())
    entry["value"] = [[0, 2]]
    f.write_text(json.dumps(entry))                                    # a wrong site, the digest not matching
    assert elfimage.load(hello).find_insns(("rdtsc", "rdtscp")) == sites
    assert elfimage.load(hello).find_insns(("rdtsc", "rdtscp")) == sites    # now read back


# --- ELF headers without pyelftools ----------------------------------------------------------------------------
def test_damaged_elf_headers_are_named(hello):
    raw = open(hello, "rb").read()
    with pytest.raises(NotElfError, match="magic number"):
        ElfHeaders(b"\x7fELG" + raw[4:])
    with pytest.raises(ElfFormatError, match="the ELF header is cut short"):
        ElfHeaders(raw[:40])
    with pytest.raises(ElfFormatError, match="program header table .* runs past the end of the file"):
        ElfHeaders(raw[:100])
    with pytest.raises(ElfFormatError, match="section names .* run past the end of the file"):
        ElfHeaders(raw[:3000])
    bad_index = bytearray(raw)
    bad_index[62:64] = (999).to_bytes(2, "little")                  # e_shstrndx
    with pytest.raises(ElfFormatError, match="e_shstrndx 999 is not one of the"):
        ElfHeaders(bytes(bad_index))
    elf = ElfHeaders(raw)
    assert (elf.type, elf.machine, elf.elfclass) == ("ET_EXEC", "EM_X86_64", 64)
    assert elf.section(".go.buildinfo") is not None and elf.section(".nothing") is None


# --- the oracle's tables, read at first need ------------------------------------------------------------------
def test_a_trivial_program_never_reads_the_pclntab_and_damaged_tables_end_the_oracle_there(hello, tmp_path):
    p = GoProcess(elfimage.load(hello), process.Options(argv=["hello"])).run()
    o = p.watch.oracle
    assert p.exit_code == 0 and o is not None and o._prog is None      # its SIGURGs found no request
    assert [ev.oracle for ev in p.watch.signals] and all(ev.oracle == "no-request" for ev in p.watch.signals)
    assert o.prog.binary.version == o.version == "go1.27.3"           # on demand, the same binary
    o._prog = None
    cut = tmp_path / "cut"
    cut.write_bytes(open(hello, "rb").read()[:5000])
    o.path = str(cut)
    with pytest.raises(EmuError, match="malformed ELF or Go tables"):
        o.prog
    assert o.safe_point(None, 0, 0) is None                           # no verdict; from here on no oracle
    assert p.watch.oracle is None and "malformed ELF or Go tables" in p.oracle_note


# --- what a trivial program's start imports -----------------------------------------------------------------
def test_exec_of_hello_imports_no_capstone_keystone_or_pyelftools(hello, tmp_path):
    code = ("import runpy, sys\n"
            f"sys.argv = ['preemu', 'exec', {hello!r}]\n"
            "try:\n    runpy.run_module('emu', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'capstone', 'keystone', 'elftools', 'tomllib'}))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(2):                          # the first run may fill preemu's cache; the second reads it
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["hello, world", "[]"], r.stdout
    assert "oracle: no-request" in r.stderr
