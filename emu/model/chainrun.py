"""The Machine's chained runs: a run and the register work around it in one call into the engine, for the
sweep's hot loop (engine/callchain.py says why: a ctypes call costs more than most Unicorn calls).

A chained run may load RSP and FS_BASE first, then runs `count=` exactly as Machine.run does (same stop
reasons, same Faults), then reads what the caller needs next: the PC, the register dump, or -- for a
sweep point -- the dump, the CPU context (`point_context`) and the clobber table asyncPreempt2 loads
(rtcode.py: the dump XOR the sweep's mask, computed by native code instead of a Python big integer).

FS_BASE: the asyncPreempt2 model may move the goroutine to another M (World.bind loads that M's TLS base).
When Python runs that trap between two chained runs (async_preempt2_here), the load is deferred to the
next run, which makes it in the same call; Machine.run loads a deferred value itself first.
Mirrors no Go source. Mixed into machine.Machine, whose engine and buffers it uses.
"""
from __future__ import annotations

import ctypes

import unicorn.x86_const as X
from unicorn.unicorn_py3.unicorn import uclib as _uclib

from ..core import dump, memmap
from ..engine.callchain import CallChain, runner, xor_words_address
from ..engine.capi import address_of

#: what a chained run does after the run: read the PC; dump the registers; a sweep point's dump, context
#: save and clobber table
TAILS = ("pc", "dump", "point")


class ChainedRunsMixin:
    """run_pc / run_dump: Machine.run plus the calls around it, one ctypes call in all."""

    def _init_chained_runs(self) -> None:
        self._chains: dict[tuple[bool, bool, str], tuple[CallChain, int, int]] = {}
        self.point_context = None        # run_dump(point=True) saves the context here (prepare_chained_runs)
        self._rsp_in, self._fs_in = ctypes.c_uint64(), ctypes.c_uint64()
        self._clobber_mask = ctypes.create_string_buffer(dump.SIZE)
        self._fs_deferred = False        # inside async_preempt2_here: set_fs_base defers to the next run
        self._fs_pending: int | None = None

    def prepare_chained_runs(self) -> None:
        """Allocate point_context (the chains themselves are built at their first use)."""
        if self.point_context is None:
            self.point_context = self.uc.context_save()

    def set_clobber_mask(self, mask: bytes) -> None:
        """The XOR mask (a dump record) a point's run applies to the dump to fill the clobber table."""
        ctypes.memmove(self._clobber_mask, mask, dump.SIZE)

    def flush_fs_base(self) -> None:
        """Load a deferred FS_BASE now."""
        value, self._fs_pending = self._fs_pending, None
        if value is not None:
            self.set_fs_base(value)

    def _build_chain(self, rsp: bool, fs: bool, tail: str) -> tuple[CallChain, int, int]:
        h = self._h.value
        start, batch, write, read, save = map(address_of, (
            _uclib.uc_emu_start, _uclib.uc_reg_read_batch, _uclib.uc_reg_write, _uclib.uc_reg_read,
            _uclib.uc_context_save))
        calls = []
        if fs:
            calls.append((write, [h, X.UC_X86_REG_FS_BASE, ctypes.addressof(self._fs_in)]))
        if rsp:
            calls.append((write, [h, X.UC_X86_REG_RSP, ctypes.addressof(self._rsp_in)]))
        at = len(calls)
        calls.append((start, [h, 0, 0, 0, 0]))        # begin and count are patched per run
        if tail == "pc":
            calls.append((read, [h, X.UC_X86_REG_RIP, ctypes.addressof(self._u64)]))
        else:
            calls.append((batch, [h, ctypes.addressof(self._dump_ids), ctypes.addressof(self._dump_ptrs),
                                  self._dump_n]))
        if tail == "point":
            self.prepare_chained_runs()
            buf, off = self._host_slot(memmap.CLOBBER_TABLE, dump.SIZE)
            table = ctypes.addressof(ctypes.c_char.from_buffer(buf)) + off
            calls.append((save, [h, address_of(self.point_context.context)]))
            calls.append((xor_words_address(), [table, ctypes.addressof(self._dump_buf),
                                                ctypes.addressof(self._clobber_mask), dump.SIZE // 8]))
        chain = CallChain(calls)
        return chain, CallChain.slot(at, 1), CallChain.slot(at, 4)

    def _run_chained(self, tail: str, begin: int, count: int, rsp: int | None) -> str:
        fs = self._fs_pending
        key = (rsp is not None, fs is not None, tail)
        got = self._chains.get(key)
        if got is None:
            got = self._chains[key] = self._build_chain(*key)
        chain, b, c = got
        w = chain.words
        w[b], w[c] = begin, count
        if rsp is not None:
            self._rsp_in.value = rsp
        if fs is not None:
            self._fs_in.value, self._fs_pending = fs, None
        return self._engine_run(runner(), chain.ptr, chain.n)

    def run_dump(self, begin: int, count: int, rsp: int | None = None, point: bool = False
                 ) -> tuple[str, dump.RegState]:
        """run(begin, count), then dump_state(): one call into the engine. With `rsp`, RSP is loaded before
        the run. With `point` (a sweep point's boundary), the context after the run is also saved into
        `point_context` and the clobber table filled from the dump and set_clobber_mask's mask."""
        reason = self._run_chained("point" if point else "dump", begin, count, rsp)
        return reason, dump.RegState(self._dump_buf.raw, self._dump_rip.value)

    def run_pc(self, begin: int, count: int, rsp: int | None = None) -> tuple[str, int]:
        """run(begin, count) and the PC it stopped at: one call into the engine (RSP loaded first when
        given)."""
        reason = self._run_chained("pc", begin, count, rsp)
        return reason, self._u64.value
