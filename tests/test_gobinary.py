"""emu/front/gobinary.py against the compiler's own word: the -S listing and the -live report of the Go corpus."""
from __future__ import annotations

import pytest
from conftest import elf_copy_without
from golisting import machine_sp_deltas, parse_listing, parse_live, stack_slots

from emu.front import gobinary as gb, gobuild, gotypes
from emu.front import gopclntab as pcln
from emu.core.errors import EmuError

CORPUS_FUNCS = ["main.sumsq", "main.buildList", "main.honestList", "main.newNode", "main.xorKey", "main.hideXor",
                "main.nosplitAdd", "main.bigFrame", "main.atomicOr", "main.numCPUs",
                "main.inlineCaller", "main.makeBig", "main.readVal", "main.stackObject", "main.main"]


@pytest.fixture(scope="module")
def listed(go_corpus):
    funcs = parse_listing(go_corpus.listing)
    # only package main is compiled with -S; every name is listed once
    assert all(len(v) == 1 for v in funcs.values()), [k for k, v in funcs.items() if len(v) > 1]
    return {k: v[0] for k, v in funcs.items()}


@pytest.fixture(scope="module")
def binary(go_corpus):
    return go_corpus.binary()


def _listed_pairs(listed, binary):
    for name in CORPUS_FUNCS:
        yield listed[name], binary.func_named(name)


def test_corpus_functions_are_linked_with_the_listed_size_bytes_and_header(listed, binary):
    for lf, f in _listed_pairs(listed, binary):
        assert f is not None, lf.name
        assert f.size == lf.size, lf.name
        assert (f.args, f.funcid) == (lf.args, lf.funcid), lf.name
        code = bytearray(binary.read(f.entry, f.size))
        for off, size in lf.relocs:     # relocated fields differ between the object file and the binary
            code[off:off + size] = lf.code[off:off + size]
        assert bytes(code) == bytes(lf.code), lf.name


def _table_changes(ranges):
    return {r.start for r in ranges}


def test_unsafe_point_agrees_with_listing_at_every_pc(listed, binary):
    n = 0
    for lf, f in _listed_pairs(listed, binary):
        starts = {f.entry + i.off for i in lf.insns}
        table = binary.pcdata(f, pcln.PCDATA_UnsafePoint)
        # the table only changes at instruction starts, so agreeing at every start is agreeing at every pc
        assert _table_changes(table) <= starts, lf.name
        assert table[0].start == f.entry and table[-1].end == f.end, lf.name
        for ins in lf.insns:
            assert binary.unsafe_point(f, f.entry + ins.off) == ins.pcdata.get(0, -1), (lf.name, hex(ins.off))
            n += 1
    assert n > 300


def test_nosplit_body_is_unsafe_and_the_prologue_check_of_a_split_function_too(listed, binary):
    f = binary.func_named("main.nosplitAdd")
    assert [(r.start - f.entry, r.end - f.entry, r.value) for r in binary.pcdata(f, 0)] == [(0, f.size, -2)]
    f = binary.func_named("main.buildList")
    jls = next(i for i in listed["main.buildList"].insns if i.op == "JLS")
    assert binary.unsafe_point(f, f.entry + jls.off) == pcln.UNSAFE_POINT_UNSAFE
    assert binary.unsafe_point(f, f.entry) == pcln.UNSAFE_POINT_SAFE


def test_pcsp_agrees_with_sp_simulated_from_listing(listed, binary):
    for lf, f in _listed_pairs(listed, binary):
        table = binary.pcsp(f)
        assert _table_changes(table) <= {f.entry + i.off for i in lf.insns}, lf.name
        for ins in lf.insns:
            assert binary.sp_delta(f, f.entry + ins.off) == ins.sp, (lf.name, hex(ins.off), ins.op)
        assert max(r.value for r in table) == lf.locals, lf.name


def test_lock_prefix_is_part_of_the_instruction(listed):
    (ins,) = [i for i in listed["main.atomicOr"].insns if i.op.split()[-1] == "ORL"]
    assert ins.op == "LOCK ORL" and ins.args == "SI, (AX)"
    assert ins.off + 1 not in {i.off for i in listed["main.atomicOr"].insns}


def test_real_async_preempt_pcsp_agrees_with_its_machine_code(binary):
    """runtime.asyncPreempt is assembly (no listing): its pcsp against SP simulated over its instructions."""
    import capstone
    f = binary.func_named("runtime.asyncPreempt")
    assert f.is_asm and not f.flag & pcln.FUNC_FLAG_SPWRITE
    decoded = list(capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64).disasm(binary.read(f.entry, f.size),
                                                                                   f.entry))
    assert sum(i.size for i in decoded) == f.size
    want = machine_sp_deltas(decoded)
    assert [binary.sp_delta(f, i.address) for i in decoded] == want
    call = next(k for k, i in enumerate(decoded) if i.mnemonic == "call")
    assert binary.func_for(int(decoded[call].op_str, 16)).name == "runtime.asyncPreempt2"
    assert want[call] == max(want) > 16       # BP, flags, then the register save area


def test_big_frame_delta(binary):
    f = binary.func_named("main.bigFrame")
    assert max(r.value for r in binary.pcsp(f)) >= 32 * 1024 + 8


def test_file_line_agrees_with_listing_at_every_pc(listed, binary, go_corpus):
    for lf, f in _listed_pairs(listed, binary):
        lines = binary.lines(f)
        assert lines[0].start == f.entry and lines[-1].end == f.end
        for ins in lf.insns:
            file, line = binary.file_line(f, f.entry + ins.off)
            assert line == ins.line, (lf.name, hex(ins.off))
            # GOROOT files are named by absolute path in both; compare the part below GOROOT/src
            assert file.split("/go/src/")[-1] == ins.file.split("/go/src/")[-1], (lf.name, hex(ins.off))
            lr = next(r for r in lines if r.start <= f.entry + ins.off < r.end)
            assert (lr.file, lr.line) == (file, line)


def test_stack_maps_at_call_sites_match_compiler_liveness(listed, binary, go_corpus):
    live = parse_live(go_corpus.build("corpus", "-live").listing)
    checked = 0
    for name in ("main.buildList", "main.honestList", "main.hideXor", "main.main"):
        lf, f = listed[name], binary.func_named(name)
        slots = stack_slots(lf)
        short = name.removeprefix("main.")
        for k, ins in enumerate(lf.insns):
            if ins.op != "CALL" or ins.args.startswith(("runtime.gcWriteBarrier", "runtime.morestack")):
                continue
            ret = f.entry + lf.insns[k + 1].off
            sp = 0x10000    # any SP: the slot addresses are read back relative to it
            got = {slots.get(a - sp, f"?{a - sp}") for a in binary.live_pointer_slots(f, ret, sp)}
            callee = ins.args.removesuffix("(SB)").split(".")[-1]
            want = [rec.names for rec in live if rec.line == ins.line and rec.callee == callee]
            assert got == (set(want[0]) if want else set()), (short, hex(ins.off), callee)
            checked += 1
    assert checked >= 6


def test_args_live_at_entry(binary, go_corpus):
    live = parse_live(go_corpus.build("corpus", "-live").listing)
    (rec,) = [r for r in live if r.func == "atomicOr"]
    assert rec.names == {"p"}
    f = binary.func_named("main.atomicOr")
    args = binary.stackmap(f, pcln.FUNCDATA_ArgsPointerMaps)
    assert args.nbit >= 1 and args.bitmaps[0] & 1     # p is the first argument word


def test_stack_object_of_an_address_taken_local(listed, binary):
    f = binary.func_named("main.stackObject")
    (obj,) = binary.stack_objects(f)
    assert (obj.size, obj.ptrbytes, obj.ptr_words) == (24, 16, (0, 1))
    assert obj.off < 0      # a local: relative to varp
    # the listing names the words of nd `main.nd+X(SP)`; the lowest X is its start: varp + off
    lf = listed["main.stackObject"]
    sp = 0x10000
    body = next(i for i in lf.insns if "main.nd+" in i.args)
    fr = binary.frame(f, f.entry + body.off, sp)
    nd_start = min(off for off, name in stack_slots(lf).items() if name == "nd")
    assert nd_start == fr.varp + obj.off - sp
    assert binary.stack_objects(binary.func_named("main.sumsq")) == []


def test_inline_tree_names_runtime_numcpu_where_the_listing_shows_its_source(listed, binary, go_corpus):
    f = binary.func_named("main.numCPUs")
    tree = binary.inline_tree(f)
    assert [c.name for c in tree] == ["runtime.NumCPU"]
    for ins in listed["main.numCPUs"].insns:
        frames = binary.inline_frames(f, f.entry + ins.off)
        if ins.file.endswith("runtime/debug.go"):
            assert frames == ["runtime.NumCPU", "main.numCPUs"], hex(ins.off)
        else:
            assert frames == ["main.numCPUs"], hex(ins.off)
    # the call site named by parentPc is a line of numCPUs itself
    src = (go_corpus.root / "corpus" / "main.go").read_text().splitlines()
    call_line = next(n for n, text in enumerate(src, 1) if "s += runtime.NumCPU()" in text)
    assert binary.file_line(f, f.entry + tree[0].parent_pc)[1] == call_line
    inlined = next(i for i in listed["main.numCPUs"].insns if i.file.endswith("runtime/debug.go"))
    (inner, outer) = binary.inline_positions(f, f.entry + inlined.off)
    assert inner[0] == "runtime.NumCPU" and inner[1].endswith("runtime/debug.go") and inner[2] == inlined.line
    assert outer == ("main.numCPUs", f"{gobuild.STAGE_IMPORT}/main.go", call_line)     # as -trimpath names it


def test_inline_tree_of_two_inlined_user_calls(listed, binary):
    f = binary.func_named("main.inlineCaller")
    small_line = listed["main.small"].insns[0].line     # one-line func: body and `func` share the line
    assert binary.func_named("main.small") is None          # always inlined: the linker dropped its copy
    tree = binary.inline_tree(f)
    assert len(tree) == 2 and all(c.name == "main.small" and c.start_line == small_line for c in tree)
    assert any(ins.line == small_line for ins in listed["main.inlineCaller"].insns)
    for ins in listed["main.inlineCaller"].insns:
        frames = binary.inline_frames(f, f.entry + ins.off)
        assert (frames[0] == "main.small") == (ins.line == small_line), hex(ins.off)


def test_func_lookup_and_symbols(binary):
    f = binary.func_named("main.sumsq")
    assert binary.func_for(f.entry) is f and binary.func_for(f.end - 1) is f
    nxt = binary.funcs[f.index + 1]
    assert all(binary.func_for(pc) is None for pc in range(f.end, nxt.entry))    # alignment padding
    assert binary.symbols["main.sumsq"] == (f.entry, f.size)
    # every pc-table end equals the ELF symbol size of the function at that entry
    by_addr: dict[int, int] = {}
    for a, size in binary.symbols.values():     # marker symbols (runtime.text, ...) have size 0
        by_addr[a] = max(by_addr.get(a, 0), size)
    assert all(by_addr[g.entry] == g.size for g in binary.funcs if g.pcsp)
    ap = binary.func_named("runtime.asyncPreempt")
    assert ap.is_asm and ap.funcid == 3
    assert binary.symbol("runtime.asyncPreempt") == (ap.entry, ap.size)
    assert "runtime.asyncPreempt.abi0" in binary.symbols
    assert binary.func_named("runtime.asyncPreempt.abi0") is ap
    md = binary.moduledata
    assert md["text"] == binary.sections[".text"].addr and md["types"] == binary.sections[".go.type"].addr
    assert md["pcHeader"] == binary.sections[".gopclntab"].addr
    assert binary.sections[".bss"].nobits and binary.sections[".data"].writable
    assert not binary.sections[".text"].writable and binary.sections[".text"].executable
    assert binary.write_barrier_flag == binary.symbols["runtime.writeBarrier"][0]
    # every loadable section lies inside one PT_LOAD segment with the same bytes and permissions
    for sec in binary.sections.values():
        (seg,) = [g for g in binary.segments if g.addr <= sec.addr and sec.end <= g.end]
        assert seg.writable == sec.writable and seg.executable >= sec.executable, sec.name
        if not sec.nobits:
            assert seg.data[sec.addr - seg.addr:sec.end - seg.addr] == sec.data, sec.name


def test_every_function_has_consistent_tables(binary):
    """Every function's tables decode and end where the code ends, and ends never overlap the next entry."""
    for f, nxt in zip(binary.funcs, binary.funcs[1:]):
        assert f.entry < f.end <= nxt.entry, f.name
        if f.pcsp:
            assert binary.pcsp(f)[-1].end == f.end, f.name
        if f.pcln:
            assert binary.lines(f)[-1].end == f.end, f.name


def test_abi_wrapper_shares_the_name_but_is_not_picked(binary):
    body, wrapper = sorted(binary.funcs_named("runtime.asyncPreempt2"), key=lambda f: f.funcid)
    assert wrapper.funcid == pcln.FUNCID_WRAPPER and body.funcid == 0
    assert binary.func_named("runtime.asyncPreempt2") is body
    assert binary.func_named("runtime.asyncPreempt2.abi0") is wrapper
    assert binary.symbols["runtime.asyncPreempt2.abi0"] == (wrapper.entry, wrapper.size)


def test_asm_package_function(go_corpus):
    b = go_corpus.binary(go_corpus.asm_prog)
    f = b.func_named("main.sumAsm")
    assert f.is_asm and f.args == 16
    assert b.file_line(f, f.entry)[0] == f"{gobuild.STAGE_IMPORT}/sum_amd64.s"
    assert b.symbol("main.sumAsm") == (f.entry, f.size)
    assert b.stackmap(f, pcln.FUNCDATA_LocalsPointerMaps) is None


def _type_operand(binary, listed, func: str, type_sym: str) -> int:
    """The address a `LEAQ type:T(SB), R` in func loads (RIP-relative: next pc + disp32); type
    descriptors have no .symtab entries of their own."""
    f = binary.func_named(func)
    ins = next(i for i in listed[func].insns if i.op == "LEAQ" and i.args.startswith(type_sym + "(SB)"))
    code = binary.read(f.entry + ins.off, 7)
    assert code[0] in (0x48, 0x4C) and code[1] == 0x8D and code[2] & 0xC7 == 5
    return f.entry + ins.off + 7 + int.from_bytes(code[3:7], "little", signed=True)


def test_struct_type_mask(binary, listed):
    t = binary.go_type(_type_operand(binary, listed, "main.buildList", "type:main.Node"))
    assert (t.name, t.size, t.ptrbytes, t.kind, t.ptr_words) == ("main.Node", 24, 16, gotypes.KIND_STRUCT, (0, 1))


def test_on_demand_gc_mask_is_rebuilt(binary, listed):
    t = binary.go_type(_type_operand(binary, listed, "main.makeBig", "type:main.Big"))
    assert t.tflag & gotypes.TFLAG_GC_MASK_ON_DEMAND
    assert (t.size, t.ptrbytes) == (1056, 1056)
    assert t.ptr_words == tuple(range(130)) + (131,)


def test_global_pointer_bitmaps_cover_data_and_bss(binary):
    md = binary.moduledata
    assert binary.gc_program_words("data") == (md["edata"] - md["data"]) // 8
    assert binary.gc_program_words("bss") == (md["ebss"] - md["bss"]) // 8
    words = set(binary.global_pointer_words())
    sym = binary.symbols
    assert sym["main.sink"][0] in words
    assert {sym["main.table"][0] + 8 * i for i in range(4)} <= words
    anyw = sym["main.sinkAny"][0]
    assert anyw not in words and anyw + 8 in words     # an interface's type word is not a GC pointer
    assert sym["main.greeting"][0] in words and sym["main.greeting"][0] + 8 not in words
    assert sym["main.counter"][0] not in words


def test_gc_program_repeat_and_literal():
    # 3 literal bits 101, repeat them twice more, then 2 literal bits 11
    prog = bytes([0x03, 0b101, 0x83, 0x02, 0x02, 0b11, 0x00])
    assert gotypes.run_gc_prog(prog) == [1, 0, 1] * 3 + [1, 1]
    # long form: 0x80, n=3 as varint, c=1
    assert gotypes.run_gc_prog(bytes([0x03, 0b110, 0x80, 0x03, 0x01, 0x00])) == [0, 1, 1, 0, 1, 1]


def test_pcvalue_decoder_on_the_reference_example():
    # go-binary-format §5: main.buildList's pcsp bytes from the reference binary
    data = bytes.fromhex("020b1007608401" "5f010f1800")
    got = [(r.start, r.end, r.value) for r in pcln.decode_pcvalue(data, 0, 0)]
    assert got == [(0, 0x0B, 0), (0x0B, 0x12, 8), (0x12, 0x96, 56), (0x96, 0x97, 8), (0x97, 0xAF, 0)]


def test_leading_zero_value_delta_is_not_a_terminator():
    assert [tuple(r) for r in pcln.decode_pcvalue(bytes([0x00, 0x04, 0x03, 0x04, 0x00]), 0, 100)] == \
        [(100, 104, -1), (104, 108, -3)]


def test_non_go_elf_is_a_clear_error():
    import sys
    from pathlib import Path
    with pytest.raises(EmuError, match=r"not a Go program \(no \.go\.buildinfo section\)"):
        gb.GoBinary.open(Path(sys.executable).resolve())      # the (C) Python interpreter


def test_truncated_binary_is_a_clear_error(tmp_path, go_corpus):
    p = tmp_path / "truncated"
    p.write_bytes(go_corpus.prog.read_bytes()[:1 << 20])
    with pytest.raises(EmuError, match="malformed ELF or Go tables"):
        gb.GoBinary.open(p)


def test_not_a_go_binary_is_a_clear_error(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"not an elf")
    with pytest.raises(EmuError, match="not an ELF"):
        gb.GoBinary.open(p)
    with pytest.raises(EmuError, match="No such file"):
        gb.GoBinary.open(tmp_path / "missing")


def _patched_copy(tmp_path, src, addr_of, new: bytes):
    """A copy of binary src with the bytes at link address addr_of(GoBinary) replaced."""
    b = gb.GoBinary.open(src)
    addr = addr_of(b)
    sec = b.section_at(addr)
    from elftools.elf.elffile import ELFFile
    with open(src, "rb") as fh:
        off = ELFFile(fh).get_section_by_name(sec.name)["sh_offset"] + addr - sec.addr
    raw = bytearray(src.read_bytes())
    raw[off:off + len(new)] = new
    p = tmp_path / "patched"
    p.write_bytes(bytes(raw))
    return p


def test_binary_without_symtab_still_has_its_function_table(tmp_path, go_corpus, binary):
    """`-ldflags=-s` drops .symtab; moduledata and the pclntab stay (reference §1)."""
    p = elf_copy_without(go_corpus.prog, tmp_path / "stripped", ".symtab")
    b = gb.GoBinary.open(p)
    assert b.symbols == {} and b.write_barrier_flag is None
    f, g = b.func_named("main.buildList"), binary.func_named("main.buildList")
    assert (f.entry, f.end) == (g.entry, g.end) and b.pcsp(f) == binary.pcsp(g)


def test_wrong_pclntab_magic_is_named(tmp_path, go_corpus):
    p = _patched_copy(tmp_path, go_corpus.prog, lambda b: b.moduledata["pcHeader"], b"\xfb\xff\xff\xff")
    with pytest.raises(EmuError, match="pclntab magic 0xfffffffb is not Go 1.20"):
        gb.GoBinary.open(p)


def test_ftab_entry_disagreeing_with_func_record_is_named(tmp_path, go_corpus):
    def ftab_entry_of_func_1(b):
        return b.moduledata["pclntable"] + 8      # ftab[1].entryoff
    p = _patched_copy(tmp_path, go_corpus.prog, ftab_entry_of_func_1, b"\x01\x00\x00\x00")
    with pytest.raises(EmuError, match="_func 1 entry .* disagrees with ftab 0x1"):
        gb.GoBinary.open(p)


def test_missing_locals_map_where_the_runtime_throws(binary):
    # runtime.asyncPreempt (asm) has a frame but no locals stack map: the runtime would throw
    # "missing stackmap" if it ever had to scan it precisely.
    f = binary.func_named("runtime.asyncPreempt")
    pc = next(r.start for r in binary.pcsp(f) if r.value > 16)
    with pytest.raises(EmuError, match="missing stackmap"):
        binary.live_pointer_slots(f, pc, 0x10000)
