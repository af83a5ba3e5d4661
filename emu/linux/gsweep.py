"""The real-program sweep: a Go function preempted at every instruction boundary inside its own process.

The program runs under the whole-program engine from its real entry (runtime init, package init, main,
its goroutines). At the N-th call of F (a code hook on its entry) the whole process is snapshotted
(snapshot.py) and goroutine G, the one calling F, is followed by a GoroutineClock: F's boundaries are
G's instructions from F's entry until F returns to its caller (callees included, the runtime's too).

Reference: from the snapshot, the program runs uninterrupted; it records the number of boundaries, F's
results when it returns (where ABIInternal puts them, goabi.py over the binary's DWARF), the program's
globals F changed, and how the program ends (stdout, stderr, exit status).

The chain: from the snapshot again, at each chosen boundary k preemu makes the request as preemptone
does (runtime/proc.go:6931-6942: gp.preempt, gp.stackguard0 = stackPreempt, pp.preempt, and
preemptM's m.signalPending, signal_unix.go:376) and makes SIGURG pending for the thread G sits on,
taken before that thread runs again. The runtime's own sighandler -> doSigPreempt decides; preemu's
oracle predicts it (the watch: a disagreement is a violation). If the runtime declines, the request is
withdrawn (each point is an independent signal, as in the .s sweep). If it injects, the binary's
asyncPreempt (or --stub, loaded over it) runs, asyncPreempt2 -> gopreempt_m -> schedule, and G resumes;
at asyncPreempt's RET every GPR, RFLAGS and XMM0-15 must equal the interrupted values (watch.py), and G's
stack at and above the interrupted SP must be unchanged. G then runs to the next boundary.

At F's return the swept run's results and globals must equal the reference's (see `_values`: words that
are pointers compare as nil / not nil, since a goroutine resumed on another P allocates elsewhere), and
after F the program runs on to its exit with the same output and status. `to_exit` more points each get
a run of their own: one injection, then on to the exit, compared with the reference's ending.
Left out: sharding (a sweep runs in one process), --gc (the model world's GC: issue #20).
"""
from __future__ import annotations

import bisect
import struct
import time
from collections import Counter
from dataclasses import dataclass, field

from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from .. import gostructs as gs
from ..errors import EmuError
from ..verify import Violation
from . import snapshot
from .gclock import GoroutineClock
from .threads import RUNNABLE

SIGURG = gs.SIG_PREEMPT
#: Globals whose changes are the runtime's own bookkeeping, not F's effect: runtime packages, the
#: internal/ tree, sync's pool registry and the linker's symbols.
BOOKKEEPING = ("runtime.", "internal/", "sync.", "sync/", "syscall.", "go:", "type:", "os.", "time.")
_XMM = [getattr(X, f"UC_X86_REG_XMM{i}") for i in range(16)]
_REGS = {n: getattr(X, f"UC_X86_REG_{n}") for n in ("RAX", "RBX", "RCX", "RDI", "RSI", "R8", "R9", "R10", "R11")}
_REGS.update({f"XMM{i}": r for i, r in enumerate(_XMM)})


@dataclass
class Ending:
    """How a run ended."""
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    reason: str

    @classmethod
    def of(cls, p) -> "Ending":
        reason = p.stop_reason if p.error is None else f"error: {p.error}"
        return cls(p.exit_code, bytes(p.fds.stdout.data), bytes(p.fds.stderr.data), reason)

    def diff(self, other: "Ending") -> list[tuple[str, str, str]]:
        out = []
        for what in ("exit_code", "stdout", "stderr"):
            a, b = getattr(self, what), getattr(other, what)
            if a != b:
                out.append((what, _short(a), _short(b)))
        return out


def _short(v) -> str:
    if isinstance(v, bytes):
        s = v.decode(errors="replace")
        return repr(s if len(s) <= 120 else s[:60] + " ... " + s[-55:])
    return str(v)


@dataclass
class Point:
    boundary: int
    tid: int
    pc: int
    event: object = None              # the watch's SignalEvent
    saved: tuple = ()                 # g.preempt, g.stackguard0, p.preempt, m.signalPending before the request
    stack: tuple | None = None        # (sp, bytes at and above it) at the injection


@dataclass
class RealSweepResult:
    """What a sweep of a Go function in its real program found (rendered by gsweep_report)."""
    source: str
    func: str
    call: int
    entered: str                      # "called" (the program's own N-th call) or "entered" (--reg)
    stub: str
    seed: int
    boundaries: int
    points: int
    injected: int
    refused: Counter
    violations: list
    elapsed: float
    cpu: float
    per_pc: dict                      # pc -> Counter(reason)
    ending: Ending                    # the reference run's
    results: dict                     # result name -> the reference's value, as shown
    reached: int                      # boundaries the chain reached (< points when F returned sooner)
    to_exit: list                     # [(boundary, ok, detail)]
    declined_by_sysmon: int = 0       # other signals of the chain (sysmon's), not the sweep's
    oracle_note: str = ""
    extra_preemptions: int = 0
    seen_pcs: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def violation_count(self) -> int:
        return len(self.violations)


class RealSweep:
    """One Go function F of one program, swept inside the program's own process."""

    def __init__(self, image, opts, func: str, call: int = 1, regs: dict | None = None, stub_code=None,
                 source_path=None):
        from . import process
        self.image, self.opts, self.call = image, opts, call
        self.func, self.entry = self._resolve(func)
        self.regs = regs or {}
        self.p = process.Process(image, opts)
        if self.p.watch.oracle is not None and source_path is not None:
            self.p.watch.oracle.prog.binary.source_path = source_path
        self.stub = "runtime.asyncPreempt from the binary (real)"
        if stub_code is not None:
            self._load_stub(*stub_code)
        self.prog = self.p.watch.oracle.prog if self.p.watch.oracle is not None else None
        self.violations: list[Violation] = []
        self._start()

    # --- setup ----------------------------------------------------------------------------------------
    def _resolve(self, func: str) -> tuple[str, int]:
        syms = self.image.symbols
        for name in (func, f"main.{func}", f"{func}.abi0", f"main.{func}.abi0"):
            if name in syms and syms[name][1] > 0:
                return name, syms[name][0]
        near = sorted(n for n in syms if n.endswith("." + func) or n == func)[:5]
        raise EmuError(f"--func {func!r}: no such function in the program"
                       + (f" (did you mean {', '.join(near)}?)" if near else ""))

    def _load_stub(self, name: str, code: bytes) -> None:
        at = self.p.watch.async_preempt
        size = self.image.symbols["runtime.asyncPreempt.abi0"][1]
        if len(code) > size:
            raise EmuError(f"{name}: the stub is {len(code)} bytes; it must fit in the binary's runtime.asyncPreempt "
                           f"({size} bytes), over which it is loaded")
        self.p.write(at, code)
        self.p.watch.replace_stub(code)
        self.stub = f"{name} (loaded over runtime.asyncPreempt)"

    def _start(self) -> None:
        """Run the program to F's call (or, with --reg, to main.main's, where F is entered instead) and take
        the whole-process snapshot every run of the sweep starts from."""
        p = self.p
        at = self.image.symbol("main.main") if self.regs else self.entry
        hits = []

        def on_entry(uc, addr, size, _):
            c = p.counter._c
            if hits or c.executed >= c.limit:
                return
            if not self.regs and not self._count_call():
                return
            hits.append(p.cur)
            c.executed -= 1                     # stopped before it runs: not executed
            uc.emu_stop()
        self._calls = 0
        h = p.uc.hook_add(UC_HOOK_CODE, on_entry, None, at, at)
        p.run_until(lambda: bool(hits))
        p.uc.hook_del(h)
        if not hits:
            ended = Ending.of(p)
            how = (f"the program ran {p.insns:,} instructions and ended ({ended.reason}, exit status "
                   f"{ended.exit_code})" if p.error is None else f"the program stopped: {p.error}")
            if self.regs:
                raise EmuError(f"main.main was never called, so {self.func} could not be entered: {how}")
            if self._calls:
                raise EmuError(f"{self.func} was called {self._calls} time(s), not {self.call}: {how}")
            raise EmuError(f"{self.func} was never called: {how}")
        t = hits[0]
        t.ctx = p.uc.context_save()
        if self.regs:
            for name, v in self.regs.items():
                t.ctx.reg_write(getattr(X, f"UC_X86_REG_{name}"), v)
            t.ctx.reg_write(X.UC_X86_REG_RIP, self.entry)
        p.runq.remove(t) if t in p.runq else None
        p.runq.appendleft(t)
        p.uc.context_restore(t.ctx)
        self.tid = t.tid
        self.g = p.read_u64(p.fs_base() - 8)
        self.entry_sp = p.uc.reg_read(X.UC_X86_REG_RSP)
        self.ret_addr = p.read_u64(self.entry_sp)
        self.entry_depth = self._stack_hi() - self.entry_sp
        self.slots = self._result_slots()
        self.globals0 = self._read_globals()
        self.snap = snapshot.take(p)

    def _count_call(self) -> bool:
        self._calls += 1
        return self._calls == self.call

    def _g(self, field: str) -> int:
        f = self.p.structs.g[field]
        return int.from_bytes(self.p.read(self.g + f.offset, f.size), "little")

    def _set(self, base: int, table: dict, field: str, value: int) -> None:
        f = table[field]
        self.p.write(base + f.offset, value.to_bytes(f.size, "little"))

    def _stack_hi(self) -> int:
        return self._g("stack.hi")

    def _result_slots(self):
        from .. import goabi, godwarf
        try:
            with godwarf.GoDwarf.open(self.image.path) as d:
                pr = d.func_params(self.func)
        except EmuError:
            pr = None
        if pr is None:
            return None
        return goabi.result_slots(*pr)

    # --- globals ----------------------------------------------------------------------------------------
    def _data_segments(self):
        return [(s.vaddr, s.memsz) for s in self.image.segments if s.flags & 2]

    def _read_globals(self) -> list[bytes]:
        return [self.p.read(a, n) for a, n in self._data_segments()]

    def _global_names(self):
        if not hasattr(self, "_gsyms"):
            rows = sorted((a, n, s) for n, (a, s) in self.image.symbols.items() if s > 0)
            self._gsyms = ([r[0] for r in rows], rows)
            ptrs = set()
            if self.prog is not None:
                try:
                    ptrs = set(self.prog.binary.global_pointer_words())
                except Exception:       # a binary whose GC bitmaps preemu cannot read: compare words exactly
                    ptrs = set()
            self._ptr_words = ptrs
        return self._gsyms

    def _symbol_of(self, addr: int) -> str | None:
        starts, rows = self._global_names()
        i = bisect.bisect_right(starts, addr) - 1
        if i >= 0 and rows[i][0] <= addr < rows[i][0] + rows[i][2]:
            return f"{rows[i][1]}+{addr - rows[i][0]:#x}" if addr != rows[i][0] else rows[i][1]
        return None

    def _changed_globals(self) -> dict[int, str]:
        """{address: value token} of every global word F's run changed (bookkeeping excluded)."""
        self._global_names()
        out = {}
        for (a, n), before, now in zip(self._data_segments(), self.globals0, self._read_globals()):
            if before == now:
                continue
            for page in range(0, n, 4096):
                if before[page:page + 4096] == now[page:page + 4096]:
                    continue
                for off in range(page, min(n, page + 4096) - 7, 8):
                    if before[off:off + 8] == now[off:off + 8]:
                        continue
                    addr = a + off
                    name = self._symbol_of(addr)
                    if name is None or name.startswith(BOOKKEEPING):
                        continue
                    out[addr] = self._word_token(addr, now[off:off + 8])
        return out

    def _word_token(self, addr: int, raw: bytes) -> str:
        v = int.from_bytes(raw, "little")
        if addr in self._ptr_words:
            return "nil" if v == 0 else "non-nil pointer"
        return f"{v:#x}"

    # --- F's results ------------------------------------------------------------------------------------
    def _values(self) -> dict[str, str]:
        """F's results as comparable text, read where ABIInternal put them at its return (goabi.py). The rule:
        integers, booleans, floats, lengths and interface type words bit-exact in their size; a string by
        its bytes; any other pointer-shaped word (pointer, map, chan, func, slice or interface data) as nil
        or not nil; an array of more than one element by its bytes. Without DWARF for F: nothing."""
        if self.slots is None:
            return {"(results)": "not read: no DWARF entry for the function"}
        p, out = self.p, {}
        base = self.p.uc.reg_read(X.UC_X86_REG_RSP) + 0      # at the return address: the caller's SP
        vals: list[tuple] = []
        for s in self.slots:
            if s.where is not None:
                raw = p.uc.reg_read(_REGS[s.where])
                v = raw & ((1 << (8 * s.leaf.size)) - 1) if s.leaf.size < 16 else raw
                vals.append((s, v, None))
            else:
                data = p.read(base + s.offset, s.leaf.size)
                vals.append((s, int.from_bytes(data, "little"), data))
        i = 0
        while i < len(vals):
            s, v, data = vals[i]
            k = s.leaf.kind
            if k == "strptr" and i + 1 < len(vals):
                n = vals[i + 1][1]
                text = p.read_or_empty(v, min(n, 4096)) if v and n else b""
                tok = repr(text.decode(errors="replace")) + ("..." if n > 4096 else "")
                out.setdefault(s.result, []).append(f"string {tok}")
                i += 2
                continue
            if k == "ptr":
                tok = "nil" if v == 0 else "non-nil"
            elif k in ("array", "other"):
                tok = (data or b"").hex()
            elif k == "bool":
                tok = str(bool(v & 0xFF)).lower()
            elif k == "float":
                tok = f"{struct.unpack('<d' if s.leaf.size == 8 else '<f', v.to_bytes(s.leaf.size, 'little'))[0]!r}"
            else:
                tok = str(v if v < 1 << 63 or s.leaf.size < 8 else v - (1 << 64))
            out.setdefault(s.result, []).append(tok)
            i += 1
        return {k: ", ".join(v) for k, v in out.items()}

    # --- runs -------------------------------------------------------------------------------------------
    def _arm(self) -> GoroutineClock:
        snapshot.restore(self.p, self.snap)
        clock = GoroutineClock(self.p, self.g)
        self._returned = None
        self._ret_hook = self.p.uc.hook_add(UC_HOOK_CODE, self._on_return, clock, self.ret_addr, self.ret_addr)
        return clock

    def _disarm(self, clock: GoroutineClock) -> None:
        clock.close()
        self.p.uc.hook_del(self._ret_hook)
        self.p.watch.listener = None

    def _on_return(self, uc, addr, size, clock) -> None:
        c = self.p.counter._c
        if self._returned is not None or c.executed >= c.limit or clock.tid != self.p.cur.tid:
            return
        if self._stack_hi() - uc.reg_read(X.UC_X86_REG_RSP) != self.entry_depth - 8:
            return                              # a deeper (recursive) call returning here
        n = clock.count + (c.executed - 1 - clock.mark)
        self._returned = (n, self._values(), self._changed_globals())

    def _finish(self, clock: GoroutineClock) -> Ending:
        clock.stop_at = None
        self.p.run_until(None)
        self._disarm(clock)
        return Ending.of(self.p)

    def reference(self, budget: int):
        clock = self._arm()
        clock.stop_at = budget
        self.p.run_until(lambda: self._returned is not None or clock.ready is not None)
        if self._returned is None:
            self._disarm(clock)
            if clock.ready is not None:
                raise EmuError(f"{self.func} did not return within --budget {budget:,} of its instructions "
                               f"(goroutine {self.g:#x}, at {self.p.image.describe(self.p.uc.reg_read(X.UC_X86_REG_RIP))})")
            ended = Ending.of(self.p)
            said = next((ln for ln in ended.stderr.decode(errors="replace").splitlines() if ln.strip()), "")
            raise EmuError(f"{self.func} never returned: the program ended first ({ended.reason}, exit status "
                           f"{ended.exit_code}{': ' + said if said else ''}) after {clock.count:,} of its "
                           "instructions")
        self.ref_boundaries, self.ref_results, self.ref_globals = self._returned
        self.ref_ending = self._finish(clock)
        return self.ref_boundaries

    # --- the chain ------------------------------------------------------------------------------------
    def chain(self, points, stats: dict) -> tuple:
        clock = self._arm()
        listener = _Listener(self, clock)
        self.p.watch.listener = listener
        reached = 0
        for k in points:
            clock.stop_at = k
            self.p.run_until(lambda: self._returned is not None or clock.ready is not None)
            if clock.ready is None:
                break                           # F returned (or the program ended) before boundary k
            reached += 1
            listener.point = self._deliver(clock, k)
            listener.points.append(listener.point)
        ending = self._finish(clock)
        for pt in listener.points:
            ev = pt.event
            verdict = "injected" if ev.outcome == "injected" else (ev.oracle or ev.outcome)
            stats.setdefault(pt.pc, Counter())[verdict] += 1
        return listener, reached, ending

    def _deliver(self, clock: GoroutineClock, k: int) -> Point:
        """The request at boundary k, as preemptone makes it, and SIGURG pending for G's thread."""
        p = self.p
        t = p.threads[clock.ready]
        p.uc.context_restore(t.ctx)
        pc = p.uc.reg_read(X.UC_X86_REG_RIP)
        gt, mt, pt = p.structs.g, p.structs.m, p.structs.p
        m = self._g("m")
        pp = int.from_bytes(p.read(m + mt["p"].offset, 8), "little") if m else 0
        saved = (self._g("preempt"), self._g("stackguard0"),
                 p.read(pp + pt["preempt"].offset, 1)[0] if pp else None,
                 int.from_bytes(p.read(m + mt["signalPending"].offset, 4), "little") if m else None)
        self._set(self.g, gt, "preempt", 1)
        self._set(self.g, gt, "stackguard0", gs.STACK_PREEMPT)
        if pp:
            self._set(pp, pt, "preempt", 1)
        if m:
            self._set(m, mt, "signalPending", 1)
        ev = p.watch.sent(SIGURG, 0, t.tid)
        if SIGURG in t.pending:
            ev.outcome = "merged"
        else:
            t.pending[SIGURG] = ev
            t.signal_countdown = 0
        if t in p.runq:
            p.runq.remove(t)
        p.runq.appendleft(t)
        clock.ready = None
        return Point(k, t.tid, pc, ev, saved)

    def withdraw(self, pt: Point) -> None:
        """The runtime declined: undo the request (the ack, preemptGen and signalPending, is the runtime's)."""
        gpre, sg, ppre, _ = pt.saved
        p = self.p
        self._set(self.g, p.structs.g, "preempt", gpre)
        if self._g("stackguard0") == gs.STACK_PREEMPT:
            self._set(self.g, p.structs.g, "stackguard0", sg)
        m = self._g("m")
        pp = int.from_bytes(p.read(m + p.structs.m["p"].offset, 8), "little") if m else 0
        if pp and ppre is not None:
            self._set(pp, p.structs.p, "preempt", ppre)

    # --- one injection, then on to the exit --------------------------------------------------------------
    def single(self, k: int) -> tuple[Point | None, Ending]:
        clock = self._arm()
        listener = _Listener(self, clock)
        self.p.watch.listener = listener
        clock.stop_at = k
        self.p.run_until(lambda: self._returned is not None or clock.ready is not None)
        pt = None
        if clock.ready is not None:
            pt = listener.point = self._deliver(clock, k)
        return pt, self._finish(clock)

    def make_violation(self, kind: str, what: str, expected: str, actual: str, boundary: int, pc: int,
                       detail: str = "") -> Violation:
        insn, where = "?", self.image.describe(pc)
        if self.prog is not None:
            i = self.prog.insn_at(pc)
            if i is not None:
                insn, where = i.text, i.where
        return Violation(kind, what, expected, actual, boundary, pc, insn, where, detail)


class _Listener:
    """The watch's listener during a chain: holds G's clock through injection windows, withdraws declined
    requests, checks G's stack across each injection, and turns the resume check into Violations."""

    def __init__(self, sw: RealSweep, clock: GoroutineClock):
        self.sw, self.clock = sw, clock
        self.point: Point | None = None
        self.points: list[Point] = []
        self.violations: list[Violation] = []
        self.other_injections = 0

    def on_sigreturn(self, t, ev, outcome, rec) -> None:
        sw, pt = self.sw, self.point
        mine = pt is not None and ev is pt.event
        if rec is not None and rec.g == sw.g:
            self.clock.hold()
            if mine:
                hi = sw._stack_hi()
                pt.stack = (rec.sp, sw.p.read(rec.sp, hi - rec.sp))
            else:
                self.other_injections += 1
        if mine and outcome != "injected":
            sw.withdraw(pt)

    def on_resumed(self, rec) -> None:
        sw = self.sw
        if rec.g != sw.g:
            return
        self.clock.release()
        pt = self.point
        if pt is None or pt.stack is None or rec.pc != pt.pc or rec.sp != pt.stack[0]:
            return
        uc = sw.p.uc

        def bad(kind, what, exp, act, detail=""):
            self.violations.append(sw.make_violation(kind, what, exp, act, pt.boundary, pt.pc, detail))
        from .. import regs
        for kind, name, exp, act in rec.found:
            if kind == "flags":
                bad(kind, name, f"{exp:#x} [{regs.describe_flags(exp)}]", f"{act:#x} [{regs.describe_flags(act)}]",
                    "flags changed: " + regs.describe_flags(exp ^ act))
            else:
                width = 34 if name.startswith("XMM") else 18
                bad(kind, name, f"{exp:#0{width}x}", f"{act:#0{width}x}")
        rsp = uc.reg_read(X.UC_X86_REG_RSP)
        if rsp + 8 != rec.sp or sw.p.read_u64(rsp) != rec.pc:
            bad("resume", "RIP/RSP", f"RET to {rec.pc:#x} with RSP {rec.sp:#x}",
                f"RET to {sw.p.read_u64(rsp):#x} with RSP {rsp + 8:#x}")
        sp, before = pt.stack
        now = sw.p.read(sp, len(before))
        if now != before:
            off = next(i for i in range(0, len(before), 8) if now[i:i + 8] != before[i:i + 8])
            bad("memory", f"{sp + off:#x}", "0x" + before[off:off + 8][::-1].hex(), "0x" + now[off:off + 8][::-1].hex(),
                "goroutine stack at or above the interrupted RSP changed")
        pt.stack = None


def select(n: int, max_points: int) -> list[int]:
    from ..sweep import select_points
    return list(select_points(n, max_points))


def spread(points: list[int], k: int) -> list[int]:
    """k of the points, the first and the last included, the rest evenly between."""
    if k <= 0 or not points:
        return []
    if k == 1:
        return [points[0]]
    n = len(points)
    return sorted({points[round(i * (n - 1) / (k - 1))] for i in range(min(k, n))})


def sweep(sw: RealSweep, source: str, seed: int = 1, max_points: int = 100_000, budget: int = 20_000_000,
          to_exit: int = 3, progress=None) -> RealSweepResult:
    t0, c0 = time.perf_counter(), time.process_time()
    n = sw.reference(budget)
    points = select(n, max_points)
    stats: dict = {}
    listener, reached, ending = sw.chain(points, stats)
    viol = list(listener.violations)
    # the watch's own findings: the oracle against the runtime, the handler's edits, sigreturn frames
    for w in sw.p.watch.violations:
        if w["kind"] == "resume-registers":
            continue                              # the listener reported those register by register
        pc = int(w.get("pc", "0x0"), 16)
        k = next((pt.boundary for pt in listener.points if pt.pc == pc), -1)
        viol.append(sw.make_violation(w["kind"], f"{pc:#x}", "", "", k, pc, w["message"]))
    injected = sum(1 for pt in listener.points if pt.event.outcome == "injected")
    refused: Counter = Counter()
    for pt in listener.points:
        ev = pt.event
        if ev.outcome != "injected":
            refused[ev.oracle or ev.outcome] += 1
    last = listener.points[-1] if listener.points else None
    if sw._returned is None:
        viol.append(sw.make_violation("final-state", "control flow", f"{sw.func} returns", "it never returned",
                                      last.boundary if last else 0, last.pc if last else sw.entry,
                                      f"the program ended: {ending.reason}"))
    else:
        _, results, globs = sw._returned
        k, pc = (last.boundary, last.pc) if last else (0, sw.entry)
        for name in sorted(set(results) | set(sw.ref_results)):
            a, b = sw.ref_results.get(name, "-"), results.get(name, "-")
            if a != b:
                viol.append(sw.make_violation("final-state", f"result {name}", a, b, k, pc,
                                              f"{sw.func}'s result differs from the uninterrupted run"))
        for addr in sorted(set(globs) | set(sw.ref_globals)):
            g0 = sw.globals0
            a = sw.ref_globals.get(addr) or _token_at(sw, g0, addr)
            b = globs.get(addr) or _token_at(sw, g0, addr)
            if a != b:
                viol.append(sw.make_violation("final-state", sw._symbol_of(addr) or f"{addr:#x}", a, b, k, pc,
                                              f"a global {sw.func} changed differs from the uninterrupted run"))
                break
    for what, a, b in sw.ref_ending.diff(ending):
        viol.append(sw.make_violation("final-state", f"program {what}", a, b, last.boundary if last else 0,
                                      last.pc if last else sw.entry,
                                      "after every injection, the program ended otherwise than uninterrupted"))
    checks = []
    for k in spread(points, to_exit):
        pt, end = sw.single(k)
        d = sw.ref_ending.diff(end)
        checks.append((k, not d, "; ".join(f"{w}: {a} -> {b}" for w, a, b in d)))
        if d and pt is not None:
            for what, a, b in d:
                viol.append(sw.make_violation("final-state", f"program {what}", a, b, k, pt.pc,
                                              "one injection at this boundary, then on to the exit: the program "
                                              "ended otherwise than uninterrupted"))
    cpu, el = time.process_time() - c0, time.perf_counter() - t0
    return RealSweepResult(source, sw.func, sw.call, "entered" if sw.regs else "called", sw.stub, seed, n,
                           len(points), injected, refused, viol, el, cpu, stats, sw.ref_ending, sw.ref_results,
                           reached, checks, oracle_note=sw.p.oracle_note,
                           extra_preemptions=listener.other_injections, seen_pcs=sorted(stats))


def _token_at(sw: RealSweep, segs: list[bytes], addr: int) -> str:
    for (a, n), data in zip(sw._data_segments(), segs):
        if a <= addr < a + n:
            return sw._word_token(addr, data[addr - a:addr - a + 8])
    return "?"
