"""preemu's safe-point oracle (emu/check/safepoint.py) asked about a real Go binary at a real signal.

At each SIGURG delivery this reads, from guest memory, the slice of g/m/p state that the runtime's
sighandler consults (runtime/signal_unix.go:691 `sig == sigPreempt && debug.asyncpreemptoff == 0`,
doSigPreempt at :342, wantAsyncPreempt and isAsyncSafePoint in runtime/preempt.go:369-390), and
the function metadata from the binary's pclntab (emu/front/gofront.py's lazy GoProgram over
emu/front/gobinary.py: findfunc, PCDATA_UnsafePoint, FuncFlagAsm / locals pointer map, the inline tree;
opened at the first signal the runtime would act on: tables found damaged then end the oracle's verdicts
there, the reason in the report, where an oracle built eagerly would have given none), then asks emu/check/safepoint.py for its verdict. The watch compares the verdict with what the runtime
did. Struct offsets are the binary's own, from its DWARF (golayout.struct_tables; m.preemptoff is a
string: its length word counts);
asyncPreemptStack is read from the runtime's own variable. A binary whose runtime has another
layout runs without the oracle (verdicts None, the reason in the report).
"""
from __future__ import annotations

from unicorn import UcError

from ..front import golayout, goreleases
from ..check import safepoint
from ..core import gostructs as gs
from ..core.errors import EmuError
from ..linux.regbatch import field_spec, read_fields

SIGURG = gs.SIG_PREEMPT


class Oracle:
    """Callable (thread, delivered frame) -> reason code, as the Watch expects."""

    def __init__(self, proc, binary_path: str) -> None:
        self.proc, self.path = proc, binary_path
        #: the build version (.go.buildinfo, as the loader read it) and its release's rules
        self.version = proc.image.go_version
        self.rules = safepoint.rules_for_release(goreleases.release_of(self.version, binary_path))
        self.structs = golayout.struct_tables(binary_path)           # g/m/p as this binary lays them out
        self._prog = None                                              # the pclntab's GoProgram, on first use
        self.headroom_addr = proc.image.symbol("runtime.asyncPreemptStack")
        # one read_fields call a struct (the compiled module's with it: one engine read of each struct's span)
        spec = lambda table, names: field_spec((table[n].offset, table[n].size) for n in names)   # noqa: E731
        self._g_spec = spec(self.structs.g, safepoint.G_SCHED + ("m",))
        self._m_spec = spec(self.structs.m, safepoint.M_SCHED)
        self._p_spec = spec(self.structs.p, safepoint.P_SCHED)
        self._m_p = safepoint.M_SCHED.index("p")

    @property
    def prog(self):
        """The binary's functions (a lazy-findfunc GoProgram over its pclntab), read when first asked for: only
        a signal that the runtime would act on needs isAsyncSafePoint's tables (a trivial program's SIGURGs find
        no request), and reading a binary's pclntab costs ~30 ms. EmuError for a binary whose tables are damaged."""
        if self._prog is None:
            from ..front import gobinary, gofront
            self._prog = gofront.GoProgram(gobinary.GoBinary.open(self.path), self.path)
        return self._prog

    def sched_state(self, g: int) -> safepoint.SchedState:
        """The SchedState of goroutine g, its M and the M's P, as gmp.read_sched_state reads it (the emulated
        runtime's reader), the structs laid out as this binary's DWARF says: one read of each struct."""
        uc = self.proc.uc
        gv = read_fields(uc, g, self._g_spec)                  # G_SCHED, then g.m
        mv = read_fields(uc, gv[-1], self._m_spec)             # m == 0: UcError, no verdict
        pp = mv[self._m_p]
        pv = read_fields(uc, pp, self._p_spec) if pp else (0, 0)
        return safepoint.sched_state_of(g, gv[:-1] + mv + pv, self.rules)

    def __call__(self, t, frame, g: int | None = None) -> str | None:
        """The verdict for the signal delivered in `frame`, from the g/m/p state as it is now; `g` is the
        goroutine the handler passes to doSigPreempt (default: the thread's TLS g at delivery)."""
        if frame.sig != SIGURG:
            return None
        if not self.proc.async_preemption_on:
            return "asyncpreemptoff"
        if g is None:
            g = self.proc.read_u64(frame.fs_base - 8)
        if g == 0:
            return "not-curg"
        try:
            st = self.sched_state(g)
        except UcError:                         # a g/m/p pointer into unmapped memory: no verdict
            return None
        if not safepoint.want_async_preempt(st):
            return "no-request"
        return self.safe_point(st, frame.regs["RIP"], frame.regs["RSP"])

    def safe_point(self, st: safepoint.SchedState, pc: int, sp: int) -> str:
        """isAsyncSafePoint's reason code for (pc, sp) with the g/m/p state st, the headroom read from the
        runtime's own asyncPreemptStack."""
        headroom = self.proc.read_u64(self.headroom_addr)
        try:
            prog = self.prog
        except EmuError as e:                   # damaged tables: from here on the process runs without the oracle
            self.proc.oracle_note = str(e)
            self.proc.watch.oracle = None
            return None
        return safepoint.is_async_safe_point(prog, st, pc, sp, headroom).reason


def make(proc, binary_path: str):
    """The oracle for this process, or (None, why) when this binary's runtime does not fit the model."""
    try:
        return Oracle(proc, binary_path), ""
    except EmuError as e:
        return None, str(e)
