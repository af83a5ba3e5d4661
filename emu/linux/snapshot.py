"""A whole-process snapshot: guest memory and CPU, and the kernel's state in Python.

Guest memory is snapshotted by hostpages.py (the host kernel's copy-on-write over memfds: a snapshot can be
returned to any number of times, and the run between costs no more than a run without one); the CPU is a
Unicorn context. The Python half is everything `Process` keeps about the process (threads with their saved
contexts, run queue, futex waiters, fds and their buffers, signal actions, the clock, counters, the watch's
records), deep-copied together so that shared objects (a Thread in both `threads` and `runq`) stay shared.
The process must be between slices (not inside `emu_start`). Regions the engine mapped, unmapped or
re-protected since the snapshot are put back as they were: the engine's regions are compared with the
snapshot's (`uc.mem_regions`), every region that differs is unmapped, and every missing one is mapped again
onto the host memory of the block that held it (the snapshot keeps those blocks, so their memory is still
there; its contents come back with the memory snapshot). `restorable` is false only when a missing region
lies outside every block (nothing preemu maps that way changes after start; the caller then builds the
process again).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

#: Process attributes that change as it runs (the rest is fixed at load: image, options, hooks)
STATE = ("threads", "runq", "cpus", "held", "futex_waiters", "cur", "fds", "tmpfs", "rng", "clock", "insns", "idle_ns", "syscall_counts",
         "paths", "slices", "syscall_log", "sigactions", "rlimits", "prctl", "timers", "exit_code", "stop_reason", "error", "starved",
         "cwd", "unmodelled", "net")
WATCH_STATE = ("signals", "preemptions", "violations", "_awaiting")


@dataclass
class Snapshot:
    memory: object          # hostpages.Snapshot
    cpu: object             # a UcContext saved in CPU mode
    state: dict             # deep copies of STATE, the address space's intervals and WATCH_STATE
    engine_changes: int = 0  # the address space's engine maps and unmaps when it was taken
    regions: tuple = ()      # the engine's regions then: (begin, last byte, perms)
    layout: list = None      # the host blocks then (hostpages.HostPages.layout)


def _host_of(layout: list, begin: int, last: int) -> int | None:
    """The host address behind guest [begin, last] in a block layout (None: no block maps it)."""
    for blk, live in layout:
        if any(s <= begin and last < e for s, e in live):
            return blk.host + begin - blk.guest
    return None


def _engine_plan(p, snap: Snapshot):
    """(regions to unmap, (region, host address) to map again) that bring the engine back to `snap`'s
    regions, or None when a missing region has no block to map it onto. A region counts as the same only
    with the same bounds, permissions and host memory (a range unmapped and mapped again has new memory)."""
    if p.mem.engine_changes == snap.engine_changes:
        return [], []
    now_layout = p.mem.host.layout()
    want = {r: _host_of(snap.layout, r[0], r[1]) for r in snap.regions}
    drop, kept = [], set()
    for r in p.uc.mem_regions():
        if r in want and want[r] == _host_of(now_layout, r[0], r[1]):
            kept.add(r)
        else:
            drop.append(r)
    again = []
    for r, host in want.items():
        if r in kept:
            continue
        if host is None:
            return None
        again.append((r, host))
    return drop, again


def restorable(p, snap: Snapshot) -> bool:
    """Can the engine's regions be put back as they were at `snap` (see the module docstring)?"""
    return _engine_plan(p, snap) is not None


def take(p) -> Snapshot:
    if getattr(p, "kernel", None) is not None and p.kernel.busy():
        from ..core.errors import EmuError
        raise EmuError("a snapshot of a process whose children still run is not modelled (proctable.py): the "
                       "snapshot would hold this process alone")
    mem = p.mem.host.snapshot()
    cpu = p.uc.context_save()
    state = {k: getattr(p, k) for k in STATE}
    state["mem"] = (p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.writable.r, p.mem.next_top)
    state["watch"] = {k: getattr(p.watch, k) for k in WATCH_STATE}
    return Snapshot(mem, cpu, copy.deepcopy(state), p.mem.engine_changes, tuple(p.uc.mem_regions()),
                    p.mem.host.layout())


def restore(p, snap: Snapshot) -> None:
    plan = _engine_plan(p, snap)
    if plan is None:
        raise ValueError("the snapshot's regions cannot be mapped again (check restorable first)")
    drop, again = plan
    for b, last, _ in drop:
        p.uc.mem_unmap(b, last + 1 - b)
    for (b, last, perms), host in again:
        p.uc.mem_map_ptr(b, last + 1 - b, perms, host)
    if p.mem.engine_changes != snap.engine_changes:
        p.mem.host.set_layout(snap.layout)
        p.mem.engine_changes = snap.engine_changes
    p.mem.host.restore(snap.memory)
    p.uc.context_restore(snap.cpu)
    state = copy.deepcopy(snap.state)
    for k in STATE:
        setattr(p, k, state[k])
    p.mem.vmas.r, p.mem.mapped.r, p.mem.executable.r, p.mem.writable.r, p.mem.next_top = state["mem"]
    if getattr(p, "kernel", None) is None and hasattr(p, "recharge"):
        p.recharge()                      # the cgroup counts what was restored (memory.Cgroup)
    for k, v in state["watch"].items():
        setattr(p.watch, k, v)
    p.in_slice, p._stop_slice, p._after_stop = False, False, None
