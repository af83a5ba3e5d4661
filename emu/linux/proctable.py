"""The kernel's processes: a table of every process the program started, their parent links, exit statuses
and zombies, and the run loop that shares the CPU between them.

Mirrors kernel/fork.c (copy_process for a child without CLONE_THREAD: its own address space, descriptor table,
signal actions and working directory, copied; CLONE_VFORK's parent thread waiting until the child execs or
exits, wait_for_vfork_done; CLONE_PIDFD), fs/exec.c (execve: a new image in the same process, descriptors with
FD_CLOEXEC closed, caught signals reset to SIG_DFL, ignored ones kept, the signal mask kept), kernel/exit.c
(exit_notify and do_notify_parent: the exit signal, SIGCHLD with CLD_EXITED/CLD_KILLED, to the parent; a
parent that ignores SIGCHLD, or set SA_NOCLDWAIT, has its children reaped at once; do_wait's eligible_child:
__WCLONE selects the children whose exit signal is not SIGCHLD, __WALL both kinds; the oldest zombie first)
and kernel/pid.c (one id space for processes and threads; pidfd_poll: readable once the process exited).
The syscalls that use it are sys_fork.py's.

Every process is a process.Process with its own engine and address space. Virtual time is one clock for all:
the loop runs one slice of one process at a time, taking the processes in turn (those with a runnable
thread, in pid order after the one that ran last), and every slice ends by the earliest deadline of any
process, so a run stays a pure function of its inputs. A pipe written in one process wakes its readers and
pollers in the others at the end of the slice that wrote.

Left out: CLONE_VM without CLONE_VFORK (two running processes on one memory); with CLONE_VFORK the child
runs on a copy of the parent's memory taken at the clone (the parent's calling thread waits until the child
execs or exits, as Linux has it, but the child's stores before execve are not seen by the parent: Go's
forkAndExecInChild1 writes only its own frame, which the parent does not read after the clone returns,
syscall/exec_linux.go:345-353); execve in the first process (syscall.Exec); controlling terminals and
foreground groups (no tty); reports of stopped and continued children (WSTOPPED, WCONTINUED: a stopped
process simply runs no thread, sigdeliver.py); resource use other than
user CPU time in rusage; core dumps. A process whose run fails (an unsupported syscall, a fault preemu
cannot model) fails the whole run with its pid in the message.
"""
from __future__ import annotations

import dataclasses
import random
import shlex
import struct
from dataclasses import dataclass, field

from ..core.errors import EmuError
from .memory import PROCESS_COST, THREAD_COST
from .fds import EPOLLIN, O_RDWR
from .sigframe import SI_USER, SigInfo
from .sysabi import ECHILD, ESRCH
from .threads import BLOCKED, RUNNABLE, Thread

SIGCHLD = 17
CLD_EXITED, CLD_KILLED = 1, 2                   # si_code of SIGCHLD and waitid (include/uapi/asm-generic/siginfo.h)
SIG_IGN, SA_NOCLDWAIT = 1, 2
WNOHANG, WEXITED, WNOWAIT, WALL, WCLONE = 1, 4, 0x01000000, 0x40000000, 0x80000000
PR_SET_PDEATHSIG = 1
RUNNING, ZOMBIE, REAPED = "running", "zombie", "reaped"


@dataclass(eq=False)
class ProcRecord:
    """What the process table keeps of a process: ids, what runs in it now, and, once it ended, its status."""
    pid: int
    ppid: int
    argv: list
    binary: str
    proc: object                        # the Process running it; None once it ended
    exit_signal: int = SIGCHLD          # what the parent is sent when it ends (clone's CSIGNAL byte)
    state: str = RUNNING
    status: int | None = None           # the wait status word: code << 8, or the signal that killed it
    vfork: tuple | None = None          # (parent Process, its thread) waiting for this child's execve or exit
    notes: list = field(default_factory=list)
    violations: list = field(default_factory=list)   # the watch's violations in the images that ran before
    insns: int = 0                      # instructions of the images that ran before (execve) and, at the end, all
    cpu_ns: int = 0                     # user CPU time, at the end
    vector: int = 0                     # instructions preemu's vector unit ran (--cpu v3/v4; engine/avx.py)
    gen: int = 0                        # pidfd wakeups (EPOLLET): bumped when the process ends
    pgid: int = 0                       # process group and session (sys_pgrp.py): the parent's at fork
    sid: int = 0
    execed: bool = False                # it called execve since its fork (setpgid then answers EACCES)

    def describe(self) -> str:
        return f"process {self.pid} ({shlex.join(self.argv)[:80]})"

    def to_json(self) -> dict:
        code, sig = exit_of(self.status)
        return {"pid": self.pid, "ppid": self.ppid, "argv": list(self.argv), "binary": self.binary,
                "state": self.state, "exit_code": code, "signal": sig, "instructions": self.insns,
                "notes": list(self.notes), "violations": list(self.violations)}


def exit_of(status: int | None) -> tuple[int | None, int | None]:
    """(exit code, killing signal) of a wait status word (WEXITSTATUS, WTERMSIG); (None, None) while it runs."""
    if status is None:
        return None, None
    return (None, status & 0x7F) if status & 0x7F else ((status >> 8) & 0xFF, None)


@dataclass(eq=False)
class PidFd:
    """A pidfd (kernel/pid.c pidfd_create): it names one process; readable once that process has ended."""
    record: ProcRecord
    flags: int = O_RDWR

    def readiness(self) -> int:
        return EPOLLIN if self.record.state != RUNNING else 0

    @property
    def gen(self) -> int:
        return self.record.gen


class ForkOrigin:
    """How a child made by clone/fork/vfork starts (copy_process): the parent's memory copied, the calling thread
    alone returning 0 from the syscall, descriptors, signal actions, limits and working directory copied."""

    def __init__(self, kernel: "ProcessTable", parent, thread: Thread, pid: int, stack: int, tls: int | None):
        self.kernel, self.parent, self.thread, self.pid, self.stack, self.tls = kernel, parent, thread, pid, stack, tls
        self.cgroup = parent.cgroup

    def load(self, child) -> None:
        from unicorn import x86_const as X
        from .regbatch import read_reg
        p, t = self.parent, self.thread
        _inherit(child, p, self.kernel, self.pid, p.fds.fork())
        child.sigactions = dict(p.sigactions)
        child.prctl = {k: v for k, v in p.prctl.items() if k != PR_SET_PDEATHSIG}   # fork clears it
        p.mem.fork_into(child.mem)
        if p.avx is not None:           # --cpu v3/v4: the copied text holds the parent's INT3 sites (engine/avx.py)
            from ..engine.avx import VectorUnit
            child.avx = VectorUnit(child.uc, child.level, child.mem.is_writable)
            child.avx.sites = dict(p.avx.sites)
            child.avx._decoded = dict(p.avx._decoded)
        if p.opts.vdso:
            child._map_vvar()
        child._add_hooks()
        ctx = p.uc.context_save()
        ctx.reg_write(X.UC_X86_REG_RIP, read_reg(p.uc, X.UC_X86_REG_RIP) + 2)   # the hook's RIP+2 rule
        ctx.reg_write(X.UC_X86_REG_RAX, 0)
        if self.stack:
            ctx.reg_write(X.UC_X86_REG_RSP, self.stack)
        if self.tls is not None:
            ctx.reg_write(X.UC_X86_REG_FS_BASE, self.tls)
        main = Thread(self.pid, ctx, sigmask=t.sigmask, altstack=t.altstack, name=t.name)
        if p.avx is not None:
            main.kregs = p.avx.kregs()  # the calling thread's K0-K7 (not in Unicorn's context): copied as the rest
        child.threads[main.tid] = main
        child.runq.append(main)


class ExecOrigin:
    """How execve's new image starts (fs/exec.c): the same process (pid, parent, descriptors without FD_CLOEXEC,
    working directory, limits), a fresh address space and stack, signals it caught back to SIG_DFL."""

    def __init__(self, kernel: "ProcessTable", old, thread: Thread):
        self.kernel, self.old, self.thread = kernel, old, thread
        self.cgroup = old.cgroup

    def load(self, new) -> None:
        old = self.old
        old.fds.close_on_exec()
        _inherit(new, old, self.kernel, old.pid, old.fds)
        new.sigactions = {sig: act for sig, act in old.sigactions.items() if act[0] == SIG_IGN}
        new.prctl = dict(old.prctl)
        new.cgroup.charge("kernel", PROCESS_COST)    # the new image's; the old one's leaves when it is swapped
        new.cgroup.task(THREAD_COST)                 # out (ProcessTable._exec_done), so execve never fails here
        new.tasks = 1
        new._load()
        new.threads[new.pid].sigmask = self.thread.sigmask


def _inherit(p, parent, kernel: "ProcessTable", pid: int, fds) -> None:
    """What a child (fork) or a new image (execve) takes over: ids, the shared file system and network, the
    working directory, limits, the clock; its random numbers are its own (seeded by the run's seed and pid)."""
    p.kernel, p.pid, p.fds = kernel, pid, fds
    p.ppid = parent.ppid if parent.pid == pid else parent.pid
    p.tmpfs, p.net, p.ns, p.cwd, p.exe_alias = parent.tmpfs, parent.net, parent.ns, parent.cwd, parent.exe_alias
    p.fs.umask = parent.fsstate.umask
    p.uid, p.gid, p.rlimits = parent.uid, parent.gid, dict(parent.rlimits)
    p.rng = random.Random(f"{p.opts.seed}/{pid}/{kernel.images}")
    p.boot_ns, p.clock = parent.boot_ns, parent.clock
    kernel.images += 1


class ProcessTable:
    """Every process of the run (the first one, `root`, is the program preemu was given), the id space they
    share, and the run loop while more than one of them is alive."""

    def __init__(self, root) -> None:
        self.root = root
        self.next_id = max([root.pid, *root.threads]) + 1
        self.records: dict[int, ProcRecord] = {root.pid: ProcRecord(root.pid, root.ppid, list(root.opts.argv),
                                                                      root.image.path, root)}
        self.records[root.pid].pgid = self.records[root.pid].sid = root.pid   # a shell's job: leads both
        self.last = root.pid              # the process that ran the last slice
        self.images = 0                   # images started so far (each seeds its own random numbers)
        root.kernel = self

    @classmethod
    def of(cls, p) -> "ProcessTable":
        """p's process table, made when the program first starts or names another process."""
        return p.kernel if p.kernel is not None else cls(p)

    def alloc_id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def record_of(self, p) -> ProcRecord:
        return self.records[p.pid]

    def live(self) -> list:
        return [r.proc for r in self.records.values() if r.state == RUNNING]

    def busy(self) -> bool:
        """More than one process is alive: the CPU is shared."""
        return sum(r.state == RUNNING for r in self.records.values()) > 1

    def insns(self) -> int:
        return sum(r.insns + (r.proc.insns if r.state == RUNNING else 0) for r in self.records.values())

    def earliest_deadline(self) -> int | None:
        ds = [d for q in self.live() if (d := q._earliest_deadline()) is not None]
        return min(ds) if ds else None

    # --- fork and execve ---------------------------------------------------------------------------
    def fork(self, p, t: Thread, exit_signal: int, stack: int = 0, tls: int | None = None, vfork: bool = False):
        """A child of p, its first thread a copy of t returning 0; (the child's record, its Process), or the errno
        the cgroup answers (memory.Cgroup: EAGAIN past pids.max, ENOMEM when the child's copy would pass memory.max)."""
        err = p.cgroup.try_task(PROCESS_COST + THREAD_COST + p.mem.committed_bytes())
        if err:
            return err
        p.cgroup.uncharge("kernel", p.mem.committed_bytes())   # the copy charges its pages as "anon" itself
        pid = self.alloc_id()
        opts = dataclasses.replace(p.opts, signal_at_pc=None, signal_delay=0)
        child = type(p)(p.image, opts, origin=ForkOrigin(self, p, t, pid, stack, tls))
        child.tasks = 1
        mine = self.record_of(p)
        rec = ProcRecord(pid, p.pid, list(mine.argv), mine.binary, child, exit_signal, pgid=mine.pgid, sid=mine.sid)
        if vfork:
            rec.vfork = (p, t)
        self.records[pid] = rec
        return rec, child

    def execve(self, p, t: Thread, image, argv: list, env: list) -> None:
        """Replace p's image (the slice ends; the run loop swaps the new Process in when it does)."""
        opts = dataclasses.replace(p.opts, argv=list(argv), env=list(env), signal_at_pc=None, signal_delay=0)
        p.exec_into = type(p)(image, opts, origin=ExecOrigin(self, p, t))
        for x in p.threads.values():      # de_thread and the old image: every thread of the old image ends
            x.state = "exited"
        p._stop_slice = True

    # --- the run loop ------------------------------------------------------------------------------
    def run_until(self, root, stop) -> bool | None:
        """Process.run_until while other processes are alive: one slice of one process at a time, on one clock.
        Returns what run_until returns, or None once root is alone again (its own loop goes on)."""
        ns = root.opts.ns_per_insn
        limit_ns = root._limit_ns()
        while root.exit_code is None and root.error is None:
            if not self.busy():
                return None
            ended = root.checkpoint(stop, limit_ns)
            if ended is not None:
                return ended
            picked = self._pick()
            if picked is None:
                d = self.earliest_deadline()
                if d is None and root.held:
                    return False
                if d is None:
                    waits = "; ".join(f"{r.pid}: " + ", ".join(f"{x.tid} {x.wait.kind}" for x in r.proc.threads.values()
                                                                if x.state == BLOCKED)
                                      for r in self.records.values() if r.state == RUNNING)
                    root.error = EmuError(f"deadlock: every thread of every process waits with no timeout ({waits})")
                    return False
                if limit_ns is not None and d > limit_ns:
                    d = limit_ns
                root.idle_ns += d - root.clock
                self._set_clock(d)
                for q in self.live():
                    q._wake_due(d)
                continue
            q, t = picked
            q.clock = root.clock
            q._run_slice(t, ns, limit_ns)
            self._set_clock(q.clock)
            self.after_slice(q)
            if root.on_slice is not None:
                root.on_slice(root)
        return False

    def _set_clock(self, now: int) -> None:
        for q in self.live():
            q.clock = now

    def _pick(self):
        """(process, thread) to run next: the processes in turn, pid order, starting after the one that ran last."""
        procs = sorted(self.live(), key=lambda q: q.pid)
        after = [q for q in procs if q.pid > self.last] + [q for q in procs if q.pid <= self.last]
        for q in after:
            while q.runq and not q.job_stopped:
                t = q.runq.popleft()
                if t.tid in q.held or t.state != RUNNABLE:
                    continue                  # unhold puts a held thread back
                self.last = q.pid
                return q, t
        return None

    def after_slice(self, q) -> None:
        """After a slice of q: a failure of q fails the run, its execve or exit takes effect, and the other
        processes wake what q made ready."""
        rec = self.record_of(q)
        if q.error is not None and q is not self.root:
            self.root.error = EmuError(f"{rec.describe()}: {q.error}")
            return
        if q.exec_into is not None:
            self._exec_done(rec, q)
        elif q.exit_code is not None and q is not self.root:
            self._exited(rec)
        for other in self.live():             # what q wrote, closed or ended may let others go on, and their
            if other is not q:                # sleepers whose time has come run next
                self.wake_io(other)
                other._wake_due(other.clock)
        if q.exit_code is None and q.exec_into is None:
            self.wake_io(q)                   # what they did when woken (a writer waiting for room, fds.py) may
                                              # let q go on: its reads and polls of what they wrote

    @staticmethod
    def wake_io(q) -> None:
        q.wake_pipe_readers()
        q.wake_socket_waiters()
        q.wake_pollers()

    @staticmethod
    def _keep(rec: ProcRecord, q) -> None:
        """What the report needs of an image that ends (execve or exit): its instructions, what it asked for that
        preemu does not model, and the watch's violations."""
        rec.insns += q.insns
        rec.vector += q.avx.executed if q.avx is not None else 0
        rec.notes += [f"not modelled: {u}" for u in q.unmodelled]
        rec.violations += q.watch.violations

    def _exec_done(self, rec: ProcRecord, old) -> None:
        new = old.exec_into
        self._keep(rec, old)
        old.release()
        rec.proc, rec.argv, rec.binary, rec.execed = new, list(new.opts.argv), new.image.path, True
        self._release_vfork(rec)

    def _release_vfork(self, rec: ProcRecord) -> None:
        """The vfork parent's thread goes on, clone returning the child's pid (complete_vfork_done)."""
        if rec.vfork is not None:
            parent, t = rec.vfork
            rec.vfork = None
            if t.state == BLOCKED and t.wait.kind == "vfork":
                parent.wake(t, rec.pid)

    def _exited(self, rec: ProcRecord) -> None:
        """exit_notify: the descriptors close, the vfork parent goes on, the children are the init's, and the
        parent hears of it (its waiters, its pidfds, the exit signal), unless it reaps at once."""
        q = rec.proc
        q.fds.close_all()
        q.release()
        rec.status = status_of(q)
        self._keep(rec, q)
        rec.cpu_ns = sum(x.cpu_ns for x in q.threads.values())
        rec.state, rec.proc, rec.gen = ZOMBIE, None, rec.gen + 1
        self._release_vfork(rec)
        for child in self.records.values():
            if child.ppid == rec.pid:
                child.ppid = 1                # reparented to init, which reaps it
                if child.state == ZOMBIE:
                    child.state = REAPED
        parent = self.records.get(rec.ppid)
        if parent is None or parent.state != RUNNING:
            rec.state = REAPED
            return
        pp = parent.proc
        handler, flags = pp.sigactions.get(SIGCHLD, (0, 0, 0, 0))[:2]
        if rec.exit_signal == SIGCHLD and (handler == SIG_IGN or flags & SA_NOCLDWAIT):
            rec.state = REAPED                # do_notify_parent's autoreap: no zombie to wait for
        self.wake_waiters(pp)
        if rec.exit_signal and handler != SIG_IGN:
            code, sig = exit_of(rec.status)
            info = SigInfo(rec.exit_signal, CLD_KILLED if sig else CLD_EXITED, rec.pid, q.uid,
                           status=sig if sig else code)
            pp.send_signal(q.threads[rec.pid], pp.signal_target(rec.exit_signal).tid, rec.exit_signal, info=info)
        pp.wake_pollers()                     # its pidfds are readable now

    # --- signals to other processes --------------------------------------------------------------------
    def signal(self, p, t: Thread, rec: ProcRecord, sig: int) -> int:
        """A process-directed signal from p's thread t to rec's process (kill, pidfd_send_signal): SI_USER with
        p's pid and uid. A process that ended but was not reaped accepts it and ignores it; a reaped one is ESRCH."""
        if rec.state == REAPED:
            return -ESRCH
        if sig == 0 or rec.state == ZOMBIE:
            return 0
        q = rec.proc
        return q.send_signal(t, q.signal_target(sig).tid, sig, SI_USER, info=SigInfo(sig, SI_USER, p.pid, p.uid))

    def kill(self, p, t: Thread, pid: int, sig: int) -> int:
        """kill(2) beyond the caller itself: pid > 0 one process, 0 the caller's process group, -pgid that group,
        -1 every process but the caller (kill_something_info, __kill_pgrp_info)."""
        if pid > 0:
            rec = self.records.get(pid)
            return -ESRCH if rec is None else self.signal(p, t, rec, sig)
        if pid <= 0:
            pgid = self.record_of(p).pgid if pid == 0 else -pid
            targets = [r for r in self.records.values() if r.state != REAPED
                       and (r.pid != p.pid if pid == -1 else r.pgid == pgid)]
            if not targets:
                return -ESRCH
            for r in targets:
                self.signal(p, t, r, sig)
            return 0
        return -ESRCH

    # --- waiting for children ---------------------------------------------------------------------------
    def try_wait(self, p, match, options: int, report):
        """do_wait's one pass: the result of reporting p's oldest eligible zombie child (report(record) writes
        the status and returns the syscall's result; the zombie is reaped unless WNOWAIT), -ECHILD when no child
        matches, None when some do but none has ended yet."""
        kids = [r for r in self.records.values() if r.ppid == p.pid and r.state in (RUNNING, ZOMBIE) and match(r)
                and ((r.exit_signal != SIGCHLD) == bool(options & WCLONE) or options & WALL)]
        if not kids:
            return -ECHILD
        done = [r for r in kids if r.state == ZOMBIE]
        if not done or not options & WEXITED:
            return None
        r = done[0]
        result = report(r)
        if not options & WNOWAIT:
            r.state = REAPED
        return result

    def wake_waiters(self, p) -> None:
        """Finish the waits (wait4, waitid) of p's threads that can now report a child or ECHILD."""
        for t in list(p.threads.values()):
            if t.state == BLOCKED and t.wait.kind == "child":
                res = t.wait.retry()
                if res is not None:
                    p.wake(t, res)



def status_of(p) -> int | None:
    """A running Process's wait status word once it ended (exit code << 8, or the killing signal), else None."""
    if p.killed_by:
        return p.killed_by & 0x7F
    return None if p.exit_code is None else (p.exit_code & 0xFF) << 8


def process_rows(root) -> list[dict]:
    """Every process of root's run, root first, in pid order, as the report lists them (ProcRecord.to_json)."""
    if root.kernel is None:
        recs = [ProcRecord(root.pid, root.ppid, list(root.opts.argv), root.image.path, root)]
    else:
        recs = list(root.kernel.records.values())
    rows = []
    for r in recs:
        row = r.to_json()
        if r.pid == root.pid:
            row["notes"] += limit_notes(root)
        if r.state == RUNNING:            # still running (the first process, or one the end of the run left)
            row["exit_code"], row["signal"] = exit_of(status_of(r.proc))
            row["instructions"] = r.insns + r.proc.insns
            if r.proc is not root:        # (the first process's own are the report's top level)
                row["notes"] += [f"not modelled: {u}" for u in r.proc.unmodelled]
                row["violations"] += r.proc.watch.violations
            row["state"] = "exited" if row["exit_code"] is not None or row["signal"] else RUNNING
        rows.append(row)
    return rows


def limit_notes(root) -> list[str]:
    """What the run's limits did (memory.Cgroup, fds.Output's bounds), for the first process's row of the report."""
    notes = []
    for st in (root.fds.stdout, root.fds.stderr):
        if st.dropped:
            notes.append(f"{st.name}: {st.dropped:,} bytes written and not kept by preemu (it keeps a bounded part "
                         "of what it does not stream)")
    cg = root.cgroup
    if cg.failcnt:
        notes.append(f"limits: {cg.failcnt} request(s) refused at --max-memory {cg.max_memory:,} / --max-pids "
                     f"{cg.max_pids} (peak {cg.peak:,} bytes charged)")
    return notes


def rusage_bytes(cpu_ns: int) -> bytes:
    """struct rusage (144 bytes): ru_utime from the child's CPU time, the rest zero."""
    us = cpu_ns // 1000
    return struct.pack("<qq", us // 1_000_000, us % 1_000_000) + bytes(128)
