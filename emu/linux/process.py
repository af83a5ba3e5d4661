"""One emulated Linux process: load the binary, multiplex its threads on one Unicorn, run to exit.

The threads run on `--cpus N` CPUs (cpus.py), one slice at a time: each slice is at most a quantum of
instructions, counted exactly (icount), on the CPU whose virtual clock is furthest behind, so virtual time =
instructions x ns-per-insn + idle time, per CPU, is exact and a run is a pure function of (binary, args, env,
options, seed). A slice ends when its quantum runs out, the thread blocks or yields, a wakeup gives the woken
thread a CPU (cpus.py: an idle one, or the waker's by wakeup preemption), a sleeping thread's deadline arrives
(so sleeps end on time), a pending signal's chosen boundary is reached, or a syscall that replaces the CPU
context (rt_sigreturn, exit) must be finished outside Unicorn's hook: in a SYSCALL hook RIP is the
address of the SYSCALL and Unicorn adds 2 after the callback, even to a RIP written in it.

Which thread runs next follows Linux where a program can see it: the run queue is ordered by when each thread
became runnable and any CPU takes its head; a thread returning from a signal handler keeps the CPU
(rt_sigreturn returns to user mode on the same CPU; without this rule a GC with spinners on three or more Ps
livelocked); sched_yield ends the slice and the thread queues behind the threads already waiting (CFS's
yield_task_fair skips it once); a woken thread runs promptly (cpus.py's rules, also for a sleeper whose
deadline arrives: it is woken once no CPU can still run anything before the deadline). Under a schedule
(`exec --schedules`/`--schedule`: `self.schedule`, a schedule.PctSchedule attached before the run) the schedule
decides instead: the highest-priority runnable thread runs next, a change point ends a slice before a step,
slices are not jittered, and after each slice it sees what the thread ran (its fairness bound); without one
(every other run, the steered sweeps included) nothing here changes.

Signals are delivered as Linux does (kernel/signal.c, arch/x86/kernel/signal.c) when the target
thread next runs, `signal_delay` of its instructions later (--signal-at insn:N), or when it is
about to execute a chosen PC (--signal-at FUNC+OFF, a one-shot code hook); the landing PC is recorded.
An access to an unmapped page becomes a synchronous SIGSEGV for the faulting thread (SEGV_MAPERR,
si_addr and the mcontext's trapno/err/cr2), taken before anything else runs; if the thread blocks or
ignores it, it is forced (SIG_DFL, unblocked) and kills, as force_sig_info_to_task does. An int3 becomes a
forced SIGTRAP the same way (SI_KERNEL, RIP past it: arch/x86/kernel/traps.c do_int3_user).
Here: the process's state, setup and the run loop (slices, when a pending signal is taken). Process takes
the rest from mixins beside it: cpuhooks.py (RDTSC, CPUID, single-stepping), services.py (what syscall
handlers call), scheduling.py (threads created, blocked, woken, held), sigdeliver.py (sending, delivery,
rt_sigreturn, faults), and the CPUs' clocks and placement rules from cpus.py (an object). Other processes
(fork, execve, wait) are proctable.py's: once the program starts one, its run loop runs every process's
threads (ProcessTable.run_until, one slice at a time on one shared clock) and slices end at every
process's deadlines. Left out: priorities, core dumps.
"""
from __future__ import annotations

import collections
import os
import posixpath
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from unicorn import UC_ARCH_X86, UC_HOOK_CODE, UC_HOOK_INSN, UC_MODE_64, Uc, UcError
from unicorn import unicorn_const as UCC
from unicorn import x86_const as X

from ..core import cpulevel, gostructs as gs
from ..core.errors import EmuError
from . import kernel, startup, vdso
from .cpuhooks import CpuHooks
from .sys_proc import RLIMIT_NOFILE
from .sys_time import REALTIME_EPOCH_NS
from .sysabi import BLOCK, STOP
from .elfimage import PF_W, PF_X, Image
from .sys_timer import CpuTimers
from .fds import FdTable
from .icount import InsnCounter
from .memory import AddressSpace
from .mounts import Namespace
from .cpus import Cpus
from .memory import DEFAULT_MAX_MEMORY, DEFAULT_MAX_PIDS, PROCESS_COST, THREAD_COST, Cgroup
from .scheduling import FIRST_TID, ThreadScheduling
from .services import SyscallServices
from .sigdeliver import SignalDelivery
from .sys_socket import Net
from ..engine.capi import restore_context, save_context
from ..engine.native import hook_intr, hook_syscall
from .regbatch import RegBatch, read_reg, remove_cache
from .threads import BLOCKED, EXITED, RUNNABLE, FsState, Thread

if TYPE_CHECKING:
    from ..engine.avx import VectorUnit

BOOT_NS = 10**12                 # CLOCK_MONOTONIC at the first instruction: "1000 s since boot"
_U64 = (1 << 64) - 1
DEFAULT_BUDGET = 2_000_000_000
#: `preemu exec`'s default budget: an ordinary program runs to its end (about 4 minutes of CPU at today's
#: 400 M instructions a second; a run longer than 2 s shows its progress and stops with Ctrl-C)
EXEC_BUDGET = 100_000_000_000
#: RFLAGS a process starts with: IF (interrupts on in user mode, as every user thread runs) and the reserved
#: bit 1 (arch/x86/include/asm/processor.h start_thread: X86_EFLAGS_IF)
USER_RFLAGS = 0x202
#: at a SYSCALL: the number, the six arguments (x86-64 syscall ABI), the return address and RFLAGS, one read
_ENTRY_REGS = RegBatch([X.UC_X86_REG_RAX, X.UC_X86_REG_RDI, X.UC_X86_REG_RSI, X.UC_X86_REG_RDX, X.UC_X86_REG_R10,
                        X.UC_X86_REG_R8, X.UC_X86_REG_R9, X.UC_X86_REG_RIP, X.UC_X86_REG_EFLAGS])
_SYSRET_REGS = RegBatch([X.UC_X86_REG_RCX, X.UC_X86_REG_R11])
_RESULT_REG = RegBatch([X.UC_X86_REG_RAX])


def godebug_int(env: list[str], key: str) -> int:
    """The runtime's view of an integer GODEBUG setting: the first GODEBUG= entry of the environment
    (runtime/env_posix.go:9-19 gogetenv), its comma-separated key=value fields left to right, a later one
    overwriting an earlier (runtime/runtime1.go:492-501 parsegodebug at startup), the value read as a
    decimal integer (0 when absent or not a number, as the runtime leaves it)."""
    godebug = next((e[len("GODEBUG="):] for e in env if e.startswith("GODEBUG=")), "")
    value = 0
    for item in godebug.split(","):
        k, eq, v = item.partition("=")
        if eq and k == key and (v.isdigit() or (v[:1] == "-" and v[1:].isdigit())):
            value = int(v)
    return value


@dataclass
class Options:
    argv: list[str]
    env: list[str] = field(default_factory=list)
    seed: int = 1
    quantum: int = 20_000
    ns_per_insn: int = 1
    max_virtual_ms: float | None = None
    budget: int = DEFAULT_BUDGET
    max_memory: int | None = DEFAULT_MAX_MEMORY    # what the run may make preemu hold (memory.Cgroup: memory.max)
    max_pids: int | None = DEFAULT_MAX_PIDS        # processes and threads at once (memory.Cgroup: pids.max)
    ncpu: int = 2                      # CPUs the threads run on (cpus.py) and sched_getaffinity reports
    steered: bool = False              # the caller steers who runs (the real-program sweeps): one-CPU turns
    signal_delay: int = 0              # a pending signal is taken after N more instructions of its target
    signal_at_pc: int | None = None    # ... or when its target is about to execute this PC (--signal-at FUNC+OFF)
    passthrough: object = None         # callable(stream_name, bytes) for live output, or None
    trace: bool = False
    vdso: bool = True                  # map preemu's vDSO (vdso.py): clocks without a syscall
    cwd: str | None = None             # the working directory the program sees, read-only (default: ours)
    mounts: tuple = ()                 # more host directories it sees (mounts.Mount: --mount HOST:GUEST[:ro|rw])
    cpu: str = "v1"                    # the CPU level (--cpu, core/cpulevel.py): CPUID, XGETBV, AVX at v3/v4


@dataclass
class Slice:
    tid: int
    start_ns: int
    end_ns: int
    why: str


class Process(CpuHooks, SyscallServices, ThreadScheduling, SignalDelivery):
    """One emulated Go process: its address space, threads and virtual clock, and the run loop that runs
    the threads in exact quanta. The engine's stand-ins for CPU instructions (cpuhooks.py), the helpers the
    syscalls call (services.py), thread lifecycle and wakeups (scheduling.py) and signal delivery
    (sigdeliver.py) are mixins; their state lives here, set up in __init__."""

    def __init__(self, image: Image, opts: Options, origin=None) -> None:
        if not image.is_go:
            raise EmuError(f"{image.path}: not a Go program (no .go.buildinfo section, no runtime symbols); "
                           "whole-program mode runs static linux/amd64 Go binaries")
        self.image, self.opts = image, opts
        self.uc = Uc(UC_ARCH_X86, UC_MODE_64)
        #: the run's memory and task limits, shared by every process (memory.Cgroup)
        self.cgroup = origin.cgroup if origin is not None else Cgroup(opts.max_memory, opts.max_pids)
        self.mem = AddressSpace(self.uc, cgroup=self.cgroup)
        self.tasks = 0                           # this process's threads charged to the cgroup (release)
        self.fds = FdTable()
        from .tmpfs import TmpFs
        self.ppid, self.uid, self.gid = 1, os.getuid(), os.getgid()     # the host's own ids (sys_proc.py)
        self.tmpfs = TmpFs(0, self.uid, self.gid, self.cgroup)  # /tmp, writable, in memory
        self.rng = random.Random(opts.seed)
        self.counter = InsnCounter(self.uc)
        self.boot_ns = BOOT_NS
        self.clock = BOOT_NS
        self.in_slice = False
        self.pid = FIRST_TID
        self.ncpu = opts.ncpu
        self.rlimits = {RLIMIT_NOFILE: (1024, 524288)}
        self.prctl: dict[int, int] = {}           # prctl(2) flags set (sys_proc.PR_FLAGS)
        self.timers = CpuTimers()                 # setitimer and timer_create on CPU-time clocks (sys_timer.py)
        self.syscall_nr = -1                 # the syscall being handled (a Wait records it)
        self.sigactions: dict[int, tuple] = {}
        self.threads: dict[int, Thread] = {}
        self.runq: collections.deque[Thread] = collections.deque()
        self.cpus = Cpus(opts.ncpu, BOOT_NS, opts.seed, opts.steered)   # the CPUs' clocks and rules (cpus.py)
        self.held: set[int] = set()      # runnable threads kept off the CPU (hold): an OS may deschedule any
        self._stepping = False           # single_step: one instruction runs with TF set
        self._step_ok: dict[int, bool] = {}
        self._exception: int | None = None   # an interrupt the engine raised (see _on_intr)
        self.futex_waiters: dict[int, list[Thread]] = collections.defaultdict(list)
        self.cur: Thread | None = None
        self.exit_code: int | None = None
        self.stop_reason = ""
        self.error: Exception | None = None
        self.starved = False
        self.insns = 0
        self.idle_ns = 0
        self.syscall_counts: collections.Counter = collections.Counter()
        self.paths: list[str] = []                  # files the program tried to open (open/openat: ENOENT)
        self.unmodelled: list[str] = []             # what the program asked for that preemu answered ENOSYS
        self.net = Net()                            # the sockets' namespace (sys_socket.py)
        self.slices: list[Slice] = []
        self.syscall_log: list[tuple] = []          # (time_ns, tid, name, args, result) when tracing
        self._stop_slice = False
        self._after_stop = None
        #: an observer of slices (emu/goruntime/gclock.GoroutineClock): slice_start(t) -> an instruction limit
        #: or None, slice_end(t, n); it may also lower the counter's limit from its own hooks
        self.probe = None
        #: a schedule steering every choice (schedule.PctSchedule, `exec --schedules`), attached before the run;
        #: None: cpus.py's rules alone
        self.schedule = None
        self._alone = False                     # the slice in progress is a run of quanta (see _run_slice)
        self.interrupted = False                # set (by a SIGINT handler) to stop at the next slice boundary
        self.interrupt_raises = False           # ... by raising KeyboardInterrupt there (sweeps: ctrl_c below)
        #: the working directory the program sees (sys_file.py: a read-only view of the host's)
        self.fs = FsState(opts.cwd or os.getcwd())   # the guest's working directory (chdir moves it), unless a
                                                     # thread unshared it (Thread.fs, the cwd property)
        self.ns = Namespace(self.cwd, tuple(opts.mounts))
        self.on_slice = None                    # callable(process) after every slice (progress), or None
        self.async_preemption_on = not godebug_int(opts.env, "asyncpreemptoff")
        self.level = cpulevel.level(opts.cpu)
        image.check_level(self.level)
        #: at v3/v4, preemu's vector unit (engine/avx.py): the AVX instructions it runs, K0-K7; None below
        self.avx: VectorUnit | None = None
        self.kernel = None                      # the process table (proctable.py) once there is another process
        #: (guest path, host path): argv[0] where the program started names its binary, for execve (sys_fork.py)
        self.exe_alias = (posixpath.normpath(posixpath.join(self.cwd, opts.argv[0])), image.path) if opts.argv else None
        self.killed_by = 0                      # the signal whose default action ended the process, or 0
        self.job_stopped = False                # stopped by SIGSTOP and the like until SIGCONT (sigdeliver.py)
        self.exec_into: Process | None = None   # the process an execve replaced this one with (proctable.py)
        if origin is None:
            self.cgroup.charge("kernel", PROCESS_COST)     # the first process exists whatever the limits
            self.cgroup.task(THREAD_COST)
            self.tasks = 1
            self._load()
        else:                                   # a process fork or execve made (proctable.py): what it inherits
            origin.load(self)         # at v3/v4 a fork's child takes the parent's sites, an execve scans its image
        #: g/m/p as the typed Go 1.27.3 runtime lays them out (a subclass that read the binary's DWARF sets its own)
        self.structs: gs.StructTables = gs.typed_tables()
        #: what signal delivery reports each signal to (sent, delivered, sigreturn, violation) and what a snapshot
        #: keeps of it (snapshot.WATCH_STATE): the Go runtime's watch, which the kernel does not know;
        #: emu/goruntime/goprocess.py's GoProcess, the process preemu runs, attaches it
        self.watch = None

    @property
    def fsstate(self) -> FsState:
        """The fs state of the thread making the syscall (its own after unshare(CLONE_FS)): cwd, umask."""
        t = self.cur
        return t.fs if t is not None and t.fs is not None else self.fs

    @property
    def cwd(self) -> str:
        """The working directory of the thread making the syscall."""
        return self.fsstate.cwd

    @cwd.setter
    def cwd(self, path: str) -> None:
        self.fsstate.cwd = path

    # --- the cgroup (memory.Cgroup) ---------------------------------------------------------------
    def release(self) -> None:
        """The process (or its image, at execve) ended: its pages, threads and own cost leave the cgroup."""
        self.mem.release()
        for _ in range(self.tasks):
            self.cgroup.task_gone(THREAD_COST)
        if self.tasks:
            self.cgroup.uncharge("kernel", PROCESS_COST)
        self.tasks = 0

    def recharge(self) -> None:
        """Recount the cgroup after a snapshot's restore (snapshot.py: one process) from what it restored."""
        self.mem.recharge()
        live = sum(t.state != EXITED for t in self.threads.values())
        self.cgroup.pids, self.tasks = live, live
        self.cgroup.set_usage("kernel", PROCESS_COST + live * THREAD_COST)
        self.cgroup.set_usage("shmem", self.tmpfs.size())

    # --- setup -------------------------------------------------------------------------------
    def _load(self) -> None:
        for s in self.image.segments:
            self.mem.map_fixed(s.vaddr, s.memsz, executable=bool(s.flags & PF_X), writable=bool(s.flags & PF_W))
            self.uc.mem_write(s.vaddr, s.data)
        if self.level.avx:
            from ..engine.avx import VectorUnit     # at v3/v4 only: a v1 process does not import Capstone's decoder
            self.avx = VectorUnit(self.uc, self.level, self.mem.is_writable)   # its stores: the pages' protections
            from ..front.gobuild import cache_dir
            try:
                cache = cache_dir()
            except EmuError:                     # a cache preemu cannot write only costs the scan each time
                cache = None
            self.avx.patch(self.image.functions(), cache)
        rnd = self.random_bytes(16)
        if self.opts.vdso:
            self._map_vdso()
        sp = startup.build_stack(self.mem, self.image, self.opts.argv, self.opts.env, rnd,
                                 vdso.VDSO_BASE if self.opts.vdso else 0)
        self.uc.reg_write(X.UC_X86_REG_RSP, sp)
        self.uc.reg_write(X.UC_X86_REG_RIP, self.image.entry)
        self.uc.reg_write(X.UC_X86_REG_EFLAGS, USER_RFLAGS)
        self._add_hooks()
        main = Thread(self.pid, self.uc.context_save(), name="m0", ready_ns=self.clock)
        self.threads[main.tid] = main
        self.runq.append(main)

    def _add_hooks(self) -> None:
        hook_syscall(self.uc, self._on_syscall)        # C trampolines with the compiled module (engine/native.py)
        self.uc.hook_add(UC_HOOK_INSN, self._on_cpuid, None, 1, 0, X.UC_X86_INS_CPUID)
        hook_intr(self.uc, self._on_intr)
        self._hook_rdtsc()

    def _map_vdso(self) -> None:
        """The vDSO's ELF page, and the counter's page as its vvar (read-only, the host's memory)."""
        self.mem.map_fixed(vdso.VDSO_BASE, vdso.PAGE, executable=True, writable=False)
        self.uc.mem_write(vdso.VDSO_BASE, vdso.image())
        self._map_vvar()

    def _map_vvar(self) -> None:
        self.uc.mem_map_ptr(vdso.VVAR, vdso.PAGE, UCC.UC_PROT_READ, self.counter.page_address)
        self.mem.vmas.add(vdso.VVAR, vdso.VVAR + vdso.PAGE)
        self.mem.mapped.add(vdso.VVAR, vdso.VVAR + vdso.PAGE)

    # --- the run loop ----------------------------------------------------------------------------
    def _on_syscall(self, uc, _) -> None:
        t = self.cur
        vals = _ENTRY_REGS(uc)              # one batched read (a binding call costs ~3 us a register)
        nr, args, rip, rflags = vals[0], vals[1:7], vals[7], vals[8]
        entry = kernel.TABLE.get(nr)
        if entry is None:
            self.error = EmuError(f"unsupported syscall {kernel.name_of(nr)} (number {nr}) at {self._where()}")
            uc.emu_stop()
            return
        name, fn = entry
        self.syscall_nr = nr
        self.syscall_counts[name] += 1
        # SYSCALL leaves the return address in RCX and RFLAGS in R11, which the kernel's SYSRET keeps
        # (Intel SDM SYSCALL; arch/x86/entry/entry_64.S): the hook runs at the instruction, before RIP moves
        _SYSRET_REGS.write(uc, (rip + 2, rflags))
        try:
            res = fn(self, t, *args)
        except EmuError as e:
            self.error = e
            uc.emu_stop()
            return
        except UcError as e:
            self.error = EmuError(f"{name} at {self._where()}: bad guest pointer ({e})")
            uc.emu_stop()
            return
        if self.opts.trace:
            self.syscall_log.append((self.now(), t.tid, name, args[:3], "block" if res is BLOCK else
                                     "stop" if res is STOP else res))
        if res is BLOCK or res is STOP:
            uc.emu_stop()
            return
        _RESULT_REG.write(uc, (res & _U64,))
        if self._alone and self.runq:      # a thread woke up: the slice in progress ends where it would
            self._alone = False            # have ended, at the next multiple of the quantum
            q = self.opts.quantum
            c = self.counter.at(read_reg(uc, X.UC_X86_REG_RIP))
            self.counter.lower_limit(-(-c // q) * q)
        if self._stop_slice:
            uc.emu_stop()

    def _limit_ns(self) -> int | None:
        if self.opts.max_virtual_ms is None:
            return None
        return self.boot_ns + int(self.opts.max_virtual_ms * 1_000_000)

    def _starve(self, why: str) -> None:
        self.starved = True
        self.stop_reason = why

    def run(self) -> "Process":
        t0 = time.perf_counter()
        self._wake_due(self.clock)         # then whenever no CPU can run anything before a deadline
        self.run_until(None)
        self.wall_s = time.perf_counter() - t0
        return self

    def run_until(self, stop) -> bool:
        """Run slices until the process ends (or starves, or fails), or until `stop()` is true before
        the next slice; True when `stop` ended it. The same slices run as in `run`, so a run paused this
        way and resumed with no change in between goes on exactly as an unpaused one.

        The real process's loop: kernel threads in exact instruction quanta, syscalls and signals between
        them. Everything that runs a real program shares it (exec, the real-program sweep's chains and
        to-exit runs, teach/real.py's story, which pauses it with `stop`). It cannot be Machine.run or
        Scheduler.run: those run preemu's model of the runtime on their own engine, this one runs the
        binary's runtime, and counts per translated block (icount.py) rather than with `count=`."""
        ns = self.opts.ns_per_insn
        limit_ns = self._limit_ns()
        while self.exit_code is None and self.error is None:
            if self.kernel is not None and self.kernel.busy():
                ended = self.kernel.run_until(self, stop)     # other processes run too (proctable.py)
                if ended is not None:
                    return ended
                self.cpus.catch_up(self.clock)                # the shared clock ran on: no CPU is behind it
                continue                                      # this process is alone again
            ended = self.checkpoint(stop, None)               # --max-virtual-ms: below, by the CPUs' clocks
            if ended is not None:
                return ended
            if self.schedule is not None and self.runq:
                self.schedule.to_front(self.runq, self.held)   # the highest-priority runnable thread (schedule.py)
            t = self.runq[0] if self.runq else None
            if t is not None and (t.tid in self.held or t.state != RUNNABLE):
                self.runq.popleft()              # unhold puts a held one back
                continue
            cpu = self.cpus.pick()               # the CPU furthest behind runs the queue's head (cpus.py)
            start = self.cpus.start_of(cpu, t) if t is not None else None
            d = self._earliest_deadline()
            if t is None and d is None:
                if self.held:
                    return False                 # only held threads could run: the holder decides
                waits = ", ".join(f"{x.tid}: {x.wait.kind}" for x in self.threads.values() if x.state == BLOCKED)
                self.error = EmuError(f"deadlock: every thread waits with no timeout ({waits})")
                break
            if limit_ns is not None and (start if start is not None else d) >= limit_ns:
                if start is None:                        # every CPU idle until the limit
                    self.idle_ns += self.cpus.account_idle(cpu, max(limit_ns, self.cpus.clocks[cpu]))
                self.clock = max(self.cpus.clocks[cpu], min(limit_ns, start if start is not None else d))
                self._starve(f"reached --max-virtual-ms {self.opts.max_virtual_ms:g}")
                break
            if d is not None and (start is None or d <= start):
                self._wake_due(d if start is None else start)   # no CPU runs anything before d
                continue
            self.runq.popleft()
            self.idle_ns += self.cpus.account_idle(cpu, start)
            self.clock = start
            if self.schedule is None:
                self._run_slice(t, ns, limit_ns)
            else:
                before, contended = self.insns, bool(self.runq)
                self._run_slice(t, ns, limit_ns)
                self.schedule.after_slice(t, self.insns - before, contended)
            if self.on_slice is not None:
                self.on_slice(self)
        return False

    def checkpoint(self, stop, limit_ns: int | None) -> bool | None:
        """Between two slices: what run_until returns now (True: `stop` said so; False: Ctrl-C, or a limit
        starved the run), or None to go on."""
        if stop is not None and stop():
            return True
        if self.interrupted:
            if self.interrupt_raises:           # a sweep's run: the Ctrl-C ends the sweep, not the program
                self.interrupted = False
                raise KeyboardInterrupt
            self.stop_reason = "interrupted (Ctrl-C)"
            return False
        if limit_ns is not None and self.clock >= limit_ns:
            self._starve(f"reached --max-virtual-ms {self.opts.max_virtual_ms:g}")
            return False
        if (self.insns if self.kernel is None else self.kernel.insns()) >= self.opts.budget:
            self._starve(f"reached the instruction budget ({self.opts.budget})")
            return False
        return None

    def _run_slice(self, t: Thread, ns: int, limit_ns: int | None) -> None:
        uc = self.uc
        restore_context(uc, t.ctx)
        if self.avx is not None:
            self.avx.set_kregs(t.kregs)          # K0-K7 are not in Unicorn's context (engine/avx.py)
        self.cur = t
        at = self.opts.signal_at_pc
        if not self._take_signal(t, at):
            return
        watch_pc = at is not None and t.deliverable()
        if watch_pc:
            self._pc_hook = uc.hook_add(UC_HOOK_CODE, self._on_signal_pc, None, at, at)
            remove_cache(uc, at, at + 1)    # hooks added after translation only fire on fresh blocks
        probe = self.probe
        limit = self._slice_limit(t, ns, limit_ns, probe, watch_pc)
        self._stop_slice, self._after_stop = False, None
        counter = self.counter
        counter.arm(limit)
        counter.set_clock(self.clock, ns, REALTIME_EPOCH_NS - self.boot_ns)
        start = self.clock
        self.in_slice = True
        pc = read_reg(uc, X.UC_X86_REG_RIP)
        if limit == 1 and not watch_pc:     # one instruction (a sweep's next boundary after a declined signal):
            self.single_step(pc)            # by the trap flag, whose one-instruction block the engine keeps,
        try:                                # instead of the counter's cut-short block, translated anew each time
            counter.run(pc)
            if self._exception is not None:
                intno, self._exception = self._exception, None
                if not self._trap(t, intno):
                    raise UcError(UCC.UC_ERR_EXCEPTION)
        except UcError as e:
            self._end_step()                     # a fault's frame must not save TF
            if not self._page_fault(t, e):
                self.error = self._guest_fault(e)
        finally:
            self._end_step()                     # a single step the limit ended first leaves TF set
            n = counter.settled
            self.in_slice = False
            if watch_pc:
                uc.hook_del(self._pc_hook)
                remove_cache(uc, at, at + 1)
        self.clock += n * ns
        self.cpus.clocks[self.cpus.running] = self.clock
        self.insns += n
        t.vruntime += n * ns
        t.ready_ns = self.clock
        if self.timers.itimers or self.timers.posix:
            self.timers.charge(self, t, n * ns)           # CPU-time timers (sys_timer.py): SIGPROF at slice ends
        else:
            t.cpu_ns += n * ns
        if probe is not None:
            probe.slice_end(t, n)
        if t.signal_countdown > 0:
            t.signal_countdown = max(0, t.signal_countdown - n)
        if self.opts.trace:
            self.slices.append(Slice(t.tid, start, self.clock, t.state))
        if self.error is not None:
            return
        self._finish_slice(t)

    def _take_signal(self, t: Thread, at: int | None) -> bool:
        """At the start of t's slice: deliver a fault's forced signal, or a pending one whose countdown has run
        out (and, with --signal-at, when t stands at that PC). False when the signal's default action ended
        the process."""
        forced = next((n for n, ev in t.pending.items() if ev.forced), 0)
        if forced:                # a fault's signal, before any other and whatever --signal-at/signal_delay
            self._deliver(t, forced)              # say (kernel/signal.c dequeue_synchronous_signal)
            if self.exit_code is not None:
                return False
        else:
            sig = t.deliverable()
            if sig and t.signal_countdown <= 0 and (at is None or read_reg(self.uc, X.UC_X86_REG_RIP) == at):
                self._deliver(t, sig)
                if self.exit_code is not None:
                    return False
        return True

    def _slice_limit(self, t: Thread, ns: int, limit_ns: int | None, probe, watch_pc) -> int:
        """How many instructions t's slice may run: a quantum (or, alone, unlimited), cut at the earliest
        deadline, at a pending signal's countdown, at the run's limits and where the probe asks."""
        # A thread with the CPU to itself (nothing else runnable, no signal pending for it, nothing watching
        # slices) runs its quanta back to back in one engine run: the slices it would have had end on the
        # same instructions, because a deadline, the run's limits and any wakeup (_on_syscall) still cut
        # the run where one of those slices would have ended.
        shared = self.kernel is not None and self.kernel.busy()     # other processes' threads want the CPU too
        self._alone = (probe is None and not watch_pc and not self.opts.trace and not self.runq and not t.pending
                       and not shared)
        jitter = bool(self.runq) and self.schedule is None       # a schedule alone decides where slices end
        limit = self.counter.UNLIMITED if self._alone else self.cpus.quantum(self.opts.quantum, jitter)
        d = self.kernel.earliest_deadline() if shared else self._earliest_deadline()
        if d is not None:
            limit = min(limit, max(1, -(-(d - self.clock) // ns)))
        if t.deliverable() and t.signal_countdown > 0:
            limit = min(limit, t.signal_countdown)
        if limit_ns is not None:
            limit = min(limit, max(1, -(-(limit_ns - self.clock) // ns)))
        limit = min(limit, self.opts.budget - self.insns)
        if probe is not None:
            cap = probe.slice_start(t)
            if cap is not None:
                limit = min(limit, cap)
        return limit

    def _finish_slice(self, t: Thread) -> None:
        """After t's slice: finish what its hook could not (rt_sigreturn), save its context, wake the sleepers
        whose time has come, and queue t again if it can still run."""
        uc = self.uc
        returned = self._after_stop == self._finish_sigreturn
        if self._after_stop is not None and t.state != EXITED and self.error is None:
            self._after_stop(t)
        if t.state != EXITED:
            t.ctx = save_context(uc, t.ctx)
            if self.avx is not None:
                t.kregs = self.avx.kregs()
        again = t.state == RUNNABLE and t not in self.runq and t.tid not in self.held
        upto = self.cpus.frontier(self.runq, t if again else None)
        if upto is not None:             # sleepers due before any CPU runs again: a wakeup as any other (it
            self._wake_due(upto)         # may preempt t, cpus.py), before t queues again
        if again:
            if returned:                 # rt_sigreturn returns to user mode on the same CPU: the thread goes
                self.runq.appendleft(t)  # on (arch/x86/kernel/signal.c; no reschedule on the way back)
            else:
                self.cpus.requeue(self.runq, t)

    def _on_signal_pc(self, uc, addr, size, _) -> None:
        if self.counter.at(addr) < self.counter.limit:   # as the per-instruction counter decided: not when
            self.counter.stop_here(True)   # this is the slice's last instruction; stopped before it runs, the
                                           # signal is taken here next slice (the instruction counted, as then)
