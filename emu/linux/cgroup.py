"""The run's cgroup: one memory limit and one task limit for everything the program makes preemu hold.

Mirrors two cgroup v2 controllers, in brief. mm/memcontrol.c (memory.max): every charge of the group's memory
is checked against one limit (try_charge_memcg), whatever its kind: a process's accessible pages (memory.py,
counted when mapped readable rather than when touched), /tmp's file contents (tmpfs.py: shmem is charged to the
group that writes it, mm/shmem.c shmem_charge), the output preemu keeps for its report (fds.Output), and a
fixed cost for each process and thread (the engine, its translated code and the model's own state: the kernel's
kmem charges for task structs and stacks, kernel/fork.c memcg_charge_kernel_stack). Past the limit the program
gets what Linux gives at that place: mmap and mprotect ENOMEM (mm/mmap.c), a tmpfs write ENOSPC (a tmpfs full
to its size=, mm/shmem.c shmem_inode_acct_blocks), clone ENOMEM (copy_process's charge failing), never the
host's memory. kernel/cgroup/pids.c (pids.max): processes and threads are tasks; clone past the limit fails with
EAGAIN (pids_can_fork), as a fork bomb meets it natively.

One Cgroup is shared by every process of a run (proctable.py passes it on at fork and execve) and never copied:
a snapshot (snapshot.py) keeps pointing at it and Process.recharge recounts it from what the snapshot restored.
"""
from __future__ import annotations

import collections

#: --max-memory's default: what a run may make preemu hold (a third of this machine's 24 GiB)
DEFAULT_MAX_MEMORY = 8 << 30
#: --max-pids's default: the tasks (processes and threads) a run may have at once; a Go program starts with 4-5
#: threads, so about 50 processes (a small container's pids.max; Linux's own default is the machine's threads-max)
DEFAULT_MAX_PIDS = 256
#: what one more emulated process costs preemu beyond its pages: its engine, translation cache and model state
#: (measured: 11 MiB of RSS for each finished Go process kept, 26 MiB for a running one, its touched pages included)
PROCESS_COST = 20 << 20
#: what one more thread costs beyond its stack in guest memory: its saved context, queues and counters
THREAD_COST = 64 << 10


class Cgroup:
    """The limits (None: unlimited) and what is charged against them now, by kind."""

    def __init__(self, max_memory: int | None = DEFAULT_MAX_MEMORY, max_pids: int | None = DEFAULT_MAX_PIDS) -> None:
        self.max_memory, self.max_pids = max_memory, max_pids
        self.usage: collections.Counter = collections.Counter()   # kind -> bytes: anon, shmem, output, kernel
        self.peak = 0
        self.pids = 0
        self.failcnt = 0            # charges refused (memory.events' max), for the report

    def __deepcopy__(self, memo) -> "Cgroup":
        return self                 # shared by the whole run, never part of a copy (a snapshot's state)

    def total(self) -> int:
        return sum(self.usage.values())

    def can_charge(self, n: int) -> bool:
        return self.max_memory is None or n <= 0 or self.total() + n <= self.max_memory

    def room(self) -> int | None:
        """Bytes that may still be charged (None: no limit)."""
        return None if self.max_memory is None else max(0, self.max_memory - self.total())

    def try_charge(self, kind: str, n: int) -> bool:
        if not self.can_charge(n):
            self.failcnt += 1
            return False
        self.charge(kind, n)
        return True

    def charge(self, kind: str, n: int) -> None:
        """A charge that cannot fail (the program's first image, what a snapshot restored)."""
        self.usage[kind] += n
        self.peak = max(self.peak, self.total())

    def uncharge(self, kind: str, n: int) -> None:
        self.usage[kind] = max(0, self.usage[kind] - n)

    def set_usage(self, kind: str, n: int) -> None:
        self.usage[kind] = n
        self.peak = max(self.peak, self.total())

    # --- tasks -------------------------------------------------------------------------------------------
    def try_task(self, cost: int) -> int:
        """One more task costing `cost` bytes: 0, or the errno clone returns (EAGAIN past pids.max, ENOMEM past
        memory.max)."""
        if self.max_pids is not None and self.pids >= self.max_pids:
            self.failcnt += 1
            return 11                # EAGAIN (kernel/cgroup/pids.c pids_can_fork)
        if not self.try_charge("kernel", cost):
            return 12                # ENOMEM
        self.pids += 1
        return 0

    def task(self, cost: int) -> None:
        """A task that exists whatever the limits (the program's first thread)."""
        self.pids += 1
        self.charge("kernel", cost)

    def task_gone(self, cost: int) -> None:
        self.pids = max(0, self.pids - 1)
        self.uncharge("kernel", cost)

    def to_json(self) -> dict:
        return {"max_memory": self.max_memory, "max_pids": self.max_pids, "peak_bytes": self.peak,
                "charged": dict(self.usage), "tasks": self.pids, "refused": self.failcnt}
