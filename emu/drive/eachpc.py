"""`--each-pc`: every distinct PC that F's goroutine executes, decided once, at its first occurrence, in one pass.

Most boundaries of real code are the same PCs again (a loop body, a runtime helper called hundreds of times).
One chain from the snapshot stops G before each PC no point has decided yet (G's GoroutineClock stops at that
boundary, as at a chosen one) and the request is made as at any point; G then runs on, with the checks of a
full sweep at each injection (the runtime's decision against the oracle, the resume check) and at the end
(F's results, the program's ending). The PCs a chain's injections lead G to (the scheduler after a
preemption, another allocation path) are first occurrences too, and are decided in the same pass.
`max_points` caps the PCs decided, in the order G meets them.

How G is stopped, at block speed: a block hook in machine code (a gate, nativehook.py) costs a compare while G
is not the current goroutine and otherwise calls FirstOccurrences._on_block with the block about to run; that
walks the block's instructions (decoded once) and, at the first one not yet decided, sets G's stop and has
the instruction counter end the slice just before it (icount.stop_before: the engine stops before the block
and runs it cut short there). The gate opens at a slice in which G is counted (the clock's slice_start), after
a TLS g store (code hooks on the few instructions from each store to its block's end, which also decide those
instructions one by one: G's instructions start mid-block there) and at asyncPreempt's RETs; the callback
closes it when G is not current. Unicorn calls block hooks in the order added, so the gate runs after the
counter's and sees the counter's view of the block (and is not called when the counter stops before it: the
cut-short block's call, in the tail, decides then). F's return to its caller is not F's (gsweep._on_return
fires after the block hook). Measured (bench/bench_eachpc.py, main.ledger of tests/data/go/ledger with 27:
98,456 boundaries, 6,731 distinct PCs): 2.2 s of CPU against 6.9 s with the per-instruction Python hook this
replaces and 15.2 s for the full sweep (14.4 %; 22.4 s and 11.7 % before the point's own cost was cut), the same
points decided.

What it promises: every PC G executes in the uninterrupted run from the snapshot up to F's return (the reference
run's goroutine) is decided, once. The one pass decides most of them, but its injections can move G off the
reference's path (a scheduler decision, another goroutine running first: even a stop alone cuts a slice and
changes how G's thread and the others interleave), so the PCs of the reference run are also recorded, in a run
that stops and injects nothing (reference_pcs: the same gate); while some of them are not decided, another pass
from the snapshot runs with the PCs decided so far left out. Up to its first stop that pass is the reference
run, and the first PC of the reference it stops at is one not decided yet, so every pass decides at least one.
The report gives the reference's PCs and, apart, the PCs decided beyond them: those only injections led G to.

What it leaves out: the second and later occurrences of a PC (other register values, other stack depths,
other callers), which a full sweep also checks, and PCs that only other chains' injections lead to: the full
sweep's chains (2,000 points each) inject at every boundary of their window, and that density moves G to
other Ps, whose caches and pools take other paths (sync.Pool's slow path, an mcache refill). Measured
against full sweeps: main.ledger 6 all of its PCs, main.ledger 27 96.8 % (the rest mallocgc's refill in a
size class, sync.Pool.Put pushing to the shared chain), main.spin 100 %, main.spawn 94 %, main.mixed 97 %,
main.digest 66 % (of tests/data/go/kinds; digest's misses are all in its last chain, fmt.Sprintf's printer
taken from another P's pool).
"""
from __future__ import annotations

import ctypes
from collections import Counter

from unicorn import UC_HOOK_BLOCK, UC_HOOK_CODE
from unicorn import x86_const as X
from unicorn.unicorn_py3.unicorn import uclib

from ..engine.nativehook import add_hook
from ..engine.x86decode import decoder
from ..goruntime.gclock import g_store_sites
from ..linux.regbatch import read_reg
from .gsweep import _Listener

# rdi = uc, rsi = address, edx = size, rcx = user (System V AMD64 ABI). user -> _Gate: while G is not the
# current goroutine (open == 0) a block costs a compare; else the Python callback runs, with the same arguments.
_GATE_ASM = """
    cmp qword ptr [rcx], 0
    jne open
    ret
open:
    jmp qword ptr [rcx + 8]
"""


class _Gate(ctypes.Structure):
    _fields_ = [("open", ctypes.c_uint64), ("callback", ctypes.c_void_p)]


_BLOCK_CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)

#: the control transfers a tail (the instructions after a TLS g store, up to its block's end) stops at
_ENDS_BLOCK = ("j", "call", "ret", "syscall", "int", "ud2", "hlt")


class FirstOccurrences:
    """G's first occurrence of each PC, found at block speed (the module docstring): the gate's block hook, the
    tails' code hooks and asyncPreempt's RETs while one chain runs; `stop` is the boundary G is being stopped at."""

    def __init__(self, sw, clock, max_points: int, decided: set[int] | None = None):
        self.sw, self.clock, self.p, self.max_points = sw, clock, sw.p, max_points
        self.seen: set[int] = set()
        self.decided: set[int] = set(decided or ())    # (decided already: by an earlier chain)
        self.stop: int | None = None
        self.error: BaseException | None = None
        self._rets = set(self.p.watch.ret_addrs)        # asyncPreempt's RETs: the injection's window, not G's code
        self._stores = {a for a, _, _ in g_store_sites(self.p.image)}
        self._md = decoder()
        self._blocks: dict[tuple[int, int], tuple[int, ...]] = {}
        self._gate = _Gate(0, 0)
        self._cb = _BLOCK_CB(self._on_block)             # kept alive with the gate
        self._gate.callback = ctypes.cast(self._cb, ctypes.c_void_p).value
        self._probe = None

    # --- the run's side ---------------------------------------------------------------------------------
    def attach(self) -> None:
        p, uc = self.p, self.p.uc
        self._probe, p.probe = p.probe, self           # the clock's slice_start/_end, then the gate set from it
        self._hh = add_hook(uc, UC_HOOK_BLOCK, _GATE_ASM, ctypes.addressof(self._gate), "--each-pc's gate")
        self._code = [uc.hook_add(UC_HOOK_CODE, self._on_tail, None, a, b) for a, b in self._tails()]
        self._code += [uc.hook_add(UC_HOOK_CODE, self._on_ret, None, a, a) for a in self._rets]
        uc.ctl_flush_tb()                              # blocks translated before the hooks would not call them

    def detach(self) -> None:
        p, uc = self.p, self.p.uc
        uclib.uc_hook_del(uc._uch, self._hh)
        for h in self._code:
            uc.hook_del(h)
        p.probe = self._probe
        uc.ctl_flush_tb()                              # the run on to the exit at full speed again

    def slice_start(self, t):
        cap = self._probe.slice_start(t)
        self._gate.open = int(self.clock.tid is not None)
        return cap

    def slice_end(self, t, n: int) -> None:
        self._probe.slice_end(t, n)

    # --- inside a slice -----------------------------------------------------------------------------------
    def _is_g(self) -> bool:
        c = self.clock
        return self.sw.returned is None and c.counting()

    def _returning(self, addr: int) -> bool:
        """The block is F's return to its caller (its code hook, gsweep._on_return, fires after this hook): not F's."""
        sw = self.sw
        return addr == sw.ret_addr and sw._stack_hi() - read_reg(self.p.uc, X.UC_X86_REG_RSP) == sw.entry_depth - 8

    def _insns(self, addr: int, size: int) -> tuple[int, ...]:
        key = (addr, size)
        got = self._blocks.get(key)
        if got is None:
            code = bytes(self.p.uc.mem_read(addr, size))
            got = self._blocks[key] = tuple(a for a, _, _, _ in self._md.disasm_lite(code, addr))
        return got

    def _on_block(self, _uc, addr, size, _user) -> None:
        try:
            if not self._is_g():
                self._gate.open = 0                    # G's next stint opens it again (slice_start, a tail, a RET)
                return
            if self.stop is not None or self._returning(addr):
                return
            counter, seen, decided = self.p.counter, self.seen, self.decided
            for i, a in enumerate(self._insns(addr, size)):
                if a in self._rets or counter.stopping(a):
                    return
                if a in self._stores and i == 0 and self.clock.current_g() != self.clock.g:
                    continue                           # the store that makes G current (a slice begun at it)
                seen.add(a)
                if a not in decided and len(decided) < self.max_points:
                    decided.add(a)
                    self._stop(a)
                    counter.stop_before(a)
                    return
                if a in self._stores:
                    return                             # G may leave here: the rest is the tail's (_on_tail)
        except BaseException as e:                     # noqa: BLE001 - a ctypes callback cannot raise: stop, re-raise
            self.error = e
            self.p.uc.emu_stop()

    def _on_tail(self, uc, addr, size, _) -> None:
        """An instruction after a TLS g store, in the store's block: G's from here when the store made G current."""
        if not self._is_g():
            return
        self._gate.open = 1
        counter = self.p.counter
        if self.stop is not None or addr in self._rets or counter.stopping(addr):
            return
        self.seen.add(addr)
        if addr not in self.decided and len(self.decided) < self.max_points:
            self.decided.add(addr)
            self._stop(addr)
            counter.stop_here(False)                   # before the instruction runs

    def _on_ret(self, uc, addr, size, _) -> None:
        self._gate.open = 1                            # G's code follows the window's end (the block decides)

    def _stop(self, a: int) -> None:
        """G stops before `a`: its boundary, which slice_end sees G's count reach (ready, as at a chosen one)."""
        clock = self.clock
        self.stop = clock.stop_at = clock.boundary_at(a)

    def _tails(self) -> list[tuple[int, int]]:
        """(first, last) instruction after each TLS g store, up to the control transfer that ends its block."""
        out = []
        for s in sorted(self._stores):
            code = bytes(self.p.uc.mem_read(s, 64))
            insns = list(self._md.disasm_lite(code, s))[1:]
            last = None
            for a, _, mn, _ in insns:
                last = a
                if mn.startswith(_ENDS_BLOCK):
                    break
            if last is not None:
                out.append((insns[0][0], last))
        return out


def chain(sw, max_points: int, stats: dict, decided: set[int] | None = None) -> tuple:
    """One chain of RealSweep `sw` deciding each PC of G at its first occurrence (but those in `decided`);
    returns (listener, points reached, ending, the PCs G executed up to F's return, the PCs decided, `decided`'s
    included)."""
    clock = sw._arm()
    p = sw.p
    listener = _Listener(sw, clock)
    p.watch.listener = listener
    first = FirstOccurrences(sw, clock, max_points, decided)
    first.attach()
    reached = 0
    try:
        while True:
            first.stop = clock.stop_at = None
            p.run_until(lambda: sw.returned is not None or clock.ready is not None or first.error is not None)
            if first.error is not None:
                raise first.error
            if clock.ready is None:
                break                       # F returned (or the program ended)
            reached += 1
            listener.point = sw._deliver(clock, first.stop)
            listener.points.append(listener.point)
    finally:
        first.detach()
    ending = sw._finish(clock)
    _count(listener, stats)
    return listener, reached, ending, first.seen, first.decided


def _count(listener, stats: dict) -> None:
    for pt in listener.points:
        ev = pt.event
        verdict = "injected" if ev.outcome == "injected" else (ev.oracle or ev.outcome)
        stats.setdefault(pt.pc, Counter())[verdict] += 1


def reference_pcs(sw) -> set[int]:
    """Every PC G executes in the uninterrupted run from the snapshot, up to F's return: the pass's gate and tails
    in a run that decides none (no stop, no request, nothing injected: the reference run's slices exactly)."""
    clock = sw._arm()
    first = FirstOccurrences(sw, clock, 0)
    first.attach()
    try:
        sw.p.run_until(lambda: sw.returned is not None or clock.ready is not None or first.error is not None)
        if first.error is not None:
            raise first.error
    finally:
        first.detach()
        sw._disarm(clock)
    return first.seen
