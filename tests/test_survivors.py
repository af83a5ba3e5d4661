"""Tests for the mutations an independent mutation run of emu/ found surviving (issue #23): each is a
behaviour a user would see, and each fails when its mutation is applied."""
from __future__ import annotations

import io
import json

import pytest
from conftest import ASM, ROOT

from emu import cli
from emu.front import gobuild
from emu.drive import sweeper as sweep
from emu.linux import elfimage, process
from emu.linux.threads import Thread


def _json(*argv):
    out = io.StringIO()
    code = cli.main([str(a) for a in argv] + ["--json", "--quiet"], out)
    d = json.loads(out.getvalue())
    d.pop("points_per_second", None)
    return code, d


def test_the_next_deliverable_signal_is_the_lowest_numbered_not_the_first_sent():
    t = Thread(1000, None)
    t.pending[23] = "SIGURG, sent first"
    t.pending[11] = "SIGSEGV, sent second"
    assert t.deliverable() == 11                     # signal(7): standard signals by number
    t.sigmask = 1 << 10                              # SIGSEGV blocked
    assert t.deliverable() == 23


def test_sharded_refusal_counts_add_up(monkeypatch):
    """call_loop has refusals (its prologue's JLS); each shard refuses its own, and the report adds them."""
    args = ["sweep", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=40", "--jobs", "1"]
    monkeypatch.setattr(sweep, "SHARD_POINTS", 10**9)
    _, whole = _json(*args)
    monkeypatch.setattr(sweep, "SHARD_POINTS", 90)
    _, sharded = _json(*args)
    assert sum(whole["refused"].values()) >= 30 and sharded["refused"] == whole["refused"]


def test_a_results_file_is_not_reused_by_a_sweep_with_other_options(tmp_path):
    res = tmp_path / "r.jsonl"
    args = ["sweep", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5", "--results", res]
    code, plain = _json(*args)
    assert code == 0 and plain["forced"] == 0
    code, forced = _json(*args, "--force-unsafe")
    assert forced["forced"] == sum(plain["refused"].values()) > 0


def test_a_stub_that_returns_a_wrong_rbp_fails_at_every_injection(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("    pop rbp", "    pop rbp\n    lea rbp, [rbp + 8]"))
    code, d = _json("sweep", ASM / "sum_loop.s", "--func", "sum_loop", "--reg", "RCX=20", "--stub", stub)
    groups = {(g["kind"], g["what"]): g["count"] for g in d["violation_groups"]}
    assert code == 1 and groups.get(("register", "RBP"), 0) == d["injected"] > 100   # not one final-state


def test_the_real_program_resume_check_covers_every_xmm_register(tmp_stub):
    stub = tmp_stub(lambda s: s.replace("    movups xmm9, xmmword ptr [rsp + 256]",
                                        "    movups xmm9, xmmword ptr [rsp + 240]"))
    out = io.StringIO()
    code = cli.main(["sweep", str(ROOT / "tests" / "data" / "go" / "kinds"), "--func", "spin", "--reg", "RAX=10",
                     "--stub", str(stub), "--to-exit", "0"], out)
    assert code == 1 and "register XMM9:" in out.getvalue()


def test_timed_futex_waits_are_relative():
    """FUTEX_WAIT's timeout is relative (futex(2)); taken as an absolute CLOCK_MONOTONIC deadline every timed
    wait would expire at once, and the sleepers program would spin through thousands of them."""
    binary = gobuild.build(ROOT / "scenarios" / "go" / "sleepers").binary
    p = process.Process(elfimage.load(str(binary)), process.Options(argv=["prog"], vdso=False)).run()
    assert p.exit_code == 0 and b"all done after 4 ms" in bytes(p.fds.stdout.data)
    assert p.insns == 375_774 and p.syscall_counts["futex"] == 26


@pytest.fixture
def tmp_stub(tmp_path):
    def make(edit):
        from emu.core import stubgen
        src = stubgen.stub_path("go1.14").read_text()
        out = edit(src)
        assert out != src
        path = tmp_path / "stub.s"
        path.write_text(out)
        return path
    return make


@pytest.mark.parametrize("env, on", [
    ([], True),
    (["GODEBUG=asyncpreemptoff=1"], False),
    (["GODEBUG=asyncpreemptoff=2"], False),                       # any non-zero value turns it off
    (["GODEBUG=asyncpreemptoff=10"], False),
    (["GODEBUG=asyncpreemptoff=1,asyncpreemptoff=0"], True),      # later fields overwrite earlier ones
    (["GODEBUG=gctrace=1", "GODEBUG=asyncpreemptoff=1"], True),   # only the first GODEBUG= entry is read
    (["XGODEBUG=asyncpreemptoff=1"], True),
    (["GODEBUG=myasyncpreemptoff=1"], True),
])
def test_asyncpreemptoff_is_read_as_the_runtime_reads_godebug(env, on):
    """N8 of the fidelity review: runtime/env_posix.go gogetenv, runtime/runtime1.go parsegodebug."""
    assert (process.godebug_int(env, "asyncpreemptoff") == 0) is on



def test_runtime_code_inlined_at_the_inline_trees_first_entry_is_refused(tmp_path):
    """runtime.NumCPU inlined into a user function is the only (index 0) entry of its inline tree; the PC
    it covers is runtime code (runtime-func), not a safe point (symtabinl.go; safepoint's name rule)."""
    (tmp_path / "main.go").write_text('package main\n\nimport "runtime"\n\n//go:noinline\nfunc cpus(n int) int {\n'
                                      '\treturn runtime.NumCPU()*2 + n\n}\n\nfunc main() { println(cpus(1)) }\n')
    out = io.StringIO()
    assert cli.main(["disasm", str(tmp_path), "--func", "cpus", "--json"], out) == 0
    [f] = json.loads(out.getvalue())["functions"]
    inlined = [r for r in f["instructions"] if r["inline"] == "runtime.NumCPU"]
    assert len(inlined) == 1 and (inlined[0]["verdict"], inlined[0]["reason"]) == ("refuse", "runtime-func")
