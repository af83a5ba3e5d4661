"""Property test: random loops from a safe instruction subset sweep clean with both stub layouts.

hypothesis generates the loop bodies (ALU with flags, shifts, CMOV/SETcc, SSE integer and float
ops, REP string ops on a scratch buffer, DF set and cleared); a failing program is shrunk to a
minimal one and printed. Derandomized, so CI runs are reproducible. Every program is also swept
with a stub that does not restore R15 (the loop counter, live at every boundary): that must fail,
naming R15.
"""
import re
import tempfile
from pathlib import Path

from conftest import assemble
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu.drive import loader, sweeper as sweep
from emu.core import stubgen

BROKEN = Path(tempfile.mkdtemp(prefix="preemu-prop-")) / "no_r15_restore.s"
BROKEN.write_text(re.sub(r"^ +mov r15, qword ptr .*\n", "", stubgen.stub_path("go1.14").read_text(), flags=re.M))

GPR = ["rax", "rbx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13"]
GPR8 = {"rax": "al", "rbx": "bl", "rdx": "dl", "r8": "r8b", "r9": "r9b", "r10": "r10b", "r11": "r11b",
        "r12": "r12b", "r13": "r13b"}
XMM = [f"xmm{i}" for i in range(15)]
r = st.sampled_from(GPR)
x = st.sampled_from(XMM)

alu = st.builds(lambda op, a, b: f"{op} {a}, {b}", st.sampled_from(["add", "sub", "adc", "sbb", "xor", "and", "or",
                                                                    "imul", "cmp", "test"]), r, r)
alu_imm = st.builds(lambda op, a, v: f"{op} {a}, {v}", st.sampled_from(["add", "sub", "xor", "and", "or", "adc"]), r,
                    st.integers(-2**31, 2**31 - 1))
shift = st.builds(lambda op, a, n: f"{op} {a}, {n}", st.sampled_from(["shl", "shr", "sar", "rol", "ror"]), r,
                  st.integers(1, 63))
cmov = st.builds(lambda cc, a, b: f"cmov{cc} {a}, {b}", st.sampled_from(["z", "nz", "c", "nc", "s", "o", "be"]), r, r)
setcc = st.builds(lambda cc, a: f"set{cc} {GPR8[a]}", st.sampled_from(["z", "c", "s", "o", "a", "l"]), r)
flags = st.sampled_from(["stc", "clc", "cmc"])
sse = st.builds(lambda op, a, b: f"{op} {a}, {b}", st.sampled_from(["paddq", "pxor", "psubd", "paddb", "pmullw",
                                                                    "addsd", "mulsd", "subpd", "por", "pand"]), x, x)
shuf = st.builds(lambda a, b, i: f"pshufd {a}, {b}, {i}", x, x, st.integers(0, 255))
movq = st.builds(lambda a, b: f"movq {a}, {b}", x, r)
rep = st.builds(lambda op, n, down: (["std"] if down else []) +
                [f"lea rdi, [buf + {255 if down else 0}]", f"lea rsi, [buf + {511 if down else 256}]",
                 f"mov ecx, {n}", f"rep {op}"] + (["cld"] if down else []),
                st.sampled_from(["stosb", "movsb"]), st.integers(0, 12), st.booleans())
insn = st.one_of(alu, alu_imm, shift, cmov, setcc, flags, sse, shuf, movq).map(lambda s: [s])
body = st.lists(st.one_of(insn, insn, insn, rep), min_size=1, max_size=8)


def program(blocks: list[list[str]], iterations: int) -> str:
    lines = [";@data buf 512 0x33", "prop:", f"    mov r15d, {iterations}", ".loop:"]
    lines += [f"    {i}" for b in blocks for i in b]
    lines += ["    dec r15", "    jnz .loop", "    ret"]
    return "\n".join(lines) + "\n"


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(body, st.integers(1, 3))
def test_random_loops_sweep_clean_with_both_layouts(blocks, iterations):
    src = program(blocks, iterations)
    prog = assemble(src)
    for lay in ("go1.14", "go1.27"):
        w = loader.build_world(prog, "prop", lay)
        res = sweep.sweep(w, "prop", max_points=400)
        assert res.ok, f"{lay}: {res.violations[0].describe()}\n{src}"
        assert res.injected == res.points
    w = loader.build_world(prog, "prop", "go1.14", BROKEN)
    res = sweep.sweep(w, "prop", max_points=400)
    assert {(v.kind, v.what) for v in res.violations} == {("register", "R15")}, src
    assert res.violation_count == res.injected == res.points
