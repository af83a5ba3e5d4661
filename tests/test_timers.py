"""CPU-time timers (issue #37 item 4, emu/linux/sys_timer.py): setitimer(ITIMER_PROF) and timer_create on the
CPU clocks send SIGPROF as the kernel's posix-cpu-timers do, so runtime/pprof's CPU profiler works."""
import io
import json
import subprocess
from types import SimpleNamespace

from emu import cli
from emu.front import gobuild
from emu.linux import sys_timer as T


def test_the_cpu_profiler_samples_the_program_as_natively():
    prog = "tests/data/go/cpuprof"
    out = io.StringIO()
    code = cli.main(["exec", prog, "--json", "--quiet"], out)
    j = json.loads(out.getvalue())
    n = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True)
    assert code == 0 and j["stdout"] == n.stdout == "spin true profile true names main.spin true\n"
    prof = [s for s in j["signals"]["list"] if s["sig"] == T.SIGPROF]
    assert len(prof) >= 10 and j["syscalls"].get("timer_create", 0) >= 1 and j["syscalls"]["setitimer"] >= 2


class _Proc:
    def __init__(self):
        self.timers, self.sent = T.CpuTimers(), []

    def send_signal(self, sender, tid, sig, code):
        self.sent.append((tid, sig, code))


def test_a_process_timer_signals_the_thread_that_used_the_time_and_counts_overruns():
    p, a, b = _Proc(), SimpleNamespace(tid=1, cpu_ns=0), SimpleNamespace(tid=2, cpu_ns=0)
    p.timers.itimers[T.ITIMER_PROF] = T.CpuTimer(T.SIGPROF, T.SI_KERNEL, None, interval=10, remaining=10)
    p.timers.charge(p, a, 6)
    p.timers.charge(p, b, 6)                          # 12 of 10: b's slice ran it out
    assert p.sent == [(2, T.SIGPROF, T.SI_KERNEL)] and p.timers.itimers[T.ITIMER_PROF].remaining == 8
    p.timers.charge(p, a, 35)                         # three periods more in one slice: one signal, overrun 2
    assert p.sent[-1] == (1, T.SIGPROF, T.SI_KERNEL) and p.timers.itimers[T.ITIMER_PROF].overrun == 3 - 1
    assert (a.cpu_ns, b.cpu_ns) == (41, 6)


def test_a_thread_timer_counts_its_own_thread_only_and_a_one_shot_disarms():
    p, a, b = _Proc(), SimpleNamespace(tid=1, cpu_ns=0), SimpleNamespace(tid=2, cpu_ns=0)
    p.timers.posix[0] = T.CpuTimer(T.SIGPROF, T.SI_TIMER, 1, interval=0, remaining=5)
    p.timers.charge(p, b, 100)
    assert p.sent == []
    p.timers.charge(p, a, 5)
    assert p.sent == [(1, T.SIGPROF, T.SI_TIMER)] and p.timers.posix[0].remaining == 0
    p.timers.charge(p, a, 100)
    assert len(p.sent) == 1


def test_cpu_time_clocks_count_cpu_time_as_natively():
    """#50 item 7: clock_gettime(CLOCK_PROCESS_CPUTIME_ID / CLOCK_THREAD_CPUTIME_ID) answered monotonic time.
    They now read the virtual CPU time the CPU timers count (a sleep adds none, a spin its length), the
    pid/tid-encoded clocks too, EINVAL for no clock, clock_getres 1 ns: tests/data/go/cpuclocks as natively."""
    from conftest import DATA
    binary = gobuild.build(DATA / "go" / "cpuclocks").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    out = io.StringIO()
    assert cli.main(["exec", str(binary), "--json"], out) == 0
    assert json.loads(out.getvalue())["stdout"] == native
    assert native.count("true") == 6
