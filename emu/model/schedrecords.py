"""The scheduler's records of what it schedules: each goroutine's G (its stack, status, context and counts), each P
(its run queue, runnext, timers, sysmon's view of it) and each M (its P, current G, pending signal), beside their
runtime.g/p/m in emulated memory (gmp.py, `ref`). Plain data: sched.Scheduler and its parts (steal.py, sysmon.py,
schedtrap.py, gcsuspend.py) read and change them, and import them from here, not from the scheduler.
Mirrors the fields of runtime/runtime2.go's g, p and m that the model uses; left out: every other field.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..core.structref import StructRef


@dataclass
class GoSpec:
    name: str
    entry: str
    registers: dict = field(default_factory=dict)


@dataclass(eq=False)
class G:
    idx: int
    name: str
    addr: int
    slot: int
    stack_lo: int
    stack_hi: int
    status: str = "runnable"          # runnable | running | waiting | dead
    ctx: object = None
    cpu_insns: int = 0
    preempt_async: int = 0
    preempt_coop: int = 0
    wake_deadline: int | None = None  # ns; set when a timer readies the G
    runnable_since: int | None = 0    # ns; None while running or sleeping
    max_wait: int = 0
    xregs_saved: bool = False
    xreg_block: int = 0
    latencies: list = field(default_factory=list)
    ref: StructRef | None = field(default=None, repr=False)      # its runtime.g in emulated memory


@dataclass
class P:
    idx: int
    addr: int
    runq: deque = field(default_factory=deque)
    runnext: G | None = None
    schedtick: int = 0
    sysmon_tick: int = 0
    sysmon_when: int = 0
    timers: list = field(default_factory=list)   # [(deadline ns, G)]
    m: "M | None" = None
    ref: StructRef | None = field(default=None, repr=False)      # its runtime.p


@dataclass
class M:
    idx: int
    addr: int
    g0: int
    fs_base: int
    p: P
    curg: G | None = None
    signal_at: int | None = None      # instruction offset in the current round where SIGURG lands
    slice_start: int = 0
    acked_at: float = -1.0            # when doSigPreempt last acknowledged (m.preemptGen += 1)
    ref: StructRef | None = field(default=None, repr=False)      # its runtime.m
    tls: StructRef | None = field(default=None, repr=False)      # its TLS block (FS:-8 = current g)
