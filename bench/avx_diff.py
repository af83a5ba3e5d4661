"""Differential check (issue #48): every VEX/EVEX/BMI/ADX instruction form of real Go binaries, run under preemu's
executor and natively on this host from random states, compared bit for bit.

`.venv/bin/python bench/avx_diff.py [--samples N] [--docs]` builds (once, into /tmp/avxdiff) the test binaries
of the runtime and 36 stdlib packages (PACKAGES) at GOAMD64=v3 and v4, with and without GOEXPERIMENT=simd (`go test
-c`), and those of simd and archsimd's tests with it (SIMD_PACKAGES), collects each distinct form
(mnemonic, VEX or EVEX, operand kinds: `vpaddd zmm, zmm, m32bcst {k}`), and runs each on N random states
(default 200): GPRs (special values mixed in), CF/PF/AF/ZF/SF/OF, MXCSR (rounding modes, FTZ/DAZ, sticky
flags), ZMM0-31 (random bytes and special floats per lane), K0-7, and the 4 KiB its memory operand is in.
- preemu: a Unicorn engine with a VectorUnit at the form's level (v3 for VEX, v4 for EVEX), the instruction
  armed as a site as in a real process (or run by Unicorn when it is not a site: BMI but BZHI/BLSI, ADX);
- native: the same bytes in a routine that loads *every* register (RSP included) from a buffer, runs them
  unchanged (the memory operand's own addressing, its registers pointing at a host buffer mapped at the same
  address as the guest's page) and stores every register back.
For the forms preemu runs on the host (hostexec.py) this checks the marshalling: which registers move, the
memory operand's redirection and write-back, flags and MXCSR; for the rest it checks Unicorn or the Python.
A form is "exact" (every sample equal), "wrong" (one differed: the first difference shown), "refused"
(preemu refuses it: the reason) or "untested" (no state reaches its address: index-only addressing).
Needs an AVX-512 host (the native side loads ZMM0-31 and K0-7) and GNU as for the synthetic forms.
--docs rewrites the table between the avx-diff markers of docs/reference/cpu-levels.md (DOC; --readme is
the old name of the option). --sse checks the legacy SSE forms of the
same binaries instead (Unicorn runs those itself at every level: a measurement, not preemu's executor; MXCSR's
exception flags, which Unicorn never sets, are left out of that comparison).
"""
from __future__ import annotations

import ctypes
import os
import random
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the page whose table --docs rewrites, between these markers (tests/test_docs.py checks they are there)
DOC = ROOT / "docs" / "reference" / "cpu-levels.md"
MARKERS = ("<!-- avx-diff -->", "<!-- /avx-diff -->")
sys.path.insert(0, str(ROOT))

import capstone  # noqa: E402
from unicorn import UC_ARCH_X86, UC_HOOK_INTR, UC_MODE_64, Uc, UcError  # noqa: E402
from unicorn import x86_const as X  # noqa: E402

from emu.core import cpulevel  # noqa: E402
from emu.engine import avx, hostcpu, hostexec  # noqa: E402
from emu.engine.avxexec import prefix_kind  # noqa: E402
from emu.engine.hostcpu import ARITH, FLAGS, GPR, GPR_NAMES, HOST_MXCSR, KREG, MXCSR, ZREG  # noqa: E402

GO = "/work/main/.venv/lib/python3.11/site-packages/go/bin/go"
PACKAGES = ("runtime", "crypto/sha256", "crypto/sha1", "crypto/sha512", "crypto/aes", "crypto/cipher", "hash/crc32",
            "encoding/base64", "math", "slices", "strings", "bytes", "hash/maphash",
            # with amd64 assembly of their own (MULX/ADX, AES-GCM, ChaCha8, MD5)
            "crypto/md5", "crypto/internal/fips140/bigmod", "crypto/internal/fips140/nistec",
            "crypto/internal/fips140/edwards25519/field", "crypto/internal/fips140/aes/gcm", "internal/chacha8rand",
            "math/big",
            # Go code the compiler vectorises or that calls the runtime's and bytealg's AVX paths
            "crypto/sha3", "crypto/hmac", "crypto/ecdh", "crypto/ed25519", "crypto/subtle", "crypto/mlkem", "math/bits",
            "hash/crc64", "hash/adler32", "hash/fnv", "encoding/hex", "encoding/json", "strconv", "unicode/utf8", "sort",
            "regexp", "compress/flate")
#: packages that build only with GOEXPERIMENT=simd (the archsimd API's tests: masked stores, compress, ...)
SIMD_PACKAGES = ("simd", "simd/archsimd/internal/simd_test")
BUILD = Path("/tmp/avxdiff")
SSE_BINARIES = ("runtime_v3.test", "math_v3.test", "strings_v3.test", "crypto_aes_v3.test", "crypto_sha256_v3.test",
                "hash_crc32_v3.test", "slices_v3.test", "crypto_cipher_v3.test")
NATIVE_STATE, HBUF, STACK_TOP = 0xFF0000, 0xE00000, 0xFE0000       # offsets in hostcpu's arena, past its code
SAVED_RSP, TMP = 0x190, 0x198
EA_OFF = 0x800                                                      # the memory operand's address in HBUF's page
_md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_md.detail = True
UC_GPR = [getattr(X, f"UC_X86_REG_{r.upper()}") for r in GPR_NAMES]
UC_ZMM = [getattr(X, f"UC_X86_REG_ZMM{i}") for i in range(32)]


# --- the native reference ----------------------------------------------------------------------------------
class Native:
    """Routines running an instruction's own bytes with every register loaded from the state page at
    NATIVE_STATE (RSP too: the instruction runs on the guest's RSP, which the states keep inside the arena)."""

    def __init__(self):
        self.h = hostcpu.get()
        self.s = self.h.base + NATIVE_STATE
        self._cache = {}
        h = self.h
        others = [(i, r) for i, r in enumerate(GPR_NAMES) if r not in ("rsp", "rdi")]
        asm = hostcpu._asm
        self.pro = asm(f"push rbx; push rbp; push r12; push r13; push r14; push r15; "
                       f"mov qword ptr [rdi + {SAVED_RSP}], rsp; stmxcsr dword ptr [rdi + {HOST_MXCSR}]; "
                       f"ldmxcsr dword ptr [rdi + {MXCSR}]")
        self.pro += b"".join(hostcpu._evex_zmm(n, ZREG + 64 * n, False) for n in range(32))
        self.pro += b"".join(hostcpu._kmovq(n, KREG + 8 * n, False) for n in range(8))
        self.pro += asm(f"push qword ptr [rdi + {FLAGS}]; popfq; mov rsp, qword ptr [rdi + {GPR + 32}]; "
                        + "; ".join(f"mov {r}, qword ptr [rdi + {GPR + 8 * i}]" for i, r in others)
                        + f"; mov rdi, qword ptr [rdi + {GPR + 56}]")
        self.epi = asm(f"movabs qword ptr [{self.s + TMP}], rax; movabs rax, {self.s}; "
                       + "; ".join(f"mov qword ptr [rax + {GPR + 8 * i}], {r}" for i, r in enumerate(GPR_NAMES) if i)
                       + f"; mov rsp, qword ptr [rax + {SAVED_RSP}]; pushfq; pop rcx; mov qword ptr [rax + {FLAGS}], rcx;"
                       f" mov rcx, qword ptr [rax + {TMP}]; mov qword ptr [rax + {GPR}], rcx; mov rdi, rax; "
                       f"stmxcsr dword ptr [rdi + {MXCSR}]")
        self.epi += b"".join(hostcpu._evex_zmm(n, ZREG + 64 * n, True) for n in range(32))
        self.epi += b"".join(hostcpu._kmovq(n, KREG + 8 * n, True) for n in range(8))
        self.epi += asm(f"ldmxcsr dword ptr [rdi + {HOST_MXCSR}]; vzeroupper; "
                        "pop r15; pop r14; pop r13; pop r12; pop rbp; pop rbx; ret")
        assert h.wide, "the native reference needs an AVX-512 host"

    def place(self, code: bytes) -> tuple[object, int]:
        """(routine, the instruction's address) for `code`."""
        got = self._cache.get(code)
        if got is None:
            fn, at = self.h._place(self.pro + code + self.epi)
            got = self._cache[code] = (fn, self.h.base + at + len(self.pro))
        return got

    def run(self, fn, st: dict) -> dict:
        mm, o = self.h.mm, NATIVE_STATE
        for i, v in enumerate(st["gpr"]):
            mm[o + GPR + 8 * i:o + GPR + 8 * i + 8] = v.to_bytes(8, "little")
        mm[o + FLAGS:o + FLAGS + 8] = (0x202 | st["flags"]).to_bytes(8, "little")
        mm[o + MXCSR:o + MXCSR + 4] = st["mxcsr"].to_bytes(4, "little")
        for i, v in enumerate(st["zmm"]):
            mm[o + ZREG + 64 * i:o + ZREG + 64 * i + 64] = v.to_bytes(64, "little")
        for i, v in enumerate(st["k"]):
            mm[o + KREG + 8 * i:o + KREG + 8 * i + 8] = v.to_bytes(8, "little")
        mm[HBUF:HBUF + 4096] = st["mem"]
        fn(self.s)
        return {"gpr": [int.from_bytes(mm[o + GPR + 8 * i:o + GPR + 8 * i + 8], "little") for i in range(16)],
                "flags": int.from_bytes(mm[o + FLAGS:o + FLAGS + 8], "little") & ARITH,
                "mxcsr": int.from_bytes(mm[o + MXCSR:o + MXCSR + 4], "little"),
                "zmm": [int.from_bytes(mm[o + ZREG + 64 * i:o + ZREG + 64 * i + 64], "little") for i in range(32)],
                "k": [int.from_bytes(mm[o + KREG + 8 * i:o + KREG + 8 * i + 8], "little") for i in range(8)],
                "mem": bytes(mm[HBUF:HBUF + 4096])}


# --- preemu's side -------------------------------------------------------------------------------------------
class Guest:
    """A Unicorn engine with the instruction at `at` (the native routine's address) and the host buffer's page
    mapped at its host address, run through a VectorUnit at `level`."""

    def __init__(self, code: bytes, at: int, level: str, hbuf: int):
        self.uc = uc = Uc(UC_ARCH_X86, UC_MODE_64)
        self.at, self.code, self.hbuf = at, code, hbuf
        page = at & ~0xFFF
        uc.mem_map(page, 0x2000)
        uc.mem_write(at, code + b"\x90")
        uc.mem_map(hbuf, 0x1000)
        self.unit = avx.VectorUnit(uc, cpulevel.level(level))
        self.unit.patch([(at, code)])
        uc.hook_add(UC_HOOK_INTR, lambda uc, n, _: (self.unit.trap() and self.unit.error is None
                                                    and self.unit.fault is None) or uc.emu_stop())

    def run(self, st: dict) -> dict | str:
        uc, unit = self.uc, self.unit
        unit.error = unit.fault = None
        for i, v in enumerate(st["gpr"]):
            uc.reg_write(UC_GPR[i], v)
        uc.reg_write(X.UC_X86_REG_EFLAGS, 0x202 | st["flags"])
        uc.reg_write(X.UC_X86_REG_MXCSR, st["mxcsr"])
        for i, v in enumerate(st["zmm"]):
            uc.reg_write(UC_ZMM[i], v)
        unit.set_kregs(st["k"])
        uc.mem_write(self.hbuf, st["mem"])
        try:
            uc.emu_start(self.at, self.at + len(self.code))
        except UcError as e:
            return f"engine: {e}"
        if unit.error is not None:
            return f"refused: {unit.error}"
        if unit.fault is not None:
            return f"fault: {unit.fault}"
        return {"gpr": [uc.reg_read(r) for r in UC_GPR], "flags": uc.reg_read(X.UC_X86_REG_EFLAGS) & ARITH,
                "mxcsr": uc.reg_read(X.UC_X86_REG_MXCSR), "zmm": [uc.reg_read(r) for r in UC_ZMM],
                "k": list(unit.kregs()), "mem": bytes(uc.mem_read(self.hbuf, 4096))}


# --- random states --------------------------------------------------------------------------------------------
_SPECIAL64 = [0, 1, 2, 31, 32, 63, 64, 65, 127, 128, 255, 256, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 63,
              (1 << 64) - 1, (1 << 63) - 1]
_SPECIAL_D = [0, 1 << 63, 0x3FF0000000000000, 0xBFF8000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
              0x7FF8000000000001, 0xFFF8000000000123, 0x7FF0000000000001, 0x0000000000000001, 0x000FFFFFFFFFFFFF,
              0x7FEFFFFFFFFFFFFF, 0x4340000000000000, 0xC3E0000000000000]
_SPECIAL_F = [0, 1 << 31, 0x3F800000, 0xBFC00000, 0x7F800000, 0xFF800000, 0x7FC00001, 0xFFC00123, 0x7F800001,
              0x00000001, 0x007FFFFF, 0x7F7FFFFF, 0x4F000000, 0xCF000000]


def _chunk(rnd: random.Random) -> int:
    """8 random bytes, or special doubles/floats/integers."""
    r = rnd.random()
    if r < 0.45:
        return rnd.getrandbits(64)
    if r < 0.65:
        return rnd.choice(_SPECIAL_D)
    if r < 0.85:
        return rnd.choice(_SPECIAL_F) | rnd.choice(_SPECIAL_F) << 32
    return rnd.choice(_SPECIAL64)


def random_state(rnd: random.Random, level: str) -> dict:
    mx = 0x1F80
    if rnd.random() < 0.4:
        mx |= rnd.getrandbits(2) << 13 | rnd.getrandbits(1) << 15 | rnd.getrandbits(1) << 6 | rnd.getrandbits(6)
    mem = bytearray(rnd.getrandbits(8) for _ in range(4096))
    for off in range(EA_OFF, EA_OFF + 64, 8):
        mem[off:off + 8] = _chunk(rnd).to_bytes(8, "little")
    return {"gpr": [rnd.choice(_SPECIAL64) if rnd.random() < 0.3 else rnd.getrandbits(64) for _ in range(16)],
            "flags": rnd.getrandbits(12) & ARITH, "mxcsr": mx,
            "zmm": [sum(_chunk(rnd) << (64 * j) for j in range(8)) for _ in range(32)],
            "k": [rnd.getrandbits(64) if level == "v4" else 0 for _ in range(8)], "mem": bytes(mem)}


# --- forms ------------------------------------------------------------------------------------------------------
_GPR_CLASS = {**{r: "r64" for r in GPR_NAMES}, **{r + "d": "r32" for r in GPR_NAMES[8:]},
              **{n: "r32" for n in ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")}}


_SSE_GROUPS = {"sse1", "sse2", "sse3", "ssse3", "sse41", "sse42", "aes", "pclmul", "sha"}


def form_of(insn, sse: bool = False) -> str | None:
    """`mnemonic` `evex:`/`vex:` and operand kinds, or None when the instruction is not one this check covers
    (`sse`: the legacy SSE forms instead, which Unicorn runs at every level)."""
    code = bytes(insn.bytes)
    kind = prefix_kind(code)[0]
    if sse:
        if kind or not {insn.group_name(g) for g in insn.groups} & _SSE_GROUPS:
            return None
    elif not kind and insn.mnemonic not in avx.LEGACY:       # ADX and SHA-NI: sites too
        return None
    kinds = []
    for o in insn.operands:
        if o.type == capstone.x86.X86_OP_REG:
            n = insn.reg_name(o.reg)
            kinds.append(n[:3] if n[:3] in ("xmm", "ymm", "zmm") else "k" if re.fullmatch(r"k\d", n) else
                         _GPR_CLASS.get(n, "r"))
        elif o.type == capstone.x86.X86_OP_MEM:
            kinds.append(f"m{o.size * 8}")
        else:
            kinds.append("imm")
    s = insn.op_str
    extra = "".join(t for t in ("{1to", "{z}", "-sae}") if t in s)
    if re.search(r"\{k[1-7]\}", s):
        extra += "{k}"
    return f"{insn.mnemonic} {kind or 'legacy'}: {', '.join(kinds)} {extra}".strip()


def _usable(insn) -> int:
    """How good an instance is as its form's representative: 2 base-register addressing, 1 RIP-relative,
    0 none usable (index only)."""
    mems = [o for o in insn.operands if o.type == capstone.x86.X86_OP_MEM]
    if not mems:
        return 2
    m = mems[0].mem
    if m.base == capstone.x86.X86_REG_RIP:
        return 1
    return 2 if m.base and m.base != m.index else 0


_lite = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)


def _sse_candidates(code: bytes, start: int):
    """The instructions of `code` that may be SSE (an 0F opcode naming an XMM register), decoded in detail."""
    for a, n, mn, op in _lite.disasm_lite(code, start):
        if "xmm" in op:
            yield next(_md.disasm(code[a - start:a - start + n], a, 1))


def collect(binaries, sse: bool = False) -> dict[str, tuple[bytes, str, int]]:
    """form -> (a representative instance's bytes, the level it needs, how many instances) over `binaries`."""
    from emu.linux import elfimage
    forms: dict[str, list] = {}
    for path, level in binaries:
        for start, code in elfimage.load(str(path)).functions():
            if not sse and not any(b in code for b in avx._SCAN_BYTES):
                continue
            for insn in (_sse_candidates(code, start) if sse else _md.disasm(code, start)):
                f = form_of(insn, sse)
                if f is None:
                    continue
                need = level_of(hostexec.features_of(insn, f.split(" ", 2)[1] == "evex:"))
                got = forms.get(f)
                if got is None:
                    forms[f] = [bytes(insn.bytes), need, 1, _usable(insn)]
                else:
                    got[2] += 1
                    if _usable(insn) > got[3]:
                        got[0], got[3] = bytes(insn.bytes), _usable(insn)
    return {f: (v[0], v[1], v[2]) for f, v in forms.items()}


def level_of(features) -> str:
    """The lowest AVX level whose CPU (core/cpuid.py) has `features` (v4 when none has: refused there, naming it)."""
    return next((lv for lv in ("v3", "v4") if features <= hostcpu.guest_features(cpulevel.level(lv))), "v4")


def binaries():
    """The test binaries, built once: each package at v3 and v4, as the toolchain builds them by default and with
    GOEXPERIMENT=simd (what preemu's own builds at v3/v4 set: gobuild.LEVEL_ENV; the runtime's AES hash is VEX
    then)."""
    BUILD.mkdir(exist_ok=True)
    out = []
    for level in ("v3", "v4"):
        for simd in ("", "simd"):
            for pkg in PACKAGES + (SIMD_PACKAGES if simd else ()):
                path = BUILD / f"{pkg.replace('/', '_')}_{level}{simd}.test"
                if not path.exists():
                    env = {**os.environ, "GOAMD64": level, "CGO_ENABLED": "0"}
                    if simd:
                        env["GOEXPERIMENT"] = "simd"
                    subprocess.run([GO, "test", "-c", "-o", str(path), pkg], check=True, capture_output=True, env=env)
                out.append((path, level))
    return out


SYNTHETIC = ROOT / "bench" / "data" / "avx_forms.s"


def synthetic(forms: dict) -> dict[str, tuple[bytes, str, int]]:
    """bench/data/avx_forms.s (GNU as) assembled, each instruction a form not already among `forms`, marked
    `(synthetic)`; {} when no `as` is installed."""
    import shutil
    import tempfile
    if not shutil.which("as") or not shutil.which("objcopy"):
        print("no GNU as: the synthetic forms are left out")
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        obj, raw = Path(tmp) / "f.o", Path(tmp) / "f.bin"
        subprocess.run(["as", "-o", str(obj), str(SYNTHETIC)], check=True)
        subprocess.run(["objcopy", "-O", "binary", "-j", ".text", str(obj), str(raw)], check=True)
        code = raw.read_bytes()
    out = {}
    for insn in _md.disasm(code, 0):
        f = form_of(insn)
        if f is None or f in forms:
            continue
        need = level_of(hostexec.features_of(insn, "evex:" in f))
        out[f + " (synthetic)"] = (bytes(insn.bytes), need, 0)
    return out


# --- one form ---------------------------------------------------------------------------------------------------
def prepare(code: bytes, nat: Native):
    """(bytes to run, routine, instruction address, how to aim a state's registers at the buffer) or None."""
    insn = next(_md.disasm(code, 0, 1))
    mems = [o for o in insn.operands if o.type == capstone.x86.X86_OP_MEM]
    ea = nat.h.base + HBUF + EA_OFF
    if insn.mnemonic == "vmaskmovdqu" or "gather" in insn.mnemonic or "scatter" in insn.mnemonic \
            or 0x67 in code[:prefix_kind(code)[1]]:
        return None                                 # implicit [rdi], VSIB or 32-bit addressing: not aimed here
    if not mems:
        fn, at = nat.place(code)
        return code, fn, at, None
    m = mems[0].mem
    if m.base == capstone.x86.X86_REG_RIP:          # its disp re-aimed at the buffer from where it will sit
        at = nat.h.base + nat.h._top + len(nat.pro)
        new = bytearray(code)
        new[insn.disp_offset:insn.disp_offset + 4] = ((ea - (at + len(code))) & 0xFFFFFFFF).to_bytes(4, "little")
        fn, start = nat.h._place(nat.pro + bytes(new) + nat.epi)
        assert nat.h.base + start + len(nat.pro) == at
        return bytes(new), fn, at, None
    if not m.base or m.base == m.index:
        return None
    base = GPR_NAMES.index(_full(insn.reg_name(m.base)))
    index = GPR_NAMES.index(_full(insn.reg_name(m.index))) if m.index else None
    fn, at = nat.place(code)

    def aim(st: dict) -> None:
        g = st["gpr"]
        if index is not None:
            g[index] = st["gpr"][index] & 0xFF
        g[base] = (ea - m.disp - (g[index] * m.scale if index is not None else 0)) & ((1 << 64) - 1)
    return code, fn, at, aim


def _full(name: str) -> str:
    return {"eax": "rax", "ecx": "rcx", "edx": "rdx", "ebx": "rbx", "esp": "rsp", "ebp": "rbp", "esi": "rsi",
            "edi": "rdi"}.get(name, name.rstrip("d"))


def check_form(code: bytes, level: str, samples: int, nat: Native, seed: int = 1,
               sticky: bool = True) -> tuple[str, str]:
    """("exact"|"wrong"|"refused"|"untested", detail) for one instruction over `samples` random states."""
    prep = prepare(code, nat)
    if prep is None:                       # preemu may still refuse it (never run natively: its address is not aimed)
        _, at = nat.place(code)
        got = Guest(code, at, level, nat.h.base + HBUF).run(random_state(random.Random(seed), level))
        if isinstance(got, str) and got.startswith("refused"):
            return "refused", got
        return "untested", "no state aims its address here (index-only, VSIB, 32-bit or implicit addressing)"
    code2, fn, at, aim = prep
    guest = Guest(code2, at, level, nat.h.base + HBUF)
    rnd = random.Random(seed)
    for _ in range(samples):
        st = random_state(rnd, level)
        st["gpr"][4] = nat.h.base + STACK_TOP
        if aim:
            aim(st)
        if not (nat.h.base + hostcpu.CODE_END <= st["gpr"][4] <= nat.h.base + STACK_TOP):
            return "untested", "its RSP-based address leaves the arena"
        got = guest.run({**st, "gpr": list(st["gpr"]), "zmm": list(st["zmm"]), "k": list(st["k"])})
        if isinstance(got, str):
            if got.startswith("engine") and "INSN_INVALID" in got and insn_mnemonic(code) in ("adcx", "adox"):
                return "refused", "invalid opcode, as on the CPU at every level (no ADX in its CPUID)"
            return ("refused" if got.startswith("refused") else "wrong"), got
        want = nat.run(fn, st)
        if not sticky:                     # MXCSR's exception flags left out of the comparison
            want["mxcsr"] &= ~0x3F
            got["mxcsr"] &= ~0x3F
        diff = compare(want, got)
        if diff:
            return "wrong", diff
    return "exact", ""


def compare(want: dict, got: dict) -> str:
    for i in range(16):
        if want["gpr"][i] != got["gpr"][i]:
            return f"{GPR_NAMES[i]}: native {want['gpr'][i]:#x}, preemu {got['gpr'][i]:#x}"
    if want["flags"] != got["flags"]:
        return f"flags: native {want['flags']:#x}, preemu {got['flags']:#x}"
    if want["mxcsr"] != got["mxcsr"]:
        return f"mxcsr: native {want['mxcsr']:#x}, preemu {got['mxcsr']:#x}"
    for i in range(32):
        if want["zmm"][i] != got["zmm"][i]:
            return f"zmm{i}: native {want['zmm'][i]:#x}, preemu {got['zmm'][i]:#x}"
    for i in range(8):
        if want["k"][i] != got["k"][i]:
            return f"k{i}: native {want['k'][i]:#x}, preemu {got['k'][i]:#x}"
    if want["mem"] != got["mem"]:
        at = next(i for i in range(4096) if want["mem"][i] != got["mem"][i])
        return f"memory at +{at:#x}: native {want['mem'][at]:#x}, preemu {got['mem'][at]:#x}"
    return ""


def insn_mnemonic(code: bytes) -> str:
    return next(_md.disasm(code, 0, 1)).mnemonic


def text_of(code: bytes) -> str:
    i = next(_md.disasm(code, 0, 1))
    return f"{i.mnemonic} {i.op_str}"


def table(results: list) -> str:
    counts = defaultdict(int)
    for _, _, v, _ in results:
        counts[v] += 1
    lines = [f"{len(results)} forms: " + ", ".join(f"{counts[k]} {k}" for k in ("exact", "refused", "wrong", "untested")),
             "", "| verdict | forms | example / reason |", "|---|---|---|"]
    by = defaultdict(list)
    for form, code, v, detail in results:
        by[v].append((form, code, detail))
    for v in ("wrong", "refused", "untested"):
        for form, code, detail in by[v]:
            why = re.sub(r" at 0x[0-9a-f]+: .*$", "", detail.removeprefix("refused: ")).replace("|", "/")
            lines.append(f"| {v} | `{form}` | {why[:160]} |")
    ex = sorted({f.split(' ', 1)[0] for f, _, _ in by['exact']})
    lines.append(f"| exact | {len(by['exact'])} | {', '.join(ex)} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    samples = int(argv[argv.index("--samples") + 1]) if "--samples" in argv else 200
    if "--sse" in argv:                    # Unicorn's own legacy SSE, measured (not a site at any level)
        forms = collect([b for b in binaries() if b[0].name in SSE_BINARIES], sse=True)
    else:
        forms = collect(binaries())
        forms.update(synthetic(forms))
    nat = Native()
    results = []
    for form in sorted(forms):
        code, level, n = forms[form]
        verdict, detail = check_form(code, level, samples, nat, sticky="--sse" not in argv)
        results.append((form, code, verdict, detail))
        if verdict != "exact":
            print(f"{verdict:8s} {form:60s} {text_of(code)}  {detail[:150]}", flush=True)
    out = table(results)
    print(out)
    if ("--docs" in argv or "--readme" in argv) and "--sse" not in argv:
        s = DOC.read_text()
        a, b = MARKERS
        s = s[:s.index(a) + len(a)] + "\n" + out + "\n" + s[s.index(b):]
        DOC.write_text(s)
    return 1 if any(v == "wrong" for _, _, v, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
