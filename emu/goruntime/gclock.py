"""The instructions one goroutine executes, counted exactly in a whole emulated process, and a stop at any of them.

A goroutine G runs on whichever thread's TLS slot (FS:-8, runtime/go_tls.h) holds it. That slot changes
only at the runtime's few `MOVQ reg, g(CX)` stores (gogo, mcall, systemstack, morestack, setg, clone,
asmcgocall, rt0_go: found by scanning the text), so a code hook on each store, plus the thread's exact
instruction count (icount), tells which instructions are G's. Not G's, though the slot holds G: a signal
handler's instructions before sigtrampgo's setg (the thread has a signal frame pending), and the
asyncPreempt window of an injection into G (from the rt_sigreturn that injected to asyncPreempt's RET),
which the sweep adds and an uninterrupted run does not have.

`stop_at = k` makes the process stop exactly when G has executed k instructions: the counter's limit is
lowered whenever G becomes current, and `ready` names the thread on which G then sits, between slices.
"""
from __future__ import annotations

import re
from functools import lru_cache

import capstone
from ..engine.native import hook_g_store
from unicorn import x86_const as X

from ..linux.threads import RUNNABLE
from ..linux.regbatch import RegBatch, read_reg

_TLS_G_STORE = re.compile(rb"\x64[\x48\x4c]\x89[\x04\x0c\x14\x1c\x24\x2c\x34\x3c]\x25\xf8\xff\xff\xff|"
                          rb"\x64\x48\xc7\x04\x25\xf8\xff\xff\xff")


_RET_STATE = RegBatch([X.UC_X86_REG_RIP, X.UC_X86_REG_RSP, X.UC_X86_REG_FS_BASE])


@lru_cache(maxsize=8)
def _g_store_sites_cached(path: str, segs: tuple) -> tuple:
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    out = []
    for vaddr, data in segs:
        for m in _TLS_G_STORE.finditer(data):
            i = next(md.disasm(data[m.start():m.start() + 16], vaddr + m.start()), None)
            if i is None or not i.op_str.startswith("qword ptr fs:[0xfffffffffffffff8], "):
                continue
            src = i.op_str.split(", ", 1)[1]
            reg = getattr(X, f"UC_X86_REG_{src.upper()}", None)
            out.append((i.address, reg, None if reg is not None else int(src, 0)))
    return tuple(out)


def g_store_sites(image) -> list[tuple[int, int | None, int | None]]:
    """Every instruction of the binary that writes the TLS g slot: (address, source register id or None,
    immediate or None)."""
    segs = tuple((s.vaddr, bytes(s.data)) for s in image.segments if s.flags & 1)     # PF_X
    return list(_g_store_sites_cached(image.path, segs))


class GoroutineClock:
    """Counts goroutine `g`'s instructions in process `p` (the process's probe while it exists)."""

    def __init__(self, p, g: int):
        self.p, self.g = p, g
        self.count = 0              # G's instructions so far
        self.tid: int | None = None  # the thread G's instructions are being counted on, inside a slice
        self.mark = 0               # the thread's executed count when counting began there
        self.stop_at: int | None = None
        self.held = False           # inside an injected asyncPreempt window of G
        self.ready: int | None = None
        self._counter = p.counter
        self._rearm: dict[int, int] = {}  # thread -> the store PC where G's counting restarts in its next slice
        sites = g_store_sites(p.image)
        if not sites:
            from ..core.errors import EmuError
            raise EmuError(f"{p.image.path}: no store to the TLS g slot found: not a linux/amd64 Go binary?")
        self._src = {a: (reg, imm) for a, reg, imm in sites}
        # with the compiled module, the stores _on_store would ignore return in C (native.hook_g_store)
        self._hooks = [hook_g_store(p.uc, self._on_store, a, reg, imm, self, p) for a, (reg, imm) in self._src.items()]
        for a in self._src:                 # blocks translated before the hook exist do not call it
            p.uc.ctl_remove_cache(a, a + 1)
        p.probe = self

    def close(self) -> None:
        for h in self._hooks:
            self.p.uc.hook_del(h)
        self._hooks = []
        if self.p.probe is self:
            self.p.probe = None

    def current_g(self) -> int:
        return self.p.read_u64(self.p.fs_base() - 8)

    def _cap(self) -> int | None:
        return None if self.stop_at is None else max(0, self.stop_at - self.count)

    # --- the process's probe --------------------------------------------------------------------------
    def slice_start(self, t) -> int | None:
        self.tid, self.ready = None, None
        rearm = self._rearm.pop(t.tid, None)
        if rearm is not None and not self.held and not t.frames:
            pc = read_reg(self.p.uc, X.UC_X86_REG_RIP)
            if pc == rearm:             # the store that makes G current runs first: G's count starts after it
                self.tid, self.mark = t.tid, 1
                cap = self._cap()
                return None if cap is None else 1 + cap
        if self.held or t.frames or self.current_g() != self.g:
            return None
        self.tid, self.mark = t.tid, 0
        return self._cap()

    def slice_end(self, t, n: int) -> None:
        if self.tid != t.tid:
            return
        self.count += n - self.mark
        self.tid = None
        if self.count == self.stop_at and t.state == RUNNABLE and not t.frames and self.current_g() == self.g:
            self.ready = t.tid

    # --- inside a slice ---------------------------------------------------------------------------------
    def counting(self) -> bool:
        """Inside a slice: the thread running is the one G's instructions are being counted on, outside an
        injection's asyncPreempt window (the instruction at hand is G's own)."""
        return self.tid is not None and self.tid == self.p.cur.tid and not self.held

    def boundary_at(self, addr: int) -> int:
        """Inside a code hook on G's thread, for the instruction at `addr`: G's instructions before it (the
        boundary G stands at there)."""
        return self.count + self._counter.at(addr) - 1 - self.mark

    def _on_store(self, uc, addr, size, _) -> None:
        counter = self._counter
        if counter.stopping(addr):
            return                      # the engine stops before this store; it runs (and is seen) next slice
        reg, imm = self._src[addr]
        new = imm if reg is None else read_reg(uc, reg)
        t = self.p.cur
        if self.tid == t.tid:
            if new != self.g:           # the store is G's last instruction on this thread for now
                self.count += counter.at(addr) - self.mark
                self.tid = None
                counter.restore_limit()     # the stop set for G's stint no longer applies to this thread
        elif new == self.g and not self.held and not t.frames:
            executed = counter.at(addr)             # G's instructions start after this store
            cap = self._cap()
            if cap is not None and executed + cap < counter.block_end():
                # the stop falls inside this block, where the counter cannot stop: end the slice before the
                # store, and count G from just after it when the slice after begins there (slice_start)
                self._rearm[t.tid] = addr
                counter.stop_here(False)
                return
            self._begin(t, executed)

    def _begin(self, t, executed: int) -> None:
        self.tid, self.mark = t.tid, executed
        cap = self._cap()
        if cap is not None:
            self._counter.lower_limit(executed + cap)

    def hold(self) -> None:
        """An injection into G was made (rt_sigreturn into asyncPreempt): its window is not G's own code."""
        self.held = True

    def release(self, ret_to: int | None = None) -> None:
        """asyncPreempt's RET is about to execute on the current thread (a code hook: it is counted already);
        `ret_to`: where it returns, when the caller has read it."""
        self.held = False
        t, p = self.p.cur, self.p
        rip, rsp, fs = _RET_STATE(p.uc)     # one batched read
        if p.read_u64(fs - 8) == self.g and not t.frames:     # RET ends its block: the limit falls after it
            c = self._counter
            self._begin(t, c.at(rip) if c.settled is None else c.settled)     # c.executed, RIP read already
            if self._cap() == 1:            # the next stop is right after the return target's instruction
                p.single_step(p.read_u64(rsp) if ret_to is None else ret_to)
