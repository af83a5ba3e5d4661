"""Verification (not a test, slow): emu/front/gobinary.py against the compiler's listing of EVERY Go function in
a binary, runtime and standard library included. Builds tests/go/corpus with `-gcflags=all=-S` (compiles
the whole standard library once with listings, a few minutes; ~90 MB of listing) and compares, for every
listed function that matches a binary function by code bytes: UnsafePoint, StackMapIndex, pcsp and file:line
at every instruction, and args/funcid. Run: `.venv/bin/python bench/verify_gobinary.py`.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from golisting import machine_sp_deltas, parse_listing  # noqa: E402

from emu.front import gobinary, gobuild, gopclntab  # noqa: E402


def code_matches(b: gobinary.GoBinary, f: gopclntab.GoFunc, lf) -> bool:
    if f.size != lf.size or len(lf.code) != lf.size:
        return False
    code = bytearray(b.read(f.entry, f.size))
    for off, size in lf.relocs:
        code[off:off + size] = lf.code[off:off + size]
    return bytes(code) == bytes(lf.code)


def asm_sp_mismatches(b: gobinary.GoBinary) -> tuple[int, int, list]:
    """pcsp of assembly functions (no listing) against SP simulated over their machine code
    (golisting.machine_sp_deltas). Skipped: SPWRITE
    functions (they write SP in ways pcsp cannot say) and those with a morestack stub (its delta-0 marker
    is invisible in machine code)."""
    import capstone
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    funcs = insns = 0
    bad = []
    for f in b.funcs:
        if not f.is_asm or f.flag & gopclntab.FUNC_FLAG_SPWRITE or not f.pcsp:
            continue
        code = b.read(f.entry, f.size)
        decoded = list(md.disasm(code, f.entry))
        if sum(i.size for i in decoded) != f.size or any(
                i.mnemonic == "call" and b.func_for(int(i.op_str, 16) if i.op_str.startswith("0x") else 0)
                and b.func_for(int(i.op_str, 16)).name.startswith("runtime.morestack") for i in decoded):
            continue
        funcs += 1
        for i, sp in zip(decoded, machine_sp_deltas(decoded)):
            insns += 1
            got = b.sp_delta(f, i.address)
            if got != sp:
                bad.append((f.name, hex(i.address - f.entry), i.mnemonic, i.op_str, got, sp))
    return funcs, insns, bad


def tail(path: str) -> str:
    return path.split("/go/src/")[-1]


def main() -> int:
    t0 = time.perf_counter()
    r = gobuild.build(ROOT / "tests" / "go" / "corpus", "all=-S")
    print(f"build: {time.perf_counter() - t0:.1f} s ({'cached' if r.cached else 'compiled'}), "
          f"listing {len(r.listing) / 1e6:.0f} MB")
    t0 = time.perf_counter()
    listed = parse_listing(r.listing)
    print(f"parse: {time.perf_counter() - t0:.1f} s, {sum(map(len, listed.values()))} listed functions")
    b = gobinary.GoBinary.open(r.binary)
    funcs = insns = 0
    unmatched, bad = [], []
    for f in b.funcs:
        cands = [lf for lf in listed.get(f.name, []) if code_matches(b, f, lf)]
        if not cands:
            unmatched.append(f.name)
            continue
        lf = cands[0]
        funcs += 1
        if (f.args, f.funcid) != (lf.args, lf.funcid):
            bad.append((f.name, "header", (f.args, f.funcid), (lf.args, lf.funcid)))
        for ins in lf.insns:
            pc = f.entry + ins.off
            insns += 1
            got = (b.unsafe_point(f, pc), b.pcdata_value(f, gopclntab.PCDATA_StackMapIndex, pc), b.sp_delta(f, pc))
            want = (ins.pcdata.get(0, -1), ins.pcdata.get(1, -1), ins.sp)
            file, line = b.file_line(f, pc)
            if got != want or (ins.line and (line, tail(file)) != (ins.line, tail(ins.file))):
                bad.append((f.name, hex(ins.off), got + (file, line), want + (ins.file, ins.line)))
    print(f"compared {insns:,} instructions in {funcs:,} functions; {len(unmatched)} binary functions "
          f"without a matching listing (assembly, linker-made); {len(bad)} disagreements")
    for item in bad[:20]:
        print("  ", item)
    afuncs, ainsns, abad = asm_sp_mismatches(b)
    print(f"assembly pcsp: {ainsns:,} instructions in {afuncs} functions simulated; {len(abad)} disagreements")
    for item in abad[:20]:
        print("  ", item)
    return 1 if bad or abad else 0


if __name__ == "__main__":
    sys.exit(main())
