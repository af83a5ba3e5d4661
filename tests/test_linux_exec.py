"""Whole-program mode: real Go 1.27.3 binaries under `preemu exec` (built from scenarios/go at test time)."""
from __future__ import annotations

import io
import json
import re
import struct

import pytest
from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from emu import cli
from emu.core import cpulevel
from emu.core.errors import EmuError
from emu.front import gobuild
from emu.linux import elfimage, process, sigdeliver, sigframe
from emu.goruntime.goprocess import GoProcess

from conftest import DATA, ROOT

GO = ROOT / "scenarios" / "go"


@pytest.fixture(scope="module")
def binaries():
    return {n: gobuild.build(GO / n).binary for n in ("hello", "starve")}


def run(path, env=(), **kw) -> process.Process:
    opts = process.Options(argv=["prog"], env=list(env), trace=True, **kw)
    return GoProcess(elfimage.load(str(path)), opts).run()


@pytest.fixture(scope="module")
def starve(binaries):
    return run(binaries["starve"])


def test_hello_world_runs_to_exit_0(binaries):
    p = run(binaries["hello"])
    assert (p.exit_code, bytes(p.fds.stdout.data), p.error) == (0, b"hello, world\n", None)
    assert p.syscall_counts["clone"] >= 1 and p.syscall_counts["exit_group"] == 1
    assert not p.watch.violations


def sysmon_prediction(sysmon_start: int, gosched: int) -> int:
    """When sysmon preempts a G that started running at `gosched`, with exact sleeps (runtime/proc.go
    sysmon: 20 us while idle <= 50, then doubling up to 10 ms; retake preempts at the first tick with
    schedwhen + forcePreemptNS <= now, schedwhen being the tick that first saw the new schedtick)."""
    t, delay, idle, schedwhen = sysmon_start, 0, 0, None
    while True:
        delay = 20 if idle == 0 else delay * 2 if idle > 50 else delay
        delay = min(delay, 10_000)
        t += delay * 1000
        idle += 1
        if t > gosched and schedwhen is None:
            schedwhen = t
        elif schedwhen is not None and schedwhen + 10_000_000 <= t:
            return t


def test_starvation_wait_matches_sysmon_schedule(binaries):
    p = run(binaries["starve"], vdso=False)         # main's time.Now() is then a clock_gettime in the log
    out = bytes(p.fds.stdout.data).decode()
    waited_us = int(re.fullmatch(r"waited \d+ ms \((\d+) us\)\n", out).group(1))
    inj = p.watch.preemptions[0]
    [sysmon_tid] = {e.sender for e in p.watch.signals if e.outcome == "injected"}     # sysmon sent it
    first_sleep = min(tm for tm, tid, name, *_ in p.syscall_log if name == "nanosleep" and tid == sysmon_tid)
    start = max(tm for tm, tid, name, *_ in p.syscall_log   # main's time.Now() right before Gosched
                if name == "clock_gettime" and tid == inj.tid and tm < inj.time_ns)
    predicted = sysmon_prediction(first_sleep, start) - start
    assert abs(waited_us * 1000 - predicted) <= 0.10 * predicted, (waited_us, predicted)
    assert 9_000 <= waited_us <= 21_000             # inside what native runs show on these machines


def test_starvation_preemption_is_async_checked_and_recorded(starve):
    p = starve
    assert p.exit_code == 0 and not p.watch.violations
    [inj] = p.watch.preemptions
    assert inj.where.startswith("main.") and inj.resumed and inj.resume_ok
    assert p.image.func_at(inj.pc)[0].startswith("main.")
    injected = [e for e in p.watch.signals if e.outcome == "injected"]
    assert len(injected) == 1 and injected[0].sig == 23


def test_runs_are_byte_identical(binaries, starve):
    again = run(binaries["starve"])
    a, b = (dict(json.loads(json.dumps(_json(x))), wall_s=0) for x in (starve, again))
    assert a == b
    assert [s.__dict__ for s in starve.slices] == [s.__dict__ for s in again.slices]
    from emu.output import exec_report as report
    assert json.dumps(report.chrome_trace(starve, "s")) == json.dumps(report.chrome_trace(again, "s"))


def _json(p):
    from emu.output import exec_report as report
    return report.to_json(p, "starve")


def test_asyncpreemptoff_starves(binaries):
    p = run(binaries["starve"], env=["GODEBUG=asyncpreemptoff=1"], max_virtual_ms=30)
    assert p.starved and p.exit_code is None and "max-virtual-ms" in p.stop_reason
    assert p.fds.stdout.data == b"" and not p.watch.signals
    assert p.clock - p.boot_ns == 30_000_000


def test_budget_stops_a_run(binaries):
    p = run(binaries["starve"], budget=2_000_000)
    assert p.starved and p.insns == 2_000_000 and "budget" in p.stop_reason


def test_signal_delay_moves_the_landing_pc(binaries, starve):
    later = run(binaries["starve"], signal_delay=3)
    [a], [b] = starve.watch.preemptions, later.watch.preemptions
    assert b.resume_ok and not later.watch.violations
    assert b.time_ns - a.time_ns >= 3                   # taken 3 instructions of the spinner later


def test_unsupported_syscall_is_a_clear_error():
    p = run(gobuild.build(DATA / "go" / "unsupported").binary)
    assert isinstance(p.error, EmuError)
    msg = str(p.error)
    assert "unsupported syscall acct (number 163)" in msg and "pc 0x" in msg and "thread m0(1000)" in msg


def test_goamd64_v3_is_refused(binaries, tmp_path):
    raw = binaries["hello"].read_bytes()
    assert raw.count(b"GOAMD64=v1") >= 1          # the build info the linker embeds (.go.buildinfo)
    bad = tmp_path / "v3"
    bad.write_bytes(raw.replace(b"GOAMD64=v1", b"GOAMD64=v3"))
    img = elfimage.load(str(bad))
    with pytest.raises(EmuError, match="GOAMD64=v3, which needs --cpu v3"):
        GoProcess(img, process.Options(argv=["v3"]))
    img.check_level(cpulevel.level("v3"))           # a v3 CPU takes it


def test_not_an_elf_is_refused(tmp_path):
    f = tmp_path / "x"
    f.write_bytes(b"hello")
    with pytest.raises(EmuError, match="not an ELF"):
        elfimage.load(str(f))


# --- the checks bite ---------------------------------------------------------------------------
def _with_hook(path, addr_of, fn, **kw):
    image = elfimage.load(str(path))
    p = GoProcess(image, process.Options(argv=["prog"], trace=True, **kw))
    a = addr_of(image)
    p.uc.hook_add(UC_HOOK_CODE, lambda uc, addr, size, _: fn(p, uc), None, a, a)
    return p.run()


def test_resume_check_catches_a_clobbered_register(binaries):
    """A broken asyncPreempt (here: RBX flipped on entry) must fail the register check on return."""
    def clobber(p, uc):
        uc.reg_write(X.UC_X86_REG_RBX, uc.reg_read(X.UC_X86_REG_RBX) ^ 0x40)
    p = _with_hook(binaries["starve"], lambda im: im.symbol("runtime.asyncPreempt.abi0"), clobber)
    kinds = [v["kind"] for v in p.watch.violations]
    assert kinds == ["resume-registers"] and "RBX" in p.watch.violations[0]["message"]


def test_context_check_catches_an_edited_ucontext(binaries):
    """A handler that changes a general register in the ucontext (not just RIP/RSP) is a violation."""
    def edit(p, uc):
        uctx = uc.reg_read(X.UC_X86_REG_RSP)       # sigreturn__sigaction runs with RSP = &ucontext
        off = sigframe.greg_offset("R12") - sigframe.UC
        v = struct.unpack("<Q", p.read(uctx + off, 8))[0]
        p.write(uctx + off, struct.pack("<Q", v ^ 1))
    p = _with_hook(binaries["hello"], lambda im: im.symbol("runtime.sigreturn__sigaction.abi0"), edit)
    assert p.watch.violations and {v["kind"] for v in p.watch.violations} == {"context-modified"}


def test_oracle_disagreement_is_a_violation(binaries):
    image = elfimage.load(str(binaries["starve"]))
    p = GoProcess(image, process.Options(argv=["prog"]), oracle=lambda t, frame, g=None: "unsafe-point").run()
    assert [v["kind"] for v in p.watch.violations] == ["oracle-disagrees"]


# --- the CLI -----------------------------------------------------------------------------------
def test_cli_exec_json(binaries, capsys):
    out = io.StringIO()
    rc = cli.main(["exec", str(binaries["starve"]), "--json"], out=out)
    j = json.loads(out.getvalue())
    assert rc == 0 and j["exit_code"] == 0 and j["stdout"].startswith("waited ")
    assert len(j["preemptions"]["async"]) == 1 and j["preemptions"]["async"][0]["registers_ok"]
    assert j["signals"]["sent"] >= 1 and j["violations"] == [] and j["starved"] is False


def test_cli_exec_text_passes_output_through_and_reports_starvation(binaries, capsys, tmp_path):
    out = io.StringIO()
    trace = tmp_path / "t.json"
    rc = cli.main(["exec", str(GO / "starve"), "--env", "GODEBUG=asyncpreemptoff=1", "--max-virtual-ms", "20",
                   "--trace", str(trace)], out=out)
    err = capsys.readouterr().err
    assert rc == 1 and out.getvalue() == "" and "STARVED: reached --max-virtual-ms 20" in err
    t = json.loads(trace.read_text())
    names = {e["args"]["name"] for e in t["traceEvents"] if e.get("name") == "thread_name"}
    assert len(names) >= 3 and any(e["ph"] == "X" for e in t["traceEvents"])


def test_cli_exec_bad_input(capsys, tmp_path):
    assert cli.main(["exec", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["exec", str(GO / "hello"), "--env", "NOEQUALS"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert cli.main(["exec", str(GO / "hello"), "--signal-at", "insn:abc"]) == 2
    assert "insn:N" in capsys.readouterr().err
    assert cli.main(["exec", str(GO / "hello"), "--trace", str(tmp_path / "no" / "t.json")]) == 2   # before the run
    assert "--trace" in capsys.readouterr().err


def test_syscall_table_names_match_numbers():
    from emu.linux import kernel
    assert len(kernel.ALL_NAMES) == 335
    for nr, (name, _) in kernel.TABLE.items():
        assert kernel.name_of(nr) == name


def test_syscalls_the_presented_kernel_lacks_are_enosys():
    """A number past Linux 6.1's table (mseal 462, futex_wake 454) or in its unassigned gap (400) is ENOSYS, as
    that kernel answers it (Go's fallbacks look for it); one preemu implements is not (fchmodat2 452), and one
    6.1 has that preemu does not model (acct) stays an error naming it (test_unsupported_syscall_...)."""
    from emu.linux import kernel
    from emu.linux.sysabi import ENOSYS
    for nr in (400, 454, 462, 511):
        assert kernel.TABLE[nr][1](None, None, 0, 0, 0, 0, 0, 0) == -ENOSYS
    assert kernel.TABLE[462][0] == "mseal" and kernel.TABLE[452][0] == "fchmodat2"
    assert kernel.TABLE[452][1] is not kernel._enosys and 163 not in kernel.TABLE and 512 not in kernel.TABLE


def test_oracle_agrees_with_the_runtime_on_every_sigurg(binaries, starve):
    """preemu's safepoint oracle, fed the real g/m/p state and pclntab, gives a verdict for every SIGURG
    and it matches what the runtime's handler did (any disagreement would be a violation)."""
    p = starve
    assert all(e.oracle is not None for e in p.watch.signals if e.delivered_ns is not None)
    assert [e.oracle for e in p.watch.signals if e.outcome == "injected"] == ["safe"]
    assert all(e.oracle != "safe" for e in p.watch.signals if e.outcome == "declined")
    assert p.watch.preemptions[0].goid >= 1 and not p.watch.violations
    assert p.structs is p.watch.oracle.structs          # goid and thread names read at the binary's offsets
    off = run(binaries["starve"], env=["GODEBUG=asyncpreemptoff=1"], max_virtual_ms=30)
    assert not off.watch.signals          # sysmon itself sends none (runtime/preempt.go preemptM)


def test_signal_at_a_chosen_pc(binaries, capsys):
    image = elfimage.load(str(binaries["starve"]))
    for pc in (image.resolve(f"main.main.gowrap1+{off}", "x") for off in ("0x18", "0x1a")):
        p = GoProcess(image, process.Options(argv=["prog"], signal_at_pc=pc)).run()
        assert [r.pc for r in p.watch.preemptions] == [pc] and p.watch.preemptions[0].resume_ok
        assert all(e.pc == pc for e in p.watch.signals if e.pc is not None)
    with pytest.raises(EmuError, match="not an instruction boundary"):
        image.resolve("main.main.gowrap1+0x1b", "--signal-at")
    assert cli.main(["exec", str(binaries["starve"]), "--signal-at", "main.nope+3"]) == 2
    assert "no function 'main.nope'" in capsys.readouterr().err


@pytest.mark.parametrize("when", ["at-once", "signal-at", "signal-delay"])
def test_nil_dereference_becomes_a_go_panic(when):
    """An unmapped access is a synchronous SIGSEGV with si_addr; the runtime's handler injects sigpanic
    and the program dies as natively: Go's panic message and exit status 2. A fault's signal is taken
    at once whatever --signal-at or signal_delay say (they time the SIGURGs)."""
    binary = gobuild.build(DATA / "go" / "nilderef").binary
    p = run(binary, **_signal_timing(binary, when))
    err = bytes(p.fds.stderr.data).decode()
    assert p.exit_code == 2 and p.error is None and bytes(p.fds.stdout.data) == b"before\n"
    assert "invalid memory address or nil pointer dereference" in err
    assert "[signal SIGSEGV: segmentation violation code=0x1 addr=0x8 pc=" in err and "main.main()" in err
    [segv] = [e for e in p.watch.signals if e.sig == 11]
    assert segv.outcome == "sigpanic" and segv.where.startswith("main.main+") and "0x8" in segv.fault
    assert not p.watch.violations


def test_a_jump_into_the_heap_faults_as_with_the_nx_bit():
    """Only what the program mapped executable (its PF_X segment, the vDSO) may run: a call into heap bytes
    is an instruction fetch from a page without PROT_EXEC, the kernel's SIGSEGV with SEGV_ACCERR and si_addr
    = the target, and the runtime dies with "unexpected fault address", exit status 2, as natively (checked
    against the native run of the same binary)."""
    import re
    import subprocess
    binary = gobuild.build(DATA / "go" / "nxjump").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True)
    p = run(binary)
    err = bytes(p.fds.stderr.data).decode()
    pattern = r"unexpected fault address (0x[0-9a-f]+)\nfatal error: fault\n\[signal SIGSEGV: segmentation " \
              r"violation code=0x2 addr=(0x[0-9a-f]+) pc=(0x[0-9a-f]+)\]"
    for text in (native.stderr, err):
        m = re.search(pattern, text)
        assert m and m[1] == m[2] == m[3], text[:400]            # the fault is the fetch at the call's target
    assert native.returncode == p.exit_code == 2 and native.stdout == bytes(p.fds.stdout.data).decode() == "before\n"
    [segv] = [e for e in p.watch.signals if e.sig == 11]
    assert segv.outcome == "sigpanic" and "fetch from non-executable address" in segv.fault
    assert not p.watch.violations


def _signal_timing(binary, when: str) -> dict:
    if when == "signal-at":
        return {"signal_at_pc": elfimage.load(str(binary)).resolve("main.main+0x4", "--signal-at")}
    return {"signal_delay": 1000} if when == "signal-delay" else {}


@pytest.mark.parametrize("when", ["at-once", "signal-at", "signal-delay"])
def test_a_blocked_fault_kills_as_the_kernel_does(when):
    """SIGSEGV blocked in the faulting thread: the kernel forces it (action reset to SIG_DFL, signal
    unblocked) and the process dies by SIGSEGV, as it does natively (exit 139 from a shell); the Go
    runtime's handler never runs, so there is no Go panic."""
    binary = gobuild.build(DATA / "go" / "blockedsegv").binary
    p = run(binary, **_signal_timing(binary, when))
    assert (p.exit_code, p.error, bytes(p.fds.stdout.data)) == (128 + 11, None, b"blocked\n")
    assert p.stop_reason.startswith("killed by signal 11 (SIGSEGV): read of unmapped address 0x8")
    assert bytes(p.fds.stderr.data) == b""
    [segv] = [e for e in p.watch.signals if e.sig == 11]
    assert segv.outcome == "fatal" and p.sigactions[11][0] == sigdeliver.SIG_DFL


def test_a_fault_with_its_signal_already_pending_and_blocked_kills():
    """The thread tgkills itself a SIGSEGV while blocking it, then faults: the kernel does not queue the
    fault's SIGSEGV twice but forces the pending one, which kills (natively: exit 139 as well)."""
    binary = gobuild.build(DATA / "go" / "blockedsegv").binary
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["prog", "pending"])).run()
    assert (p.exit_code, p.error, bytes(p.fds.stdout.data)) == (128 + 11, None, b"blocked\n")
    [segv] = [e for e in p.watch.signals if e.sig == 11]
    assert segv.info is None and segv.outcome == "fatal" and p.stop_reason == "killed by signal 11 (SIGSEGV)"


def _scenario_runs():
    from emu.drive import exec_scenario as scenario
    for f in sorted(GO.glob("*.toml")):
        yield f.name, None
        for v in scenario.load(str(f)).variants:
            yield f.name, v


@pytest.mark.parametrize("name,variant", list(_scenario_runs()))
def test_exec_scenarios_hold(name, variant):
    out = io.StringIO()
    rc = cli.main(["exec", str(GO / name), "--json"] + (["--variant", variant] if variant else []), out=out)
    j = json.loads(out.getvalue())
    assert rc == 0 and j["scenario"]["failed"] == [] and j["violations"] == [], j["scenario"]


def test_a_signal_interrupts_a_wait(binaries):
    """A signal to a blocked thread: an SA_RESTART futex wait without timeout restarts (RIP back on the
    SYSCALL, RAX = the syscall number again); other waits fail with EINTR (kernel/signal.c)."""
    from emu.linux import sysabi
    from emu.linux.threads import Thread, Wait
    p = GoProcess(elfimage.load(str(binaries["hello"])), process.Options(argv=["prog"]))
    sender = p.threads[p.pid]
    p.sigactions[23] = (0x1234, sigdeliver.SA_RESTART | sigdeliver.SA_ONSTACK, 0x5678, 0)
    for wait, rip_back, rax in [(Wait("futex", None, 0, restart=True, futex=0x1000, nr=202), 2, 202),
                                (Wait("futex", 5, -110, restart=False, futex=0x1000), 0, -sysabi.EINTR),
                                (Wait("sleep", 5, 0), 0, -sysabi.EINTR)]:
        t = Thread(len(p.threads) + 2000, p.uc.context_save())
        p.threads[t.tid] = t
        t.ctx.reg_write(X.UC_X86_REG_RIP, 0x401000)
        p.block(t, wait)
        assert p.send_signal(sender, t.tid, 23) == 0
        assert t.state == "runnable" and 23 in t.pending and t in p.runq
        assert t.ctx.reg_read(X.UC_X86_REG_RIP) == 0x401000 - rip_back
        assert t.ctx.reg_read(X.UC_X86_REG_RAX) == rax & (2**64 - 1)
        assert p.futex_waiters[0x1000] == []


def test_oracle_disagreement_on_a_declined_signal(binaries):
    image = elfimage.load(str(binaries["starve"]))
    p = GoProcess(image, process.Options(argv=["prog"]), oracle=lambda t, frame, g=None: "safe").run()
    declined = [e for e in p.watch.signals if e.outcome == "declined"]
    assert declined and [v["kind"] for v in p.watch.violations] == ["oracle-disagrees"] * len(declined)
    assert "declined" in p.watch.violations[0]["message"]


def test_frame_bookkeeping_checks_bite(binaries):
    """rt_sigreturn on a frame preemu did not deliver, and asyncPreempt returning for a goroutine
    never injected, are violations."""
    p = _with_hook(binaries["hello"], lambda im: im.symbol("runtime.sigtramp.abi0"), lambda p, uc: p.cur.frames.clear())
    assert p.watch.violations and {v["kind"] for v in p.watch.violations} == {"sigreturn-frame"}
    p = _with_hook(binaries["starve"], lambda im: im.symbol("runtime.asyncPreempt.abi0"),
                   lambda p, uc: p.watch._awaiting.clear())
    assert [v["kind"] for v in p.watch.violations] == ["unmatched-return"]


# Instruction counts of whole runs. Counting per translated block (issue #22), with the slice's last block
# cut short where the limit falls, ended every slice on the same instruction as the per-instruction counter:
# these runs gave 304,695 / 11,485,916 / 11,485,919 instructions with both (commit 44163cc). Since a thread
# returning from a signal handler keeps the CPU (issue #21) the first two schedule differently, and since the
# threads run on the two CPUs --cpus says (issue #37: 302,205 / 11,486,065 / 11,485,919 instructions with 3, 4, 4
# signals on one shared clock) all three do; the figures below pin the counter as it is now. (Without the vDSO,
# which those runs did not have.)
@pytest.mark.parametrize("prog, kw, insns, signals", [
    ("hello", {}, 308_783, 2),
    ("starve", {}, 11_553_448, 3),
    ("starve", {"signal_delay": 3}, 11_553_451, 3),
])
def test_instruction_counts_are_those_of_the_per_instruction_counter(binaries, prog, kw, insns, signals):
    p = run(binaries[prog], vdso=False, **kw)
    assert p.exit_code == 0 and p.insns == insns and len(p.watch.signals) == signals
    assert sum(c - process.BOOT_NS for c in p.cpus.clocks) == insns + p.idle_ns    # every CPU's time accounted


def test_kinds_program_counts_and_landing_pcs_are_fixed():
    p = run(gobuild.build(DATA / "go" / "kinds").binary, vdso=False)
    assert p.exit_code == 0 and p.insns == 562_210      # 564,221 on one shared clock, before issue #37
    assert [(s.outcome, s.where) for s in p.watch.signals] == [("declined", "runtime.copystack+0x293"),
                                                              ("declined", "runtime.pcvalue+0x1d0")]


def test_the_vdso_answers_clock_reads_from_virtual_time_without_a_syscall():
    binary = gobuild.build(ROOT / "bench" / "go" / "clock").binary      # 200,000 time.Now() calls
    with_vdso, without = run(binary), run(binary, vdso=False)
    assert bytes(with_vdso.fds.stdout.data) == bytes(without.fds.stdout.data) == b"true true\n"
    assert with_vdso.syscall_counts.get("clock_gettime", 0) == 0
    assert without.syscall_counts["clock_gettime"] > 400_000
    # the same meaning of time: the program's own clock reads follow the instruction count (1 ns each)
    assert sum(c - process.BOOT_NS for c in with_vdso.cpus.clocks) == with_vdso.insns + with_vdso.idle_ns
    assert with_vdso.clock in with_vdso.cpus.clocks        # the time the program ended at: its last CPU's


def test_vdso_time_is_the_instruction_count(tmp_path):
    src = tmp_path / "t.go"
    src.write_text("package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\nfunc main() {\n"
                   "\ta := time.Now()\n\ts := 0\n\tfor i := 0; i < 1000000; i++ {\n\t\ts += i ^ (s >> 1)\n\t}\n"
                   "\td := time.Since(a)\n\tfmt.Println(s > 0, d.Nanoseconds())\n}\n")
    p = run(gobuild.build(src).binary)
    ok, ns = bytes(p.fds.stdout.data).split()
    # a million iterations of a few instructions each, at 1 ns per instruction: a few ms, exactly repeatable
    assert ok == b"true" and 3_000_000 <= int(ns) <= 8_000_000
    assert bytes(run(gobuild.build(src).binary).fds.stdout.data) == bytes(p.fds.stdout.data)


def test_gettimeofday_and_time_read_the_same_virtual_realtime_clock(tmp_path):
    """syscall.Gettimeofday and syscall.Time (both __vdso_gettimeofday on amd64), the time(2) syscall and
    time.Now() (__vdso_clock_gettime) read one CLOCK_REALTIME: 2026-01-01T00:00:00Z at boot plus virtual
    time; without the vDSO, gettimeofday is a syscall that answers the same."""
    src = tmp_path / "t.go"
    src.write_text("package main\n\nimport (\n\t\"fmt\"\n\t\"syscall\"\n\t\"time\"\n)\n\nfunc main() {\n"
                   "\tvar tv syscall.Timeval\n\tsyscall.Gettimeofday(&tv)\n\tvar tt syscall.Time_t\n"
                   "\tsyscall.Time(&tt)\n\tsec, _, _ := syscall.RawSyscall(syscall.SYS_TIME, 0, 0, 0)\n"
                   "\tnow := time.Now().Unix()\n"
                   "\tfmt.Println(tv.Sec, sec, int64(tt), now)\n}\n")
    binary = gobuild.build(src).binary
    p, without = run(binary), run(binary, vdso=False)
    for q in (p, without):
        tv, sec, tt, now = map(int, bytes(q.fds.stdout.data).split())
        assert tv == sec == tt == now == 1_767_225_600            # less than a second after boot
    assert "gettimeofday" not in p.syscall_counts and p.syscall_counts["time"] == 1
    assert without.syscall_counts["gettimeofday"] == 2 and without.syscall_counts["time"] == 1


def test_file_times_and_hard_links_as_natively():
    """#50: os's test binary ended at utimensat and umask (unsupported); TestHardLink failed (tmpfs made no hard
    links), TestGetwdDeep (a path over 4096 bytes was cut, ENOENT). tests/data/go/filetimes: atime and mtime apart, UTIME_OMIT/UTIME_NOW, EINVAL for a bad tv_nsec or
    flag, a link's own times, futimens; a second name of one file, EPERM/EEXIST/ENOENT, rename onto it."""
    import subprocess
    binary = gobuild.build(DATA / "go" / "filetimes").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    p = run(binary)
    assert p.exit_code == 0 and bytes(p.fds.stdout.data).decode() == native
    assert native.count("true") == 15 and "one file, two names: true 2" in native
    assert "gid 1, the link's 2, uids kept: 1 2 true true" in native          # os's test binary ended at fchownat
    assert "umask 027: a file 0666 is -rw-r----- a directory 0777 is -rwxr-x---" in native
    assert "tv_nsec 1e9: invalid argument" in native and "link a directory: link DIR DIR/d: operation not permitted" in native


def test_statx_answers_what_fstatat_answers(tmp_path):
    """statx(2) (include/uapi/linux/stat.h's struct statx) against os.Stat (fstatat) for a /tmp file and a
    file of the working directory: the same size, mode and inode, as natively."""
    import subprocess
    src = tmp_path / "t.go"
    src.write_text("""package main

import (
\t"encoding/binary"
\t"fmt"
\t"os"
\t"syscall"
\t"unsafe"
)

func statx(path string) (size uint64, mode uint16, ino uint64) {
\tvar buf [256]byte
\tp, _ := syscall.BytePtrFromString(path)
\tsyscall.Syscall6(332, uintptr(0xffffffffffffff9c), uintptr(unsafe.Pointer(p)), 0, 0x7ff,
\t\tuintptr(unsafe.Pointer(&buf[0])), 0)
\treturn binary.LittleEndian.Uint64(buf[40:]), binary.LittleEndian.Uint16(buf[28:]), binary.LittleEndian.Uint64(buf[32:])
}

func main() {
\tf, _ := os.CreateTemp("", "sx")
\tf.WriteString("twelve bytes")
\tf.Close()
\tfor _, path := range []string{f.Name(), "t.go"} {
\t\tst, _ := os.Stat(path)
\t\tsize, mode, ino := statx(path)
\t\tsys := st.Sys().(*syscall.Stat_t)
\t\tfmt.Println(size == uint64(st.Size()), uint32(mode) == sys.Mode, ino == sys.Ino, size > 0)
\t}
\tos.Remove(f.Name())
}
""")
    binary = gobuild.build(src).binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["t"], cwd=str(tmp_path))).run()
    assert bytes(p.fds.stdout.data).decode() == native == "true true true true\n" * 2
    assert p.syscall_counts["statx"] == 2


def test_os_executable_names_the_binary(tmp_path):
    """readlink(/proc/self/exe), as os.Executable reads it (proc(5)): the binary's path."""
    src = tmp_path / "t.go"
    src.write_text("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n"
                   "\texe, err := os.Executable()\n\tfmt.Print(exe, \" \", err)\n}\n")
    binary = gobuild.build(src).binary
    p = run(binary)
    assert bytes(p.fds.stdout.data).decode() == f"{binary} <nil>"


def test_a_program_reads_its_working_directory_as_natively():
    """Files (issue #21): getcwd, a file, stat, a directory listing, lseek, /dev/null, /dev/zero."""
    import subprocess
    src = DATA / "go" / "files"
    binary = gobuild.build(src).binary
    native = subprocess.run([str(binary)], cwd=src, capture_output=True, text=True, check=True).stdout
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["files"], cwd=str(src))).run()
    assert p.exit_code == 0 and bytes(p.fds.stdout.data).decode() == native
    assert "readdir [main.go] true" in native


def test_the_view_is_read_only_and_ends_at_the_working_directory(tmp_path):
    (tmp_path / "in.txt").write_text("inside\n")
    (tmp_path / "up").symlink_to("..")
    (tmp_path / "main.go").write_text(
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n'
        '\terr := os.WriteFile("new.txt", []byte("x"), 0o644)\n\tfmt.Println("create:", err)\n'
        '\t_, err = os.ReadFile("/etc/hostname")\n\tfmt.Println("outside:", os.IsNotExist(err))\n'
        '\t_, err = os.ReadFile("up/etc")\n\tfmt.Println("escape:", os.IsNotExist(err))\n'
        '\tb, err := os.ReadFile("in.txt")\n\tfmt.Print("inside: ", string(b))\n}\n')
    binary = gobuild.build(tmp_path / "main.go").binary
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["t"], cwd=str(tmp_path))).run()
    out = bytes(p.fds.stdout.data).decode()
    assert "create: open new.txt: read-only file system" in out
    assert "outside: true" in out and "escape: true" in out and "inside: inside" in out
    assert not (tmp_path / "new.txt").exists()


@pytest.mark.parametrize("procs", [2, 3, 4, 5])
def test_gc_with_spinners_on_every_p_finishes_as_natively(procs):
    """The livelock of issue #21: with GOMAXPROCS >= 3 and a GC meeting busy goroutines, each thread that
    returned from the SIGURG handler went to the back of the run queue, and the GC's next signal came before
    it ran one instruction of asyncPreempt. Linux returns from rt_sigreturn to user mode on the same CPU
    (arch/x86/kernel/signal.c): the thread goes on."""
    binary = gobuild.build(DATA / "go" / "preemptgc").binary
    p = GoProcess(elfimage.load(str(binary)), process.Options(argv=["preemptgc", str(procs)], ncpu=procs,
                                                                   max_virtual_ms=500)).run()
    assert not p.starved and p.exit_code == 0, p.stop_reason
    assert bytes(p.fds.stdout.data) == f"ok 20 GCs with {procs - 1} spinners\n".encode()
    assert not p.watch.violations


def test_the_oracle_reads_the_state_doSigPreempt_reads_not_the_state_at_delivery(binaries):
    """N7 (issue 23): between the signal's delivery and the handler's call of doSigPreempt another thread
    may change g/m/p (here: the request is withdrawn as the handler starts, in sigtrampgo, still on the
    interrupted g). The runtime then declines, and the oracle, asked with the state doSigPreempt reads
    (signal_unix.go:342-357, called at :691-692), agrees: no-request. Asked at delivery it said safe, a
    false oracle-disagrees violation."""
    S = None
    done = []

    def withdraw(p, uc):
        nonlocal S
        S = S or p.structs
        if done:
            return
        g = p.read_u64(p.fs_base() - 8)
        m = p.read_u64(g + S.g["m"].offset)
        pp = p.read_u64(m + S.m["p"].offset)
        if not p.read(g + S.g["preempt"].offset, 1)[0]:
            return
        p.write(g + S.g["preempt"].offset, b"\0")
        p.write(pp + S.p["preempt"].offset, b"\0")
        done.append(g)
    p = _with_hook(binaries["starve"], lambda im: im.symbol("runtime.sigtrampgo"), withdraw)
    assert done
    first = next(e for e in p.watch.signals if e.outcome is not None)
    assert (first.outcome, first.oracle) == ("declined", "no-request")
    assert not p.watch.violations and p.watch.preemptions          # sysmon asked again later: injected


def test_chdir_and_mounts_read_only_and_read_write(tmp_path):
    """chdir into a /tmp directory and relative paths there; --mount HOST:GUEST reads, :rw writes through to
    the host (create, append, rename); a write to a read-only mount is EROFS; `/` and the directories above
    the mounts exist, read-only, listing only what leads to a mount (and preemu's /etc); the rest of the host
    and chdir to it are ENOENT."""
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "in.txt").write_text("host data")
    binary = gobuild.build(DATA / "go" / "mounts").binary
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json", "--mount", f"{ro}:/data", "--mount", f"{rw}:/out:rw"], out)
    j = json.loads(out.getvalue())
    assert code == 0, j["error"]
    lines = j["stdout"].splitlines()
    assert lines == ["mkdirtemp true", "chdir true", "getwd is the temp dir true",
                     "relative write, absolute read: relative true", "chmod: -rw-------", "chdir sub: sub",
                     'ro mount: "host data" true', "ro mount write: open /data/x.txt: read-only file system",
                     "rw mount write: true", "rw rename, chmod and stat: true -rw-r-----", "chdir /: true",
                     "root lists: [data dev out tmp]", "root write: open /x.txt: read-only file system",
                     "the rest of the host: true",
                     "chdir outside: true"]
    assert (rw / "final.txt").read_text() == "from the guest: host data!" and not (rw / "result.txt").exists()
    assert (rw / "final.txt").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in ro.iterdir()) == ["in.txt"]                 # nothing written there


@pytest.mark.parametrize("spec,msg", [("nocolon", "use HOST:GUEST"), ("/nonexistent-dir:/x", "no such file or directory"),
                                      (".:relative", "must be absolute"), (".:/tmp", "preemu's own"),
                                      (".:/x:wr", "use HOST:GUEST")])
def test_a_bad_mount_is_exit_2(spec, msg, capsys):
    assert cli.main(["exec", "tests/data/go/mounts", "--mount", spec]) == 2
    assert msg in capsys.readouterr().err


def test_symbolic_links_in_tmp_behave_as_natively():
    """symlink(7) in /tmp (tmpfs.py, sys_file._walk): absolute and relative links, `..` after a link taken
    physically, a dangling link, a loop (ELOOP), Lstat/Stat/Readlink/EvalSymlinks/WalkDir, removal."""
    import subprocess
    binary = gobuild.build(DATA / "go" / "symlinks").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    p = run(binary)
    assert p.exit_code == 0 and bytes(p.fds.stdout.data).decode() == native
    assert "rel/.. is a's: true" in native and "loop: true" in native and "error" not in native


def test_starting_a_dynamic_program_fails_with_enoent_and_is_reported(tmp_path):
    """A dynamically linked program (the host's /bin/true, through a mount) cannot run under preemu: its
    execve fails with ENOENT, as Linux answers when the ELF interpreter is missing, os/exec reports it, and
    the report lists the child with a note saying why (sys_fork.py)."""
    src = tmp_path / "t.go"
    src.write_text("package main\n\nimport (\n\t\"fmt\"\n\t\"os/exec\"\n)\n\nfunc main() {\n"
                   "\terr := exec.Command(\"/hostbin/true\").Run()\n\tfmt.Println(\"run:\", err)\n}\n")
    out = io.StringIO()
    code = cli.main(["exec", str(gobuild.build(src).binary), "--mount", "/bin/true:/hostbin/true", "--json"], out)
    j = json.loads(out.getvalue())
    assert code == 0 and "run: fork/exec /hostbin/true: no such file or directory" in j["stdout"]
    child = j["processes"][-1]
    assert child["exit_code"] == 253 and "dynamically linked" in child["notes"][0]


def test_sendmsg_recvmsg_and_mknod_answer_as_natively():
    """#50 item 3: sendmsg ended `syscall`'s test binary, mknodat `os`'s FIFO test. SCM_RIGHTS passes a pipe's
    write end over a socketpair (MSG_CTRUNC without room for it), SCM_CREDENTIALS over a datagram and a stream
    socketpair (sent, and added for a SO_PASSCRED receiver), WriteMsgUDP/ReadMsgUDP, mknod of a regular
    file (then EEXIST), ENOENT and EPERM for a directory type, as natively (emu/linux/sys_msg.py)."""
    import subprocess
    binary = gobuild.build(DATA / "go" / "sendmsg").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    p = run(binary)
    assert p.error is None and p.exit_code == 0 and bytes(p.fds.stdout.data).decode() == native
    assert 'pipe read: "through the passed descriptor\\n"' in native


def test_mknod_answers_as_linux_and_makes_nothing_on_the_host(tmp_path):
    """preemu makes no FIFO or device node on the host (docs/explanation/security.md): there EPERM, as a file
    system without mknod answers (vfs_mknod), after the path's own checks (EEXIST first); a FIFO in /tmp is
    made (fifo.py), a device there is EPERM too; a bad type is EINVAL, a directory type EPERM."""
    from guestkernel import Guest
    from emu.linux import mounts
    g = Guest(mounts=[mounts.parse_mount(f"{tmp_path}:/rw:rw")])
    S_IFIFO, S_IFCHR, S_IFREG, S_IFDIR = 0o010000, 0o020000, 0o100000, 0o040000
    assert g.call("mknodat", -100, "/tmp/f", S_IFIFO | 0o600, 0) == 0
    assert g.call("mknodat", -100, "/tmp/f", S_IFIFO | 0o600, 0) == -17
    assert g.call("mknod", "/tmp/c", S_IFCHR | 0o600, 0x0501) == -1
    assert g.call("mknodat", -100, "/rw/f", S_IFIFO | 0o600, 0) == -1
    assert g.call("mknodat", -100, "/rw/r", S_IFREG | 0o600, 0) == 0 and (tmp_path / "r").is_file()
    assert g.call("mknodat", -100, "/rw/r", S_IFIFO | 0o600, 0) == -17
    assert g.call("mknodat", -100, "/tmp/x", 0o070000 | 0o600, 0) == -22
    assert g.call("mknodat", -100, "/tmp/d", S_IFDIR | 0o700, 0) == -1
    assert sorted(q.name for q in tmp_path.iterdir()) == ["r"]


def test_argv0_is_the_path_given_and_names_the_running_binary(tmp_path, monkeypatch):
    """#50 item 4: go test runs PKG.test from its build directory with the package directory as working
    directory; os.Args[0] was ./NAME, so debug/elf's and debug/gosym's tests could not open it. argv[0] is
    now the path given, the program opens its own binary by it and runs itself again, as natively."""
    import shutil
    import subprocess
    (tmp_path / "bin").mkdir()
    (tmp_path / "pkg").mkdir()
    binary = tmp_path / "bin" / "args0.test"
    shutil.copy(gobuild.build(DATA / "go" / "args0").binary, binary)
    native = subprocess.run(["../bin/args0.test"], cwd=tmp_path / "pkg", capture_output=True, text=True,
                            check=True, timeout=60).stdout
    monkeypatch.chdir(tmp_path / "pkg")
    out = io.StringIO()
    assert cli.main(["exec", "../bin/args0.test", "--json"], out) == 0
    assert json.loads(out.getvalue())["stdout"] == native
    assert native.startswith("argv0 ../bin/args0.test\nelf machine EM_X86_64\n")


def test_long_arguments_and_environment_as_natively(capsys):
    """#50 item 6: argv and environment over 4 KiB were an internal error. Now the stack takes what Linux takes
    (fs/exec.c: 2 MiB with the pointers, 128 KiB a string): 70 arguments of 60 characters, a child with 100 KB
    of arguments and 1 MB of environment, and E2BIG past either limit, as natively; exec's own argv past them
    is one clear line, exit 2."""
    import subprocess
    binary = str(gobuild.build(DATA / "go" / "bigargs").binary)
    args = ["a" * 60] * 70
    native = subprocess.run([binary, *args], capture_output=True, text=True, check=True, timeout=60).stdout
    out = io.StringIO()
    assert cli.main(["exec", binary, "--json", "--", *args], out) == 0
    assert json.loads(out.getvalue())["stdout"] == native
    assert "child: 200 arguments, 100000 bytes; environment 1000000 bytes\n<nil>\n" in native
    assert "3 MiB of arguments: true" in native and "one argument of 200,000 bytes: true" in native
    capsys.readouterr()
    assert cli.main(["exec", binary, "--", "b" * 200_000], io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "too long for Linux (E2BIG): a string of 200,000 bytes" in err and "Traceback" not in err


def test_sendmsg_refuses_malformed_messages_with_linuxs_errnos():
    """sys_msg.py: a control message whose length runs past the buffer or names an unknown type, a negative
    iovec length and an iovec count over UIO_MAXIOV are EINVAL/EMSGSIZE, never the end of the run."""
    from guestkernel import Guest
    g = Guest()
    sv = g.alloc(8)
    assert g.call("socketpair", 1, 1, 0, sv) == 0
    a, _b = struct.unpack("<ii", bytes(g.p.read(sv, 8)))
    data = g.put(b"x")

    def msg(iov_len=1, iovcnt=1, control=b""):
        iov = g.put(struct.pack("<QQ", data, iov_len))
        ctl = g.put(control) if control else 0
        return g.put(struct.pack("<QI4xQQQQi4x", 0, 0, iov, iovcnt, ctl, len(control), 0))
    assert g.call("sendmsg", a, msg(), 0) == 1
    assert g.call("sendmsg", a, msg(control=struct.pack("<Qii", 64, 1, 1) + bytes(8)), 0) == -22
    assert g.call("sendmsg", a, msg(control=struct.pack("<Qii", 20, 1, 99) + bytes(8)), 0) == -22
    assert g.call("sendmsg", a, msg(iov_len=1 << 63), 0) == -22
    assert g.call("sendmsg", a, msg(iovcnt=2000), 0) == -90
