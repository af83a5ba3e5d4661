"""A whole-process snapshot: guest memory and CPU, and the kernel's state in Python.

Guest memory is snapshotted by hostpages.py (the host kernel's copy-on-write over memfds: a snapshot can be
returned to any number of times, and the run between costs no more than a run without one); the CPU is a
Unicorn context. The Python half is everything `Process` keeps about the process (threads with their saved
contexts, run queue, futex waiters, fds and their buffers, signal actions, the clock, counters, the watch's
records), deep-copied together so that shared objects (a Thread in both `threads` and `runq`) stay shared.
The process must be between slices (not inside `emu_start`). A snapshot does not undo regions mapped or
unmapped in the engine since it was taken: `restorable` says whether the address space has changed in the
engine, and when it has, the caller builds the process again instead.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

#: Process attributes that change as it runs (the rest is fixed at load: image, options, hooks)
STATE = ("threads", "runq", "held", "futex_waiters", "cur", "fds", "tmpfs", "rng", "clock", "insns", "idle_ns", "syscall_counts",
         "paths", "slices", "syscall_log", "sigactions", "rlimits", "exit_code", "stop_reason", "error", "starved",
         "cwd", "unmodelled", "net")
WATCH_STATE = ("signals", "preemptions", "violations", "_awaiting")


@dataclass
class Snapshot:
    memory: object          # hostpages.Snapshot
    cpu: object             # a UcContext saved in CPU mode
    state: dict             # deep copies of STATE, the address space's intervals and WATCH_STATE
    engine_changes: int = 0  # the address space's engine maps and unmaps when it was taken


def restorable(p, snap: Snapshot) -> bool:
    """No region was mapped or unmapped in the engine since `snap` (see the module docstring)."""
    return p.mem.engine_changes == snap.engine_changes


def take(p) -> Snapshot:
    mem = p.mem.host.snapshot()
    cpu = p.uc.context_save()
    state = {k: getattr(p, k) for k in STATE}
    state["mem"] = (p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.next_top)
    state["watch"] = {k: getattr(p.watch, k) for k in WATCH_STATE}
    return Snapshot(mem, cpu, copy.deepcopy(state), p.mem.engine_changes)


def restore(p, snap: Snapshot) -> None:
    p.mem.host.restore(snap.memory)
    p.uc.context_restore(snap.cpu)
    state = copy.deepcopy(snap.state)
    for k in STATE:
        setattr(p, k, state[k])
    p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.next_top = state["mem"]
    for k, v in state["watch"].items():
        setattr(p.watch, k, v)
    p.in_slice, p._stop_slice, p._after_stop = False, False, None
