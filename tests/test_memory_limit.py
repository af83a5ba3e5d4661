"""A guest memory limit (issue #37 item 6, issue #51 item 1): past --max-memory an mmap fails with ENOMEM and Go
ends with its own "out of memory" (exit 2); --max-memory's sizes; exec's exit status with --json as without it.
The limit is a cgroup's (emu/linux/memory.py, Cgroup): it covers /tmp's files (ENOSPC), the output preemu keeps (streamed
otherwise), every process and thread (ENOMEM from clone), and --max-pids bounds the tasks (EAGAIN); a mounted
file is read on demand. Each of the four ways to take the host's memory runs as its own preemu and its peak RSS
(wait4's ru_maxrss) must stay under ~1 GB with --max-memory 256M."""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import cli_run
from emu.linux import fds, memory, services, tmpfs

ROOT = Path(__file__).resolve().parent.parent


run = cli_run


def test_a_program_allocating_forever_ends_out_of_memory():
    # --budget: were the limit ignored, the program would stop starved (exit 1), not take the host's memory
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", "256M", "--quiet", "--budget", "100000000")
    assert code == 2 and "fatal error: runtime: out of memory" in err
    mib = [int(ln.split()[1]) for ln in out.splitlines()]
    assert 128 <= mib[-1] < 256                      # what it got before the limit, less the runtime's own
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", "256M", "--json", "--budget", "100000000")
    j = json.loads(out)
    assert code == 2 and j["exit_code"] == 2 and "out of memory" in j["stderr"]


def test_the_limit_counts_what_is_accessible_not_reservations():
    from unicorn import UC_ARCH_X86, UC_MODE_64, Uc
    mem = memory.AddressSpace(Uc(UC_ARCH_X86, UC_MODE_64), limit=8 << 20)
    assert mem.mmap(0, 64 << 20, memory.PROT_NONE, 0x22) > 0              # a reservation is free
    a = mem.mmap(0, 6 << 20, 3, 0x22)
    assert a > 0 and mem.mmap(0, 4 << 20, 3, 0x22) == -12                 # 6 + 4 > 8: ENOMEM
    assert mem.mprotect(a, 2 << 20, 1) == 0                               # already accessible: not counted again
    assert mem.munmap(a, 4 << 20) == 0 and mem.mmap(0, 4 << 20, 3, 0x22) > 0


@pytest.mark.parametrize("size, message", [("12Q", "is not a size"), ("100K", "at least 1M"), ("5 MiBs", "is not a size")])
def test_a_bad_size_is_exit_2(size, message):
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", size)
    assert code == 2 and message in err


def test_an_unsupported_syscall_is_exit_2_with_json_too():
    code, out, err = run("exec", "tests/data/go/unsupported", "--json")
    assert code == 2 and "unsupported syscall" in json.loads(out)["error"]


GIB = 1024                                     # MiB


@pytest.fixture
def rss_run():
    """Run preemu in a child reaped by wait4, so its own peak RSS is known (not the test process's children's)."""
    # Through a small launcher that forks preemu itself: a child exec'd straight from this (large) test process
    # starts with its RSS high-water mark (Linux carries the old mm's into signal->maxrss at exec; measured:
    # every test here reported the suite's 4,075 MiB), a fork of a 10 MiB launcher with that one's.
    launcher = ("import os, sys\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os.execv(sys.executable, [sys.executable, '-m', 'emu', *sys.argv[2:]])\n"
                "_, status, ru = os.wait4(pid, 0)\n"
                "open(sys.argv[1], 'w').write(str(ru.ru_maxrss))\n"
                "sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)\n")

    def run(*args, stdout=subprocess.PIPE):
        import tempfile
        fd, rss_file = tempfile.mkstemp(prefix="preemu-rss-")
        os.close(fd)
        try:
            return _launch(rss_file, *args, stdout=stdout)
        finally:
            os.unlink(rss_file)

    def _launch(rss_file, *args, stdout):
        p = subprocess.Popen([sys.executable, "-c", launcher, rss_file, *map(str, args)], cwd=ROOT, stdout=stdout,
                             stderr=subprocess.PIPE)
        out, err = b"", b""
        import threading
        box = {}
        reader = threading.Thread(target=lambda: box.setdefault("err", p.stderr.read()))
        reader.start()                         # both pipes drain at once (a full one would stop preemu)
        if stdout == subprocess.PIPE:
            out = p.stdout.read()
        reader.join()
        err = box["err"]
        p.wait()
        return p.returncode, out.decode(errors="replace"), err.decode(errors="replace"), \
            int(Path(rss_file).read_text()) >> 10
    return run


def test_a_big_heap_ends_out_of_memory_with_preemu_bounded(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/hog", "--max-memory", "256M", "--quiet")
    assert code == 2 and "fatal error: runtime: out of memory" in err
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_a_big_tmp_file_is_enospc_at_the_limit(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/bigtmp", "--max-memory", "256M", "--quiet")
    assert code == 3 and "write /tmp/big: no space left on device" in out
    mib = int(out.split()[1])
    assert 128 <= mib < 256                    # what fitted beside the runtime's own pages and the process's cost
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_huge_output_is_streamed_not_held(rss_run):
    with open(os.devnull, "wb") as null:
        code, out, err, rss = rss_run("exec", "tests/data/go/bigout", "--max-memory", "256M", "--quiet", "--",
                                      "1536", stdout=null)
    assert code == 0 and "wrote 1536 MiB" in err
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_output_not_streamed_is_kept_up_to_a_bound_and_the_rest_counted(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/bigout", "--max-memory", "256M", "--json", "--", "80")
    j = json.loads(out)
    assert code == 0 and j["stderr"] == "wrote 80 MiB\n"
    assert len(j["stdout"]) == fds.OUTPUT_KEEP
    dropped = (80 << 20) - fds.OUTPUT_KEEP
    assert any(f"stdout: {dropped:,} bytes written and not kept" in n for n in j["processes"][0]["notes"])
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_many_threads_end_at_the_memory_limit_with_enomem(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/forkbomb", "--max-memory", "96M", "--max-pids", "100000",
                                  "--quiet", "--", "threads")
    assert code == 2 and "runtime: failed to create new OS thread" in err and "errno=12)" in err
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_many_threads_end_at_the_process_limit_with_eagain():
    code, out, err = run("exec", "tests/data/go/forkbomb", "--max-pids", "100", "--quiet", "--", "threads")
    assert code == 2 and "failed to create new OS thread (have 101 already; errno=11)" in err
    assert "may need to increase max user processes" in err


def test_a_fork_bomb_ends_at_the_process_limit_with_eagain(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/forkbomb", "--max-pids", "40", "--quiet")
    lines = out.splitlines()
    assert code == 0 and "done" in lines
    assert "start: fork/exec ./forkbomb: resource temporarily unavailable" in lines
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_a_fork_bomb_under_256m_ends_at_the_memory_limit_with_enomem(rss_run):
    code, out, err, rss = rss_run("exec", "tests/data/go/forkbomb", "--max-memory", "256M", "--quiet")
    assert code == 0 and "start: fork/exec ./forkbomb: cannot allocate memory" in out.splitlines()
    assert rss < GIB, f"preemu peaked at {rss} MiB"


def test_mounted_files_are_read_on_demand(tmp_path):
    big = tmp_path / "sparse"
    with open(big, "wb") as f:              # 3 GiB, almost all a hole: read whole, it would be 3 GiB of memory
        f.write(b"ABC")
        f.truncate(3 << 30)
    code, out, err = run("exec", "tests/data/go/bigtmp", "--max-memory", "256M", "--quiet",
                         "--mount", f"{tmp_path}:/data", "--", "read", "/data/sparse", "2")
    assert code == 0 and out == f"read {2 << 20} bytes, sum {65 + 66 + 67}\n"
    code, out, err = run("exec", "tests/data/go/bigtmp", "--max-memory", "256M", "--quiet",
                         "--mount", "/dev:/hostdev", "--", "read", "/hostdev/zero", "2")
    assert code == 0 and out == f"read {2 << 20} bytes, sum 0\n"       # an endless device: what was asked for


# --- the parts ---------------------------------------------------------------------------------------------
def _proc(limit):
    cg = memory.Cgroup(limit, None)
    fs = tmpfs.TmpFs(0, cgroup=cg)
    return types.SimpleNamespace(cgroup=cg, tmpfs=fs, now=lambda: 0, boot_ns=0)   # what tmpfs reads of a process


def test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back():
    p = _proc(10 << 20)
    f = p.tmpfs.open("/tmp/a", tmpfs.O_CREAT | 2, 0o644, 0)
    assert f.write_bytes(p, bytes(6 << 20)) == 6 << 20 and p.cgroup.usage["shmem"] == 6 << 20
    assert f.write_bytes(p, bytes(6 << 20)) == 4 << 20            # what fits
    assert f.write_bytes(p, b"x") == -tmpfs.ENOSPC and p.cgroup.failcnt == 1
    f.pos = 0
    assert f.write_bytes(p, bytes(1 << 20)) == 1 << 20           # rewriting costs nothing more
    assert p.tmpfs.resize(f.node, 11 << 20) == -tmpfs.EFBIG
    assert p.tmpfs.resize(f.node, 2 << 20) == 0 and p.cgroup.usage["shmem"] == 2 << 20
    assert p.tmpfs.unlink("/tmp/a", 0) == 0 and p.cgroup.usage["shmem"] == 0
    g = p.tmpfs.open("/tmp/b", tmpfs.O_CREAT | 2, 0o644, 0)
    assert g.write_bytes(p, bytes(3 << 20)) == 3 << 20
    assert p.tmpfs.open("/tmp/b", tmpfs.O_TRUNC | 2, 0, 0) and p.cgroup.usage["shmem"] == 0


def test_tasks_past_pids_max_are_eagain_and_past_memory_enomem():
    cg = memory.Cgroup(1 << 20, 3)
    assert cg.try_task(100) == 0 and cg.try_task(100) == 0 and cg.try_task(100) == 0
    assert cg.try_task(100) == 11 and cg.pids == 3                 # EAGAIN: pids.max
    cg.task_gone(100)
    assert cg.try_task(2 << 20) == 12 and cg.pids == 2             # ENOMEM: memory.max
    assert cg.usage["kernel"] == 200


def test_address_spaces_of_one_run_share_the_limit():
    from unicorn import UC_ARCH_X86, UC_MODE_64, Uc
    cg = memory.Cgroup(8 << 20, None)
    a = memory.AddressSpace(Uc(UC_ARCH_X86, UC_MODE_64), cgroup=cg)
    b = memory.AddressSpace(Uc(UC_ARCH_X86, UC_MODE_64), cgroup=cg)
    assert a.mmap(0, 5 << 20, 3, 0x22) > 0
    assert b.mmap(0, 4 << 20, 3, 0x22) == -12                     # 5 + 4 > 8, though b alone has nothing
    a.release()
    assert cg.usage["anon"] == 0 and b.mmap(0, 4 << 20, 3, 0x22) > 0


def _out(passthrough, limit=None):
    seen = []
    table = fds.FdTable()
    p = types.SimpleNamespace(opts=types.SimpleNamespace(passthrough=(lambda n, d: seen.append(len(d)))
                                                         if passthrough else None),
                              cgroup=memory.Cgroup(limit, None), fds=table)
    return p, table.stdout, seen


def test_streamed_output_keeps_only_its_tail():
    p, st, seen = _out(True)
    for i in range(3):
        services.SyscallServices.output(p, st, bytes([i]) * (fds.OUTPUT_TAIL - 5))
    assert seen == [fds.OUTPUT_TAIL - 5] * 3                      # all of it passed through
    assert len(st.data) == fds.OUTPUT_TAIL and st.data[-1] == 2 and st.data[4] == 1 and st.data[5] == 2
    assert st.dropped == 3 * (fds.OUTPUT_TAIL - 5) - fds.OUTPUT_TAIL
    assert p.cgroup.usage["output"] == fds.OUTPUT_TAIL


def test_kept_output_stops_at_the_memory_limit():
    p, st, _ = _out(False, limit=3 << 20)
    services.SyscallServices.output(p, st, bytes(2 << 20))
    services.SyscallServices.output(p, st, bytes(2 << 20))
    assert len(st.data) == 3 << 20 and st.dropped == 1 << 20 and p.cgroup.usage["output"] == 3 << 20


def test_a_thread_that_exits_and_a_process_that_ends_give_their_tasks_back():
    from emu.linux import process, scheduling, threads
    cg = memory.Cgroup(None, 10)
    for _ in range(3):
        assert cg.try_task(memory.THREAD_COST) == 0
    cg.charge("kernel", memory.PROCESS_COST)
    ts = {i: types.SimpleNamespace(state=threads.RUNNABLE) for i in (1, 2, 3)}
    p = types.SimpleNamespace(cgroup=cg, tasks=3, threads=ts, mem=types.SimpleNamespace(release=lambda: None))
    scheduling.ThreadScheduling.exit_thread(p, ts[3], 0)
    assert cg.pids == 2 and p.tasks == 2 and cg.usage["kernel"] == memory.PROCESS_COST + 2 * memory.THREAD_COST
    process.Process.release(p)                     # the process ends: its two threads and its own cost
    assert cg.pids == 0 and p.tasks == 0 and cg.usage["kernel"] == 0
