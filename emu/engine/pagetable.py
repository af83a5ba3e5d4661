"""The engine's TLB entries as the process's page tables would give them: a UC_HOOK_TLB_FILL callback in
x86-64 machine code (Unicorn's virtual-TLB mode, UC_TLB_VIRTUAL).

Why: in its default mode Unicorn 2.1.4 fills every TLB entry readable, writable *and* executable (its x86
tlb_fill without paging), and notdirty_write (cputlb.c) never marks a page dirty while its entry is
executable, so every store of the program took the engine's slow path (helper_le_stq_mmu ->
notdirty_write -> a memory-region lookup): ~30 ns a store, 5x the cost of a store loop without it.
Here an entry filled for a load or a store is readable and writable only, and one filled for an
instruction fetch is executable too: a data page's first store clears its notdirty bit and the rest
run at full speed. Whether a page may be executed at all is still the engine's region check (the real
process maps only PROT_EXEC memory executable, linux/memory.py, and a fetch elsewhere fails with
UC_ERR_FETCH_PROT; the model world's regions are as model/hostmem.py maps them). Used by both engines.

Addresses are identities (the entry's paddr is the page's vaddr); memory nothing has mapped is
left to the engine, which finds no region there and fails the access as before (UC_ERR_*_UNMAPPED). The
callback also keeps the page of the last load or store it was asked about (`last_fill`): a data access
that faults asks for its page just before it fails (faultaddr.py uses it; the engine's own fetches, e.g.
at the run's end address, would hide it, so they are not kept).
Mirrors no Go source; stands for the x86 page tables the kernel keeps (arch/x86/mm).
"""
from __future__ import annotations

import ctypes

from unicorn import UC_HOOK_TLB_FILL, UC_MEM_FETCH, UC_PROT_ALL, UC_PROT_READ, UC_PROT_WRITE, UC_TLB_VIRTUAL

from .nativehook import add_hook

# rdi = uc, rsi = page address, edx = access type, rcx = uc_tlb_entry * {u64 paddr; u32 perms}, r8 = user
_CALLBACK_ASM = f"""
    mov qword ptr [rcx], rsi
    cmp edx, {UC_MEM_FETCH}
    je fetch
    mov qword ptr [r8], rsi
    mov dword ptr [rcx + 8], {UC_PROT_READ | UC_PROT_WRITE}
    mov eax, 1
    ret
fetch:
    mov dword ptr [rcx + 8], {UC_PROT_ALL}
    mov eax, 1
    ret
"""


class PageTable:
    """Puts `uc` in virtual-TLB mode with the callback."""

    def __init__(self, uc) -> None:
        self._last = ctypes.c_uint64()
        uc.ctl_set_tlb_mode(UC_TLB_VIRTUAL)
        self._hh = add_hook(uc, UC_HOOK_TLB_FILL, _CALLBACK_ASM, ctypes.addressof(self._last), "the page table")

    def last_fill(self) -> int:
        """The page of the last load or store the engine asked about."""
        return self._last.value
