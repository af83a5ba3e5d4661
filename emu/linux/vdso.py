"""A vDSO: `clock_gettime` answered in the process, from virtual time, without a syscall.

Linux maps a small shared object into every process and passes its address in AT_SYSINFO_EHDR
(arch/x86/entry/vdso/vclock_gettime.c; the data it reads sits in the `vvar` page beside it). The Go
runtime finds `__vdso_clock_gettime` version LINUX_2.6 there (runtime/vdso_linux.go: the ELF program
headers, the dynamic table's DT_HASH, DT_SYMTAB, DT_STRTAB, DT_VERSYM and DT_VERDEF) and calls it from
nanotime1 and walltime (runtime/sys_linux_amd64.s) instead of making the syscall.

preemu's vDSO is built here: one page of ELF holding that symbol and its machine code (Keystone), and a
vvar page that is the instruction counter's own memory (icount._Counter, mapped into the guest read-only),
holding the slice's start time and ns-per-instruction. The function computes what the syscall would have
returned at that instruction: virtual time = the slice's start + instructions executed in it (`executed`
counts the blocks before the function's first one, plus its two instructions up to the read) times
ns-per-instruction, CLOCK_REALTIME adding the epoch offset, as sys_time.sys_clock_gettime does (seconds by a
multiply and shift, as compilers divide by 10^9: the emulated DIV is a slow helper call). Left out:
gettimeofday, time and getrandom (Go on amd64 does not need them; their absence makes it use the syscalls,
which sys_time.py answers from the same clock).
"""
from __future__ import annotations

import struct
from functools import lru_cache

import keystone

VDSO_BASE = 0x7FFF_F800_0000            # above the initial stack (startup.STACK_TOP); one page of ELF
VVAR = VDSO_BASE + 0x2000               # the counter's page (icount._Counter), read-only for the guest
PAGE = 0x1000
CODE_OFF = 0x400
# icount._Counter field offsets the code reads
EXECUTED, CLOCK_BASE, NS_PER_INSN, REALTIME_OFFSET = 0, 88, 96, 104

_CODE = f"""
    movabs r8, {VVAR:#x}
    mov rax, qword ptr [r8 + {EXECUTED}]
    add rax, 2
    imul rax, qword ptr [r8 + {NS_PER_INSN}]
    add rax, qword ptr [r8 + {CLOCK_BASE}]
    test edi, edi
    jne mono
    add rax, qword ptr [r8 + {REALTIME_OFFSET}]
mono:
    mov rcx, rax
    movabs rdx, 0x44b82fa09b5a52cc
    mul rdx
    shr rdx, 28
    mov qword ptr [rsi], rdx
    imul rdx, rdx, 1000000000
    sub rcx, rdx
    mov qword ptr [rsi + 8], rcx
    xor eax, eax
    ret
"""

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
    code = bytes(keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64).asm(_CODE, VDSO_BASE + CODE_OFF)[0])
    strtab = b"\0__vdso_clock_gettime\0LINUX_2.6\0linux-vdso.so.1\0"
    n_sym, n_ver, n_base = 1, strtab.index(b"LINUX_2.6"), strtab.index(b"linux-vdso.so.1")
    off = {"phdr": 64, "dynsym": 0x100, "dynstr": 0x140, "hash": 0x1A0, "versym": 0x1C0, "verdef": 0x1D0,
           "dynamic": 0x220}
    img = bytearray(PAGE)
    struct.pack_into("<16sHHIQQQIHHHHHH", img, 0, b"\x7fELF\x02\x01\x01" + bytes(9), 3, 62, 1, 0,
                     off["phdr"], 0, 0, 64, 56, 2, 64, 0, 0)
    struct.pack_into("<IIQQQQQQ", img, off["phdr"], PT_LOAD, 5, 0, 0, 0, PAGE, PAGE, PAGE)
    struct.pack_into("<IIQQQQQQ", img, off["phdr"] + 56, PT_DYNAMIC, 4, off["dynamic"], off["dynamic"],
                     off["dynamic"], 16 * 9, 16 * 9, 8)
    struct.pack_into("<IBBHQQ", img, off["dynsym"] + 24, n_sym, 0x12, 0, 1, CODE_OFF, len(code))
    img[off["dynstr"]:off["dynstr"] + len(strtab)] = strtab
    struct.pack_into("<5I", img, off["hash"], 1, 2, 1, 0, 0)           # one bucket -> symbol 1, chain ends
    struct.pack_into("<2H", img, off["versym"], 0, 2)
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
    img[CODE_OFF:CODE_OFF + len(code)] = code
    return bytes(img)
