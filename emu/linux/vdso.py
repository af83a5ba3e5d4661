"""A vDSO: `clock_gettime`, `gettimeofday` and `time` answered in the process, from virtual time, without a syscall.

Linux maps a small shared object into every process and passes its address in AT_SYSINFO_EHDR
(arch/x86/entry/vdso/vclock_gettime.c; the data it reads sits in the `vvar` page beside it). The Go
runtime finds `__vdso_clock_gettime` and `__vdso_gettimeofday`, version LINUX_2.6, there
(runtime/vdso_linux_amd64.go:17-21 vdsoSymbolKeys; runtime/vdso_linux.go reads the ELF program headers, the
dynamic table's DT_HASH, DT_SYMTAB, DT_STRTAB, DT_VERSYM and DT_VERDEF) and calls clock_gettime from
nanotime1 and walltime (runtime/sys_linux_amd64.s) instead of making the syscall; package syscall calls
gettimeofday through runtime.vdsoGettimeofdaySym (syscall.Gettimeofday and syscall.Time on amd64).
`__vdso_time` is there for what Linux's vDSO offers (vdso.lds.S exports it); Go does not look it up.

preemu's vDSO is built here: one page of ELF holding those symbols and their machine code (Keystone), and a
vvar page that is the instruction counter's own memory (icount._Counter, mapped into the guest read-only),
holding the slice's start time and ns-per-instruction. Each function computes what the syscall would have
returned at that instruction: virtual time = the slice's start + instructions executed in it (`executed`
counts the blocks before the function's first one, plus its two instructions up to the read) times
ns-per-instruction, CLOCK_REALTIME adding the epoch offset, as sys_time.py does (seconds, and microseconds,
by a multiply and shift, as compilers divide by constants: the emulated DIV is a slow helper call).
clock_gettime keeps CLOCK_REALTIME and CLOCK_MONOTONIC; every other clock id makes the clock_gettime syscall
from inside the vDSO, as Linux's does for the clocks its data page does not hold (the CPU-time clocks count
the thread's or process's CPU time there, sys_time.clock_ns). Left out: getrandom (Go falls back to the
syscall, which sys_mem answers) and clock_getres.
"""
from __future__ import annotations

import struct
from functools import lru_cache

from ..engine.nativehook import assemble
from .icount import _Counter

VDSO_BASE = 0x7FFF_F800_0000            # above the initial stack (startup.STACK_TOP); one page of ELF
VVAR = VDSO_BASE + 0x2000               # the counter's page (icount._Counter), read-only for the guest
PAGE = 0x1000
CODE_OFF = 0x400                        # the first function; each takes FUNC_ALIGN bytes
FUNC_ALIGN = 0x80
SYS_CLOCK_GETTIME = 228                 # arch/x86/entry/syscalls/syscall_64.tbl
# the _Counter fields the code reads: one layout, icount's
EXECUTED, CLOCK_BASE, NS_PER_INSN, REALTIME_OFFSET = (
    getattr(_Counter, f).offset for f in ("executed", "clock_base", "ns_per_insn", "realtime_offset"))

# rax = virtual time in ns at the read (the second instruction); r8 = the vvar page
_NOW = f"""
    movabs r8, {VVAR:#x}
    mov rax, qword ptr [r8 + {EXECUTED}]
    add rax, 2
    imul rax, qword ptr [r8 + {NS_PER_INSN}]
    add rax, qword ptr [r8 + {CLOCK_BASE}]
"""
_REALTIME = f"    add rax, qword ptr [r8 + {REALTIME_OFFSET}]\n"
# rdx = rax / 10^9 (unsigned; 0x44b82fa09b5a52cc = ceil(2^92 / 10^9)), rcx = rax mod 10^9
_SPLIT = """
    mov rcx, rax
    movabs rdx, 0x44b82fa09b5a52cc
    mul rdx
    shr rdx, 28
    imul rax, rdx, 1000000000
    sub rcx, rax
"""

# name -> code; the System V arguments: clock_gettime(clk=rdi, ts=rsi), gettimeofday(tv=rdi, tz=rsi), time(tloc=rdi)
_FUNCS = {
    # one translated block (no branch): the counter's per-block callback is most of a call's cost
    # CLOCK_REALTIME (0) and CLOCK_MONOTONIC (1) here; any other clock (the CPU-time ones, negative ids, the
    # alarm and coarse clocks, a bad id) makes the syscall, as Linux's vDSO falls back to it for what it does
    # not keep (lib/vdso/gettimeofday.c __cvdso_clock_gettime_common). Still one block on the fast path: the
    # choice is made with cmov (a fallback's stores go to the red zone, the syscall writes ts itself) and an
    # indirect jump to the caller or to the fallback, which returns through r10 (SysV: r8-r11 are scratch)
    "__vdso_clock_gettime": _NOW + f"""
    xor edx, edx
    test edi, edi
    cmove rdx, qword ptr [r8 + {REALTIME_OFFSET}]
    add rax, rdx
""" + _SPLIT + f"""
    mov r9, rsi
    lea r10, [rsp - 16]
    cmp edi, 1
    cmova r9, r10
    mov qword ptr [r9], rdx
    mov qword ptr [r9 + 8], rcx
    pop r10
    mov rcx, r10
    lea r11, [rip + fallback]
    cmova rcx, r11
    xor eax, eax
    jmp rcx
fallback:
    mov eax, {SYS_CLOCK_GETTIME}
    syscall
    jmp r10
""",
    "__vdso_gettimeofday": _NOW + _REALTIME + _SPLIT + """
    test rdi, rdi
    je tz
    mov qword ptr [rdi], rdx
    imul rcx, rcx, 0x10624dd3
    shr rcx, 38
    mov qword ptr [rdi + 8], rcx
tz:
    test rsi, rsi
    je done
    mov qword ptr [rsi], 0
done:
    xor eax, eax
    ret
""",
    "__vdso_time": _NOW + _REALTIME + _SPLIT + """
    mov rax, rdx
    test rdi, rdi
    je done
    mov qword ptr [rdi], rax
done:
    ret
""",
}


def address(name: str) -> int:
    """Where the vDSO's function `name` sits in the guest."""
    return VDSO_BASE + CODE_OFF + FUNC_ALIGN * list(_FUNCS).index(name)


DT_NULL, DT_HASH, DT_STRTAB, DT_SYMTAB, DT_STRSZ, DT_SYMENT = 0, 4, 5, 6, 10, 11
DT_VERSYM, DT_VERDEF, DT_VERDEFNUM = 0x6FFFFFF0, 0x6FFFFFFC, 0x6FFFFFFD
PT_LOAD, PT_DYNAMIC = 1, 2
VER_FLG_BASE = 1
LINUX_2_6_HASH = 0x3AE75F6              # runtime/vdso_linux_amd64.go vdsoLinuxVersion


def elf_hash(name: bytes) -> int:
    """The SysV ELF hash (the verdef's vd_hash)."""
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


@lru_cache(maxsize=1)
def image() -> bytes:
    """The vDSO page: ELF header, two program headers, dynsym/dynstr/hash/versym/verdef/dynamic, code."""
    codes = {name: assemble(src, address(name)) for name, src in _FUNCS.items()}
    assert all(len(c) <= FUNC_ALIGN for c in codes.values())
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in _FUNCS) + b"LINUX_2.6\0linux-vdso.so.1\0"
    n_ver, n_base = strtab.index(b"LINUX_2.6"), strtab.index(b"linux-vdso.so.1")
    off = {"phdr": 64, "dynsym": 0x100, "dynstr": 0x180, "hash": 0x200, "versym": 0x240, "verdef": 0x250,
           "dynamic": 0x2A0}
    img = bytearray(PAGE)
    struct.pack_into("<16sHHIQQQIHHHHHH", img, 0, b"\x7fELF\x02\x01\x01" + bytes(9), 3, 62, 1, 0,
                     off["phdr"], 0, 0, 64, 56, 2, 64, 0, 0)
    struct.pack_into("<IIQQQQQQ", img, off["phdr"], PT_LOAD, 5, 0, 0, 0, PAGE, PAGE, PAGE)
    struct.pack_into("<IIQQQQQQ", img, off["phdr"] + 56, PT_DYNAMIC, 4, off["dynamic"], off["dynamic"],
                     off["dynamic"], 16 * 9, 16 * 9, 8)
    n = len(_FUNCS)
    for i, (name, code) in enumerate(codes.items(), start=1):      # symbol 0 is the null symbol
        struct.pack_into("<IBBHQQ", img, off["dynsym"] + 24 * i, strtab.index(name.encode()), 0x12, 0, 1,
                         address(name) - VDSO_BASE, len(code))
        img[address(name) - VDSO_BASE:address(name) - VDSO_BASE + len(code)] = code
    img[off["dynstr"]:off["dynstr"] + len(strtab)] = strtab
    # one bucket -> symbol 1 -> 2 -> ... -> n, chain ends (runtime/vdso_linux.go walks the chain)
    struct.pack_into(f"<{3 + n + 1}I", img, off["hash"], 1, n + 1, 1, 0, *range(2, n + 1), 0)
    struct.pack_into(f"<{n + 1}H", img, off["versym"], 0, *[2] * n)
    struct.pack_into("<HHHHIII", img, off["verdef"], 1, VER_FLG_BASE, 1, 1,
                     elf_hash(b"linux-vdso.so.1"), 20, 28)
    struct.pack_into("<II", img, off["verdef"] + 20, n_base, 0)
    struct.pack_into("<HHHHIII", img, off["verdef"] + 28, 1, 0, 2, 1, LINUX_2_6_HASH, 20, 0)
    struct.pack_into("<II", img, off["verdef"] + 48, n_ver, 0)
    dyn = [(DT_HASH, off["hash"]), (DT_STRTAB, off["dynstr"]), (DT_SYMTAB, off["dynsym"]),
           (DT_STRSZ, len(strtab)), (DT_SYMENT, 24), (DT_VERSYM, off["versym"]), (DT_VERDEF, off["verdef"]),
           (DT_VERDEFNUM, 2), (DT_NULL, 0)]
    for i, (tag, val) in enumerate(dyn):
        struct.pack_into("<qQ", img, off["dynamic"] + 16 * i, tag, val)
    return bytes(img)
