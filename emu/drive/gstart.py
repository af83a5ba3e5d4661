"""Getting a Go program to the call a sweep starts from (gsweep.RealSweep builds on these): the process with
--stub's code loaded over runtime.asyncPreempt, whether a call of F counts as --call counts it (the runtime
could preempt its goroutine asynchronously: Readiness), running on to the first call of any of several
functions (manysweep.py), and the functions a user naming one that does not exist may mean.

Mirrors the runtime's conditions for asynchronous preemption at start-up (signal_unix.go initsig, proc.go
mainStarted, preempt.go wantAsyncPreempt); leaves out everything after the call.
"""
from __future__ import annotations

from dataclasses import replace

from unicorn import UC_HOOK_CODE

from ..core.errors import EmuError
from .grequest import SIGURG


def new_process(image, opts, source_path=None, stub_code=None):
    """A process of the program, not yet run, with --stub's code loaded over runtime.asyncPreempt (stub_code:
    (name, bytes)); `stub_name` says which stub it runs."""
    from ..goruntime.goprocess import GoProcess
    # the sweep steers the scheduler (hold G's thread, run it next): the one-CPU turn order (cpus.py)
    p = GoProcess(image, replace(opts, steered=True))
    if p.watch.oracle is not None and source_path is not None:
        p.watch.oracle.prog.binary.source_path = source_path
    ver = p.watch.oracle.prog.binary.version if p.watch.oracle is not None else ""
    p.stub_name = f"runtime.asyncPreempt from the binary ({ver + ', ' if ver else ''}real)"
    if stub_code is not None:
        name, code = stub_code
        size = image.symbols["runtime.asyncPreempt.abi0"][1]
        if len(code) > size:
            raise EmuError(f"{name}: the stub is {len(code)} bytes; it must fit in the binary's runtime.asyncPreempt "
                           f"({size} bytes), over which it is loaded")
        p.write(p.watch.async_preempt, code)
        if p.avx is not None:                    # --cpu v3/v4: its AVX instructions run in preemu's vector unit
            p.avx.rearm(p.watch.async_preempt, code)
        p.watch.replace_stub(code)
        p.stub_name = f"{name} (loaded over runtime.asyncPreempt)"
    return p


class Readiness:
    """Whether the runtime could preempt the calling goroutine asynchronously now: SIGURG's handler installed
    (initsig, runtime/signal_unix.go:115, from mstart1 on m0, proc.go:1972), runtime.main started
    (mainStarted, proc.go:175), and the caller a goroutine of its M, not its g0 or gsignal (the system
    stacks, which the runtime never preempts: wantAsyncPreempt wants gp == mp.curg, preempt.go). Calls of F
    that fail this (runtime.memmove and mallocgc are called during start-up and on g0) are not counted by
    --call."""

    def __init__(self, p):
        self.p, self.ready = p, False
        self.started = p.image.symbols.get("runtime.mainStarted")

    def __call__(self) -> bool:
        p = self.p
        if not self.ready:
            if p.sigactions.get(SIGURG, (0,))[0] in (0, 1):       # SIG_DFL, SIG_IGN
                return False
            if self.started is not None and p.read(self.started[0], 1) == b"\0":
                return False
            self.ready = True
        g = p.read_u64(p.fs_base() - 8)
        m = p.read_u64(g + p.structs.g["m"].offset) if g else 0
        mt = p.structs.m
        return bool(m) and g not in (p.read_u64(m + mt["g0"].offset), p.read_u64(m + mt["gsignal"].offset))


def next_first_call(p, entries: dict) -> str | None:
    """Run process `p` on to the first call, counted as --call counts (Readiness), of any function of
    `entries` (name -> entry address), stopped before it runs; None when the program ends first. A sweep of
    that function can then start from here (RealSweep(process=p)): the stop changes nothing the program does
    (a run stopped and resumed runs as one that was not), so every function gets the snapshot a start-up of
    its own would give, for one start-up in all (manysweep.py)."""
    ready, hit = Readiness(p), []

    def on_entry(uc, addr, size, name):
        if hit or p.counter.stopping(addr) or not ready():
            return
        hit.append(name)
        p.counter.stop_here(False)              # stopped before it runs: not executed
    hooks = [p.uc.hook_add(UC_HOOK_CODE, on_entry, name, a, a) for name, a in entries.items()]
    for a in entries.values():                  # a block translated before its hook would not call it
        p.uc.ctl_remove_cache(a, a + 1)
    try:
        p.run_until(lambda: bool(hit))
    finally:
        for h in hooks:
            p.uc.hook_del(h)
    if hit:
        t = p.cur
        t.ctx = p.uc.context_save()
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
    return hit[0] if hit else None


def inlined_away(binary: str, names: list[str]) -> str | None:
    """Which of `names` the binary's DWARF says was inlined into every caller (None: none, or no DWARF)."""
    from ..front.godwarf import DwarfError, GoDwarf
    try:
        with GoDwarf.open(binary) as dw:
            return dw.inlined_away([n for n in names if "." in n])
    except DwarfError:
        return None


def similar(syms: dict, func: str, most: int = 6, package: str | None = None) -> list[str]:
    """Functions of the program a user naming `func` may mean: the same name in another package, a generic
    function's instances (`main.Max[go.shape.int]`: the compiler's shape-stenciled copies) and the closures
    inside it (`main.main.func1`, `main.run.gowrap1`); with `package` (a test binary's), its functions too."""
    base = [func] if "." in func else [func, f"main.{func}"] + ([f"{package}.{func}"] if package else [])
    out = set()
    for n, (_, size) in syms.items():
        if size <= 0 or n.endswith(".abi0"):
            continue
        stem = n.split("[", 1)[0]
        if n.endswith("." + func) or any(stem == b or stem.startswith(b + ".func") or stem.startswith(b + ".gowrap")
                                         for b in base):
            out.add(n)
    return sorted(out, key=lambda n: (len(n), n))[:most]
