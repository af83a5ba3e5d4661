"""preemu's vector unit: at --cpu v3/v4, every AVX/AVX-512 instruction of the guest's text runs here.

Design, from what was measured on Unicorn 2.1.4 (tests/test_avx.py pins each fact):
- A VEX.256 or EVEX instruction is an invalid opcode in Unicorn; a VEX.128 vector instruction is *executed*,
  as its legacy SSE twin (`vpxor xmm0,xmm1,xmm2` gives xmm0 ^ xmm2, and no upper bits are zeroed): trapping
  the invalid ones would leave those silently wrong. VEX-encoded BMI1/BMI2 (ANDN, SHLX, MULX, PDEP, ...)
  run as the host does, as do MOVBE, LZCNT, TZCNT and POPCNT: those stay Unicorn's; BMI_WRONG do not
  (bench/avx_diff.py against the host).
- So the text is scanned once (Capstone, function by function) and every VEX/EVEX instruction but the BMI
  Unicorn runs right, and XGETBV (a #GP in Unicorn, whose CR4 has no OSXSAVE), becomes a *site*: its first
  byte is overwritten with INT3 in the engine's memory. Reaching a site raises interrupt 3, whose hook (always
  installed by both engines) calls `trap`: the original instruction is executed by avxexec.Executor (on the
  host CPU: hostexec.py) and RIP set past it;
  the engine goes on in the same run. Measured against the alternative, one UC_HOOK_CODE per site: each
  code hook is walked at every translated instruction (1000 hooks: a 0.1 s run took 0.24 s; 3000: 0.75 s),
  the INT3 costs nothing until reached. A count= run and the block counter (linux/icount.py) count the
  INT3 as the one instruction it stands for (pinned in tests/test_avx.py).
- Unicorn keeps ZMM0-31 whole (and in every saved context); the opmask registers K0-K7 live in
  `VectorFile.k`, saved per thread by the owner (`kregs` / `set_kregs`).
- At v1/v2 no unit exists: no scan, no patch, no hook (v1 runs exactly as before).
- Anything read back from guest text for display or decoding goes through `original` (the INT3 undone).
- The sites' loads and stores go through `mem` (avxmem.py): the engine's page protections and memory hooks
  apply to them as to the engine's own; a faulting one is left in `fault` for the caller's SIGSEGV.

Mirrors no Go source (the CPU's side of the contract); Go's instructions are listed in avxexec.py.
Left out: self-modifying or generated code (the scan is of the text as loaded), VEX instructions in the
vDSO (it has none).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import capstone
from unicorn import x86_const as X

from ..core.cpulevel import CpuLevel
from . import diskmemo
from .avxexec import Decoded, Executor, Unsupported, VectorFile, decode, prefix_kind
from .avxmem import VectorFault, VectorMemory

INT3 = 0xCC
#: VEX-encoded general-register instructions (BMI1/BMI2): Unicorn runs them, correctly but for BMI_WRONG
BMI = frozenset(("andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx", "sarx",
                 "shlx", "shrx"))
#: the BMI instructions Unicorn 2.1.4 computes unlike the CPU (bench/avx_diff.py against this host;
#: tests/test_cpu_exact.py): BZHI with an index of the operand size or more clears the source's top bit (the CPU:
#: the source unchanged) and sets CF one index early, BLSI sets CF inverted; BEXTR, BLSR and BLSMSK leave the
#: flags the SDM calls undefined (PF, AF) unlike the host. These are sites too: the host runs them (hostexec.py).
BMI_WRONG = frozenset(("bzhi", "blsi", "bextr", "blsr", "blsmsk"))
#: legacy-encoded (no VEX) instructions Unicorn 2.1.4 does not have: ADX (ADCX/ADOX: an invalid opcode, measured by
#: bench/avx_diff.py) and SHA-NI ("no SHA-NI", avx_diff --sse). The v4 CPU (core/cpuid.py ICELAKE_SP) has both,
#: so they are sites too and run on the host; at a level whose CPUID lacks them hostexec refuses them (#UD).
LEGACY = frozenset(("adcx", "adox", "sha1rnds4", "sha1nexte", "sha1msg1", "sha1msg2", "sha256rnds2", "sha256msg1",
                    "sha256msg2"))
_XGETBV = b"\x0f\x01\xd0"
#: a function holds no site unless it holds one of these: VEX/EVEX's first bytes, XGETBV, LEGACY's opcodes
_SCAN_BYTES = (b"\xc4", b"\xc5", b"\x62", _XGETBV, b"\x0f\x38\xf6", b"\x0f\x3a\xcc",
               *(bytes((0x0F, 0x38, op)) for op in range(0xC8, 0xCE)))
_md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def is_site(code: bytes, mnemonic: str) -> bool:
    """An instruction preemu executes itself at v3/v4: VEX/EVEX-encoded and not a BMI instruction Unicorn runs
    correctly, XGETBV, or one of LEGACY."""
    return (prefix_kind(code)[0] != "" and (mnemonic not in BMI or mnemonic in BMI_WRONG)) or code == _XGETBV \
        or mnemonic in LEGACY


_SCANNED: dict[str, list] = {}        # text digest -> sites (a sweep builds many processes of one binary)


def scan_cached(funcs, cache: Path | None = None) -> list[tuple[int, bytes]]:
    """scan(funcs), remembered by the text's SHA-256 in this process and, with `cache` (a directory), on disk
    (diskmemo.py): Capstone takes ~0.4 s over a Go binary's text, which every process of a sweep would
    otherwise pay."""
    funcs = list(funcs)
    h = hashlib.sha256(repr((sorted(BMI_WRONG), sorted(LEGACY))).encode())   # the rule is part of the key
    for start, code in funcs:
        h.update(start.to_bytes(8, "little") + len(code).to_bytes(8, "little") + code)
    key = h.hexdigest()[:32]
    got = _SCANNED.get(key)
    if got is None and cache is not None:
        got = [(a, bytes.fromhex(b)) for a, b in
               diskmemo.remembered("avxsites", key, lambda: [(a, b.hex()) for a, b in scan(funcs)], cache)]
    if got is None:
        got = scan(funcs)
    _SCANNED[key] = got
    return got


def scan(funcs) -> list[tuple[int, bytes]]:
    """(address, bytes) of every site in `funcs`, an iterable of (start address, code bytes)."""
    found = []
    for start, code in funcs:
        if not any(b in code for b in _SCAN_BYTES):
            continue
        for a, n, mn, _ in _md.disasm_lite(code, start):
            raw = code[a - start:a - start + n]
            if is_site(raw, mn):
                found.append((a, raw))
    return found


class VectorUnit:
    """The sites of one engine's guest text and the vector state they run against."""

    def __init__(self, uc, level: CpuLevel, writable=None):
        self.uc, self.level = uc, level
        self.vf = VectorFile(uc, level)
        #: the sites' memory accesses, checked and hooked as the engine's own (avxmem.py); `writable(page)`: the
        #: process's page protections (None: the engine's regions)
        self.mem = VectorMemory(uc, writable)
        self.ex = Executor(self.vf, self.mem)
        self.sites: dict[int, bytes] = {}           # address -> the instruction's original bytes
        self._decoded: dict[int, Decoded] = {}
        self.executed = 0                            # instructions run here (cost figures)
        self.error: Unsupported | None = None
        self.fault: VectorFault | None = None       # the access of the last site that faulted (avxmem.py)
        if self.vf._get(X.UC_X86_REG_MXCSR, 4) == 0:
            # Unicorn's reset MXCSR is 0 (every exception unmasked; its SSE never traps); Linux starts a process
            # with 0x1F80 (all masked, round to nearest), which the host runs the sites' instructions under
            self.vf._set(X.UC_X86_REG_MXCSR, 0x1F80, 4)

    def patch(self, funcs, cache: Path | None = None) -> int:
        """Scan `funcs` ((start, bytes) pairs of the loaded text; scan_cached with `cache`) and arm every site;
        the number armed."""
        sites = scan(funcs) if cache is None else scan_cached(funcs, cache)
        for a, raw in sites:
            self.sites[a] = raw
            self.uc.mem_write(a, bytes((INT3,)))
        return len(sites)

    def rearm(self, start: int, code: bytes) -> int:
        """`code` was just written at `start` over part of the text (a --stub over asyncPreempt): forget the sites
        that were there and arm the new code's."""
        for a in [a for a in self.sites if start <= a < start + len(code)]:
            del self.sites[a]
            self._decoded.pop(a, None)
        return self.patch([(start, code)])

    def original(self, addr: int, data: bytes) -> bytes:
        """`data`, read from guest memory at `addr`, with any site's INT3 put back to its first byte."""
        if not self.sites:
            return data
        out = None
        for a, raw in self.sites.items():
            if addr <= a < addr + len(data):
                out = bytearray(data) if out is None else out
                out[a - addr] = raw[0]
        return data if out is None else bytes(out)

    def decoded(self, pc: int) -> Decoded:
        d = self._decoded.get(pc)
        if d is None:
            d = self._decoded[pc] = decode(self.sites[pc], pc)
        return d

    def trap(self) -> bool:
        """Inside the engine's interrupt hook for INT3 (RIP past it): when the INT3 is a site, execute the
        instruction, move RIP past it and return True (the run goes on); an Unsupported is kept in `error`,
        RIP left at the instruction, and True returned (the caller stops the engine); so is a VectorFault, kept
        in `fault` (the instruction had no effect: the caller raises the thread's SIGSEGV with RIP on it).
        False: not a site. While memory hooks run, RIP is the instruction's, as the engine's hooks see it."""
        pc = self.vf._get(X.UC_X86_REG_RIP, 8) - 1
        if pc not in self.sites:
            return False
        d = self.decoded(pc)
        if self.mem.hooks:
            self.vf._set(X.UC_X86_REG_RIP, pc, 8)
        try:
            self.ex.execute(d)
        except Unsupported as e:
            self.error = e
            self.vf._set(X.UC_X86_REG_RIP, pc, 8)
            return True
        except VectorFault as e:
            self.fault = e
            self.vf._set(X.UC_X86_REG_RIP, pc, 8)
            return True
        self.executed += 1
        self.vf._set(X.UC_X86_REG_RIP, pc + d.size, 8)
        return True

    # --- the state Unicorn's contexts do not hold -----------------------------------------------------
    def kregs(self) -> tuple[int, ...]:
        return tuple(self.vf.k)

    def set_kregs(self, values) -> None:
        self.vf.k[:] = list(values) if values else [0] * 8
