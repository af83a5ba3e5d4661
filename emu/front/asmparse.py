"""The `.s` front end's first pass: source lines -> functions, their instruction lines, and data symbols.

Reads the file line by line, as Go's assembler reads TEXT symbols: a label starts a function or a local
label, every other code line is one instruction, and the `;@` directives (asm/README.md) record what Go
keeps in the TEXT flags, PCDATA and FUNCDATA (;@asm, ;@nosplit, ;@goname; ;@unsafe/;@safe, ;@spdelta,
;@ptrs, ;@inline) or lay out globals (;@data buffers, ;@type descriptors, placed from data_base
upwards, 64-byte aligned). Mirrors no Go source line by line: the directive syntax is preemu's own.
Left out: assembling; asmfront hands these lines to Keystone, decodes them with Capstone and builds
the Program.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.errors import AsmError
from ..core.program import DataSym, encode_type

_LABEL = re.compile(r"^([A-Za-z_.$][\w.$@/]*):\s*(.*)$")
_FUNC_DIRECTIVES = {"asm", "nosplit", "goname"}


@dataclass
class _Line:
    line: int
    text: str                # instruction text as written
    unsafe: bool
    inline: str | None
    spdelta: int | None      # explicit ;@spdelta for this instruction
    ptrs: tuple[int, ...] | None = None   # ;@ptrs stack map for a call site


@dataclass
class _Func:
    name: str
    line: int
    goname: str | None = None
    asm: bool = False
    nosplit: bool = False
    body: list = field(default_factory=list)   # ("label", name) | _Line


def _strip_comment(raw: str) -> tuple[str, str | None]:
    """Split a source line into (code, comment-or-None); ';' and '#' start comments."""
    cut = [i for i in (raw.find(";"), raw.find("#")) if i >= 0]
    if not cut:
        return raw.strip(), None
    i = min(cut)
    return raw[:i].strip(), raw[i + 1:].strip()


def _num(text: str, file: str, line: int, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(file, line, f"{what}: expected a number, got {text!r}") from None


def _parse(text: str, file: str, externs: dict[str, int], data_base: int | None):
    """(functions, data symbols) of a .s source; raises AsmError at the first bad line."""
    p = _Parser(file, externs, data_base)
    lines = text.splitlines()
    for n, raw in enumerate(lines, 1):
        p.line(n, raw)
    return p.finish(len(lines))


class _Parser:
    """One pass over a .s file: the functions and data so far, the current function, the function
    directives waiting for their label, and the ;@ state the next instruction takes."""

    def __init__(self, file: str, externs: dict[str, int], data_base: int | None):
        self.file, self.externs, self.data_base = file, externs, data_base
        self.funcs: list[_Func] = []
        self.data: list[DataSym] = []
        self.pending: dict = {}
        self.cur: _Func | None = None
        self.unsafe, self.inline, self.spdelta, self.ptrs = False, None, None, None
        self.next_data = data_base
        self.func_names: set[str] = set()
        self.labels: set[str] = set()          # local labels of the current function
        self.cur_has_insn = False

    def line(self, n: int, raw: str) -> None:
        """One source line: its directive comment first, then its label, then its instruction."""
        code, comment = _strip_comment(raw)
        if comment is not None and comment.startswith("@"):
            self.directive(n, comment[1:].split())
        if not code:
            return
        if code.startswith(".") and not _LABEL.match(code) and not code.startswith(".byte "):
            raise AsmError(self.file, n, f"assembler directive {code.split()[0]!r} is not supported; "
                           "use ;@data for buffers (`.byte` may spell one instruction)")
        m = _LABEL.match(code)
        if m:
            code = m.group(2).strip()
            self.label(n, m.group(1))
            if not code:
                return
        self.instruction(n, code)

    def finish(self, nlines: int) -> tuple[list[_Func], list[DataSym]]:
        for f in self.funcs:
            if not any(isinstance(b, _Line) for b in f.body):
                raise AsmError(self.file, f.line, f"function {f.name!r} has no instructions")
        if self.pending:
            raise AsmError(self.file, nlines, f"directive(s) {', '.join(self.pending)} not followed by a function")
        return self.funcs, self.data

    # ---- line kinds: labels and instructions -------------------------------------------------------
    def label(self, n: int, name: str) -> None:
        """A function label (no leading '.') starts a function; a local label marks a place in it."""
        if not name.startswith("."):
            if name in self.func_names:
                raise AsmError(self.file, n, f"function {name!r} defined twice")
            self.cur = _Func(name, n, **self.pending)
            self.pending = {}
            self.funcs.append(self.cur)
            self.func_names.add(name)
            self.labels = set()
            self.cur_has_insn = False
            self.unsafe, self.inline = False, None
            return
        if self.cur is None:
            raise AsmError(self.file, n, f"local label {name!r} outside a function")
        if name in self.labels:
            raise AsmError(self.file, n, f"label {name!r} defined twice in {self.cur.name}")
        self.labels.add(name)
        self.cur.body.append(("label", name))

    def instruction(self, n: int, code: str) -> None:
        """One instruction of the current function, with the ;@ state in force (spdelta and ptrs: once)."""
        if self.cur is None:
            raise AsmError(self.file, n, "instruction before the first function label")
        self.cur.body.append(_Line(n, code, self.unsafe, self.inline, self.spdelta, self.ptrs))
        self.cur_has_insn = True
        self.spdelta = None
        if self.ptrs is not None and not code.split()[0].lower().startswith("call"):
            raise AsmError(self.file, n, ";@ptrs describes a call site: put it on the line before a CALL")
        self.ptrs = None

    # ---- directives --------------------------------------------------------------------------------
    def directive(self, n: int, words: list[str]) -> None:
        """A `;@NAME ARGS` comment, handed to its family: function, instruction or data directives."""
        if not words:
            raise AsmError(self.file, n, "empty directive")
        d, args = words[0], words[1:]
        if d in _FUNC_DIRECTIVES:
            self._func_directive(n, d, args)
        elif d in ("unsafe", "safe", "spdelta", "ptrs", "inline", "inline-end"):
            self._insn_directive(n, d, args)
        elif d == "type":
            self._type_directive(n, args)
        elif d == "data":
            self._data_directive(n, args)
        else:
            raise AsmError(self.file, n, f"unknown directive ;@{d} (see asm/README.md)")

    def _func_directive(self, n: int, d: str, args: list[str]) -> None:
        """;@asm, ;@nosplit, ;@goname NAME: for the current function while it has no instructions yet,
        else for the function whose label comes next."""
        target = self.cur if (self.cur is not None and not self.cur_has_insn) else None
        if d == "goname":
            if len(args) != 1:
                raise AsmError(self.file, n, ";@goname takes one name, e.g. ;@goname runtime.memmove")
            val = args[0]
        elif args:
            raise AsmError(self.file, n, f";@{d} takes no arguments")
        else:
            val = True
        if target is not None:
            setattr(target, d, val)
        else:
            self.pending[d] = val

    def _insn_directive(self, n: int, d: str, args: list[str]) -> None:
        """;@unsafe/;@safe and ;@inline NAME/;@inline-end (until changed), ;@spdelta N and ;@ptrs OFF...
        (the next instruction only)."""
        file = self.file
        if d in ("unsafe", "safe"):
            if args:
                raise AsmError(file, n, f";@{d} takes no arguments")
            self.unsafe = d == "unsafe"
        elif d == "spdelta":
            if len(args) != 1:
                raise AsmError(file, n, ";@spdelta takes one number: the SP delta at the next instruction")
            self.spdelta = _num(args[0], file, n, ";@spdelta")
        elif d == "ptrs":
            try:
                self.ptrs = tuple(int(a, 0) for a in args)
            except ValueError:
                raise AsmError(file, n, ";@ptrs takes SP offsets, e.g. ;@ptrs 0 8") from None
            if any(o < 0 or o % 8 for o in self.ptrs):
                raise AsmError(file, n, ";@ptrs offsets must be non-negative multiples of 8")
        elif d == "inline":
            if len(args) != 1:
                raise AsmError(file, n, ";@inline takes the Go name of the inlined function")
            self.inline = args[0]
        else:   # inline-end
            self.inline = None

    def _type_directive(self, n: int, args: list[str]) -> None:
        """;@type NAME SIZE OFF...: a type descriptor for `lea rax, [NAME]; call newobject`."""
        file = self.file
        if self.data_base is None:
            raise AsmError(file, n, ";@type is not allowed in this file")
        if len(args) < 2 or not re.fullmatch(r"[A-Za-z_]\w*", args[0]):
            raise AsmError(file, n, ";@type takes NAME SIZE and the byte offsets of its pointer words")
        name, size = args[0], _num(args[1], file, n, ";@type size")
        offs = [_num(a, file, n, ";@type pointer offset") for a in args[2:]]
        if not 0 < size <= 0x10000 or any(o < 0 or o % 8 or o + 8 > size for o in offs):
            raise AsmError(file, n, ";@type size must be 1..65536 and pointer offsets multiples of 8 "
                           "inside the object")
        if name in self.externs or any(x.name == name for x in self.data):
            raise AsmError(file, n, f";@type {name!r} is defined twice or clashes with a predefined symbol")
        init = encode_type(size, offs)
        self.data.append(DataSym(name, self.next_data, len(init), init))
        self.next_data += (len(init) + 63) // 64 * 64

    def _data_directive(self, n: int, args: list[str]) -> None:
        """;@data NAME SIZE [FILL-BYTE] [ptrs]: a SIZE-byte buffer (scanned for pointers with `ptrs`)."""
        file = self.file
        if self.data_base is None:
            raise AsmError(file, n, ";@data is not allowed in this file")
        has_ptrs = bool(args) and args[-1] == "ptrs"
        if has_ptrs:
            args = args[:-1]
        if len(args) not in (2, 3):
            raise AsmError(file, n, ";@data takes NAME SIZE [FILL-BYTE] [ptrs]")
        name = args[0]
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise AsmError(file, n, f";@data name {name!r} is not an identifier")
        if name in self.externs or any(x.name == name for x in self.data):
            raise AsmError(file, n, f";@data {name!r} is defined twice or clashes with a predefined symbol")
        size = _num(args[1], file, n, ";@data size")
        fill = _num(args[2], file, n, ";@data fill") if len(args) == 3 else 0
        if not (0 < size <= 0x10000) or not (0 <= fill <= 255):
            raise AsmError(file, n, ";@data size must be 1..65536 and fill a byte")
        self.data.append(DataSym(name, self.next_data, size, bytes([fill]) * size, has_ptrs))
        self.next_data += (size + 63) // 64 * 64
