"""Other processes (emu/linux/proctable.py, sys_fork.py): a Go program that runs itself as a child, compared
with a native run, and each Linux rule of fork/vfork/clone, execve, wait4/waitid and pidfds at the byte level
through the syscall handlers (guestkernel.Guest). bench/mutations.py's "proc-*" mutations are killed here."""
from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess

import pytest
from conftest import DATA
from guestkernel import Guest

from emu import cli
from emu.front import gobuild
from emu.linux import fds as F
from emu.linux import sys_fork
from emu.linux.proctable import PidFd
from emu.linux.sysabi import (BLOCK, EACCES, EBADF, ECHILD, EINVAL, ENOENT, ENOEXEC, ENOSYS, ESRCH, STOP)
from emu.linux.threads import BLOCKED, RUNNABLE, Thread

SIGCHLD, SIGTERM, SIGKILL = 17, 15, 9
CLONE_VM, CLONE_SIGHAND, CLONE_PIDFD, CLONE_VFORK, CLONE_PARENT_SETTID = 0x100, 0x800, 0x1000, 0x4000, 0x100000
WNOHANG, WEXITED, WNOWAIT, WCLONE, WALL = 1, 4, 0x01000000, 0x80000000, 0x40000000
P_ALL, P_PID, P_PIDFD = 0, 1, 3
F_GETFD, O_CLOEXEC = 1, 0o2000000


# --- the whole program ---------------------------------------------------------------------------------------
def _native_and_preemu(prog: str):
    """tests/data/go/`prog` run natively (empty environment) and under `preemu exec --json`: the native
    run, preemu's exit code and its JSON report."""
    binary = gobuild.build(DATA / "go" / prog).binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, env={})
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json"], out)
    return native, code, json.loads(out.getvalue())


def test_a_program_that_runs_itself_reads_its_childs_output_and_exit_status_as_natively():
    native, code, j = _native_and_preemu("selfexec")
    assert (code, j["stdout"], j["error"]) == (0, native.stdout, None)
    assert "child args [\\\"a\\\" \\\"b c\\\"]" in j["stdout"] and "signal: terminated" in j["stdout"]
    procs = j["processes"]
    assert procs[0]["pid"] == 1000 and procs[0]["exit_code"] == 0
    by_end = [(p["exit_code"], p["signal"]) for p in procs[1:]]
    # checkClonePidfd's child, exit 7, the upper-caser, the one killed by SIGTERM, the failed execve (253)
    assert by_end == [(0, None), (7, None), (0, None), (None, SIGTERM), (253, None)]
    assert all(p["ppid"] == 1000 for p in procs[1:]) and procs[2]["argv"][1:] == ["a", "b c"]
    assert any("execve /nonexistent/prog failed: ENOENT" in n for n in procs[5]["notes"])


def test_process_groups_and_sessions_are_kept_as_natively():
    """#50: syscall's test binary ended at getpgid (no such syscall). tests/data/go/pgrp: getpgid/getpgrp/getsid,
    SysProcAttr Setpgid, Pgid and Setsid, setpgid's EACCES/EINVAL/ESRCH/EPERM, kill and wait4 on -pgid."""
    native, code, j = _native_and_preemu("pgrp")
    assert (code, j["stdout"], j["error"]) == (0, native.stdout, None)
    assert "reaps both, killed by SIGTERM: 2" in native.stdout and native.stdout.count("true") == 9


def test_credentials_and_fchmodat2_as_natively():
    """#50: os/exec's test binary ended at setgid, syscall's at fchmodat2 (452). tests/data/go/creds: set*id to
    the ids the process has, getres*id, setgroups, a child with SysProcAttr.Credential, Fchmodat NOFOLLOW."""
    native, code, j = _native_and_preemu("creds")
    assert (code, j["stdout"], j["error"]) == (0, native.stdout, None)
    assert "child: uid, gid kept: true true" in native.stdout and "mode: -rw-r-----" in native.stdout
    assert "fchmodat nofollow, link: operation not supported" in native.stdout
    assert "the kernel's written back: 0x20080522" in native.stdout and "capset the same sets: true" in native.stdout


def test_a_stopped_child_goes_on_after_sigcont_as_natively():
    """#50: SIGSTOP killed the child (os/exec's TestWaitid: "signal: stopped"). tests/data/go/jobctl: a stopped
    child answers nothing until SIGCONT, then resumes its read; SIGCONT to a running child and a caught
    SIGTSTP change nothing."""
    native, code, j = _native_and_preemu("jobctl")
    assert (code, j["stdout"], j["error"]) == (0, native.stdout, None)
    assert "a stopped child answers nothing: true" in native.stdout and "then it goes on: got three" in native.stdout


def test_the_text_report_lists_every_process():
    binary = gobuild.build(DATA / "go" / "selfexec").binary
    from conftest import cli_run
    code, _, err = cli_run("exec", binary)
    words = " ".join(err.split())       # the report wraps at 120 columns, where depends on the binary's path
    assert code == 0 and "processes: 6" in words
    assert "killed by signal 15" in words and "a 'b c': exit 7" in words


# --- byte-level rules ------------------------------------------------------------------------------------------
@pytest.fixture
def g():
    return Guest()


def fork(g, flags=SIGCHLD):
    """clone(flags) from the guest's thread: (child pid, child Process, its first thread)."""
    pidfd_at = g.alloc(8)
    pid = g.call("clone", flags, 0, pidfd_at, 0, 0)
    if pid is BLOCK:
        pid = None
    rec = max(g.p.kernel.records.values(), key=lambda r: r.pid)
    return (pid if pid is not None else rec.pid), rec.proc, rec.proc.threads[rec.pid], pidfd_at


def end(g, child, code=0, signal=0):
    """The child ends (exit_group(code), or killed by `signal`) and the run loop's end of slice follows."""
    child.exit_group(code)
    if signal:
        child.killed_by, child.exit_code = signal, 128 + signal
    g.p.kernel.after_slice(child)


def status_after_wait4(g, pid, options=0):
    st = g.alloc(4)
    g.p.write(st, b"\xff" * 4)
    r = g.call("wait4", pid, st, options, 0)
    return r, struct.unpack("<i", g.p.read(st, 4))[0]


def waitid(g, idtype, ident, options):
    info = g.alloc(128)
    g.p.write(info, b"\xff" * 128)
    r = g.call("waitid", idtype, ident, info, options, 0)
    return r, struct.unpack("<iiiiIIi", g.p.read(info, 28))


def test_fork_gives_the_child_a_copy_returning_0_and_the_parent_its_pid(g):
    a = g.put(b"before")
    pid, child, ct, _ = fork(g)
    assert pid > g.p.pid and ct.tid == pid and child.pid == pid and child.ppid == g.p.pid
    from unicorn import x86_const as X
    assert ct.ctx.reg_read(X.UC_X86_REG_RAX) == 0
    g.p.write(a, b"parent")                               # a copy: the parent's later stores are its own
    assert child.read(a, 6) == b"before"


def test_wait4_status_word_of_an_exit_and_of_a_signal(g):
    pid, child, _, _ = fork(g)
    assert g.call("wait4", pid, 0, WNOHANG, 0) == 0    # running: WNOHANG answers 0
    end(g, child, code=7)
    assert status_after_wait4(g, pid) == (pid, 7 << 8)  # WIFEXITED, WEXITSTATUS 7
    assert g.call("wait4", pid, 0, 0, 0) == -ECHILD     # reaped
    pid2, child2, _, _ = fork(g)
    end(g, child2, signal=SIGKILL)
    assert status_after_wait4(g, -1) == (pid2, SIGKILL)  # WIFSIGNALED, WTERMSIG 9, no core


def test_wait_without_children_is_echild_and_bad_options_einval(g):
    assert g.call("wait4", -1, 0, 0, 0) == -ECHILD
    assert g.call("wait4", -1, 0, 0x100, 0) == -EINVAL                     # not a wait4 option
    assert g.call("waitid", P_ALL, 0, 0, WNOHANG, 0) == -EINVAL            # neither WEXITED nor WSTOPPED
    assert g.call("waitid", P_PID, 0, 0, WEXITED, 0) == -EINVAL            # P_PID needs a pid > 0
    assert g.call("waitid", P_PIDFD, 1, 0, WEXITED, 0) == -EBADF           # fd 1 is not a pidfd
    assert g.call("waitid", 9, 0, 0, WEXITED, 0) == -EINVAL


def test_waitid_siginfo_bytes_wnohang_zeroes_and_wnowait_keeps_the_zombie(g):
    pid, child, _, _ = fork(g)
    assert waitid(g, P_PID, pid, WEXITED | WNOHANG) == (0, (0, 0, 0, 0, 0, 0, 0))
    end(g, child, signal=SIGTERM)
    r, (signo, errno_, code, _, spid, uid, status) = waitid(g, P_ALL, 0, WEXITED | WNOWAIT)
    assert (r, signo, errno_, code, spid, uid, status) == (0, SIGCHLD, 0, 2, pid, g.p.uid, SIGTERM)   # CLD_KILLED
    assert waitid(g, P_PID, pid, WEXITED)[1][4] == pid       # WNOWAIT left it: reported again, now reaped
    assert waitid(g, P_PID, pid, WEXITED)[0] == -ECHILD
    pid, child, _, _ = fork(g)
    end(g, child, code=3)
    assert waitid(g, P_ALL, 0, WEXITED)[1][2:7:2] == (1, pid, 3)           # CLD_EXITED, si_status the code


def test_wclone_selects_children_whose_exit_signal_is_not_sigchld(g):
    pid, child, _, _ = fork(g, flags=0)                 # no exit signal, as checkClonePidfd's child
    end(g, child)
    assert g.call("wait4", -1, 0, WNOHANG, 0) == -ECHILD         # without __WCLONE it is no child of ours
    assert g.call("wait4", -1, 0, WNOHANG | WCLONE, 0) == pid
    pid, child, _, _ = fork(g, flags=SIGCHLD)
    end(g, child)
    assert g.call("wait4", -1, 0, WNOHANG | WCLONE, 0) == -ECHILD     # __WCLONE leaves SIGCHLD children out
    assert g.call("wait4", -1, 0, WNOHANG | WALL, 0) == pid          # __WALL takes both


def test_a_blocked_wait_finishes_when_the_child_ends(g):
    pid, child, _, _ = fork(g)
    st = g.alloc(4)
    assert g.call("wait4", pid, st, 0, 0) is BLOCK and g.t.state == BLOCKED and g.t.wait.restart
    end(g, child, code=5)
    from unicorn import x86_const as X
    assert g.t.state == RUNNABLE and g.t.ctx.reg_read(X.UC_X86_REG_RAX) == pid
    assert struct.unpack("<i", g.p.read(st, 4))[0] == 5 << 8


def test_the_parent_gets_sigchld_with_cld_exited_and_an_ignoring_parent_reaps_at_once(g):
    act = g.put(struct.pack("<QQQQ", 0x1234, 0, 0, 0))      # a handler (with SIG_DFL the kernel drops SIGCHLD:
    assert g.call("rt_sigaction", SIGCHLD, act, 0, 8) == 0   # its default action is to ignore it, sig_ignored)
    pid, child, _, _ = fork(g)
    end(g, child, code=4)
    ev = g.p.threads[g.p.pid].pending[SIGCHLD]
    assert (ev.info.signo, ev.info.code, ev.info.pid, ev.info.status) == (SIGCHLD, 1, pid, 4)
    act = g.put(struct.pack("<QQQQ", 1, 0, 0, 0))           # SIGCHLD to SIG_IGN
    assert g.call("rt_sigaction", SIGCHLD, act, 0, 8) == 0
    g.call("wait4", pid, 0, 0, 0)
    pid, child, _, _ = fork(g)
    end(g, child, code=4)
    assert g.call("wait4", pid, 0, WNOHANG, 0) == -ECHILD   # do_notify_parent's autoreap: no zombie


def test_vfork_parent_waits_until_the_child_exits_and_then_gets_its_pid(g):
    pid, child, ct, _ = fork(g, flags=CLONE_VM | CLONE_VFORK | SIGCHLD)
    assert g.t.state == BLOCKED and g.t.wait.kind == "vfork"
    g.p.send_signal(Thread(g.p.pid + 99, None), g.t.tid, SIGTERM)   # another thread's signal does not end the wait
    assert SIGTERM in g.t.pending
    assert g.t.state == BLOCKED
    end(g, child, code=0)
    from unicorn import x86_const as X
    assert g.t.state == RUNNABLE and g.t.ctx.reg_read(X.UC_X86_REG_RAX) == pid


def test_clone_pidfd_is_close_on_exec_and_readable_once_the_child_ended(g):
    pid, child, _, at = fork(g, flags=CLONE_PIDFD | SIGCHLD)
    fd = struct.unpack("<i", g.p.read(at, 4))[0]
    assert isinstance(g.p.fds.get(fd), PidFd) and g.call("fcntl", fd, F_GETFD, 0) == 1
    assert g.p.fds.get(fd).readiness() == 0
    end(g, child)
    assert g.p.fds.get(fd).readiness() == F.EPOLLIN
    assert waitid(g, P_PIDFD, fd, WEXITED)[1][4] == pid


def test_clone_flag_rules(g):
    assert g.call("clone", CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, g.alloc(8), 0, 0) == -EINVAL
    assert g.call("clone", CLONE_SIGHAND | SIGCHLD, 0, 0, 0, 0) == -EINVAL
    assert g.call("clone", CLONE_VM | SIGCHLD, 0, 0, 0, 0) == -ENOSYS
    assert g.call("clone", 0x20000 | SIGCHLD, 0, 0, 0, 0) == -ENOSYS         # CLONE_NEWNS
    assert len(g.p.unmodelled) == 2 and "CLONE_VM without CLONE_VFORK" in g.p.unmodelled[0]


def test_pidfd_open_and_send_signal_rules(g):
    assert g.call("pidfd_open", g.p.pid, 1) == -EINVAL
    assert g.call("pidfd_open", 0, 0) == -EINVAL
    assert g.call("pidfd_open", 4242, 0) == -ESRCH
    me = g.call("pidfd_open", g.p.pid, 0)
    assert me >= 3 and g.call("fcntl", me, F_GETFD, 0) == 1
    assert g.call("waitid", P_PIDFD, me, 0, WEXITED, 0) == -ECHILD          # not our own child: checkPidfd's ECHILD
    assert g.call("pidfd_send_signal", me, 0, 0, 0) == 0
    assert g.call("pidfd_send_signal", me, 0, 0, 1) == -EINVAL
    assert g.call("pidfd_send_signal", 1, 0, 0, 0) == -EBADF
    pid, child, _, _ = fork(g)
    fd = g.call("pidfd_open", pid, 0)
    assert g.call("pidfd_send_signal", fd, SIGTERM, 0, 0) == 0 and SIGTERM in child.threads[pid].pending
    end(g, child, signal=SIGTERM)
    assert g.call("pidfd_send_signal", fd, SIGTERM, 0, 0) == 0      # a zombie takes it (and ignores it)
    g.call("wait4", pid, 0, 0, 0)
    assert g.call("pidfd_send_signal", fd, SIGTERM, 0, 0) == -ESRCH  # reaped
    assert g.call("kill", pid, 0) == -ESRCH


def test_kill_reaches_a_child(g):
    pid, child, _, _ = fork(g)
    assert g.call("kill", pid, SIGTERM) == 0
    ev = child.threads[pid].pending[SIGTERM]
    assert (ev.info.code, ev.info.pid) == (0, g.p.pid)          # SI_USER from the parent
    assert g.call("kill", 99999, SIGTERM) == -ESRCH


def test_a_pipe_reads_end_of_file_only_when_every_process_closed_the_write_end(g):
    fds = g.alloc(8)
    assert g.call("pipe2", fds, F.O_NONBLOCK) == 0
    r, w = struct.unpack("<ii", g.p.read(fds, 8))
    pid, child, _, _ = fork(g)
    assert g.call("close", w) == 0
    assert g.call("read", r, g.alloc(8), 8) == -11               # EAGAIN: the child still has a write end
    end(g, child)
    assert g.call("read", r, g.alloc(8), 8) == 0                  # its exit closed it: end of file


def test_an_epoll_interest_survives_a_close_in_another_process(g):
    fds = g.alloc(8)
    g.call("pipe2", fds, F.O_NONBLOCK)
    r, _ = struct.unpack("<ii", g.p.read(fds, 8))
    ep = g.call("epoll_create1", O_CLOEXEC)
    g.call("epoll_ctl", ep, F.EPOLL_CTL_ADD, r, struct.pack("<IQ", F.EPOLLIN, 7))
    pid, child, ct, _ = fork(g)
    child.cur = ct
    assert child.fds.close(r) == 0
    assert r in g.p.fds.get(ep).interest
    assert g.call("close", r) == 0 and r not in g.p.fds.get(ep).interest


# --- execve ------------------------------------------------------------------------------------------------------
def execve(child, ct, path: str, argv=("x",), env=()):
    """execve(path, argv, env) in the child: the strings and arrays written into the child's memory."""
    base = child.mem.mmap(0, 1 << 16, 3, 0x22)
    top = [base]

    def put(data: bytes) -> int:
        a = top[0]
        child.write(a, data)
        top[0] += (len(data) + 15) & ~15
        return a
    strs = lambda xs: put(b"".join(struct.pack("<Q", put(x.encode() + b"\0")) for x in xs) + bytes(8))  # noqa: E731
    child.cur = ct
    return sys_fork.sys_execve(child, ct, put(path.encode() + b"\0"), strs(argv), strs(env))


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    (d / "script").write_text("#!/bin/sh\necho hi\n")
    (d / "text").write_text("just words\n")
    (d / "noexec").write_bytes(b"\x7fELF")
    shutil.copy("/bin/true", d / "dynamic")
    for n in ("script", "text", "dynamic"):
        (d / n).chmod(0o755)
    (d / "noexec").chmod(0o644)
    (d / "dir").mkdir()
    return d


def test_execve_of_what_preemu_cannot_run_fails_as_linux_would_with_a_note(files):
    from emu.linux import mounts
    g = Guest(mounts=[mounts.parse_mount(f"{files}:/bin2")])
    pid, child, ct, _ = fork(g)
    cases = {"/bin2/script": -ENOENT, "/bin2/dynamic": -ENOENT, "/bin2/text": -ENOEXEC, "/bin2/noexec": -EACCES,
             "/bin2/dir": -EACCES, "/bin2/missing": -ENOENT, "/dev/null": -EACCES}
    got = {path: execve(child, ct, path) for path in cases}
    assert got == cases
    notes = g.p.kernel.records[pid].notes
    assert any("a script (#!/bin/sh)" in n and "ENOENT" in n for n in notes)
    assert any("dynamically linked (it needs /lib64/ld-linux-x86-64.so.2)" in n for n in notes)
    assert any("/bin2/text failed: not an ELF" in n for n in notes)


def test_execve_closes_close_on_exec_descriptors_and_resets_caught_signals(g):
    fds = g.alloc(8)
    g.call("pipe2", fds, O_CLOEXEC)
    r, w = struct.unpack("<ii", g.p.read(fds, 8))
    assert g.call("dup3", w, 9, 0) == 9                                   # dup3 without O_CLOEXEC: kept
    g.call("rt_sigaction", 10, g.put(struct.pack("<QQQQ", 0x401000, 0, 0, 0)), 0, 8)   # caught
    g.call("rt_sigaction", 12, g.put(struct.pack("<QQQQ", 1, 0, 0, 0)), 0, 8)          # ignored
    pid, child, ct, _ = fork(g)
    ct.sigmask = 1 << 4
    assert execve(child, ct, os.path.abspath(g.p.image.path), argv=("prog", "-x"), env=("A=1",)) is STOP
    new = child.exec_into
    g.p.kernel.after_slice(child)
    assert g.p.kernel.records[pid].proc is new and new.pid == pid and new.opts.argv == ["prog", "-x"]
    assert r not in new.fds.fds and w not in new.fds.fds and new.fds.get(9) is g.p.fds.get(w)
    assert 10 not in new.sigactions and new.sigactions[12][0] == 1
    assert new.threads[pid].sigmask == 1 << 4


def test_execve_in_the_first_process_is_not_modelled(g):
    assert g.call("execve", "/proc/self/exe", 0, 0) == -ENOSYS and "syscall.Exec" in g.p.unmodelled[0]


def test_close_on_exec_is_per_descriptor(g):
    """FD_CLOEXEC (fs/fcntl.c, fs/file.c): set by O_CLOEXEC at creation, F_SETFD, F_DUPFD_CLOEXEC and
    dup3(O_CLOEXEC); a plain dup or dup2 gives a descriptor without it."""
    fds = g.alloc(8)
    g.call("pipe2", fds, O_CLOEXEC)
    r, _ = struct.unpack("<ii", g.p.read(fds, 8))
    getfd = lambda fd: g.call("fcntl", fd, F_GETFD, 0)       # noqa: E731
    assert getfd(r) == 1 and getfd(g.call("dup", r)) == 0 and getfd(g.call("dup2", r, 20)) == 0
    assert getfd(g.call("fcntl", r, 1030, 30)) == 1                                  # F_DUPFD_CLOEXEC
    assert getfd(g.call("dup3", r, 21, O_CLOEXEC)) == 1
    assert g.call("fcntl", r, 2, 0) == 0 and getfd(r) == 0                          # F_SETFD 0
    assert getfd(g.open("/dev/null", O_CLOEXEC)) == 1 and getfd(g.open("/dev/null")) == 0


# --- unshare(CLONE_FS): a thread's own working directory ------------------------------------------------------
def test_unshare_clone_fs_gives_the_thread_its_own_working_directory_as_natively():
    """runtime/testdata/testprog LockOSThreadAvoidsStatePropagation (GOMAXPROCS=1): a locked thread unshares
    CLONE_FS and chdirs to /tmp, then exits; a new thread must still see "/" (before: unshare answered 0 but
    the chdir moved every thread's directory, "bad state from old thread propagated")."""
    binary = gobuild.build_goroot_program("runtime/testdata/testprog")
    args = ["LockOSThreadAvoidsStatePropagation"]
    native = subprocess.run([str(binary)] + args, capture_output=True, text=True, timeout=60,
                            env={"GOMAXPROCS": "1"})
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--env", "GOMAXPROCS=1", "--json", "--"] + args, out)
    j = json.loads(out.getvalue())
    assert (code, j["stdout"], j["stderr"]) == (native.returncode, native.stdout, native.stderr)
    assert native.stderr == "OK\n"        # println


def test_unshare_clone_fs_splits_chdir_between_threads():
    g = Guest()
    before = g.p.cwd
    other = Thread(g.t.tid + 1, None)
    g.p.threads[other.tid] = other
    assert g.call("unshare", 0x200) == 0
    assert g.call("chdir", "/tmp") == 0 and g.p.cwd == "/tmp"
    g.p.cur = other
    assert g.p.cwd == before                 # the other thread kept the process's directory
    g.p.cur = g.t
    assert g.call("unshare", 0x20000) == -1  # CLONE_NEWNS: EPERM (1), as without CAP_SYS_ADMIN


def test_execve_errnos_in_tmp_as_natively():
    """#50 item 5: in /tmp a 0644 file answered ENOEXEC (Linux: EACCES) and so did a script (Linux: ENOENT when
    its interpreter is missing); tests/data/go/execerr prints each errno as natively."""
    binary = gobuild.build(DATA / "go" / "execerr").binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    out = io.StringIO()
    assert cli.main(["exec", str(binary), "--json"], out) == 0
    assert json.loads(out.getvalue())["stdout"] == native
    assert "0644 file: 13 permission denied" in native and "script, missing interpreter: 2 " in native
