"""Tests for the mutations an independent mutation run of emu/ found surviving (issue #23): each is a
behaviour a user would see, and each fails when its mutation is applied."""
from __future__ import annotations

import io
import json
import struct
import subprocess

import pytest
from conftest import ASM, ROOT
from guestkernel import Guest
from unicorn import x86_const as X

from emu import cli
from emu.front import gobuild
from emu.drive import sweeper as sweep
from emu.linux import elfimage, process, sigframe
from emu.goruntime.goprocess import GoProcess
from emu.linux.sigdeliver import SA_NODEFER, SA_RESTART
from emu.linux.threads import BLOCKED, RUNNABLE, Thread


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
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["prog"], vdso=False)).run()
    assert p.exit_code == 0 and b"all done after 4 ms" in bytes(p.fds.stdout.data)
    assert p.insns == 376_502 and p.syscall_counts["futex"] == 31      # 375,774 and 26 on one CPU (issue #37)


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


# --- issue #40: survivors of the fourth mutation run, and Linux behaviour the Go runtime never exercises ------
SIGUSR1, SIGUSR2, SIGPIPE, SIGTERM = 10, 12, 13, 15
EINTR, EAGAIN, EPIPE = 4, 11, 32


def bit(*sigs):
    return sum(1 << (s - 1) for s in sigs)


def test_sig_unblock_clears_only_the_signals_named():
    """rt_sigprocmask(2): SIG_BLOCK adds the set, SIG_UNBLOCK removes it and nothing else, SIG_SETMASK replaces
    the mask; the old mask comes back in oset; SIGKILL and SIGSTOP are never blocked (kernel/signal.c)."""
    g = Guest()
    t = g.t
    old = g.alloc(8)
    t.sigmask = 0
    assert g.call("rt_sigprocmask", 0, struct.pack("<Q", bit(SIGUSR1, SIGTERM, 9)), old, 8) == 0
    assert t.sigmask == bit(SIGUSR1, SIGTERM)
    assert g.call("rt_sigprocmask", 1, struct.pack("<Q", bit(SIGTERM)), old, 8) == 0
    assert t.sigmask == bit(SIGUSR1) and struct.unpack("<Q", bytes(g.p.read(old, 8)))[0] == bit(SIGUSR1, SIGTERM)
    assert g.call("rt_sigprocmask", 1, struct.pack("<Q", bit(SIGUSR2)), 0, 8) == 0
    assert t.sigmask == bit(SIGUSR1)                  # unblocking what is not blocked changes nothing
    assert g.call("rt_sigprocmask", 2, struct.pack("<Q", bit(SIGUSR2, 19)), 0, 8) == 0
    assert t.sigmask == bit(SIGUSR2)
    assert g.call("rt_sigprocmask", 7, struct.pack("<Q", 0), 0, 8) == -22


def test_a_blocked_signal_waits_for_sig_unblock_and_then_kills():
    """The death by SIGTERM of the signals program is a death by the signal (its default action when the
    runtime's dieFromSignal has unblocked it and raised it again), not an exit(2) of the runtime."""
    binary = gobuild.build(ROOT / "tests" / "data" / "go" / "signals").binary
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["prog"])).run()
    assert p.exit_code == 128 + SIGTERM and p.stop_reason == "killed by signal 15 (SIGTERM)"
    assert [ev.outcome for ev in p.watch.signals if ev.sig == SIGTERM][-1] == "fatal"


def test_futex_wake_wakes_at_most_the_number_asked():
    g = Guest()
    word = g.put(struct.pack("<I", 7))
    waiters = [g.thread() for _ in range(3)]
    for t in waiters:
        assert g.call("futex", word, 0, 7, 0, t=t) is process.BLOCK and t.state == BLOCKED
    assert g.call("futex", word, 1, 1) == 1
    assert [t.state for t in waiters] == [RUNNABLE, BLOCKED, BLOCKED]        # the first to wait
    assert g.call("futex", word, 1, 5) == 2 and all(t.state == RUNNABLE for t in waiters)
    for t in waiters:
        assert g.call("futex", word, 0, 7, 0, t=t) is process.BLOCK
    assert g.call("futex", word, 1, 0) == 1                   # nr_wake 0 still wakes one, as futex_wake does
    assert g.call("futex", word, 1, 0xFFFFFFFF) == 1          # an int: -1 too
    assert g.call("futex", word, 1, 0x7FFFFFFF) == 1          # INT_MAX: every one left
    assert g.call("futex", word, 1, 1) == 0
    assert g.call("futex", word, 0, 8, 0) == -EAGAIN                          # the word changed


def test_a_write_no_one_reads_is_epipe_and_sigpipe():
    """fs/pipe.c pipe_write: EPIPE, and send_sig(SIGPIPE, current, 0), a SI_USER signal to the writer; a socket
    the same unless the send says MSG_NOSIGNAL."""
    g = Guest()
    r, w = g.pipe()
    assert g.write(w, b"queued") == 6
    assert g.call("close", r) == 0
    assert g.write(w, b"x") == -EPIPE
    ev = g.t.pending[SIGPIPE]
    assert ev.info.code == sigframe.SI_USER and ev.info.pid == g.p.pid
    del g.t.pending[SIGPIPE]
    sv = g.alloc(8)
    assert g.call("socketpair", 1, 1, 0, sv) == 0
    a, b = struct.unpack("<ii", bytes(g.p.read(sv, 8)))
    assert g.call("close", b) == 0
    assert g.call("sendto", a, b"x", 1, 0x4000, 0, 0) == -EPIPE and SIGPIPE not in g.t.pending   # MSG_NOSIGNAL
    assert g.write(a, b"x") == -EPIPE and SIGPIPE in g.t.pending


def test_a_program_gets_sigpipe_as_natively():
    binary = gobuild.build(ROOT / "tests" / "data" / "go" / "brokenpipe").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["prog"])).run()
    assert p.exit_code == native.returncode == 0 and bytes(p.fds.stdout.data).decode() == native.stdout
    assert "pipe signal: broken pipe" in native.stdout and "MSG_NOSIGNAL no signal" in native.stdout


def _udp(g):
    s = g.call("socket", 2, 2 | 0o4000, 0)
    addr = struct.pack("<H", 2) + struct.pack(">H4s", 9999, b"\x7f\0\0\1") + bytes(8)
    assert g.call("bind", s, addr, 16) == 0
    return s, addr


def test_a_datagram_longer_than_the_buffer_is_cut_to_it_unless_msg_trunc():
    """udp(7)/recv(2): the datagram's first n bytes, the rest discarded, and n returned; with MSG_TRUNC the
    datagram's real length. The same when the read waited for it."""
    g = Guest()
    s, addr = _udp(g)
    for _ in range(2):
        assert g.call("sendto", s, bytes(range(100)), 100, 0, addr, 16) == 100
    buf = g.alloc(100)
    assert g.call("recvfrom", s, buf, 10, 0, 0, 0) == 10 and bytes(g.p.read(buf, 10)) == bytes(range(10))
    assert g.call("recvfrom", s, buf, 10, 0x20, 0, 0) == 100
    assert g.call("recvfrom", s, buf, 10, 0, 0, 0) == -EAGAIN                 # nothing of them is left
    assert g.call("fcntl", s, 4, 2) == 0                                     # blocking now: a reader waits
    reader = g.thread()
    assert g.call("recvfrom", s, buf, 10, 0x20, 0, 0, t=reader) is process.BLOCK
    assert g.call("sendto", s, bytes(50), 50, 0, addr, 16) == 50
    assert reader.state == RUNNABLE and reader.ctx.reg_read(X.UC_X86_REG_RAX) == 50


def test_o_append_writes_at_the_end_in_tmp():
    """open(2) O_APPEND: every write goes to the end of the file, whatever the offset; pwrite(2) too, as
    Linux does (the man page's BUGS); another descriptor without it writes where it stands."""
    g = Guest()
    fd = g.open("/tmp/log", 0o100 | 1 | 0o2000)
    assert g.write(fd, b"ab") == 2 and g.call("lseek", fd, 0, 0) == 0
    assert g.write(fd, b"cd") == 2 and g.call("pwrite64", fd, b"ef", 2, 0) == 2
    plain = g.open("/tmp/log", 1)
    assert g.write(plain, b"X") == 1
    assert g.read_file("/tmp/log") == b"Xbcdef"


def test_sharded_refusal_counts_of_a_real_program_sweep_add_up(monkeypatch):
    """Every asyncpreemptoff point is refused: cut into three shards, the refusals are still all 57."""
    import emu
    from emu.drive import realsweep
    monkeypatch.setattr(realsweep, "SHARD_POINTS", 20)
    off = emu.sweep("tests/data/go/kinds", "spin", registers={"RAX": 5}, async_preemption=False, to_exit=0)
    assert off.result.shards == 3 and off.result.refused == {"asyncpreemptoff": 57}


def test_fs_return_is_its_own_invocations_not_a_deeper_ones():
    """f re-entered through g returns to the same address four times, the deepest first: F's result is the
    first invocation's (807, as the program prints), not f(0)'s 100."""
    code, d = _json("sweep", ROOT / "tests" / "data" / "go" / "reentrant", "--func", "f", "--max-points", "40",
                    "--to-exit", "0")
    assert code == 0 and d["results"] == {"~r0": "807"}, d["results"]
    assert d["reference"]["stdout"] == "807\n"


def test_an_ending_that_differs_only_on_stderr_differs():
    from emu.drive import references
    from emu.drive.gsweep import Ending, Reference
    ref = Reference(10, {}, {}, Ending(0, b"same\n", b"", "exit"), references.Unstable())
    assert references.ending_diff(ref, Ending(0, b"same\n", b"", "exit")) == []
    assert [w for w, _, _ in references.ending_diff(ref, Ending(0, b"same\n", b"panic: boom\n", "exit"))] == ["stderr"]
    ref2 = Reference(10, {}, {}, Ending(0, b"", b"one\ntwo\n", "exit"), references.Unstable())
    assert [w for w, _, _ in references.ending_diff(ref2, Ending(0, b"", b"one\nTWO\n", "exit"))] == ["stderr line 2"]


def test_the_counter_counts_a_faulting_load_as_executed():
    """A load from an unmapped page faults at its instruction, which the per-instruction counter counted (the
    SIGSEGV's frame then resumes at it): as the jump to unmapped memory is counted."""
    import keystone
    from unicorn import UC_ARCH_X86, UC_MODE_64, Uc, UcError
    from emu.linux.icount import InsnCounter
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(0x10000, 0x10000)
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(
        "nop; inc rbx; mov rax, qword ptr [0x900000]; nop", 0x10000)[0])
    uc.mem_write(0x10000, code)
    c = InsnCounter(uc)
    c.arm(100)
    with pytest.raises(UcError):
        c.run(0x10000)
    assert c.executed == 3 and uc.reg_read(X.UC_X86_REG_RIP) == 0x10004


# the kernel's side of signals that the runtime never asks for (it installs every handler with SA_RESTART and
# without SA_NODEFER, and never blocks a signal a waiting thread should see)
def _waiting_reader(g, flags):
    """A thread blocked in read(2) of an empty pipe, and a handler for SIGUSR1 with sa_flags `flags`."""
    r, w = g.pipe()
    reader = g.thread()
    reader.ctx.reg_write(X.UC_X86_REG_RIP, 0x401002)         # as saved after its SYSCALL at 0x401000
    assert g.call("read", r, g.alloc(8), 8, t=reader) is process.BLOCK and reader.state == BLOCKED
    g.p.sigactions[SIGUSR1] = (0x401100, flags | 0x04000000, 0x401200, 0)          # SA_RESTORER
    reader.pipe_w = w
    return reader


def test_without_sa_restart_an_interrupted_read_fails_with_eintr():
    g = Guest()
    reader = _waiting_reader(g, 0)
    assert g.p.send_signal(g.t, reader.tid, SIGUSR1) == 0
    assert reader.state == RUNNABLE and reader.ctx.reg_read(X.UC_X86_REG_RAX) == (-EINTR) & (2**64 - 1)
    assert reader.ctx.reg_read(X.UC_X86_REG_RIP) == 0x401002 and SIGUSR1 in reader.pending


def test_with_sa_restart_the_read_is_made_again():
    g = Guest()
    reader = _waiting_reader(g, SA_RESTART)
    assert g.p.send_signal(g.t, reader.tid, SIGUSR1) == 0
    assert reader.state == RUNNABLE and reader.ctx.reg_read(X.UC_X86_REG_RAX) == 0       # read's number again
    assert reader.ctx.reg_read(X.UC_X86_REG_RIP) == 0x401000                             # at its SYSCALL


def test_a_timed_sleep_is_never_restarted():
    """nanosleep(2) interrupted by a handler fails with EINTR even under SA_RESTART (signal(7))."""
    g = Guest()
    g.p.sigactions[SIGUSR1] = (0x401100, SA_RESTART | 0x04000000, 0x401200, 0)
    sleeper = g.thread()
    assert g.call("nanosleep", struct.pack("<qq", 1, 0), 0, t=sleeper) is process.BLOCK
    g.p.send_signal(g.t, sleeper.tid, SIGUSR1)
    assert sleeper.state == RUNNABLE and sleeper.ctx.reg_read(X.UC_X86_REG_RAX) == (-EINTR) & (2**64 - 1)


def test_a_signal_the_waiting_thread_blocks_leaves_it_waiting_until_unblocked():
    """A blocked signal stays pending and interrupts nothing (kernel/signal.c: signal_wake_up only for an
    unblocked one); once the wait is over and the thread unblocks it, it is taken on the way out of
    rt_sigprocmask. kill(2) picks a thread that does not block it, else leaves it with the main thread."""
    g = Guest()
    reader = _waiting_reader(g, 0)
    reader.sigmask = bit(SIGUSR1)
    assert g.p.send_signal(g.t, reader.tid, SIGUSR1) == 0
    assert reader.state == BLOCKED and SIGUSR1 in reader.pending and reader.deliverable() == 0
    g.p._stop_slice = False
    assert g.call("rt_sigprocmask", 1, struct.pack("<Q", bit(SIGUSR1)), 0, 8) == 0
    assert not g.p._stop_slice                                # the caller has nothing pending: it goes on
    assert g.write(reader.pipe_w, b"data") == 4                 # the read is over, the signal still blocked
    assert reader.state == RUNNABLE and reader.ctx.reg_read(X.UC_X86_REG_RAX) == 4 and reader.deliverable() == 0
    assert g.call("rt_sigprocmask", 1, struct.pack("<Q", bit(SIGUSR1)), 0, 8, t=reader) == 0
    assert g.p._stop_slice and reader.deliverable() == SIGUSR1
    g.t.sigmask, reader.sigmask = bit(SIGUSR1), 0
    assert g.p.signal_target(SIGUSR1) is reader
    reader.sigmask = bit(SIGUSR1)
    assert g.p.signal_target(SIGUSR1) is g.t


@pytest.mark.parametrize("nodefer", [False, True])
def test_a_handler_runs_with_its_signal_blocked_unless_sa_nodefer(nodefer):
    """handle_signal (arch/x86/kernel/signal.c): the handler runs with sa_mask added to the thread's mask, and
    its own signal too unless SA_NODEFER; rt_sigreturn puts back the mask the frame saved."""
    g = Guest()
    t = g.t
    t.sigmask = bit(SIGTERM)
    g.p.sigactions[SIGUSR1] = (0x401100, (SA_NODEFER if nodefer else 0) | 0x04000000 | 4, 0x401200, bit(SIGUSR2))
    assert g.p.send_signal(t, t.tid, SIGUSR1) == 0
    g.p._deliver(t, SIGUSR1)
    assert t.sigmask == bit(SIGTERM, SIGUSR2) | (0 if nodefer else bit(SIGUSR1))
    assert g.p.uc.reg_read(X.UC_X86_REG_RIP) == 0x401100
    assert (g.p.send_signal(t, t.tid, SIGUSR1), t.deliverable()) == (0, SIGUSR1 if nodefer else 0)
    t.pending.clear()
    g.p.uc.reg_write(X.UC_X86_REG_RSP, t.frames[-1].frame + 8)      # the handler returned to the restorer
    g.p._finish_sigreturn(t)
    assert t.sigmask == bit(SIGTERM) and not g.p.watch.violations
