"""The Machine's Unicorn hooks: the INT3 sentinels of the runtime, the stub's RET and the opt-in watches.

Runtime sentinels (asyncPreempt2, goexit, morestack, nanosleep, the allocators, the write barrier)
are INT3s in rtcode's text, all handled by one interrupt hook: it counts, allocates, computes the
Python-modelled runtime calls (GO_CALL_AT) or asks the owner (trap_handler or the on_* callbacks)
whether to go on, stop or park the G in the counted spin loop. The stub's RET hook stops an armed
run (sweeps only). The heap watch, block hook and instruction trace are opt-in. Hooks are tiny:
they run inside emu_start. Mixed into machine.Machine, whose engine and callbacks it uses.
Mirrors no Go source (what each sentinel stands for is rtcode's). Left out: any per-instruction
hook outside opt-in tracing.
"""
from __future__ import annotations

from typing import Callable

import unicorn
import unicorn.x86_const as X
from unicorn.unicorn_py3.unicorn import uclib as _uclib

from ..core import memmap
from .faults import GuestFaultInHook

STOP_COUNT = "count"        # the instruction budget ran out (or the exact count was reached)
STOP_GOEXIT = "goexit"      # the goroutine returned into goexit
STOP_STUB_RET = "stub-ret"  # the stub is about to execute its RET (armed one-shot)
STOP_TRAP = "trap"          # a sentinel hook asked to stop (scheduler trap)

#: INT3 sentinels in the runtime text, by address
SENTINELS = {memmap.GOEXIT: "goexit", memmap.ASYNC_PREEMPT2: "asyncPreempt2", memmap.MORESTACK: "morestack",
             memmap.NANOSLEEP: "nanosleep", memmap.NEWOBJECT: "newobject", memmap.MALLOCGC: "mallocgc",
             memmap.GO_NEWOBJECT: "gonewobject"}
SENTINELS.update({a: "gcWriteBarrier" for a in memmap.GC_WRITE_BARRIER.values()})
#: INT3 entries of the runtime functions computed in Python (on_go_call), by address
GO_CALL_AT = {a: name for name, a in memmap.GO_CALLS.items()}
#: ABIInternal's integer argument registers (and, from the first, its result registers)
INT_ARGS = (X.UC_X86_REG_RAX, X.UC_X86_REG_RBX, X.UC_X86_REG_RCX, X.UC_X86_REG_RDI, X.UC_X86_REG_RSI,
            X.UC_X86_REG_R8, X.UC_X86_REG_R9)


class HooksMixin:
    """The Machine's hooks: sentinel INT3s, the armed stub RET, and the opt-in heap/block/insn hooks."""

    # --- the INT3 sentinels and the stub's RET (tiny; they run inside emu_start) ---------------
    def _hook_intr(self, uc, intno, user_data):
        at = self._reg64(X.UC_X86_REG_RIP) - 1          # INT3 traps after the instruction
        name = SENTINELS.get(at) if intno == 3 else None
        if name is None:
            self._intr_elsewhere(uc, intno, at)
            return
        if name == "gcWriteBarrier":
            self.write_barrier_calls += 1
            return
        if name == "asyncPreempt2":
            self.async_preempt2_calls += 1
        if name in ("mallocgc", "gonewobject", "newobject"):
            self._intr_alloc(uc, name)
            return
        if self.trap_handler is not None:
            action = self.trap_handler(self, name)
        elif name == "goexit":
            action = "stop"
        elif name == "asyncPreempt2":
            action = "stop" if self.on_async_preempt2 is not None and self.on_async_preempt2(self) else None
        elif name == "morestack":
            action = "stop" if self.on_morestack is not None and self.on_morestack(self) else None
        else:
            action = "stop"
        if action == "park":
            # Keep the G's state, then idle in the counted spin loop until the budget runs out.
            self.parked = (name, uc.context_save())
            uc.mem_write(memmap.SPIN_COUNTER, bytes(8))
            uc.reg_write(X.UC_X86_REG_RIP, memmap.PARK_SPIN)
        elif action == "stop":
            self.stop_reason = STOP_GOEXIT if name == "goexit" else STOP_TRAP
            if name == "goexit":
                uc.reg_write(X.UC_X86_REG_RIP, at)      # stay on goexit: running again stops again
            _uclib.uc_emu_stop(self._h)

    def _intr_elsewhere(self, uc, intno: int, at: int) -> None:
        """An interrupt at no sentinel: the INT3 of a runtime function computed in Python (GO_CALL_AT),
        of one preemu does not model (a GuestFaultInHook), or any other interrupt (stop; run() raises
        the Fault)."""
        if intno == 3 and at in GO_CALL_AT:
            if self.on_go_call is None:
                raise GuestFaultInHook(f"runtime.{GO_CALL_AT[at]} called but this world has no heap")
            results = self.on_go_call(GO_CALL_AT[at], [uc.reg_read(r) for r in INT_ARGS])
            for r, v in zip(INT_ARGS, results):
                uc.reg_write(r, v)
            return
        if intno == 3 and at in self.traps:
            raise GuestFaultInHook(f"the goroutine called {self.traps[at]}, runtime code that needs the Go runtime's "
                                   f"own state; preemu models allocation, the slice runtime, runtime.rand, write "
                                   f"barriers, morestack and asyncPreempt2, and runs the runtime code that needs none "
                                   f"(maps, strings, convT*: gofront.PLAIN_RUNTIME) (return address "
                                   f"{self.read_u64(uc.reg_read(X.UC_X86_REG_RSP)):#x})")
        self.stop_reason = STOP_TRAP
        self._unexpected_interrupt = (intno, at)
        _uclib.uc_emu_stop(self._h)

    def _intr_alloc(self, uc, name: str) -> None:
        """An allocation sentinel: mallocgc or Go's newobject (on_alloc), or a .s program's newobject
        (on_newobject); the pointer goes back in RAX."""
        if name == "newobject":
            if self.on_newobject is None:
                raise GuestFaultInHook("newobject called but this world has no heap")
            size = uc.reg_read(X.UC_X86_REG_RAX)
            uc.reg_write(X.UC_X86_REG_RAX, self.on_newobject(size))
            return
        if self.on_alloc is None:
            raise GuestFaultInHook(f"runtime.{name} called but this world has no heap")
        if name == "mallocgc":
            size, typ = uc.reg_read(X.UC_X86_REG_RAX), uc.reg_read(X.UC_X86_REG_RBX)
        else:
            size, typ = None, uc.reg_read(X.UC_X86_REG_RAX)
        uc.reg_write(X.UC_X86_REG_RAX, self.on_alloc(size, typ))

    def async_preempt2_here(self) -> bool:
        """What the INT3 hook does at the asyncPreempt2 sentinel, called from Python by a run that
        stopped exactly there (Sweeper's counted stub run: no callback from inside Unicorn). Returns
        True when the owner asked to stop (the hook's STOP_TRAP). A GuestFaultInHook becomes a Fault
        naming the PC, as in run(). When the run goes on, an FS_BASE the model loaded (an M switch) is
        loaded by the next run (chainrun.py)."""
        assert self.trap_handler is None, "only a World's own asyncPreempt2 model can run outside the hook"
        self.async_preempt2_calls += 1
        go_on = False
        self._fs_deferred = True         # an M switch's FS_BASE load waits for the next chained run
        try:
            go_on = not (self.on_async_preempt2 is not None and self.on_async_preempt2(self))
            return not go_on
        except GuestFaultInHook as e:
            raise self._fault_in_hook(e) from None
        finally:
            self._fs_deferred = False
            if not go_on:
                self.flush_fs_base()

    def _hook_stub_ret(self, uc, address, size, user_data):
        if self.stub_ret_armed:
            self.stub_ret_armed = False
            self.stop_reason = STOP_STUB_RET
            _uclib.uc_emu_stop(self._h)

    # --- opt-in hooks (heap watch, block hook, instruction trace) -------------------------------
    def watch_heap(self, on_access: Callable[[str, int, int], None]) -> None:
        """Call on_access(kind, address, pc) for every guest read/write of the heap arena while the watch
        is on (GC mode: the World turns it on at the first allocation, see heap_watch)."""
        def hook(uc, access, address, size, value, user_data):
            on_access("write" if access == unicorn.UC_MEM_WRITE else "read", address, uc.reg_read(X.UC_X86_REG_RIP))
        self._heap_hook_fn = hook

    def heap_watch(self, on: bool) -> None:
        """Turn the heap watch on or off. A memory hook sends every guest load and store through
        Unicorn's slow path, wherever it points (~3-8 µs a sweep point), so it is on only while the heap
        holds objects: with none, no access can reach one. Turning it on flushes the translation cache:
        code that already ran does not see a memory hook added later (test_engine_pins). Called from
        inside the allocation trap too, where the INT3 has ended its block. Turning it off does not
        flush: Unicorn 2.1.4 drops a deleted hook only when the next run ends, so that run is slow anyway."""
        if on == (self._heap_hook is not None):
            return
        if on:
            self._heap_hook = self.uc.hook_add(unicorn.UC_HOOK_MEM_READ | unicorn.UC_HOOK_MEM_WRITE,
                                               self._heap_hook_fn, begin=memmap.HEAP_BASE, end=memmap.HEAP.end - 1)
            self.uc.ctl_flush_tb()
        else:
            self.uc.hook_del(self._heap_hook)
            self._heap_hook = None

    def add_block_hook(self, on_block: Callable[[int, int], None]) -> int:
        """Opt-in: call on_block(address, size) at every translation block in user text (~1 µs each).

        The translation cache is flushed so already-translated code sees the hook (Unicorn #2200).
        """
        h = self.uc.hook_add(unicorn.UC_HOOK_BLOCK, lambda uc, a, s, u: on_block(a, s),
                             begin=self.text[0], end=self.text[1] - 1)
        self.uc.ctl_flush_tb()
        return h

    def del_hook(self, handle: int) -> None:
        self.uc.hook_del(handle)
        self.uc.ctl_flush_tb()

    def trace(self, on_insn: Callable[[int], None] | None) -> None:
        """Opt-in per-instruction hook over user text (slow: ~1 µs per instruction)."""
        if self._trace_hook is not None:
            self.uc.hook_del(self._trace_hook)
            self._trace_hook = None
        if on_insn is not None:
            self._trace_hook = self.uc.hook_add(unicorn.UC_HOOK_CODE, lambda uc, a, s, u: on_insn(a),
                                                begin=self.text[0], end=self.text[1] - 1)
        self.uc.ctl_flush_tb()
