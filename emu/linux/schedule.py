"""A schedule steered by a seed: PCT, the probabilistic concurrency testing scheduler (Burckhardt, Kothari,
Musuvathi, Nagarakatte, "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs", ASPLOS 2010),
for `preemu exec --schedules N` / `--schedule SEED` (emu/drive/schedules.py runs them).

What it mirrors. A schedule is (seed, depth d, k): every thread gets a random priority in [d, d+1) when it is
first seen (distinct with probability 1, so their order is a uniformly random permutation, also for threads
created later); d-1 change points k_1..k_{d-1} are drawn, distinct, uniformly among the steps 1..k; the
highest-priority runnable thread always runs; when a thread reaches step k_i its priority becomes i, below
every initial priority (the labels i are in random order in time, as in the paper, so a later change point may
put its thread above or below an earlier one). The process consults this object at each choice it makes
(process.py, scheduling.py): which runnable thread runs next (`to_front`), whether a woken thread takes the CPU
from the runner (`preempts`), where a slice ends (a change point, `_on_step`), and which futex waiters a
FUTEX_WAKE releases (`wake_order`: the highest-priority ones). Everything is a function of the seed and of
instruction counts, so the same (program, options, seed, depth, k) replays the same run instruction for
instruction.

Partners: one step beyond PCT. Each change point k_i also has a partner at step k_i + r_i, r_i uniform in
1..k - k_i (the steps left of the calibration run, at least 1; drawn from the seed after the change points): the
thread running there drops to i - PARTNER_BELOW, just below the thread k_i stopped, so that thread runs again
before it. Why: the commonest schedule-dependent bug,
an atomicity violation (check-then-act, load-modify-store), needs thread A stopped inside its window *and* the
thread that ran meanwhile stopped inside its own conflicting region when A goes on. Plain PCT reaches that
only with a second change point that happens to land in the other thread's region *and* draws the lower label
(half the time); moreover in a Go program the other goroutine usually starts on another M only after A's thread
was stopped (work stealing: runtime/proc.go:7746, runqgrab's usleep(3) before it takes a P's runnext), so
most of the second point's draws fall before or after the stretch where it could matter. Measured on
tests/go/pctlock's try-lock (two goroutines, 20 rounds, k = 370): plain PCT at depth 3 failed 5 of 1,500
schedules (the first at seed 318); partners r uniform in 1..k, 9; in 1..k - k_i, 16 (the first at seed 19;
tests/test_schedules.py lists them). A stop that keeps the stopped thread off the CPU while a sleeper is due
(so that runqgrab's 3 us backoff ends first) was tried too and changed no outcome: not kept.

What is guaranteed, honestly. For a bug that one stopped thread and its partner expose (thread A stopped
before one of w steps, the thread running u' steps later stopped there, u' in a set U of the run's steps),
one schedule finds it with probability at least w |U| / k^2 for its first change point alone (k_1 at one of
the w steps: w/k; its partner at one of U: at least |U|/k, as r ranges over at most k values), provided the other change points and partners do not get in
its way, which nothing bounds (as in PCT, a change point that stops an unrelated thread usually does not). PCT's
own bound, 1/(n k^(d-1)) for a depth-d bug among n threads, is *not* claimed: a partner can land inside a
stretch the PCT argument needs undisturbed. With the steps counted as below, a bug's depth and k are
properties of the program's own shared-memory accesses, not of its instruction count.

Steps: what k counts, and why. A change point must be able to end a slice inside a check-then-act window one
or two instructions wide; counted in raw instructions, k would be millions and the probability of landing
there useless. So a step is one execution of an instruction of the program's own code (the functions of its
own packages: `main` and module paths, gofront._is_user's rule, plus the package under test) that touches
memory other threads can see: an explicit memory operand whose base is not RSP, RBP or R14 (the frame and
ABIInternal's g register), RIP-relative globals included, and every LOCK-prefixed, XCHG, CMPXCHG or XADD
instruction; LEA, NOP, calls and jumps are not steps. They are found statically in the binary's text
(Capstone) and counted by one code hook per such PC, nothing else, in machine code (StepHooks: Python is
called only at a change point's step). A change point ends the running thread's slice *before* that step's
instruction, which is then counted when the thread executes it. The runtime's and the standard library's
instructions are no steps: the schedule explores the program's interleavings, not the runtime's. k is the
number of steps of a calibration run (schedule 0, depth 1) of the same program and options, so a replay
computes the same k (drive/schedules.py).

Fairness. Go threads spin (idle Ms look for work before they sleep on a futex, user goroutines spin on a flag),
and a strict priority scheduler livelocks when the top thread spins waiting for a lower one. Bound: a thread
that has run FAIR_BUDGET instructions since it last blocked or was demoted, counted over slices during which
another thread was runnable, drops below every other thread (a CHESS-style fair yield; the demotion is
recorded and is as deterministic as the rest) until the others have run FAIR_TURN instructions, or until it
runs with no other thread wanting the CPU; then its priority comes back (unless a change point set another
meanwhile). A spinner thus leaves the thread it waits for a tenth of the CPU, and PCT's order outlives the
runtime's start-up (whose main thread always reaches the budget). This costs PCT's guarantee only for bugs whose
window spans more than FAIR_BUDGET instructions of one thread while others wait.

Left out: the runtime's own interleavings as steps (a change point never falls in runtime code), timers and
signal delivery times as choices (they follow virtual time as without a schedule), other processes (fork,
execve: their threads are scheduled as without a schedule), preemption bounding and partial-order reduction.
The CPUs' clocks still advance as cpus.py says (a thread never runs before it was woken); the seeded slice
jitter is off, and the quantum only bounds how long a slice runs before the schedule decides again.
"""
from __future__ import annotations

import ctypes
import random
from dataclasses import dataclass

#: instructions a thread may run while others wait (since it last blocked or was demoted) before it drops
#: below every other thread: 0.2 ms of virtual time at 1 ns an instruction
FAIR_BUDGET = 200_000
#: ... and gets its priority back once the others have run this many (a quantum's worth)
FAIR_TURN = 20_000
#: a partner's label lies this far below its change point's: the thread the partner stops ranks just below the
#: thread the change point stopped (module docstring)
PARTNER_BELOW = 0.5

_STACK_OR_G = {"rsp", "rbp", "r14"}
_NOT_ACCESSES = ("lea", "nop", "call", "jmp", "prefetch")
_ATOMIC = ("xchg", "cmpxchg", "xadd")


@dataclass
class Decision:
    """A choice the schedule made that changed who runs: a change point or a fairness demotion."""
    kind: str              # "change-point" or "fair-demotion"
    step: int              # the step count when it happened
    tid: int
    thread: str
    pc: int
    where: str             # FUNC+OFF (and file:line when known)
    priority: float        # the thread's new priority
    partner_of: int | None = None   # a partner's: the step of the change point it partners (module docstring)

    def to_json(self) -> dict:
        return {"kind": self.kind, "step": self.step, "tid": self.tid, "thread": self.thread,
                "pc": f"{self.pc:#x}", "where": self.where, "priority": self.priority, "partner_of": self.partner_of}

    def line(self) -> str:
        what = "stopped before" if self.kind == "change-point" else "demoted (fairness) at"
        partner = f" (the partner of step {self.partner_of})" if self.partner_of is not None else ""
        return (f"step {self.step}: thread {self.thread}({self.tid}) {what} {self.where} ({self.pc:#x}), "
                f"priority -> {self.priority:g}{partner}")


def is_user_function(name: str, package: str | None = None) -> bool:
    """A function of the program's own packages (gofront._is_user), or of `package` (a test binary's, whose
    `main` is the testmain `go test` generates: not the user's; a standard-library package's own tests count
    that package's functions)."""
    from ..front.gofront import _is_user
    if name.startswith("type:"):    # the compiler's type algorithms (type:.eq.T, cmd/compile reflectdata), named
        return False                # after any package's types: a Go 1.24 build has type:.eq.internal/godebugs.Info
    if package and package.startswith("std/"):       # GOROOT/src's module is `std`; its packages' symbols are bare
        package = package[len("std/"):]
    if package and package != "main":
        return name.startswith((package + ".", package + "_test.")) or (_is_user(name) and not name.startswith("main."))
    return _is_user(name)


def step_pcs(image, package: str | None = None) -> list[int]:
    """The PCs of the steps (module docstring) in the binary's own functions, in address order."""
    import capstone
    from capstone import x86_const as CX
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    out = []
    for start, code in image.functions():
        f = image.func_at(start)
        if f is None or not is_user_function(f[0], package):
            continue
        for insn in md.disasm(code, start):
            mn = insn.mnemonic
            if mn.startswith(_NOT_ACCESSES):
                continue
            locked = CX.X86_PREFIX_LOCK in insn.prefix
            mem = [op for op in insn.operands if op.type == CX.X86_OP_MEM]
            shared = any(op.mem.base == 0 or insn.reg_name(op.mem.base) not in _STACK_OR_G for op in mem)
            if locked or (mem and mn.startswith(_ATOMIC)) or shared:
                out.append(insn.address)
    return out


#: the step hook, in machine code (engine/nativehook.py): count the step; only at the step the schedule waits for
#: (state.next: its next change point) call Python, with the hook's own arguments (rdi = uc, rsi = address,
#: edx = size, rcx = the state)
_STEP_ASM = """
    mov rax, qword ptr [rcx]
    add rax, 1
    mov qword ptr [rcx], rax
    cmp rax, qword ptr [rcx + 8]
    jae slow
    ret
slow:
    jmp qword ptr [rcx + 16]
"""
_NEVER = (1 << 64) - 1


class _StepState(ctypes.Structure):
    _fields_ = [("steps", ctypes.c_uint64), ("next", ctypes.c_uint64), ("slow", ctypes.c_void_p)]


_SLOW = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)


class StepHooks:
    """One code hook per step PC on a process's engine (added before it runs: hooks reach only fresh
    translations). The hooks count steps in machine code, so a program spinning in its own code costs no Python
    call per step; at a change point's step they call the schedule attached at the time (`_on_step`)."""

    def __init__(self, proc, pcs: list[int]) -> None:
        from unicorn import UC_HOOK_CODE
        from unicorn.unicorn_py3.unicorn import uclib
        from ..engine import nativehook
        self.proc = proc
        self.state = _StepState(0, _NEVER, 0)
        self._slow = _SLOW(self._on_slow)                # kept alive with the hooks
        self.state.slow = ctypes.cast(self._slow, ctypes.c_void_p).value
        code = nativehook.code_address(_STEP_ASM)
        for pc in pcs:
            hh = ctypes.c_size_t()
            err = uclib.uc_hook_add(proc.uc._uch, ctypes.byref(hh), UC_HOOK_CODE, ctypes.c_void_p(code),
                                    ctypes.c_void_p(ctypes.addressof(self.state)), ctypes.c_uint64(pc),
                                    ctypes.c_uint64(pc))
            if err != 0:
                raise RuntimeError(f"uc_hook_add for the step at {pc:#x} failed: error {err}")
        proc.step_hooks = self

    def reset(self, next_step: int | None) -> None:
        self.state.steps, self.state.next = 0, _NEVER if next_step is None else next_step

    def _on_slow(self, uc, addr, size, user) -> None:
        s = self.proc.schedule
        if s is not None:
            s._on_step(addr)


def hook_steps(proc, pcs: list[int]) -> StepHooks:
    """Hook the step PCs on the process's engine (StepHooks)."""
    return StepHooks(proc, pcs)


class PctSchedule:
    """One PCT schedule's state; attach() it to a Process before the process runs."""

    def __init__(self, seed: int, depth: int, steps: int, fair_budget: int = FAIR_BUDGET) -> None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self.seed, self.depth, self.k = seed, depth, max(1, steps)
        self.rng = random.Random(f"pct:{seed}:{depth}")
        points = self.rng.sample(range(1, self.k + 1), min(depth - 1, self.k))
        #: step number -> the priority its thread takes there (the change point's label i)
        self.change = {step: i for i, step in enumerate(points, start=1)}
        #: each change point's partner (module docstring): r steps later (r uniform in 1..k - step), the thread
        #: running then drops just below the thread the change point stopped
        #: a partner's step -> its change point's
        self.partner_of: dict[int, int] = {}
        for i, step in enumerate(points, start=1):
            later = step + self.rng.randint(1, max(1, self.k - step))
            if later not in self.change:
                self.change[later] = i - PARTNER_BELOW
                self.partner_of[later] = step
        self.fair_budget = fair_budget
        self.prio: dict[int, float] = {}
        self.decisions: list[Decision] = []
        self._points = sorted(self.change)        # the change points' steps, in order
        self._ran: dict[int, int] = {}            # tid -> instructions run while others waited (fairness)
        #: tid -> ((its priority before, its demoted one), instructions the others have run since)
        self._demoted: dict[int, tuple[tuple[float, float], int]] = {}
        self.proc = None

    # --- priorities ------------------------------------------------------------------------------
    def priority(self, tid: int) -> float:
        """The thread's priority; a thread seen for the first time draws its random initial one."""
        p = self.prio.get(tid)
        if p is None:
            p = self.prio[tid] = self.depth + self.rng.random()
        return p

    def to_front(self, runq, held) -> None:
        """Move the highest-priority runnable, unheld thread of the run queue to its head (ties: queue order)."""
        from .threads import RUNNABLE
        best, bi = None, -1
        for i, t in enumerate(runq):
            if t.state != RUNNABLE or t.tid in held:
                continue
            pr = self.priority(t.tid)
            if best is None or pr > best:
                best, bi = pr, i
        if bi > 0:
            t = runq[bi]
            del runq[bi]
            runq.appendleft(t)

    def preempts(self, woken, running) -> bool:
        """A woken (or new) thread takes the CPU from the running one when its priority is higher."""
        return self.priority(woken.tid) > self.priority(running.tid)

    def wake_order(self, waiters: list) -> list:
        """FUTEX_WAKE releases the highest-priority waiters first (stable: FIFO among equals)."""
        return sorted(waiters, key=lambda t: -self.priority(t.tid))

    # --- the process's side ----------------------------------------------------------------------
    def attach(self, proc) -> None:
        """Steer `proc` (whose step PCs hook_steps has hooked) from its next slice on."""
        self.proc = proc
        proc.schedule = self
        proc.step_hooks.reset(self._points[0] if self._points else None)

    @property
    def steps(self) -> int:
        """Steps counted so far (a step a change point stopped the thread before counts when it runs)."""
        return self.proc.step_hooks.state.steps if self.proc is not None else 0

    def _on_step(self, addr: int) -> None:
        """The hooks counted step `state.steps`, a change point's, at `addr`, about to run."""
        p = self.proc
        st = p.step_hooks.state
        n = st.steps
        later = [k for k in self._points if k > n]
        st.next = later[0] if later else _NEVER
        t = p.cur
        if t is None or p.counter.stopping(addr):      # it does not run in this slice: count it when it does
            st.steps, st.next = n - 1, n
            return
        label = self.change[n]
        self.prio[t.tid] = label
        self.decisions.append(self._decision("change-point", t, addr, label, n, self.partner_of.get(n)))
        st.steps = n - 1                                # it has not run: counted when t executes it
        p.counter.stop_here(False)                      # the slice ends before the step's instruction

    def after_slice(self, t, n: int, contended: bool) -> None:
        """t ran n instructions; `contended`: another thread was runnable meanwhile. The fairness bound: t drops
        below every thread after FAIR_BUDGET such instructions, and gets its priority back once the others
        have run FAIR_TURN instructions (or it ran with no one else wanting the CPU)."""
        from .threads import RUNNABLE
        for tid in list(self._demoted):
            saved, others = self._demoted[tid]
            if tid == t.tid and not contended or tid != t.tid and others + n >= FAIR_TURN:
                del self._demoted[tid]
                if self.prio.get(tid) == saved[1]:       # unless a change point moved it since
                    self.prio[tid] = saved[0]
            elif tid != t.tid:
                self._demoted[tid] = (saved, others + n)
        if t.state != RUNNABLE:
            self._ran[t.tid] = 0
            return
        if not contended:
            return
        ran = self._ran.get(t.tid, 0) + n
        if ran >= self.fair_budget:
            ran = 0
            low = min(self.prio.values()) - 1
            self._demoted[t.tid] = ((self.prio[t.tid], low), 0)
            self.prio[t.tid] = low
            from unicorn import x86_const as X
            self.decisions.append(self._decision("fair-demotion", t, t.ctx.reg_read(X.UC_X86_REG_RIP), low))
        self._ran[t.tid] = ran

    def _decision(self, kind: str, t, pc: int, prio: float, step: int | None = None,
                  partner_of: int | None = None) -> Decision:
        return Decision(kind, self.steps if step is None else step, t.tid, t.name, pc, self.proc.image.describe(pc),
                        prio, partner_of)

    def summary(self) -> dict:
        return {"seed": self.seed, "depth": self.depth, "k": self.k, "steps": self.steps,
                "change_points": sorted(self.change), "decisions": [d.to_json() for d in self.decisions]}
