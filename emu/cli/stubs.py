"""`preemu check-stub` (a stub over the regression corpus), `preemu gen-stub` (asm/preempt_amd64_*.s from the
register table) and `preemu disasm` (a program with its metadata); their options.
"""
from __future__ import annotations

import json

from ..core import layout as L
from ..core.errors import EmuError
from .common import UsageError, _PARTIAL, _ci_outputs, _cpu_option, _emit, _jobs


def cmd_check_stub(a, out) -> int:
    from .. import api
    from ..drive import checkstub
    from ..output import report
    if a.mutants:
        if a.junit_xml or a.sarif:
            raise EmuError("--junit-xml and --sarif apply to a stub check, not to --mutants")
        if a.file:
            raise UsageError("--mutants checks the generated stub's mutants; give no FILE")
        a.layout = a.layout or ("go1.14" if a.cpu in ("v1", "v2") else "go1.27")
        results = checkstub.run_mutants(a.layout, a.max_points or 150, jobs=_jobs(a), cpu=a.cpu)
        if a.json:
            json.dump(report.mutants_json(results, a.layout), out, indent=1)
            out.write("\n")
        else:
            out.write(report.render_mutants(results, a.layout))
        killed, total = checkstub.mutation_score(results)
        return 0 if killed == total else 1
    if not a.file:
        raise EmuError("check-stub needs a stub FILE (.s), or a Go program whose own asyncPreempt is checked "
                       "(or --mutants)")
    so_far = []
    _PARTIAL[:] = [lambda: (report.render_checkstub(so_far[0], interrupted=True),
                            f"after {len(so_far[0].results)} corpus loop(s)") if so_far and not a.json else None]
    rep = api.check_stub(a.file, layout=a.layout, max_points=a.max_points or 2000, on_report=so_far.append,
                         jobs=_jobs(a), cpu=a.cpu)
    return _emit(a, rep, out, "" if a.json else rep.render())


def cmd_gen_stub(a, out) -> int:
    from ..core import stubgen
    stale = []
    for path, text in stubgen.all_stubs():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path)
            if not a.check:
                path.write_text(text)
        out.write(f"{path}: {'up to date' if current == text else ('STALE' if a.check else 'written')}\n")
    return 1 if (a.check and stale) else 0


def cmd_disasm(a, out) -> int:
    from ..drive import disasm, loader
    from ..output import report
    program = loader.load_program(a.file)
    if a.func:
        try:
            name = program.resolve(a.func) if loader.is_go(program) else a.func
            funcs = [program.get_func(name)]
        except KeyError:
            raise EmuError(f"no function {a.func!r} in {a.file}") from None
    else:
        funcs = program.user_funcs() if loader.is_go(program) else list(program.funcs)
    if a.json:
        json.dump(report.disasm_json(a.file, [disasm.func_json(program, f) for f in funcs]), out, indent=1)
        out.write("\n")
    else:
        out.write(disasm.render(program, funcs))
    return 0


def _add_check_stub(sub) -> None:
    """`preemu check-stub` and its options."""
    c = sub.add_parser("check-stub", help="run an asyncPreempt stub over the whole regression corpus")
    c.add_argument("file", nargs="?", help="the stub (.s, Intel syntax): entry label asyncPreempt, calls asyncPreempt2; "
                   "or a Go binary / .go file / package directory, whose runtime.asyncPreempt is checked")
    c.add_argument("--layout", default=None, choices=sorted(L.LAYOUTS),
                   help="the world the stub runs in (asyncPreempt2 and xRegs behaviour); default: told from the "
                   "stub's code (where it saves X0-X15), a Go program's release for its own runtime.asyncPreempt")
    c.add_argument("--mutants", action="store_true", help="check the generated stub's mutants; print the score")
    _cpu_option(c)
    c.add_argument("--max-points", type=int, default=None, metavar="N", help="cap per corpus loop (default 2000)")
    c.add_argument("--json", action="store_true")
    _ci_outputs(c)
    c.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="check corpus loops (or mutants) in N local processes (default: the number of CPUs)")
    c.set_defaults(fn=cmd_check_stub)


def _add_gen_stub(sub) -> None:
    """`preemu gen-stub` and its options."""
    g = sub.add_parser("gen-stub", help="regenerate asm/preempt_amd64_*.s from the register table")
    g.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    g.set_defaults(fn=cmd_gen_stub)


def _add_disasm(sub) -> None:
    """`preemu disasm` and its options."""
    d = sub.add_parser("disasm", help="list a program with its metadata (SP deltas, unsafe points)")
    d.add_argument("file", help="assembly file (.s), Go binary, .go file or Go package directory")
    d.add_argument("--func", help="only this function (Go input: `main.f` or `f`; default: the program's own)")
    d.add_argument("--json", action="store_true", help="one JSON object: per instruction offset, pc, insn, line, "
                   "unsafe (PCDATA_UnsafePoint), verdict and reason")
    d.set_defaults(fn=cmd_disasm)
