"""The address a faulting instruction touched: what the kernel reports as si_addr (and cr2) for a page fault.

The engine says only that an access failed (UC_ERR_READ_UNMAPPED, ...) and where the instruction is. An
unmapped-memory hook would say the address, but any such hook, bounded or not, makes Unicorn 2.1.4 send
every store of the program through its slow path (uc_mem_hook_installed in notdirty_write, cputlb.c). So
the address is worked out after the fault: the instruction at RIP is decoded (Capstone), the addresses it
accesses are computed from the registers (each explicit memory operand: segment base + base + index *
scale + displacement, RIP-relative included; the stack slot of a push, call, pop, ret or leave), and the
first byte of those accesses inside the page the engine asked about last (pagetable.last_fill: the
failing access asks for its page just before it fails) is the address. An access that starts on the page
before and crosses into the unmapped one faults at that page's first byte, as on x86. An instruction this
does not understand gets the page's first byte.
"""
from __future__ import annotations

from functools import lru_cache

from unicorn import UC_ERR_FETCH_PROT, UC_ERR_FETCH_UNMAPPED, UC_ERR_WRITE_PROT, UcError
from unicorn import x86_const as X

from ..core.memmap import PAGE

_PUSHES = ("push", "call")
_M64 = (1 << 64) - 1


@lru_cache(maxsize=1)
def _capstone():
    """(Capstone's x86-64 decoder with details, its x86 constants, segment register -> base register), made at
    the first fault: importing Capstone costs a start-up ~14 ms."""
    import capstone
    from capstone import x86_const as CX
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    return md, CX, {CX.X86_REG_FS: X.UC_X86_REG_FS_BASE, CX.X86_REG_GS: X.UC_X86_REG_GS_BASE}


def _reg(uc, insn, reg: int) -> int:
    if reg == _capstone()[1].X86_REG_RIP:
        return insn.address + insn.size
    return uc.reg_read(getattr(X, "UC_X86_REG_" + insn.reg_name(reg).upper()))


def accesses(uc, insn) -> list[tuple[int, int]]:
    """(address, size) of each memory access `insn` makes with the registers as they are, in order."""
    _, CX, segment_base = _capstone()
    out = []
    m = insn.mnemonic
    if m.startswith("pop") or m in ("leave", "ret"):       # the stack slot is read before any operand
        out.append((uc.reg_read(X.UC_X86_REG_RBP if m == "leave" else X.UC_X86_REG_RSP), 8))
    for op in insn.operands:
        if op.type != CX.X86_OP_MEM or m == "lea" or m.startswith("nop"):
            continue
        mem = op.mem
        a = mem.disp
        if mem.base:
            a += _reg(uc, insn, mem.base)
        if mem.index:
            a += _reg(uc, insn, mem.index) * mem.scale
        if mem.segment in segment_base:
            a += uc.reg_read(segment_base[mem.segment])
        out.append((a & _M64, op.size or 1))
    if m.startswith(_PUSHES):
        out.append(((uc.reg_read(X.UC_X86_REG_RSP) - 8) & _M64, 8))
    return out


def insn_at_rip(uc):
    """The instruction at RIP, decoded (None: none to read or decode)."""
    pc = uc.reg_read(X.UC_X86_REG_RIP)
    try:
        try:
            code = bytes(uc.mem_read(pc, 15))
        except UcError:                     # the instruction ends before an unmapped page
            code = bytes(uc.mem_read(pc, PAGE - pc % PAGE))
        return next(_capstone()[0].disasm(code, pc, 1))
    except (UcError, StopIteration):
        return None


def fault_address(uc, page: int) -> int:
    """The address of the failed access of the instruction at RIP, given the page the engine asked about."""
    insn = insn_at_rip(uc)
    if insn is None:                        # no instruction to read or decode: the page is all there is
        return page
    for a, n in accesses(uc, insn):
        if a < page + PAGE and a + n > page:
            return max(a, page)
    return page


def failed_address(uc, errno: int, last_fill: int, writable=None) -> int:
    """The address of the access the engine's error `errno` (a UC_ERR_*) reports failed: where RIP stands
    for an instruction fetch, else fault_address's for a data access (`last_fill`: pagetable.last_fill). A
    store to a read-only page (UC_ERR_WRITE_PROT) asks for no page when a load filled its TLB entry first, so
    its address is the first of the instruction's accesses on a page `writable(addr)` says is read-only."""
    if errno in (UC_ERR_FETCH_UNMAPPED, UC_ERR_FETCH_PROT):
        return uc.reg_read(X.UC_X86_REG_RIP)
    if errno == UC_ERR_WRITE_PROT and writable is not None:
        insn = insn_at_rip(uc)
        for a, n in (accesses(uc, insn) if insn is not None else []):
            for page in sorted({a - a % PAGE, (a + n - 1) - (a + n - 1) % PAGE}):
                if not writable(page):
                    return max(a, page)
    return fault_address(uc, last_fill)
