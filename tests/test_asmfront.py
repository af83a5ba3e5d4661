"""The assembler front end: line mapping, directives, Keystone pitfalls, and file:line errors."""
import pytest
from conftest import ASM, assemble, sweep_text

from emu.core import memmap
from emu.core.errors import AsmError


def test_a_file_without_directives_assembles_and_every_instruction_maps_to_its_line():
    prog = assemble("f:\n  mov eax, 1\n\n.l:\n  add eax, 2   ; comment\n  jnz .l\n  ret\n")
    f = prog.get_func("f")
    assert [(i.line, i.mnemonic) for i in f.insns] == [(2, "mov"), (5, "add"), (6, "jne"), (7, "ret")]
    assert f.goname == "main.f" and not f.asm and not f.nosplit
    assert not any(i.unsafe for i in f.insns)


def test_decimal_immediates_stay_decimal():
    # Keystone's sym_resolver would read 368 as 0x368 (emu/FACTS.md §9 item 1); we never install one.
    prog = assemble("f:\n  sub rsp, 368\n  add rsp, 368\n  ret\n")
    assert prog.get_func("f").insns[0].op_str == "rsp, 0x170"


def test_absolute_loads_into_any_register_really_read_that_address():
    # Keystone 0.9.2 encodes `mov rcx, [ADDR]` RIP-relative with ADDR as displacement; we patch it.
    prog = assemble(";@data buf 8 0x11\nf:\n  mov rcx, qword ptr [buf]\n  mov rsp, qword ptr [buf]\n;@spdelta 0\n  ret\n")
    for i in prog.get_func("f").insns[:2]:
        disp = int(i.op_str.split("rip + ")[1].rstrip("]"), 16)
        assert i.addr + i.size + disp == memmap.DATA_BASE


def test_loads_from_data_symbols_execute_correctly():
    res = sweep_text(";@data buf 8 0x22\nf:\n  mov rdx, qword ptr [buf]\n  mov rax, rdx\n  ret\n", "f")
    assert res.reference.final.values["RAX"] == 0x2222222222222222
    assert res.ok


def test_sp_delta_is_inferred_from_pushes_frames_and_leave():
    prog = assemble("f:\n push rbp\n mov rbp, rsp\n sub rsp, 24\n nop\n leave\n ret\n")
    assert [i.sp_delta for i in prog.get_func("f").insns] == [0, 8, 8, 32, 32, 0]
    assert prog.get_func("f").max_sp_delta == 32


def test_directives_mark_unsafe_ranges_asm_nosplit_goname_and_inlining():
    prog = assemble(";@asm\n;@goname runtime.memmove\nmv:\n ret\n"
                    "g:\n;@nosplit\n nop\n ret\n"
                    "h:\n nop\n;@unsafe\n nop\n;@safe\n;@inline runtime.add\n nop\n;@inline-end\n ret\n")
    mv, g, h = prog.get_func("mv"), prog.get_func("g"), prog.get_func("h")
    assert mv.asm and mv.goname == "runtime.memmove"
    assert g.nosplit and all(i.unsafe for i in g.insns)
    assert [i.unsafe for i in h.insns] == [False, True, False, False]
    assert [i.inline for i in h.insns] == [None, None, "runtime.add", None]


def test_explicit_spdelta_is_needed_after_an_untrackable_rsp_write():
    with pytest.raises(AsmError) as e:
        assemble("f:\n mov rsp, rbx\n nop\n ret\n", "odd.s")
    assert "odd.s:3:" in str(e.value) and ";@spdelta" in str(e.value)
    prog = assemble("f:\n mov rsp, rbx\n;@spdelta 0\n nop\n ret\n")
    assert prog.get_func("f").insns[1].sp_delta == 0


@pytest.mark.parametrize("src,line,words", [
    ("f:\n nop\n frob rax\n ret\n", 3, "frob"),
    ("f:\n nop\n jmp nowhere\n ret\n", 3, "nowhere"),
    ("f:\n mov rax, [rbx+rcx*3]\n ret\n", 2, "rcx*3"),
    ("f:\n ;@bogus\n ret\n", 2, "unknown directive"),
    ("f:\n ret\nf:\n ret\n", 3, "defined twice"),
    ("  nop\nf:\n ret\n", 1, "before the first function"),
    ("f:\n.x:\n nop\n.x:\n ret\n", 4, "defined twice"),
    ("f:\n jmp .y\n.x:\n ret\ng:\n.y:\n ret\n", 2, ".y"),
    ("f:\n .p2align 4\n", 2, "not supported"),
    ("f:\n .byte 1\n", 2, "exactly one instruction"),
    ("goexit:\n ret\n", 1, "predefined"),
])
def test_assembly_errors_name_file_and_line(src, line, words):
    with pytest.raises(AsmError) as e:
        assemble(src, "bad.s")
    assert e.value.file == "bad.s" and e.value.line == line, str(e.value)
    assert words in str(e.value)


def test_every_corpus_file_assembles():
    from emu.drive import loader
    for p in sorted(ASM.glob("*.s")):
        if p.name.startswith("preempt_amd64"):
            loader.load_stub(p.stem.split("_")[-1].replace("go1", "go1."), p)
        else:
            assert loader.load_program(p).funcs
