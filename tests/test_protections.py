"""Page protections as Linux enforces them (issue #37 item 1, emu/linux/memory.py): PROT_READ, PROT_WRITE and
PROT_EXEC per page for mmap, mprotect and the binary's segments; a store to a read-only page is SIGSEGV with
SEGV_ACCERR and the store's address, as natively."""
import io
import json
import subprocess

from unicorn import UC_PROT_EXEC, UC_PROT_READ, UC_PROT_WRITE

from emu import cli
from emu.front import gobuild
from emu.linux import elfimage, memory, process
from emu.goruntime.goprocess import GoProcess

PROG = "tests/data/go/readonly"


def preemu(*args):
    out = io.StringIO()
    code = cli.main(["exec", PROG, "--json", "--quiet", *args], out)
    return code, json.loads(out.getvalue())


def native(*args):
    return subprocess.run([str(gobuild.build(PROG).binary), *args], capture_output=True, text=True)


def test_stores_to_read_only_pages_fault_as_natively():
    code, j = preemu()
    n = native()
    assert (code, j["exit_code"], j["stdout"]) == (0, 0, n.stdout)
    assert "mmap PROT_READ: fault at +4100" in n.stdout and "second page, mprotect PROT_READ: fault at +5000" in n.stdout
    faults = [s["fault"] for s in j["signals"]["list"] if s["sig"] == 11]
    assert len(faults) == 3 and all(f.startswith("write to read-only address") for f in faults)


def test_the_runtimes_report_names_segv_accerr_and_the_address():
    code, j = preemu("--", "crash")
    n = native("crash")
    line = next(ln for ln in n.stderr.splitlines() if ln.startswith("[signal SIGSEGV"))
    assert "code=0x2 " in line                      # SEGV_ACCERR, natively
    assert j["exit_code"] == n.returncode == 2 and line in j["stderr"].splitlines()


def test_the_engine_regions_carry_each_ranges_permissions():
    image = elfimage.load(str(gobuild.build(PROG).binary))
    p = GoProcess(image, process.Options(argv=["prog"]))

    def perms(addr):
        return next(pr for b, e, pr in p.uc.mem_regions() if b <= addr <= e)
    for s in image.segments:                       # text R-X, rodata R--, data RW-
        want = UC_PROT_READ | (UC_PROT_WRITE if s.flags & 2 else 0) | (UC_PROT_EXEC if s.flags & 1 else 0)
        assert perms(s.vaddr) == want, hex(s.vaddr)
    mem = p.mem
    a = mem.mmap(0, 3 * 4096, memory.PROT_WRITE | 1, 0x22)
    assert perms(a) == UC_PROT_READ | UC_PROT_WRITE
    assert mem.mprotect(a + 4096, 4096, 1) == 0     # the middle page read-only: the engine splits the region
    assert [perms(a), perms(a + 4096), perms(a + 8192)] == [UC_PROT_READ | UC_PROT_WRITE, UC_PROT_READ,
                                                            UC_PROT_READ | UC_PROT_WRITE]
    assert not mem.is_writable(a + 4096 + 17) and mem.is_writable(a + 17)
    assert mem.mprotect(a, 3 * 4096, 1 | 4) == 0   # read and execute
    assert perms(a + 8192) == UC_PROT_READ | UC_PROT_EXEC
    before = mem.engine_changes
    assert mem.mprotect(a, 3 * 4096, 1 | 4) == 0   # no change: no engine call
    assert mem.engine_changes == before
    p.uc.mem_write(a + 5, b"host")                  # preemu itself may still write there (a --stub, the vDSO)
    assert bytes(p.uc.mem_read(a + 5, 4)) == b"host"


def test_syscall_leaves_rcx_and_r11_and_user_code_runs_with_if_set():
    """SYSCALL: RCX = the address after it, R11 = RFLAGS (with IF, as every user thread runs): as natively."""
    prog = "tests/data/go/sysregs"
    out = io.StringIO()
    code = cli.main(["exec", prog, "--json", "--quiet"], out)
    n = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True)
    assert code == 0 and json.loads(out.getvalue())["stdout"] == n.stdout
    assert "r11.IF=true rflags.IF=true" in n.stdout and "rcx=0x4" in n.stdout


def test_prctl_answers_as_natively_and_unshare_as_an_unprivileged_process():
    prog = "tests/data/go/prctl"
    out = io.StringIO()
    code = cli.main(["exec", prog, "--json", "--quiet"], out)
    n = subprocess.run([str(gobuild.build(prog).binary)], capture_output=True, text=True)
    assert code == 0 and json.loads(out.getvalue())["stdout"] == n.stdout
    assert "keepcaps after set 1 true" in n.stdout and 'name "worker-7"' in n.stdout
    out = io.StringIO()
    cli.main(["exec", prog, "--json", "--quiet", "--", "unshare"], out)
    assert json.loads(out.getvalue())["stdout"].endswith("unshare: operation not permitted\n")


def test_kill_arrives_as_si_user_and_tkill_as_si_tkill():
    """kill(2) fills siginfo as SI_USER with the sender's pid and uid (kernel/signal.c prepare_kill_siginfo),
    tgkill as SI_TKILL: read back from the frames the signals program's handlers got."""
    from emu.linux import sigframe
    image = elfimage.load(str(gobuild.build("tests/data/go/signals").binary))
    p = GoProcess(image, process.Options(argv=["prog"]))
    p.run()
    codes = {}
    for ev in p.watch.signals:
        if ev.sig != 23 and ev.delivered_ns is not None:
            codes[ev.sig] = ev.info.code if ev.info is not None else sigframe.SI_TKILL
    assert codes[10] == sigframe.SI_USER and codes[12] == sigframe.SI_TKILL, codes    # SIGUSR1 kill, SIGUSR2 tgkill
    usr1 = next(ev for ev in p.watch.signals if ev.sig == 10)
    assert (usr1.info.pid, usr1.info.uid) == (p.pid, p.uid)
