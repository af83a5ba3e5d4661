"""The initial process stack as the kernel builds it at execve (fs/binfmt_elf.c create_elf_tables).

From RSP up: argc, argv[0..n-1], NULL, envp[..], NULL, auxv (type, value) pairs ending in AT_NULL;
the strings and AT_RANDOM's 16 bytes lie above. AT_SYSINFO_EHDR points at preemu's vDSO (vdso.py)
when there is one; without it the Go runtime makes clock_gettime a real syscall (runtime/sys_linux_amd64.s,
the fallback path of nanotime1/walltime). runtime/os_linux.go sysauxv reads AT_PAGESZ, AT_RANDOM,
AT_SECURE, AT_HWCAP(2) and AT_SYSINFO_EHDR; the rest is what Linux passes anyway.
"""
from __future__ import annotations

import struct

from ..core.cpuid import HWCAP
from .elfimage import Image

STACK_TOP = 0x7FFF_F000_0000
STACK_SIZE = 8 << 20

AT_NULL, AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_ENTRY = 0, 3, 4, 5, 6, 9
AT_UID, AT_EUID, AT_GID, AT_EGID, AT_PLATFORM, AT_HWCAP, AT_CLKTCK = 11, 12, 13, 14, 15, 16, 17
AT_SECURE, AT_RANDOM, AT_HWCAP2, AT_EXECFN, AT_SYSINFO_EHDR = 23, 25, 26, 31, 33
ARG_LIMIT = (8 << 20) // 4        # fs/exec.c bprm_stack_limits: a quarter of the stack rlimit (8 MiB): 2 MiB
MAX_ARG_STRLEN = 32 * 4096        # include/uapi/linux/binfmts.h: one string's limit, its NUL included


def args_too_big(argv: list[str], envp: list[str]) -> str | None:
    """Why execve would answer E2BIG for these strings (fs/exec.c bprm_stack_limits, copy_strings: the
    pointers and strings together over ARG_LIMIT, or one string over MAX_ARG_STRLEN), or None."""
    sizes = [len(s.encode()) + 1 for s in (*argv, *envp)]
    if sizes and max(sizes) > MAX_ARG_STRLEN:
        return f"a string of {max(sizes) - 1:,} bytes (at most {MAX_ARG_STRLEN - 1:,})"
    total = sum(sizes) + 8 * (len(sizes) + 2)
    if total > ARG_LIMIT:
        return f"{total:,} bytes of arguments, environment and their pointers (at most {ARG_LIMIT:,})"
    return None


def build_stack(mem, image: Image, argv: list[str], envp: list[str], random16: bytes, vdso: int = 0) -> int:
    """Map the stack, write argv/envp/auxv, and return the initial RSP (16-byte aligned). Strings past
    Linux's limits are an EmuError naming them (execve checks them first: sys_fork.py)."""
    from ..core.errors import EmuError
    why = args_too_big(argv, envp)
    if why is not None:
        raise EmuError(f"the program's arguments and environment are too long for Linux (E2BIG): {why}")
    mem.map_fixed(STACK_TOP - STACK_SIZE, STACK_SIZE)
    blob = bytearray()
    need = sum(len(s.encode()) + 1 for s in (*argv, *envp)) + 7 + 15 + 16
    base = STACK_TOP - max(0x1000, (need + 0xFFF) & ~0xFFF)   # the strings at the top, below them the table

    def put(b: bytes) -> int:
        addr = base + len(blob)
        blob.extend(b)
        return addr

    arg_ptrs = [put(a.encode() + b"\0") for a in argv]
    env_ptrs = [put(e.encode() + b"\0") for e in envp]
    platform = put(b"x86_64\0")
    execfn = arg_ptrs[0] if arg_ptrs else 0
    while len(blob) % 16:
        blob.append(0)
    rnd = put(random16)
    assert base + len(blob) <= STACK_TOP
    auxv = [(AT_PHDR, image.phdr_addr), (AT_PHENT, image.phentsize), (AT_PHNUM, image.phnum),
            (AT_PAGESZ, 4096), (AT_ENTRY, image.entry), (AT_UID, 1000), (AT_EUID, 1000), (AT_GID, 1000),
            (AT_EGID, 1000), (AT_SECURE, 0), (AT_RANDOM, rnd), (AT_HWCAP, HWCAP), (AT_HWCAP2, 0),
            (AT_CLKTCK, 100), (AT_PLATFORM, platform), (AT_EXECFN, execfn)]
    if vdso:
        auxv.append((AT_SYSINFO_EHDR, vdso))
    auxv.append((AT_NULL, 0))
    words = [len(argv), *arg_ptrs, 0, *env_ptrs, 0]
    for k, v in auxv:
        words += [k, v]
    table = struct.pack(f"<{len(words)}Q", *words)
    sp = (base - len(table)) & ~0xF
    mem.uc.mem_write(base, bytes(blob))
    mem.uc.mem_write(sp, table)
    return sp
