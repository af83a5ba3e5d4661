"""Assembler front end: Intel-syntax .s files with metadata directives -> Program.

Plays the role of Go's assembler/linker for preemu: it assembles with Keystone, walks the result
with Capstone, maps every instruction back to its source line, and records what Go keeps in
PCDATA/FUNCDATA (unsafe points, asm/nosplit flags, the SP delta at each PC, inlined ranges).
The directive syntax is documented in asm/README.md; asmparse reads the source lines and directives.

Keystone pitfalls handled here (FACTS.md §9): no `sym_resolver` is ever installed (it silently reads
decimal immediates as hex); external names (asyncPreempt2, data buffers, ...) are substituted as
absolute hex addresses before assembling. Keystone's statement count on errors is unreliable, so a
failing unit is re-assembled line by line to name the failing line.
"""
from __future__ import annotations

import re
from pathlib import Path

import capstone
import keystone

from ..core import assembler
from ..core.errors import AsmError, read_utf8
from ..core.program import Func, Insn, Program
from .asmparse import _Func, _Line, _parse

_IDENT = r"(?<![\w.$@/]){}(?![\w$@/])"
_RSP_IMM = re.compile(r"^rsp, (-?(?:0x[0-9a-f]+|\d+))$")

_ks = assembler.x86_64()   # never given a sym_resolver
#: the most instructions one .s file may have: Keystone holds about 5 KB a line while it assembles (a
#: 200,000-line file took 1.1 GB and half a minute, in each worker process of a sweep)
MAX_INSNS = 50_000
_cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
_cs.detail = True


def assemble_file(path: str | Path, base: int, externs: dict[str, int] | None = None,
                  data_base: int | None = None, display_name: str | None = None,
                  package: str = "main", asm: bool = False) -> Program:
    """Assemble the .s file at `path` to address `base`; see assemble_text."""
    name = display_name or str(path)
    text, line, why = read_utf8(path)
    if text is None:
        raise AsmError(name, line, why)
    return assemble_text(text, name, base, externs, data_base, package, asm)


def assemble_text(text: str, file: str, base: int, externs: dict[str, int] | None = None,
                  data_base: int | None = None, package: str = "main", asm: bool = False) -> Program:
    """Assemble `text` (named `file` in messages) at `base`, resolving `externs` to absolute addresses.

    `;@data` buffers are placed from `data_base` upwards (64-byte aligned). A function's Go name is
    its label when the label is already a qualified Go name (see go_name), else `package.label`.
    With asm=True every function is hand-written assembly (FuncFlagAsm), whatever its directives
    say: the stub file is runtime assembly (package "runtime"), as runtime/preempt_amd64.s is.
    """
    externs = dict(externs or {})
    funcs, data = _parse(text, file, externs, data_base)
    if not funcs:
        raise AsmError(file, 1, "no function found: start a function with a label such as `myloop:`")
    count = sum(1 for f in funcs for b in f.body if not isinstance(b, tuple))
    if count > MAX_INSNS:
        raise AsmError(file, 0, f"{count:,} instructions, more than the {MAX_INSNS:,} preemu assembles (Keystone "
                       "takes about 5 KB of memory and 0.1 ms an instruction, in every worker of a sweep); sweep "
                       "the function you mean, in a file of its own")
    for d in data:
        externs[d.name] = d.addr
    for f in funcs:
        for name in [f.name] + [b[1] for b in f.body if isinstance(b, tuple)]:
            if name in externs:
                raise AsmError(file, f.line, f"label {name!r} clashes with a predefined symbol")
    subst = [(re.compile(_IDENT.format(re.escape(n))), f"{a:#x}") for n, a in
             sorted(externs.items(), key=lambda kv: -len(kv[0]))]

    def resolve(s: str) -> str:
        for rx, addr in subst:
            s = rx.sub(addr, s)
        return s

    # Go names such as `internal/bytealg.count` are not Keystone symbols: give each such function a
    # plain assembler symbol and substitute it wherever the name is referenced.
    sym = {f.name: f.name if re.fullmatch(r"[A-Za-z_]\w*", f.name) else f"__fn{k}_" + re.sub(r"\W", "_", f.name)
           for k, f in enumerate(funcs)}
    subst += [(re.compile(_IDENT.format(re.escape(n))), a) for n, a in
              sorted(sym.items(), key=lambda kv: -len(kv[0])) if n != a]
    stmts: list[str] = []
    lines: list[tuple[_Func, _Line]] = []
    for f in funcs:
        # local labels are scoped to their function: give each a unique assembler name
        local = {b[1]: f".L_{sym[f.name]}_{b[1][1:]}" for b in f.body if isinstance(b, tuple)}

        def scoped(text: str, local=local) -> str:
            return _replace_labels(text, local)
        stmts.append(f"{sym[f.name]}:")
        for b in f.body:
            if isinstance(b, tuple):
                stmts.append(f"{scoped(b[1])}:")
            else:
                stmts.append(resolve(scoped(b.text)))
                lines.append((f, b))
    try:
        enc, _ = _ks.asm("\n".join(stmts), base)
    except keystone.KsError as e:
        _locate_error(lines, resolve, file, base, sym.values())
        raise AsmError(file, funcs[0].line, f"assembly failed: {e}") from None
    code = bytes(enc or b"")
    decoded = list(_cs.disasm(code, base))
    if len(decoded) != len(lines) or sum(d.size for d in decoded) != len(code):
        where = lines[min(len(decoded), len(lines) - 1)][1].line if lines else 1
        raise AsmError(file, where, f"Capstone decodes {len(decoded)} instructions where the source has "
                       f"{len(lines)}; every source line must be exactly one instruction")
    code, decoded = _fix_absolute_operands(code, decoded, lines, resolve, base, file)
    return Program(_build_funcs(funcs, lines, decoded, file, package, asm), data, [(base, code)])


_BRACKET = re.compile(r"\[([^\]]*)\]")
_CONST_EXPR = re.compile(r"^\s*[-+]?\s*(?:0x[0-9a-fA-F]+|\d+)(?:\s*[-+]\s*(?:0x[0-9a-fA-F]+|\d+))*\s*$")


def _const_value(expr: str) -> int:
    total, sign = 0, 1
    for tok in re.findall(r"0x[0-9a-fA-F]+|\d+|[-+]", expr):
        if tok in "+-":
            sign = -1 if tok == "-" else 1
        else:
            total += sign * int(tok, 0)
            sign = 1
    return total


def _effective_address(d) -> int | None:
    for op in d.operands:
        if op.type == capstone.x86.X86_OP_MEM:
            mem = op.mem
            if mem.base == capstone.x86.X86_REG_RIP and mem.index == 0:
                return (d.address + d.size + mem.disp) & (2**64 - 1)
            if mem.base == 0 and mem.index == 0:
                return mem.disp & (2**64 - 1)
    return None


def _fix_absolute_operands(code: bytes, decoded, lines, resolve, base: int, file: str):
    """Make every absolute memory operand `[ADDR]` really address ADDR.

    Keystone 0.9.2 encodes `mov r64, qword ptr [ADDR]` (any register but RAX) as RIP-relative with
    ADDR itself as the displacement, so the load reads ADDR + next-PC. Each such operand is
    re-targeted by patching its 32-bit displacement and the result is re-checked with Capstone.
    """
    buf = bytearray(code)
    out = list(decoded)
    for idx, ((_, ln), d) in enumerate(zip(lines, decoded)):
        m = _BRACKET.search(resolve(ln.text))
        if m is None or not _CONST_EXPR.match(m.group(1)) or "fs:" in ln.text or "gs:" in ln.text:
            continue
        want = _const_value(m.group(1)) & (2**64 - 1)
        got = _effective_address(d)
        if got == want:
            continue
        if got is None or d.disp_size != 4:
            raise AsmError(file, ln.line, f"cannot encode the absolute address {want:#x} in `{ln.text}`")
        disp = want - (d.address + d.size)
        if not -2**31 <= disp < 2**31:
            raise AsmError(file, ln.line, f"absolute address {want:#x} is out of RIP-relative reach")
        o = d.address - base + d.disp_offset
        buf[o:o + 4] = (disp & 0xFFFFFFFF).to_bytes(4, "little")
        fixed = next(_cs.disasm(bytes(buf[d.address - base:d.address - base + d.size]), d.address))
        if _effective_address(fixed) != want:
            raise AsmError(file, ln.line, f"cannot encode the absolute address {want:#x} in `{ln.text}`")
        out[idx] = fixed
    return bytes(buf), out


def _locate_error(lines, resolve, file, base, symbols) -> None:
    """Re-assemble each instruction alone (labels and the function `symbols` replaced by an address) and
    raise on the first failure."""
    funcs = {s: f"{base:#x}" for s in symbols}
    local: dict[str, str] = {}
    owner = None
    for f, ln in lines:
        if f is not owner:
            owner, local = f, {b[1]: f"{base:#x}" for b in f.body if isinstance(b, tuple)}
        s = _replace_labels(_replace_labels(resolve(ln.text), local), funcs, _GLOBAL_TOKEN)
        try:
            _ks.asm(s, base)
        except keystone.KsError as e:
            msg = str(e).split(" (KS_ERR")[0]
            raise AsmError(file, ln.line, f"{msg}: `{ln.text}`") from None


_LOCAL_TOKEN = re.compile(r"(?<![\w.$@])\.[\w.$@]*")
_GLOBAL_TOKEN = re.compile(r"(?<![\w.$@])[A-Za-z_$][\w.$@]*")


def _replace_labels(text: str, names: dict[str, str], token: re.Pattern = _LOCAL_TOKEN) -> str:
    """Replace every label of `names` that appears as a whole name in `text` (one pass over the text).

    A name is whole when not followed by [\\w$@]; a token such as `.a.b` is replaced by its longest
    prefix that is a label and ends at a '.' or at the token's end (`.a.b` -> label `.a` + `.b`).
    """
    if not names:
        return text

    def sub(m: re.Match) -> str:
        t = m.group(0)
        cut = len(t)
        while cut > 0:
            if t[:cut] in names:
                return names[t[:cut]] + t[cut:]
            cut = t.rfind(".", 0, cut)
        return t
    return token.sub(sub, text)


def _sp_effect(d, delta: int, frame_delta: int | None) -> int | None:
    """Return the SP delta after d, or None if d writes RSP in a way we cannot follow."""
    m = d.mnemonic
    if m in ("push", "pushfq"):
        return delta + 8
    if m in ("pop", "popfq"):
        return delta - 8
    if m == "leave":
        return None if frame_delta is None else frame_delta - 8
    if m in ("sub", "add"):
        mm = _RSP_IMM.match(d.op_str)
        if mm:
            v = int(mm.group(1), 0)
            return delta + (v if m == "sub" else -v)
    if m == "call" or m.startswith(("ret", "j")):
        return delta
    try:
        _, written = d.regs_access()
    except capstone.CsError:
        written = []
    return None if capstone.x86.X86_REG_RSP in written else delta


def _branch_target(d) -> int | None:
    if d.mnemonic.startswith("j"):
        for op in d.operands:
            if op.type == capstone.x86.X86_OP_IMM:
                return op.imm
    return None


def _sp_deltas(f: _Func, body: list[_Line], ds: list, file: str) -> list[int]:
    """The SP delta before each instruction, propagated along control flow (like the pcsp table):
    fall-through and branch targets inherit the delta where control comes from; ;@spdelta overrides."""
    n = len(ds)
    index = {d.address: i for i, d in enumerate(ds)}
    delta: list[int | None] = [None] * n
    origin: list[str] = [""] * n
    work = [(0, 0, None, "the function entry")]    # (index, SP delta, delta at `mov rbp, rsp`, why)
    while work:
        i, v, fp, why = work.pop()
        if body[i].spdelta is not None:
            v = body[i].spdelta
        if v is None:
            raise AsmError(file, body[i].line, f"cannot infer the SP delta here ({why}); put `;@spdelta N` on the "
                           "line before")
        if delta[i] is not None:
            if delta[i] != v:
                raise AsmError(file, body[i].line, f"SP delta {v} here (from {why}) differs from {delta[i]} "
                               f"(from {origin[i]}); fix the code or add `;@spdelta N`")
            continue
        delta[i], origin[i] = v, why
        d = ds[i]
        if d.mnemonic == "mov" and d.op_str == "rbp, rsp":
            fp = v
        after = _sp_effect(d, v, fp)
        m = d.mnemonic
        here = f"`{body[i].text}` at line {body[i].line}"
        target = _branch_target(d)
        if target is not None and target in index:
            work.append((index[target], v, fp, here))
        if m.startswith("ret") or m == "jmp" or m in ("hlt", "ud2"):
            continue
        if i + 1 < n:
            work.append((i + 1, after, fp, here))
    # unreachable instructions (dead code): linear value from the previous instruction
    for i in range(n):
        if delta[i] is None:
            if body[i].spdelta is not None:
                delta[i] = body[i].spdelta
            else:
                delta[i] = (_sp_effect(ds[i - 1], delta[i - 1], None) or 0) if i else 0
    return delta


def go_name(label: str, package: str = "main") -> str:
    """The Go symbol name of a function label: a label that is already a qualified Go name
    (`runtime.spinloop`, `internal/bytealg.count`, `reflect.f`: a `.` after the first character) is
    that name; any other label is `package.label`, as the compiler names symbols."""
    return label if "." in label[1:] else f"{package}.{label}"


def _build_funcs(funcs: list[_Func], lines, decoded, file: str, package: str = "main",
                 asm: bool = False) -> list[Func]:
    out: list[Func] = []
    k = 0
    for f in funcs:
        body = [b for b in f.body if isinstance(b, _Line)]
        ds = decoded[k:k + len(body)]
        k += len(body)
        deltas = _sp_deltas(f, body, ds, file)
        obj6 = obj6_emitted(ds)
        insns = [Insn(d.address, d.size, d.mnemonic, d.op_str, file, ln.line, ln.text, f.name,
                      dl, ln.unsafe or (f.nosplit and d.address not in obj6), ln.inline, ln.ptrs)
                 for ln, d, dl in zip(body, ds, deltas)]
        start = insns[0].addr
        end = insns[-1].addr + insns[-1].size
        goname = f.goname or go_name(f.name, package)
        out.append(Func(f.name, goname, start, end, bool(f.asm or asm), bool(f.nosplit), tuple(insns), obj6))
    return out


_FRAME_SETUP = (re.compile(r"push rbp$"), re.compile(r"mov rbp, rsp$"),
                re.compile(r"(sub rsp, (0x)?[0-9a-f]+|add rsp, -(0x)?[0-9a-f]+)$"))
_STACK_CHECK = re.compile(r"cmp (rsp|r12), qword ptr \[r14 \+ (0x10|16)\]$")


def obj6_emitted(ds) -> frozenset[int]:
    """The PCs of a function's code that the assembler back end (cmd/internal/obj/x86/obj6.go), not
    the compiler's SSA, emits and leaves at PCDATA_UnsafePoint -1 (safe) even when the liveness pass
    marks every SSA value unsafe (plive.go:494-513: a //go:nosplit function, or Go code of a runtime
    package): the stack-bound check up to its CMP (obj6.go:975-994; the JLS after it starts the
    unsafe window, closed again at :1073), the frame setup after it (PUSH RBP; MOV RBP, RSP;
    SUB RSP, n), and the register unspill and JMP back to the entry after the morestack call
    (obj6.go:1113-1121: "The instructions which unspill regs should be preemptible"). A real binary
    shows exactly these PCs safe in internal/cpu.Initialize and in a //go:nosplit main function.
    `ds` are the function's decoded instructions in address order."""
    if not ds:
        return frozenset()
    text = [f"{d.mnemonic} {d.op_str}".strip() for d in ds]
    out: set[int] = set()
    i = 0
    if text[0].startswith("lea r12, [rsp - ") and len(text) > 1 and _STACK_CHECK.match(text[1]):
        out.update((ds[0].address, ds[1].address))
        i = 3 if len(ds) > 2 and ds[2].mnemonic.startswith("j") else 2
    elif _STACK_CHECK.match(text[0]):
        out.add(ds[0].address)
        i = 2 if len(ds) > 1 and ds[1].mnemonic.startswith("j") else 1
    for pat in _FRAME_SETUP:
        if i < len(ds) and pat.match(text[i]):
            out.add(ds[i].address)
            i += 1
    start = ds[0].address
    for k, d in enumerate(ds):            # CALL runtime.morestack*; unspill...; JMP entry
        if d.mnemonic != "call":
            continue
        j = k + 1
        while j < len(ds) and (ds[j].mnemonic.startswith("mov") or ds[j].mnemonic == "nop"):
            j += 1
        if j < len(ds) and ds[j].mnemonic == "jmp" and ds[j].op_str == hex(start):
            out.update(x.address for x in ds[k + 1:j + 1])
    return frozenset(out)
