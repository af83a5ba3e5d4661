"""Signals a program sends itself (emu/linux/sys_signal.py): kill to a signal.Notify channel, tgkill to one
thread, EINTR from a nanosleep a handler interrupted (signal(7): never restarted), and death by SIGTERM's
default action, with the exit status Linux gives (128 + 15)."""
import io
import json
import re
import subprocess

from conftest import DATA

from emu import cli
from emu.front import gobuild


def test_signals_a_program_sends_itself_behave_as_natively():
    binary = gobuild.build(DATA / "go" / "signals").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json"], out)
    j = json.loads(out.getvalue())
    assert native.returncode == -15 and j["exit_code"] == code == 143
    assert j["stdout"] == native.stdout
    assert "nanosleep: interrupted system call" in native.stdout and "not reached" not in native.stdout
    assert "time left after the interruption about 4.98 s: true" in native.stdout     # rem written on EINTR
    assert "kill 0 (does it exist): <nil>" in native.stdout
    assert {"kill", "tgkill", "getppid", "getuid"} <= set(j["syscalls"])


def test_an_int3_is_the_kernels_sigtrap_as_natively():
    """runtime.Breakpoint's int3 is a forced SIGTRAP with si_code SI_KERNEL (arch/x86/kernel/traps.c
    do_int3_user) and RIP past the int3: Go's runtime throws ("SIGTRAP: trace trap", sigcode=128, exit 2) even
    though signal.Notify wants SIGTRAP (a tkill's SI_TKILL would go to the channel and the program on)."""
    binary = gobuild.build(DATA / "go" / "breakpoint").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json"], out)
    j = json.loads(out.getvalue())
    assert native.returncode == j["exit_code"] == code == 2 and j["error"] is None
    assert j["stdout"] == native.stdout == "before\n"
    def first(text):          # which M ran the goroutine (m=N) differs from one native run to the next
        return [re.sub(r" m=\d+ ", " m=N ", ln) for ln in text.splitlines()[:2]]
    assert first(j["stderr"]) == first(native.stderr)
    assert j["stderr"].startswith("SIGTRAP: trace trap\nPC=0x") and " sigcode=128\n" in j["stderr"]
    assert "runtime.breakpoint()\n\truntime/asm_amd64.s" in j["stderr"]
