"""The process address space: what mmap, munmap, mprotect and madvise do to it (mm/mmap.c, in brief).

Two interval sets: `vmas` is every range the process has asked for (PROT_NONE reservations
included), `mapped` the ranges that are also mapped in Unicorn, i.e. accessible. PROT_NONE
ranges stay unmapped in the engine, so touching them faults as on Linux (Go's nil checks rely
on page 0 and its reservations being inaccessible). Accessible ranges are readable; they are
writable only where the program asked for it (PROT_WRITE, an ELF segment with PF_W, the stack), so a
store to `mmap(PROT_READ)` memory, to memory `mprotect`ed read-only or to the binary's text and rodata
faults (SEGV_ACCERR, mm/memory.c via arch/x86/mm/fault.c access_error), and executable only where it
asked for that (PROT_EXEC, an ELF segment with PF_X, the vDSO), as with the NX bit: a jump into the heap
or a stack faults (SEGV_ACCERR). Each is the engine region's own permission (Unicorn checks a store
against its region even after a load filled the TLB entry), so stores to writable pages cost what they
did (bench/bench_exec.py). The engine cares too: Unicorn checks every write that takes its slow path
against the translated code of an executable page (notdirty_write in its cputlb.c), and a Go heap
holds no code. Left out: file mappings, MAP_SHARED semantics, MAP_GROWSDOWN, mremap, brk.

The run's cgroup (Cgroup, below): one memory limit and one task limit for everything the program makes preemu hold.

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

from unicorn import unicorn_const as UCC

from ..core.memmap import PAGE, page_down, page_up      # the x86-64 page, as the kernel uses it
from .hostpages import HostPages
from ..engine.pagetable import PageTable

MMAP_TOP = 0x7F00_0000_0000          # anonymous maps without a usable hint are placed below this
PROT_NONE, PROT_WRITE, PROT_EXEC = 0, 2, 4


def engine_perms(executable: bool, writable: bool = True) -> int:
    """The engine region's permissions for an accessible range (always readable, as on x86-64)."""
    return UCC.UC_PROT_READ | (UCC.UC_PROT_WRITE if writable else 0) | (UCC.UC_PROT_EXEC if executable else 0)


MAP_FIXED, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE = 0x10, 0x20, 0x100000


class Intervals:
    """A set of disjoint half-open [start, end) ranges, kept sorted and merged."""

    def __init__(self) -> None:
        self.r: list[tuple[int, int]] = []

    def add(self, a: int, b: int) -> None:
        out, placed = [], False
        for s, e in self.r:
            if e < a or s > b:
                if s > b and not placed:
                    out.append((a, b))
                    placed = True
                out.append((s, e))
            else:
                a, b = min(a, s), max(b, e)
        if not placed:
            out.append((a, b))
        self.r = sorted(out)

    def remove(self, a: int, b: int) -> None:
        out = []
        for s, e in self.r:
            if e <= a or s >= b:
                out.append((s, e))
                continue
            if s < a:
                out.append((s, a))
            if e > b:
                out.append((b, e))
        self.r = out

    def overlaps(self, a: int, b: int) -> list[tuple[int, int]]:
        """The parts of [a, b) inside the set."""
        return [(max(s, a), min(e, b)) for s, e in self.r if s < b and e > a]

    def gaps(self, a: int, b: int) -> list[tuple[int, int]]:
        """The parts of [a, b) outside the set."""
        out, cur = [], a
        for s, e in self.overlaps(a, b):
            if s > cur:
                out.append((cur, s))
            cur = e
        if cur < b:
            out.append((cur, b))
        return out

    def contains(self, a: int, b: int) -> bool:
        return not self.gaps(a, b)


class AddressSpace:
    """Linux's view (vmas) and the engine's view (mapped) of one process. `limit`: the most bytes that may be
    accessible at once (--max-memory: a memory cgroup's limit, counted on what the program mapped readable
    rather than on the pages it touched); an mmap or mprotect that would pass it fails with ENOMEM, as
    Linux's overcommit and rlimit checks fail a mapping (mm/mmap.c), and Go then ends with its own
    "fatal error: out of memory". PROT_NONE reservations are not counted (Go reserves arenas it never maps).
    The limit is the run's cgroup's (memory.Cgroup), shared with the other processes and the run's other charges;
    `charged` is what this address space has charged to it ("anon"), released when the process ends."""

    def __init__(self, uc, limit: int | None = None, cgroup: Cgroup | None = None) -> None:
        self.uc = uc
        self.cgroup = cgroup if cgroup is not None else Cgroup(limit, None)
        self.charged = 0
        self.vmas = Intervals()
        self.mapped = Intervals()
        self.executable = Intervals()     # the part of `mapped` the engine may execute
        self.writable = Intervals()       # the part of `mapped` the engine may write
        self.host = HostPages(uc)         # the host pages behind `mapped` (and its snapshots)
        self.pages = PageTable(uc)        # what the engine's TLB may do with them
        self.next_top = MMAP_TOP
        #: engine maps and unmaps so far: a snapshot taken before one of them cannot be restored (snapshot.py)
        self.engine_changes = 0

    # --- the engine side ---------------------------------------------------------------
    def _make_accessible(self, a: int, b: int, zero_existing: bool, executable: bool = False,
                         writable: bool = True) -> None:
        for s, e in self.mapped.overlaps(a, b):
            if zero_existing:
                self.uc.mem_write(s, bytes(e - s))
            self._set_perms(s, e, executable, writable)
        for s, e in self.mapped.gaps(a, b):
            self._charge(e - s)
            self.host.map(s, e - s, engine_perms(executable, writable))
            self.engine_changes += 1
            if executable:
                self.executable.add(s, e)
            if writable:
                self.writable.add(s, e)
        self.mapped.add(a, b)

    def _set_perms(self, a: int, b: int, executable: bool, writable: bool) -> None:
        """Give the mapped range [a, b) these permissions, changing only the parts whose permissions differ."""
        cuts = {a, b}
        for iv in (self.executable, self.writable):
            for s, e in iv.overlaps(a, b):
                cuts.update((s, e))
        edges = sorted(cuts)
        for s, e in zip(edges, edges[1:]):
            if (self.executable.contains(s, e), self.writable.contains(s, e)) == (executable, writable):
                continue
            self.uc.mem_protect(s, e - s, engine_perms(executable, writable))
            self.engine_changes += 1          # the engine splits its regions to do it
            for iv, on in ((self.executable, executable), (self.writable, writable)):
                (iv.add if on else iv.remove)(s, e)

    def is_writable(self, addr: int) -> bool:
        """Whether the page of `addr` is mapped writable."""
        return self.writable.contains(page_down(addr), page_down(addr) + PAGE)

    def _make_inaccessible(self, a: int, b: int) -> None:
        for s, e in self.mapped.overlaps(a, b):
            self._charge(-(e - s))
            self.uc.mem_unmap(s, e - s)
            self.host.release(s, e)
            self.engine_changes += 1
        self.mapped.remove(a, b)
        self.executable.remove(a, b)
        self.writable.remove(a, b)

    def map_fixed(self, addr: int, size: int, accessible: bool = True, executable: bool = False,
                  writable: bool = True) -> None:
        """Map [addr, addr+size) as the loader does (segments, the initial stack, the vDSO)."""
        a, b = page_down(addr), page_up(addr + size)
        self.vmas.add(a, b)
        if accessible:
            self._make_accessible(a, b, zero_existing=False, executable=executable, writable=writable)

    # --- the syscalls --------------------------------------------------------------------
    def _find_free(self, size: int) -> int:
        top = self.next_top
        while True:
            a = top - size
            if not self.vmas.overlaps(a, top):
                self.next_top = a
                return a
            top = min(s for s, e in self.vmas.overlaps(a, top))

    def mmap(self, addr: int, length: int, prot: int, flags: int) -> int:
        """Return the mapped address, or a negative errno."""
        if length == 0:
            return -22
        size = page_up(length)
        if flags & MAP_FIXED:
            if addr & (PAGE - 1):
                return -22
            a = addr
        elif addr and page_down(addr) + size <= MMAP_TOP and not self.vmas.overlaps(page_down(addr),
                                                                                   page_down(addr) + size):
            a = page_down(addr)           # a free hint is honoured, as Linux does
        elif flags & MAP_FIXED_NOREPLACE:
            return -17                    # EEXIST
        else:
            a = self._find_free(size)
        if prot != PROT_NONE and self._over_limit(a, a + size):
            return -12                    # ENOMEM
        self.vmas.add(a, a + size)
        if prot == PROT_NONE:
            self._make_inaccessible(a, a + size)
        else:
            self._make_accessible(a, a + size, zero_existing=True,   # a fresh anonymous map reads as zeros
                                  executable=bool(prot & PROT_EXEC), writable=bool(prot & PROT_WRITE))
        return a

    def munmap(self, addr: int, length: int) -> int:
        if addr & (PAGE - 1) or length == 0:
            return -22
        a, b = addr, page_up(addr + length)
        self._make_inaccessible(a, b)
        self.vmas.remove(a, b)
        return 0

    def mprotect(self, addr: int, length: int, prot: int) -> int:
        if addr & (PAGE - 1):
            return -22
        a, b = addr, page_up(addr + length)
        if not self.vmas.contains(a, b):
            return -12                    # ENOMEM: part of the range is not mapped
        if prot != PROT_NONE and self._over_limit(a, b):
            return -12                    # ENOMEM: past --max-memory
        if prot == PROT_NONE:
            self._make_inaccessible(a, b)
        else:
            self._make_accessible(a, b, zero_existing=False, executable=bool(prot & PROT_EXEC),
                                  writable=bool(prot & PROT_WRITE))
        return 0

    def madvise(self, addr: int, length: int, advice: int) -> int:
        MADV_DONTNEED = 4
        if addr & (PAGE - 1):
            return -22
        if advice == MADV_DONTNEED:       # private anonymous pages read back as zeros
            for s, e in self.mapped.overlaps(addr, page_up(addr + length)):
                self.uc.mem_write(s, bytes(e - s))
        return 0

    def fork_into(self, child: "AddressSpace") -> None:
        """fork's copy (kernel/fork.c dup_mmap, copy-on-write there, copied here): the child's engine gets the
        same ranges with the same permissions and the pages touched so far (untouched ones read as zeros)."""
        for name in ("vmas", "mapped", "executable", "writable"):
            getattr(child, name).r = list(getattr(self, name).r)
        child.next_top = self.next_top
        for blk in self.host.blocks:
            for s, e in blk.live:
                cuts = sorted({s, e} | {x for iv in (self.executable, self.writable)
                                        for r in iv.overlaps(s, e) for x in r})
                for a, b in zip(cuts, cuts[1:]):
                    child.host.map(a, b - a, engine_perms(self.executable.contains(a, b), self.writable.contains(a, b)))
        for guest, data in self.host.resident():
            child.uc.mem_write(guest, bytes(data))
        child.recharge()

    def committed_bytes(self) -> int:
        return sum(e - s for s, e in self.mapped.r)

    def _charge(self, n: int) -> None:
        self.charged += n
        (self.cgroup.charge if n > 0 else self.cgroup.uncharge)("anon", abs(n))

    def recharge(self) -> None:
        """Charge what is accessible now (after fork's copy, or a snapshot's restore set the ranges directly)."""
        self._charge(self.committed_bytes() - self.charged)

    def release(self) -> None:
        """The process ended (exit_mmap): its pages leave the cgroup."""
        self._charge(-self.charged)

    def _over_limit(self, a: int, b: int) -> bool:
        """Whether making [a, b) accessible would pass the cgroup's limit (what is accessible already is not
        counted again)."""
        if self.cgroup.can_charge(sum(e - s for s, e in self.mapped.gaps(a, b))):
            return False
        self.cgroup.failcnt += 1
        return True


# --- the run's cgroup: memory.max and pids.max (see the module docstring) -----------------------------------
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
