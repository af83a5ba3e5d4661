"""A whole-process snapshot: guest memory and CPU in Unicorn, the kernel's state in Python.

Unicorn 2 can snapshot guest memory copy-on-write (UC_CTL_CONTEXT_MEMORY): a context saved in that mode
marks a level; pages written afterwards are copied, and restoring the context drops them (and every
level saved after it). Only the snapshot is taken in that mode: the run loop keeps saving and restoring
CPU-only contexts as it switches threads, which must never touch memory. A context saved in memory mode
stays valid after it has been restored, so one snapshot can be returned to any number of times.
The Python half is everything `Process` keeps about the process (threads with their saved contexts, run
queue, futex waiters, fds and their buffers, signal actions, the clock, counters, the watch's records),
deep-copied together so that shared objects (a Thread in both `threads` and `runq`) stay shared.
The process must be between slices (not inside `emu_start`). Guest memory read through `uc.mem_read`
is always current; nothing here hands out host views of guest memory (whole-program-linux.md §8).
Unicorn 2.1 loses memory when a snapshot is restored after pages were copied-on-write *and* a region was
mapped or unmapped since the snapshot (measured: the written region reads as unmapped afterwards, and the
process later aborts with "double free or corruption"). `restorable` says whether the address space has
changed in the engine since the snapshot; when it has, the caller rebuilds the process instead.
"""
from __future__ import annotations

import copy
import ctypes
from dataclasses import dataclass

from unicorn import unicorn_const as UCC

#: Process attributes that change as it runs (the rest is fixed at load: image, options, hooks)
STATE = ("threads", "runq", "held", "futex_waiters", "cur", "fds", "tmpfs", "rng", "clock", "insns", "idle_ns", "syscall_counts",
         "paths", "slices", "syscall_log", "sigactions", "rlimits", "exit_code", "stop_reason", "error", "starved",
         "cwd", "unmodelled", "net")
WATCH_STATE = ("signals", "preemptions", "violations", "_awaiting")


def _mode(uc, mode: int) -> None:
    uc.ctl(UCC.UC_CTL_CONTEXT_MODE, UCC.UC_CTL_IO_WRITE, ctypes.c_int(mode))


@dataclass
class Snapshot:
    memory: object          # a UcContext saved in memory mode
    cpu: object             # a UcContext saved in CPU mode
    state: dict             # deep copies of STATE, the address space's intervals and WATCH_STATE
    engine_changes: int = 0  # the address space's engine maps and unmaps when it was taken


def restorable(p, snap: Snapshot) -> bool:
    """No region was mapped or unmapped in the engine since `snap` (see the module docstring)."""
    return p.mem.engine_changes == snap.engine_changes


def take(p) -> Snapshot:
    uc = p.uc
    _mode(uc, UCC.UC_CTL_CONTEXT_MEMORY)
    try:
        mem = uc.context_save()
    finally:
        _mode(uc, UCC.UC_CTL_CONTEXT_CPU)
    cpu = uc.context_save()
    state = {k: getattr(p, k) for k in STATE}
    state["mem"] = (p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.next_top)
    state["watch"] = {k: getattr(p.watch, k) for k in WATCH_STATE}
    return Snapshot(mem, cpu, copy.deepcopy(state), p.mem.engine_changes)


def restore(p, snap: Snapshot) -> None:
    uc = p.uc
    _mode(uc, UCC.UC_CTL_CONTEXT_MEMORY)
    try:
        uc.context_restore(snap.memory)
    finally:
        _mode(uc, UCC.UC_CTL_CONTEXT_CPU)
    uc.context_restore(snap.cpu)
    state = copy.deepcopy(snap.state)
    for k in STATE:
        setattr(p, k, state[k])
    p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.next_top = state["mem"]
    for k, v in state["watch"].items():
        setattr(p.watch, k, v)
    p.in_slice, p._stop_slice, p._after_stop, p._fault = False, False, None, None
