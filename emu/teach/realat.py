"""`preemu explain --at` for Go input: a boundary of F's goroutine named by a source line or a PC.

`--at N` is boundary N of the goroutine G that calls F (gsweep.RealSweep: G's instructions from F's entry to
its return, callees and the runtime included). `--at FILE:LINE` is the first boundary whose next instruction is
on that line (FILE: the file's name or a suffix of its path, `main.go`, `ring/ring.go`; `line:N` a line of F's
own file) and `--at FUNC+OFF` the first at that PC (`FUNC` alone: its entry). The instructions of a line come
from the binary's pcln line table (gopclntab: the innermost inlined position, as a traceback names it), for
every function that has code there; one run from F's snapshot to its return, with a code hook on each of
those instructions only, reads the boundary at each of G's executions of them from G's GoroutineClock
(gclock.py): its count so far plus the instructions of the current slice before the hooked one. That run
costs one of F's runs (the references that follow run F three more times and the program to its end).

A line G never reaches is an error that names the lines near it G does reach (a second run, hooked on the
file's lines within NEAR of it), each with the first boundary there, so the user can pick one.
Left out: the N-th execution of a line (`--at` then takes the boundary number: the story names the first
and how many there are, and each neighbour is `--at K±1`).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from unicorn import UC_HOOK_CODE

from ..core.errors import EmuError
from ..core.program import func_offset

NEAR = 12                    # lines either side of a line G never reaches searched for ones it does
SHOWN = 6                    # of those, how many the error names

_FUNC_OFF = re.compile(r"^([^:\s]+?)(?:\+(0x[0-9a-fA-F]+|\d+))?$")
_FILE_LINE = re.compile(r"^(.+):(\d+)$")


@dataclass
class Where:
    """Where --at put the signal: boundary `k`, the `first` of `count` boundaries at what was asked (`what`)."""
    k: int
    what: str                 # "main.go:42", "main.spin+0x6", or "" for a boundary number
    count: int = 1
    unit: str = "on that line"

    def phrase(self) -> str:
        """"boundary 1234 (main.go:42, the first of 17 on that line)"."""
        if not self.what:
            return f"boundary {self.k}"
        n = "the only one" if self.count == 1 else f"the first of {self.count}"
        return f"boundary {self.k} ({self.what}, {n} {self.unit})"

    def sentence(self) -> str:
        """What the story says about it, so the user can step from there."""
        n = "the only boundary" if self.count == 1 else f"the first of {self.count} boundaries"
        return (f"--at {self.what} is boundary {self.k}, {n} of the goroutine {self.unit}; step with "
                f"--at {max(self.k - 1, 0)} or --at {self.k + 1}.")


def resolve(sw, at: str, budget: int) -> Where:
    """`--at` as a boundary of F's goroutine in RealSweep `sw` (see the module docstring)."""
    at = (at or "").strip()
    try:
        return Where(int(at, 0), "")
    except ValueError:
        pass
    m = _FILE_LINE.match(at)
    if m:
        file, line = m.group(1), int(m.group(2))
        shown = file
        if file == "line":
            file = _own_file(sw)
            shown = file.rsplit("/", 1)[-1]
        return _at_line(sw, at, file, line, budget, shown)
    if re.fullmatch(r"[^\s:+]+\+\S+", at):      # FUNC+WORD: the offset must be a number (func_offset says so)
        func_offset(at, "--at", EmuError)
    m = _FUNC_OFF.match(at)
    if m and sw.prog is not None:
        return _at_pc(sw, at, m.group(1), m.group(2), budget)
    raise EmuError(f"--at {at!r}: for Go input give a boundary number of {sw.func}'s goroutine (0 is its first "
                   "instruction), FILE:LINE (main.go:42) or FUNC+OFFSET (main.spin+0x6)")


# --- the program's tables ---------------------------------------------------------------------------------
def _binary(sw):
    if sw.prog is None:
        raise EmuError(f"{sw.image.path}: no Go line table to find a source line in")
    return sw.prog.binary


def _own_file(sw) -> str:
    """F's own source file, as its line table names it (for `line:N`)."""
    b = _binary(sw)
    gf = b.func_for(sw.entry)
    rows = b.lines(gf) if gf is not None else []
    if not rows:
        raise EmuError(f"--at line:N: {sw.func} has no line table; give FILE:LINE")
    return rows[0].file


def _matches(b, name: str, file: str) -> bool:
    """Whether line-table file `name` is the `file` the user gave: its name, a suffix of its path at a "/", or
    (the file on this machine, gobinary's source_path) the same path."""
    full = b.source_path(name)
    want = os.path.normpath(file)
    return any(n == want or n.endswith("/" + want) for n in (name, full)) or \
        os.path.abspath(full) == os.path.abspath(file)


def _line_ranges(b, file: str, lines, names: dict[str, bool] | None = None) -> dict[str, list[tuple[int, int, int]]]:
    """Every (start, end, line) range of the line table on one of `lines` of a file `file` names, by file;
    `names` gets every file name of the table, with whether `file` names it."""
    out: dict[str, list[tuple[int, int, int]]] = {}
    names = {} if names is None else names
    for gf in b.funcs:
        if not gf.name:
            continue
        for r in b.lines(gf):
            ok = names.get(r.file)
            if ok is None:
                ok = names[r.file] = _matches(b, r.file, file)
            if ok and r.line in lines:
                out.setdefault(r.file, []).append((r.start, r.end, r.line))
    return out


def _insns(sw, ranges) -> dict[int, int]:
    """The instruction addresses of the ranges, each with its line."""
    out = {}
    for start, end, line in ranges:
        f = sw.prog.func_for(start)
        for i in (f.insns if f is not None else ()):
            if start <= i.addr < end:
                out[i.addr] = line
    return out


def _one_file(b, at: str, file: str, found: dict) -> str:
    if len(found) > 1:
        names = sorted(found)
        raise EmuError(f"--at {at!r}: {file} names {len(names)} files of the program ({', '.join(names[:4])}"
                       f"{', ...' if len(names) > 4 else ''}); give more of its path")
    return next(iter(found))


# --- the run -----------------------------------------------------------------------------------------------
def _run(sw, pcs: dict[int, object], budget: int) -> dict[object, list[int]]:
    """One run from the snapshot to F's return with a code hook on each of `pcs` (pc -> key): for each key
    the boundaries of G whose next instruction is one of its PCs, in order."""
    clock = sw._arm()
    p = sw.p                                # after _arm: it may have built the process again
    seen: dict[object, list[int]] = {}

    def on_code(uc, addr, size, _):
        counter = p.counter
        if sw.returned is not None or not clock.counting() or counter.stopping(addr):
            return                          # not G's instruction (or it runs, and is seen, next slice)
        seen.setdefault(pcs[addr], []).append(clock.boundary_at(addr))

    hooks = [p.uc.hook_add(UC_HOOK_CODE, on_code, None, a, a) for a in pcs]
    for a in pcs:
        p.uc.ctl_remove_cache(a, a + 1)     # a block translated before the hook would not call it
    try:
        clock.stop_at = budget
        p.run_until(lambda: sw.returned is not None or clock.ready is not None)
    finally:
        for h in hooks:
            p.uc.hook_del(h)
        sw._disarm(clock)
    if sw.returned is None:
        raise EmuError(f"{sw.func} did not return within --budget {budget:,} of its instructions: --at FILE:LINE "
                       "and FUNC+OFFSET look for the line in one run to its return")
    n = sw.returned[0]
    return {key: [k for k in ks if k < n] for key, ks in seen.items()}


def _at_line(sw, at: str, file: str, line: int, budget: int, shown: str) -> Where:
    b = _binary(sw)
    names: dict[str, bool] = {}
    found = _line_ranges(b, file, {line}, names)
    if found:
        name = _one_file(b, at, file, found)
        hits = _run(sw, _insns(sw, found[name]), budget).get(line, [])
        if hits:
            return Where(hits[0], f"{shown}:{line}", len(hits))
    if not any(names.values()):
        raise EmuError(f"--at {at!r}: no file of the program is named {file} ({sw.func} is in "
                       f"{_short(_own_file(sw))})")
    near = _line_ranges(b, file, set(range(max(1, line - NEAR), line + NEAR + 1)))
    what = "has no code" if not found else f"is never run by {sw.func}'s goroutine between {sw.func}'s entry " \
                                           "and its return"
    reached = {}
    if near:
        name = _one_file(b, at, file, near)
        reached = {ln: ks[0] for ln, ks in _run(sw, _insns(sw, near[name]), budget).items() if ks}
    if not reached:
        own = [i.line for i in sw.prog.get_func(sw.func).insns if i.line > 0] if sw.prog.has_func(sw.func) else []
        raise EmuError(f"--at {at!r}: {shown}:{line} {what}, nor does any line within {NEAR} of it run"
                       + (f" ({sw.func}'s own code is on {_short(_own_file(sw))}:{min(own)}-{max(own)})"
                          if own else ""))
    best = sorted(reached, key=lambda ln: (abs(ln - line), ln))[:SHOWN]
    raise EmuError(f"--at {at!r}: {shown}:{line} {what}; lines near it that it runs: "
                   + ", ".join(f"{shown}:{ln} (first at boundary {reached[ln]})" for ln in sorted(best)))


def _at_pc(sw, at: str, name: str, off: str | None, budget: int) -> Where:
    prog = sw.prog
    try:
        _, entry = sw._resolve(name)        # as --func names functions (main.NAME, a test binary's package)
    except EmuError as e:
        raise EmuError(f"--at {at!r}: {str(e).replace('--func ', '', 1)}; give a boundary number of {sw.func}'s "
                       "goroutine, FILE:LINE or FUNC+OFFSET") from None
    f = prog.func_for(entry)
    if f is None:
        raise EmuError(f"--at {at!r}: {name} has no entry in the binary's function table")
    pc = f.start + (int(off, 0) if off else 0)
    if prog.insn_at(pc) is None or not f.start <= pc < f.end:
        offs = [i.addr - f.start for i in f.insns]
        close = sorted(offs, key=lambda o: abs(o - (pc - f.start)))[:3]
        raise EmuError(f"--at {at!r}: {pc:#x} is not the start of an instruction of {f.name} (near it: "
                       + ", ".join(f"{f.name}+{o:#x}" for o in sorted(close)) + ")")
    hits = _run(sw, {pc: pc}, budget).get(pc, [])
    if not hits:
        raise EmuError(f"--at {at!r}: {f.name}+{pc - f.start:#x} ({prog.insn_at(pc).where}) is never run by "
                       f"{sw.func}'s goroutine between {sw.func}'s entry and its return")
    return Where(hits[0], f"{f.name}+{pc - f.start:#x}", len(hits), "at that PC")


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1] if "/" in name else name
