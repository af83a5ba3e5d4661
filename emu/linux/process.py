"""One emulated Linux process: load the binary, multiplex its threads on one Unicorn, run to exit.

The scheduler is a single emulated CPU: round-robin over runnable threads in instruction quanta,
counted exactly (icount), so virtual time = instructions x ns-per-insn + idle jumps is exact and
a run is a pure function of (binary, args, env, options, seed). A slice ends when its quantum
runs out, the thread blocks or yields, a sleeping thread's deadline arrives (so sleeps end on
time), a pending signal's chosen boundary is reached, or a syscall that replaces the CPU context
(rt_sigreturn, exit) must be finished outside Unicorn's hook: in a SYSCALL hook RIP is the
address of the SYSCALL and Unicorn adds 2 after the callback, even to a RIP written in it.

Which thread runs next follows Linux where a program can see it: a thread returning from a signal
handler keeps the CPU (rt_sigreturn returns to user mode on the same CPU; without this rule a GC with
spinners on three or more Ps livelocked); sched_yield ends the slice and the thread queues behind the
others (CFS's yield_task_fair skips it once); a thread a futex wake or a wakeup readies queues at the
back and runs within one quantum (20 µs), which is below CFS's wakeup granularity (about 1 ms with a
few CPUs), so the wakeup preemption CFS could do would not change the order a program observes.

Signals are delivered as Linux does (kernel/signal.c, arch/x86/kernel/signal.c) when the target
thread next runs, `signal_delay` of its instructions later (--signal-at insn:N), or when it is
about to execute a chosen PC (--signal-at FUNC+OFF, a one-shot code hook); the landing PC is recorded.
An access to an unmapped page becomes a synchronous SIGSEGV for the faulting thread (SEGV_MAPERR,
si_addr and the mcontext's trapno/err/cr2), taken before anything else runs; if the thread blocks or
ignores it, it is forced (SIG_DFL, unblocked) and kills, as force_sig_info_to_task does.
Left out: multiple CPUs, priorities, core dumps, other processes (fork/exec).
"""
from __future__ import annotations

import collections
import os
import random
import struct
import time
from dataclasses import dataclass, field

import capstone
from unicorn import UC_ARCH_X86, UC_HOOK_CODE, UC_HOOK_INSN, UC_HOOK_INTR, UC_HOOK_MEM_UNMAPPED, UC_MODE_64, Uc, UcError
from unicorn import unicorn_const as UCC
from unicorn import x86_const as X

from ..core import gostructs as gs
from ..core.errors import EmuError, GuestFault
from . import cpuid, kernel, startup, vdso
from .sys_proc import RLIMIT_NOFILE
from .sys_signal import UNBLOCKABLE
from .sys_time import REALTIME_EPOCH_NS
from .sysabi import BLOCK, EINTR, ESRCH, STOP
from .elfimage import Image
from .fds import Epoll, FdTable
from .icount import InsnCounter
from .memory import AddressSpace
from .mounts import Namespace
from . import sys_socket
from .sys_socket import Net
from .regbatch import RegBatch, mem_read, mem_write, read_reg, read_u64
from .sigframe import PF_INSTR, PF_USER, PF_WRITE, SEGV_MAPERR, X86_TRAP_PF, SigInfo, restore_rt_frame, setup_rt_frame
from .threads import BLOCKED, EXITED, RUNNABLE, Thread, Wait
from .watch import Watch

BOOT_NS = 10**12                 # CLOCK_MONOTONIC at the first instruction: "1000 s since boot"
FIRST_TID = 1000
SA_ONSTACK, SA_RESTART, SA_NODEFER = 0x08000000, 0x10000000, 0x40000000
SIG_DFL, SIG_IGN = 0, 1
DEFAULT_IGNORED = {17, 18, 23, 28}     # SIGCHLD, SIGCONT, SIGURG, SIGWINCH: default action is ignore
SIGNAL_NAMES = {23: "SIGURG", 11: "SIGSEGV", 6: "SIGABRT", 2: "SIGINT", 9: "SIGKILL", 15: "SIGTERM"}
_U64 = (1 << 64) - 1
DEFAULT_BUDGET = 2_000_000_000
_ARG_REGS = RegBatch([X.UC_X86_REG_RDI, X.UC_X86_REG_RSI, X.UC_X86_REG_RDX, X.UC_X86_REG_R10, X.UC_X86_REG_R8,
                      X.UC_X86_REG_R9])


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
    ncpu: int = 2
    signal_delay: int = 0              # a pending signal is taken after N more instructions of its target
    signal_at_pc: int | None = None    # ... or when its target is about to execute this PC (--signal-at FUNC+OFF)
    passthrough: object = None         # callable(stream_name, bytes) for live output, or None
    trace: bool = False
    vdso: bool = True                  # map preemu's vDSO (vdso.py): clocks without a syscall
    cwd: str | None = None             # the working directory the program sees, read-only (default: ours)
    mounts: tuple = ()                 # more host directories it sees (mounts.Mount: --mount HOST:GUEST[:ro|rw])


@dataclass
class Slice:
    tid: int
    start_ns: int
    end_ns: int
    why: str


TF = 0x100                              # EFLAGS trap flag: #DB after the next instruction
_EFLAGS = RegBatch([X.UC_X86_REG_EFLAGS])


class Process:
    def __init__(self, image: Image, opts: Options, oracle="auto") -> None:
        if not image.is_go:
            raise EmuError(f"{image.path}: not a Go program (no .go.buildinfo section, no runtime symbols); "
                           "whole-program mode runs static linux/amd64 Go binaries")
        self.image, self.opts = image, opts
        self.uc = Uc(UC_ARCH_X86, UC_MODE_64)
        self.mem = AddressSpace(self.uc)
        self.fds = FdTable()
        from .tmpfs import TmpFs
        self.ppid, self.uid, self.gid = 1, os.getuid(), os.getgid()     # the host's own ids (sys_proc.py)
        self.tmpfs = TmpFs(0, self.uid, self.gid)  # /tmp, writable, in memory
        self.rng = random.Random(opts.seed)
        self.counter = InsnCounter(self.uc)
        self.boot_ns = BOOT_NS
        self.clock = BOOT_NS
        self.in_slice = False
        self.pid = FIRST_TID
        self.ncpu = opts.ncpu
        self.rlimits = {RLIMIT_NOFILE: (1024, 524288)}
        self.syscall_nr = -1                 # the syscall being handled (a Wait records it)
        self.sigactions: dict[int, tuple] = {}
        self.threads: dict[int, Thread] = {}
        self.runq: collections.deque[Thread] = collections.deque()
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
        self._fault = None                      # (access type, address) of the last unmapped access
        #: an observer of slices (emu/linux/gclock.GoroutineClock): slice_start(t) -> an instruction limit
        #: or None, slice_end(t, n); it may also lower the counter's limit from its own hooks
        self.probe = None
        self._alone = False                     # the slice in progress is a run of quanta (see _run_slice)
        self.interrupted = False                # set (by a SIGINT handler) to stop at the next slice boundary
        #: the working directory the program sees (sys_file.py: a read-only view of the host's)
        self.cwd = opts.cwd or os.getcwd()  # the guest's working directory (chdir moves it)
        self.ns = Namespace(self.cwd, tuple(opts.mounts))
        self.on_slice = None                    # callable(process) after every slice (progress), or None
        self.async_preemption_on = not godebug_int(opts.env, "asyncpreemptoff")
        self._load()
        self.oracle_note = ""
        if oracle == "auto":
            from . import oracle as oracle_mod
            oracle, self.oracle_note = oracle_mod.make(self, image.path)
        #: g/m/p as this binary lays them out (the oracle's, from its DWARF), else the typed Go 1.27.3 ones
        self.structs: gs.StructTables = getattr(oracle, "structs", None) or gs.typed_tables()
        self.watch = Watch(self, image.symbol("runtime.asyncPreempt.abi0"), oracle)

    # --- setup -------------------------------------------------------------------------------
    def _load(self) -> None:
        for s in self.image.segments:
            self.mem.map_fixed(s.vaddr, s.memsz)
            self.uc.mem_write(s.vaddr, s.data)
        rnd = self.random_bytes(16)
        if self.opts.vdso:
            self._map_vdso()
        sp = startup.build_stack(self.mem, self.image, self.opts.argv, self.opts.env, rnd,
                                 vdso.VDSO_BASE if self.opts.vdso else 0)
        self.uc.reg_write(X.UC_X86_REG_RSP, sp)
        self.uc.reg_write(X.UC_X86_REG_RIP, self.image.entry)
        self.uc.hook_add(UC_HOOK_INSN, self._on_syscall, None, 1, 0, X.UC_X86_INS_SYSCALL)
        self.uc.hook_add(UC_HOOK_INSN, self._on_cpuid, None, 1, 0, X.UC_X86_INS_CPUID)
        self.uc.hook_add(UC_HOOK_MEM_UNMAPPED, self._on_unmapped)
        self.uc.hook_add(UC_HOOK_INTR, self._on_intr)
        self._hook_rdtsc()
        main = Thread(self.pid, self.uc.context_save(), name="m0")
        self.threads[main.tid] = main
        self.runq.append(main)

    def _map_vdso(self) -> None:
        """The vDSO's ELF page, and the counter's page as its vvar (read-only, the host's memory)."""
        self.mem.map_fixed(vdso.VDSO_BASE, vdso.PAGE)
        self.uc.mem_write(vdso.VDSO_BASE, vdso.image())
        self.uc.mem_map_ptr(vdso.VVAR, vdso.PAGE, UCC.UC_PROT_READ, self.counter.page_address)
        self.mem.vmas.add(vdso.VVAR, vdso.VVAR + vdso.PAGE)
        self.mem.mapped.add(vdso.VVAR, vdso.VVAR + vdso.PAGE)

    def _hook_rdtsc(self) -> None:
        """RDTSC/RDTSCP read the host clock in Unicorn; answer them from virtual time instead."""
        for a, n in self.image.find_insns(("rdtsc", "rdtscp")):
            self.uc.hook_add(UC_HOOK_CODE, self._on_rdtsc, n, a, a)

    def _on_rdtsc(self, uc, addr, size, n) -> None:
        if self.counter.stopping(addr):
            return                      # the counter is stopping the engine before this instruction
        tsc = self.now()
        uc.reg_write(X.UC_X86_REG_RAX, tsc & 0xFFFFFFFF)
        uc.reg_write(X.UC_X86_REG_RDX, (tsc >> 32) & 0xFFFFFFFF)
        if n == 3:
            uc.reg_write(X.UC_X86_REG_RCX, 0)
        self.counter.cut_after(addr)             # the block is left here: the jump below starts a new one
        uc.reg_write(X.UC_X86_REG_RIP, addr + n)

    def _on_cpuid(self, uc, _) -> int:
        a, b, c, d = cpuid.cpuid(uc.reg_read(X.UC_X86_REG_EAX) & 0xFFFFFFFF, uc.reg_read(X.UC_X86_REG_ECX) & 0xFFFFFFFF)
        for r, v in ((X.UC_X86_REG_RAX, a), (X.UC_X86_REG_RBX, b), (X.UC_X86_REG_RCX, c), (X.UC_X86_REG_RDX, d)):
            uc.reg_write(r, v)
        return 1                        # skip the engine's own CPUID

    # --- helpers the syscalls use ------------------------------------------------------------------
    def read(self, addr: int, n: int) -> bytes:
        return mem_read(self.uc, addr, n)

    def write(self, addr: int, data: bytes) -> None:
        mem_write(self.uc, addr, bytes(data))

    def read_u64(self, addr: int) -> int:
        return read_u64(self.uc, addr)

    def read_cstr(self, addr: int, limit: int = 4096) -> str:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read(addr + len(out), 64)
            z = chunk.find(b"\0")
            if z >= 0:
                out += chunk[:z]
                break
            out += chunk
        return out.decode(errors="replace")

    def fs_base(self) -> int:
        return read_reg(self.uc, X.UC_X86_REG_FS_BASE)

    def now(self) -> int:
        """Virtual CLOCK_MONOTONIC in ns (exact, also in the middle of a slice)."""
        if self.in_slice:
            return self.clock + self.counter.executed * self.opts.ns_per_insn
        return self.clock

    def random_bytes(self, n: int) -> bytes:
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def note_path(self, path: str) -> None:
        self.paths.append(path)

    def output(self, stream, data: bytes) -> None:
        stream.data += data
        if self.opts.passthrough:
            self.opts.passthrough(stream.name, data)

    def unsupported(self, name: str, detail: str):
        raise EmuError(f"unsupported {name} at {self._where()}: {detail}")

    def _where(self, pc: int | None = None) -> str:
        if pc is None:
            pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        code = self.read_or_empty(pc, 16)
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        insn = next(iter(md.disasm(code, pc)), None)
        text = f"{insn.mnemonic} {insn.op_str}".strip() if insn else "??"
        t = self.cur or self.threads[self.pid]
        return f"pc {pc:#x} {self.image.describe(pc)} ({text}) in thread {t.name}({t.tid})"

    def read_or_empty(self, addr: int, n: int) -> bytes:
        try:
            return self.read(addr, n)
        except UcError:
            return b""

    # --- threads ---------------------------------------------------------------------------------
    def new_thread(self, parent: Thread, stack: int, tls: int | None) -> int:
        tid = FIRST_TID + len(self.threads)
        ctx = self.uc.context_save()
        ctx.reg_write(X.UC_X86_REG_RIP, read_reg(self.uc, X.UC_X86_REG_RIP) + 2)   # the hook's RIP+2 rule
        ctx.reg_write(X.UC_X86_REG_RAX, 0)
        ctx.reg_write(X.UC_X86_REG_RSP, stack)
        if tls is not None:
            ctx.reg_write(X.UC_X86_REG_FS_BASE, tls)
        t = Thread(tid, ctx, sigmask=parent.sigmask, name=self._m_name(read_reg(self.uc, X.UC_X86_REG_R13)))
        self.threads[tid] = t
        self.runq.append(t)
        return tid

    def _m_name(self, mp: int) -> str:
        """Name a new thread after its M: runtime·clone passes mp in R13 (sys_linux_amd64.s), and
        newm's mstartfn (runtime/proc.go) tells sysmon and the template thread from plain Ms."""
        try:
            m = self.structs.m
            fn = self.read_u64(mp + m["mstartfn"].offset)
            mid = self.read_u64(mp + m["id"].offset)
            start = self.image.func_at(self.read_u64(fn)) if fn else None
        except UcError:
            return "thread"
        if start is not None and start[0] in ("runtime.sysmon", "runtime.templateThread"):
            return start[0].removeprefix("runtime.")
        return f"m{mid}"                       # a plain M (mstartfn nil or mspinning)

    def exit_thread(self, t: Thread, code: int) -> None:
        t.state = EXITED
        if all(x.state == EXITED for x in self.threads.values()):
            self.exit_group(code & 0xFF)

    def exit_group(self, code: int) -> None:
        self.exit_code = code
        self.stop_reason = "exit"
        for t in self.threads.values():
            t.state = EXITED
        self._stop_slice = True

    def yield_slice(self) -> None:
        self._stop_slice = True

    def block(self, t: Thread, w: Wait) -> None:
        if w.nr < 0:
            w.nr = self.syscall_nr
        t.state, t.wait = BLOCKED, w
        if w.kind == "futex":
            self.futex_waiters[w.futex].append(t)

    # --- one instruction, then stop (the real-program sweep's next boundary) ----------------------------
    #: instructions that read or change TF, trap, or enter the kernel: never run single-stepped
    _NO_STEP = frozenset(("pushf", "pushfq", "popf", "popfq", "syscall", "sysenter", "int", "int3", "int1", "into",
                          "iret", "iretq", "ud2", "hlt", "cpuid", "rdtsc", "rdtscp", "sti", "cli"))

    def single_step(self, target: int) -> bool:
        """Inside a code hook for an instruction that ends its block (asyncPreempt's RET): make the engine stop
        after exactly one more instruction, the one at `target`, by the trap flag (a translated block of one
        instruction that raises #DB, kept in the cache under its flags) instead of the counter's cut-short
        block, which is translated anew and dropped each time. The limit still stands behind it. False (and
        nothing done) for an instruction that reads or changes TF, traps or enters the kernel."""
        ok = self._step_ok.get(target)
        if ok is None:
            import capstone
            md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
            i = next(md.disasm_lite(self.read_or_empty(target, 16), target), None)
            ok = self._step_ok[target] = i is not None and i[2] not in self._NO_STEP and not i[2].startswith("rep")
        if not ok or self._stepping:
            return False
        _EFLAGS.write(self.uc, (read_reg(self.uc, X.UC_X86_REG_EFLAGS) | TF,))
        self._stepping = True
        return True

    def _on_intr(self, uc, intno, _) -> None:
        """The engine's interrupt hook (always installed: adding one costs ~50 us). #DB while single-stepping
        ends the step; any other interrupt or exception stops the engine and is raised as the engine's own
        UC_ERR_EXCEPTION would have been without a hook (run's caller handles it as before)."""
        if intno == 1 and self._stepping:
            self.counter.block_ran()             # its one instruction ran (RIP may be a jump's target)
            self._end_step()
        else:
            self._exception = intno
        uc.emu_stop()

    def _end_step(self) -> None:
        if self._stepping:
            _EFLAGS.write(self.uc, (read_reg(self.uc, X.UC_X86_REG_EFLAGS) & ~TF,))
            self._stepping = False

    # --- holding a runnable thread off the CPU (the real-program sweep's --gc) ---------------------------
    def hold(self, t: Thread) -> None:
        """Keep runnable thread t off the CPU until unhold: the other threads run (virtual time passes)."""
        self.held.add(t.tid)
        if t in self.runq:
            self.runq.remove(t)

    def unhold(self, t: Thread) -> None:
        self.held.discard(t.tid)
        if t.state == RUNNABLE and t not in self.runq:
            self.runq.appendleft(t)

    def runnable_besides_held(self) -> bool:
        """Some thread other than the held ones can run now or later (runnable, or waiting with a timeout)."""
        return bool(self.runq) or self._earliest_deadline() is not None

    def wake(self, t: Thread, result: int) -> None:
        w = t.wait
        if w is not None and w.kind == "futex":
            self.futex_waiters[w.futex].remove(t)
        t.state, t.wait = RUNNABLE, None
        t.ctx.reg_write(X.UC_X86_REG_RAX, result & _U64)
        self.runq.append(t)

    def futex_wake(self, addr: int, n: int) -> int:
        woken = 0
        for t in list(self.futex_waiters.get(addr, ())):
            if woken >= n:
                break
            self.wake(t, 0)
            woken += 1
        return woken

    def epoll_collect(self, ep: Epoll, events: int, maxevents: int) -> int:
        ready = ep.ready(self.fds, maxevents, consume=True)
        for i, (rev, data) in enumerate(ready):
            self.write(events + 12 * i, struct.pack("<IQ", rev, data))
        return len(ready)

    def wake_pipe_readers(self) -> None:
        """Finish the blocking reads of pipes that now have data or no writer (fs/pipe.c pipe_read)."""
        for t in self.threads.values():
            if t.state == BLOCKED and t.wait.kind == "pipe":
                end = t.wait.pipe
                if not end.state.readers:
                    self.wake(t, 0)              # a socket whose reading side was shut: end of data
                elif end.state.buf:
                    data = end.state.take(t.wait.count)
                    self.write(t.wait.buf, data)
                    self.wake(t, len(data))
                elif not end.state.writers:
                    self.wake(t, 0)

    def wake_socket_waiters(self) -> None:
        """Finish the blocking accepts and datagram reads that can go on now (sys_socket.py)."""
        for t in self.threads.values():
            if t.state != BLOCKED:
                continue
            w = t.wait
            if w.kind == "accept":
                s = self.fds.get(w.fd)
                if isinstance(s, sys_socket.Socket) and s.backlog:
                    self.wake(t, sys_socket.finish_accept(self, s, w.addr, w.addrlen, w.flags))
            elif w.kind == "dgram" and w.pipe.dgrams:
                self.wake(t, sys_socket.finish_recv(self, w.pipe, w.buf, w.count, w.addr, w.addrlen))

    def wake_pollers(self) -> None:
        for t in self.threads.values():
            if t.state == BLOCKED and t.wait.kind == "epoll":
                ep = self.fds.get(t.wait.epfd)
                if isinstance(ep, Epoll) and ep.ready(self.fds):
                    self.wake(t, self.epoll_collect(ep, t.wait.events, t.wait.maxevents))

    def _wake_due(self) -> None:
        due = sorted((t.wait.deadline, t.tid) for t in self.threads.values()
                     if t.state == BLOCKED and t.wait.deadline is not None and t.wait.deadline <= self.clock)
        for _, tid in due:
            t = self.threads[tid]
            self.wake(t, t.wait.on_timeout)

    def _earliest_deadline(self) -> int | None:
        ds = [t.wait.deadline for t in self.threads.values() if t.state == BLOCKED and t.wait.deadline is not None]
        return min(ds) if ds else None

    # --- signals ---------------------------------------------------------------------------------
    def signal_target(self, sig: int) -> Thread:
        """The thread a process-directed signal goes to: the first live one, in tid order (the main thread
        first), that does not block it; the main thread when all do (complete_signal, kernel/signal.c)."""
        live = [t for _, t in sorted(self.threads.items()) if t.state != EXITED]
        return next((t for t in live if not t.sigmask & (1 << (sig - 1))), self.threads.get(self.pid, live[0]))

    def send_signal(self, sender: Thread, tid: int, sig: int) -> int:
        t = self.threads.get(tid)
        if t is None or t.state == EXITED:
            return -ESRCH
        if sig == 0:
            return 0
        ev = self.watch.sent(sig, sender.tid, tid)
        if sig in t.pending:
            ev.outcome = "merged"           # a standard signal already pending is not queued twice
            return 0
        t.pending[sig] = ev
        t.signal_countdown = self.opts.signal_delay
        if t is sender:
            self._stop_slice = True          # taken on the way back to user mode
        elif t.state == BLOCKED and not t.sigmask & (1 << (sig - 1)):
            self._interrupt(t, sig)
        return 0

    def _interrupt(self, t: Thread, sig: int) -> None:
        """A signal arrives while t waits: restart the call (SA_RESTART futex wait) or fail it with EINTR."""
        t.signal_countdown = 0
        flags = self.sigactions.get(sig, (0, 0, 0, 0))[1]
        if t.wait.restart and flags & SA_RESTART and t.wait.nr >= 0:
            rip = t.ctx.reg_read(X.UC_X86_REG_RIP)
            self.wake(t, t.wait.nr)
            t.ctx.reg_write(X.UC_X86_REG_RIP, rip - 2)
        else:
            self.wake(t, -EINTR)

    def _force_sig(self, t: Thread, sig: int) -> None:
        """force_sig_info_to_task (kernel/signal.c): a synchronous fault the thread blocks or ignores
        cannot be left pending or dropped; its action is reset to SIG_DFL and it is unblocked, so it kills."""
        bit = 1 << (sig - 1)
        handler, flags, restorer, mask = self.sigactions.get(sig, (SIG_DFL, 0, 0, 0))
        if t.sigmask & bit or handler == SIG_IGN:
            self.sigactions[sig] = (SIG_DFL, flags, restorer, mask)
            t.sigmask &= ~bit
        t.pending[sig].forced = True

    def _deliver(self, t: Thread, sig: int) -> None:
        ev = t.pending.pop(sig)
        handler, flags, restorer, mask = self.sigactions.get(sig, (SIG_DFL, 0, 0, 0))
        if handler == SIG_IGN or (handler == SIG_DFL and sig in DEFAULT_IGNORED):
            ev.outcome = "ignored"
            return
        if handler == SIG_DFL:
            ev.outcome = "fatal"          # a fault _force_sig reset to SIG_DFL lands here too
            self.exit_code = 128 + sig
            self.stop_reason = f"killed by signal {sig} ({SIGNAL_NAMES.get(sig, '?')})" + \
                (f": {ev.fault}" if ev.info is not None else "")
            return
        rsp = read_reg(self.uc, X.UC_X86_REG_RSP)
        alt = t.altstack if flags & SA_ONSTACK else None
        on_alt = t.altstack is not None and t.altstack[0] <= rsp - 128 < t.altstack[0] + t.altstack[1]
        info = ev.info or SigInfo(sig, pid=self.pid, uid=self.uid)
        frame = setup_rt_frame(self.uc, info, handler, restorer, t.sigmask, alt, on_alt)
        t.sigmask |= mask | (0 if flags & SA_NODEFER else 1 << (sig - 1))
        t.frames.append(frame)
        self.watch.delivered(ev, t, frame)

    def request_sigreturn(self, t: Thread) -> None:
        self._after_stop = self._finish_sigreturn
        self._stop_slice = True

    def _finish_sigreturn(self, t: Thread) -> None:
        rsp = read_reg(self.uc, X.UC_X86_REG_RSP)
        frame = t.frames.pop() if t.frames and t.frames[-1].ucontext == rsp else None
        restored = restore_rt_frame(self.uc)
        t.sigmask = restored.sigmask & ~UNBLOCKABLE
        if frame is None:
            self.watch.violation("sigreturn-frame", f"rt_sigreturn in thread {t.tid} with ucontext {rsp:#x}, "
                                 "which is not the frame preemu delivered last")
        else:
            self.watch.sigreturn(t, frame, restored)

    # --- the run loop ----------------------------------------------------------------------------
    def _on_syscall(self, uc, _) -> None:
        t = self.cur
        nr = read_reg(uc, X.UC_X86_REG_RAX)
        entry = kernel.TABLE.get(nr)
        if entry is None:
            self.error = EmuError(f"unsupported syscall {kernel.name_of(nr)} (number {nr}) at {self._where()}")
            uc.emu_stop()
            return
        name, fn = entry
        self.syscall_nr = nr
        self.syscall_counts[name] += 1
        args = _ARG_REGS(uc)
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
        uc.reg_write(X.UC_X86_REG_RAX, res & _U64)
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
        self._wake_due()                   # then after every clock advance: a slice, or idle time below
        self.run_until(None)
        self.wall_s = time.perf_counter() - t0
        return self

    def run_until(self, stop) -> bool:
        """Run slices until the process ends (or starves, or fails), or until `stop()` is true before
        the next slice; True when `stop` ended it. The same slices run as in `run`, so a run paused this
        way and resumed with no change in between goes on exactly as an unpaused one."""
        ns = self.opts.ns_per_insn
        limit_ns = self._limit_ns()
        while self.exit_code is None and self.error is None:
            if stop is not None and stop():
                return True
            if self.interrupted:
                self.stop_reason = "interrupted (Ctrl-C)"
                return False
            if limit_ns is not None and self.clock >= limit_ns:
                self._starve(f"reached --max-virtual-ms {self.opts.max_virtual_ms:g}")
                break
            if self.insns >= self.opts.budget:
                self._starve(f"reached the instruction budget ({self.opts.budget})")
                break
            t = self.runq.popleft() if self.runq else None
            if t is not None and t.tid in self.held:
                continue                         # unhold puts it back
            if t is None:
                d = self._earliest_deadline()
                if d is None and self.held:
                    return False                 # only held threads could run: the holder decides
                if d is None:
                    waits = ", ".join(f"{x.tid}: {x.wait.kind}" for x in self.threads.values() if x.state == BLOCKED)
                    self.error = EmuError(f"deadlock: every thread waits with no timeout ({waits})")
                    break
                if limit_ns is not None and d > limit_ns:
                    self.idle_ns += limit_ns - self.clock
                    self.clock = limit_ns
                    continue
                self.idle_ns += d - self.clock
                self.clock = d
                self._wake_due()
                continue
            if t.state != RUNNABLE:
                continue
            self._run_slice(t, ns, limit_ns)
            if self.on_slice is not None:
                self.on_slice(self)
        return False

    def _run_slice(self, t: Thread, ns: int, limit_ns: int | None) -> None:
        uc = self.uc
        uc.context_restore(t.ctx)
        self.cur = t
        at = self.opts.signal_at_pc
        forced = next((n for n, ev in t.pending.items() if ev.forced), 0)
        if forced:                # a fault's signal, before any other and whatever --signal-at/signal_delay
            self._deliver(t, forced)              # say (kernel/signal.c dequeue_synchronous_signal)
            if self.exit_code is not None:
                return
        else:
            sig = t.deliverable()
            if sig and t.signal_countdown <= 0 and (at is None or read_reg(uc, X.UC_X86_REG_RIP) == at):
                self._deliver(t, sig)
                if self.exit_code is not None:
                    return
        watch_pc = at is not None and t.deliverable()
        if watch_pc:
            self._pc_hook = uc.hook_add(UC_HOOK_CODE, self._on_signal_pc, None, at, at)
            uc.ctl_remove_cache(at, at + 1)    # hooks added after translation only fire on fresh blocks
        # A thread with the CPU to itself (nothing else runnable, no signal pending for it, nothing watching
        # slices) runs its quanta back to back in one engine run: the slices it would have had end on the
        # same instructions, because a deadline, the run's limits and any wakeup (_on_syscall) still cut
        # the run where one of those slices would have ended.
        probe = self.probe
        self._alone = (probe is None and not watch_pc and not self.opts.trace and not self.runq and not t.pending)
        limit = self.counter.UNLIMITED if self._alone else self.opts.quantum
        d = self._earliest_deadline()
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
        self._stop_slice, self._after_stop = False, None
        counter = self.counter
        counter.arm(limit)
        counter.set_clock(self.clock, ns, REALTIME_EPOCH_NS - self.boot_ns)
        start = self.clock
        self.in_slice = True
        try:
            counter.run(read_reg(uc, X.UC_X86_REG_RIP))
            if self._exception is not None:
                self._exception = None
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
                uc.ctl_remove_cache(at, at + 1)
        self.clock += n * ns
        self.insns += n
        if probe is not None:
            probe.slice_end(t, n)
        if t.signal_countdown > 0:
            t.signal_countdown = max(0, t.signal_countdown - n)
        if self.opts.trace:
            self.slices.append(Slice(t.tid, start, self.clock, t.state))
        if self.error is not None:
            return
        returned = self._after_stop == self._finish_sigreturn
        if self._after_stop is not None and t.state != EXITED and self.error is None:
            self._after_stop(t)
        if t.state != EXITED:
            t.ctx = uc.context_save()
        self._wake_due()                 # a sleeper whose deadline ended this slice runs next (wakeup preemption)
        if t.state == RUNNABLE and t not in self.runq:
            if returned:                 # rt_sigreturn returns to user mode on the same CPU: the thread goes
                self.runq.appendleft(t)  # on (arch/x86/kernel/signal.c; no reschedule on the way back)
            else:
                self.runq.append(t)

    def _on_signal_pc(self, uc, addr, size, _) -> None:
        if self.counter.at(addr) < self.counter.limit:   # as the per-instruction counter decided: not when
            self.counter.stop_here(True)   # this is the slice's last instruction; stopped before it runs, the
                                           # signal is taken here next slice (the instruction counted, as then)

    def _on_unmapped(self, uc, access, addr, size, value, _) -> bool:
        self._fault = (access, addr)
        return False                           # let the engine stop with UC_ERR_*_UNMAPPED

    def _page_fault(self, t: Thread, e: UcError) -> bool:
        """An access to an unmapped page becomes a synchronous SIGSEGV for the thread, as the kernel's page
        fault handler does (arch/x86/mm/fault.c, force_sig_fault SEGV_MAPERR): True if one was raised."""
        kinds = {UCC.UC_ERR_READ_UNMAPPED: 0, UCC.UC_ERR_WRITE_UNMAPPED: PF_WRITE,
                 UCC.UC_ERR_FETCH_UNMAPPED: PF_INSTR}
        if e.errno not in kinds or self._fault is None:
            return False
        addr = self._fault[1]
        self._fault = None
        pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        if 11 in t.pending:                    # a SIGSEGV (a tgkill, blocked) is already pending: the fault's
            if t.pending[11].forced:           # own is not queued twice, but the pending one is forced, and
                return False                   # kills. (Forced already: it was not taken; fail, do not loop.)
            self._force_sig(t, 11)
            self.runq.appendleft(t)
            return True
        ev = self.watch.sent(11, t.tid, t.tid)
        ev.info = SigInfo(11, SEGV_MAPERR, addr=addr, trapno=X86_TRAP_PF, err=PF_USER | kinds[e.errno])
        what = {0: "read of", PF_WRITE: "write to", PF_INSTR: "fetch from"}[kinds[e.errno]]
        ev.fault = f"{what} unmapped address {addr:#x} at {self._where(pc)}"
        t.pending[11] = ev
        self._force_sig(t, 11)
        self.runq.appendleft(t)                # the faulting thread takes its signal before anything else runs
        return True

    def _guest_fault(self, e: UcError) -> Exception:
        pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        detail = str(e)
        if e.errno == UCC.UC_ERR_INSN_INVALID:
            detail += " (a VEX/AVX instruction? preemu's CPU has no AVX)"
        return GuestFault(pc, self._where(pc), detail)
