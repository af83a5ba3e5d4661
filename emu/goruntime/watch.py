"""preemu's checks on the real runtime: the fate of every signal and every async preemption.

At delivery the interrupted registers are kept with the frame. At rt_sigreturn the ucontext the
Go handler leaves behind is compared with them: untouched means the handler declined (not a safe
point, no request, asyncpreemptoff...); RIP = asyncPreempt with SP one word lower holding the
interrupted PC is the injection sigctxt.pushCall makes (runtime/signal_amd64.go pushCall,
runtime/preempt.go doSigPreempt); RIP = sigpanic0 is preparePanic's answer to a fault (sigpanic);
anything else is recorded as "other" and, if registers other
than RIP/RSP changed, as a violation. When asyncPreempt returns (a code hook on its RET), the
registers and flags must equal the interrupted ones bit for bit (runtime/preempt_amd64.s), and the
injection must have gone where preempt.go:317 asyncPreempt2 sends it: code hooks on the entries of
asyncPreempt2 (on G) and of the functions that deschedule G on g0 through its mcall (gopreempt_m, which
go1.27 inlines into asyncPreempt2.func1 as goschedImpl(gp, true), and preemptPark; gp in RAX, ABIInternal,
runtime/proc.go) record the path each injection took (Preemption.path): a stub that returned without
entering asyncPreempt2 is "no-asyncPreempt2", one that entered it but was never descheduled is
"not-descheduled". Nothing restored by such a stub was tested, so both are violations.
The safe-point verdict for each signalled PC comes from an oracle callable (see oracle.py).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..engine.native import hook_code
from unicorn import x86_const as X

from ..core import regs
from ..engine.x86decode import disasm_lite
from . import stubsaves
from ..linux import xstate
from ..linux.regbatch import RegBatch, read_reg
from ..linux.sigframe import _REG, GREGS, XMM

#: registers the resume check compares (RIP and RSP are checked separately)
CHECKED = GREGS[:15]
assert CHECKED == GREGS[:len(CHECKED)]
_RET_REGS = RegBatch([_REG[n] for n in CHECKED] + [X.UC_X86_REG_EFLAGS] + XMM, wide=XMM)
_RET_GPRS = struct.Struct("<" + "Q8x" * (len(CHECKED) + 1))     # _RET_REGS.raw's CHECKED and EFLAGS slots
FLAGS_MASK = regs.USER_FLAGS_MASK       # CF PF AF ZF SF DF OF: what user code can observe
#: the functions asyncPreempt2's mcall deschedules gp with, on g0 (runtime/preempt.go:317, proc.go
#: gopreempt_m -> goschedImpl, preemptPark); those the binary has are hooked (go1.27 inlines gopreempt_m)
DESCHEDULERS = ("runtime.gopreempt_m", "runtime.goschedImpl", "runtime.preemptPark")
#: what an injection's path at asyncPreempt's RET is called, and what it means (an observed fact)
PATHS = {"descheduled": "entered asyncPreempt2, was descheduled (goschedImpl or preemptPark) and came back",
         "no-asyncPreempt2": "the stub returned without entering asyncPreempt2",
         "not-descheduled": "entered asyncPreempt2 but was never descheduled"}


@dataclass
class Preemption:
    time_ns: int
    tid: int
    g: int
    pc: int
    where: str
    sp: int
    oracle: str | None = None         # the oracle's reason code for this PC ("safe" or why not)
    goid: int = 0
    resumed: bool = False
    resume_ok: bool | None = None
    resume_diffs: list = field(default_factory=list)
    resume_tid: int | None = None
    entered: bool = False             # G entered runtime.asyncPreempt2 after this injection
    descheduled: str = ""             # ... and this function descheduled it on g0 (goschedImpl, preemptPark)
    #: at asyncPreempt's RET: "descheduled", "no-asyncPreempt2" or "not-descheduled" (PATHS)
    path: str = ""
    ret_sp: int = 0                   # RSP at asyncPreempt's RET
    ret_to: int = 0                   # the word at ret_sp: where the RET goes

    def to_json(self) -> dict:
        return {"time_ns": self.time_ns, "thread": self.tid, "goid": self.goid, "g": hex(self.g), "pc": hex(self.pc),
                "where": self.where, "sp": hex(self.sp), "oracle": self.oracle, "resumed": self.resumed,
                "registers_ok": self.resume_ok, "register_diffs": self.resume_diffs, "resume_thread": self.resume_tid}


@dataclass
class SignalEvent:
    time_ns: int
    sig: int
    sender: int
    target: int
    delivered_ns: int | None = None
    pc: int | None = None
    where: str = ""
    outcome: str = "pending"          # injected/declined/sigpanic/other/ignored/fatal/merged/pending
    oracle: str | None = None
    info: object = None               # sigframe.SigInfo of a synchronous fault (None: a tgkill)
    fault: str = ""                   # what faulted, for a synchronous SIGSEGV
    forced: bool = False              # raised by a fault: taken first and at once (Process._force_sig)

    def to_json(self) -> dict:
        return {"sig": self.sig, "from": self.sender, "to": self.target, "sent_ns": self.time_ns,
                "delivered_ns": self.delivered_ns, "pc": None if self.pc is None else hex(self.pc),
                "where": self.where, "outcome": self.outcome, "oracle": self.oracle,
                **({"fault": self.fault} if self.fault else {})}


class Watch:
    def __init__(self, proc, async_preempt: int, oracle=None) -> None:
        self.p = proc
        self.async_preempt = async_preempt
        self.sigpanic = proc.image.symbols.get("runtime.sigpanic0.abi0", (None, 0))[0]   # preparePanic's target
        self.oracle = oracle
        self.signals: list[SignalEvent] = []
        self.preemptions: list[Preemption] = []
        self.violations: list[dict] = []
        # g -> injection not yet returned from; one still here at exit is reported (Preemption.resumed
        # stays False: "never resumed"), not a violation
        self._awaiting: dict[int, Preemption] = {}
        #: told of every classified sigreturn and every asyncPreempt return (emu/drive/gsweep.py):
        #: on_sigreturn(thread, event, outcome, preemption or None), on_resumed(preemption)
        self.listener = None
        self._hook_rets(proc.uc, proc.image)
        self._dsp = dsp = proc.image.symbols.get("runtime.doSigPreempt", (None, 0))[0]
        if dsp is not None:
            hook_code(proc.uc, self._on_do_sig_preempt, None, dsp, dsp)
        syms = proc.image.symbols
        self.path_hooks = []               # on asyncPreempt2 and the deschedulers' entries (one instruction each)
        ap2 = syms.get("runtime.asyncPreempt2", (None, 0))[0]
        if ap2 is not None:
            self.path_hooks.append(hook_code(proc.uc, self._on_async_preempt2, None, ap2, ap2))
        for name in DESCHEDULERS:
            a = syms.get(name, (None, 0))[0]
            if a is not None:
                self.path_hooks.append(hook_code(proc.uc, self._on_deschedule,
                                                      name.removeprefix("runtime."), a, a))

    def _hook_rets(self, uc, image, code: bytes | None = None) -> None:
        """Hook every RET of asyncPreempt: the binary's, or `code` loaded over it (a --stub)."""
        own = code is None
        if code is None:
            size = image.symbols.get("runtime.asyncPreempt.abi0", (0, 0))[1]
            code = image.text_bytes(self.async_preempt, size)
        self.ret_addrs = [a for a, _, mn, _ in disasm_lite(code, self.async_preempt) if mn == "ret"]
        #: the vector state the resume check compares and the descheduler's entry poisons (stubsaves.py): what
        #: the binary's own stub saves at the CPU level, everything the level has for a --stub
        self.saved = stubsaves.compared(self.p.level, image, self.async_preempt, None if own else code)
        self._ret_hooks = [hook_code(uc, self._on_ret, None, a, a) for a in self.ret_addrs]

    def replace_stub(self, code: bytes) -> None:
        """asyncPreempt's code was replaced (a --stub loaded over it): hook the RETs of the new code."""
        for h in self._ret_hooks:
            self.p.uc.hook_del(h)
        self._hook_rets(self.p.uc, self.p.image, code)

    def violation(self, kind: str, message: str, **extra) -> None:
        self.violations.append({"kind": kind, "message": message, **extra})

    # --- signals ---------------------------------------------------------------------------
    def sent(self, sig: int, sender: int, target: int) -> SignalEvent:
        ev = SignalEvent(self.p.now(), sig, sender, target)
        self.signals.append(ev)
        return ev

    def delivered(self, ev: SignalEvent | None, t, frame) -> None:
        pc = frame.regs["RIP"]
        if ev is None:
            return
        ev.delivered_ns, ev.pc, ev.where = self.p.now(), pc, self.p.image.describe(pc)
        frame.event = ev
        if self.oracle is not None:
            if self._dsp is None:
                ev.oracle = self.oracle(t, frame)
            else:                                # asked when the handler reaches doSigPreempt (below), or at
                frame.oracle_due = True          # rt_sigreturn if it never does (no g: the handler returns early)

    def _on_do_sig_preempt(self, uc, addr, size, _) -> None:
        """The runtime's handler calls doSigPreempt(gp, ctxt) (runtime/signal_unix.go:691-692): the oracle is
        asked again now, with the g/m/p state doSigPreempt reads (runtime/signal_unix.go:342-357), not the
        state at delivery: another thread may have changed it while the handler ran (N7 of #23)."""
        t = self.p.cur
        if self.oracle is None or t is None or not t.frames or self.p.counter.stopping(addr):
            return
        frame = t.frames[-1]
        ev = getattr(frame, "event", None)
        if ev is not None:
            ev.oracle = self.oracle(t, frame, read_reg(uc, X.UC_X86_REG_RAX))    # gp, ABIInternal's first arg
            frame.oracle_due = False

    def sigreturn(self, t, frame, restored) -> None:
        """Classify what the handler did to the interrupted context."""
        ev = getattr(frame, "event", None)
        if ev is not None and frame.oracle_due:
            ev.oracle = self.oracle(t, frame)
        old, new = frame.regs, restored.regs
        ov, nv = frame.vals, restored.vals
        if ov[:17] == nv[:17]:              # the common case, compared at C speed
            changed = []
        else:
            changed = [n for n, a, b in zip(GREGS[:17], ov, nv) if a != b]
        if (ov[17] ^ nv[17]) & FLAGS_MASK:
            changed.append("EFLAGS")
        if not changed:
            outcome = "declined"
        elif (new["RIP"] == self.async_preempt and new["RSP"] == old["RSP"] - 8
              and len(changed) == 2 and "RIP" in changed and "RSP" in changed
              and self.p.read_u64(new["RSP"]) == old["RIP"]):
            outcome = "injected"
            g = self.p.read_u64(self.p.fs_base() - 8)
            rec = Preemption(self.p.now(), t.tid, g, old["RIP"], self.p.image.describe(old["RIP"]), old["RSP"],
                             ev.oracle if ev else None, goid=self.p.read_u64(g + self.p.structs.g["goid"].offset))
            rec._regs, rec._xmm, rec._ext = old, frame.xmm, frame.ext
            rec._gprs = ov[:len(CHECKED)]           # CHECKED is GREGS' first registers, the order of vals
            self.preemptions.append(rec)
            self._awaiting[g] = rec
            if rec.oracle is not None and rec.oracle != "safe":
                self.violation("oracle-disagrees", f"the runtime injected asyncPreempt at {rec.where} "
                               f"({rec.pc:#x}) but preemu's oracle says {rec.oracle!r}", pc=hex(rec.pc))
        else:
            outcome = "sigpanic" if new["RIP"] == self.sigpanic else "other"
            extra = set(changed) - {"RIP", "RSP"}
            if extra:
                self.violation("context-modified", f"the handler changed {sorted(extra)} of the context "
                               f"interrupted at {self.p.image.describe(old['RIP'])}", pc=hex(old["RIP"]))
        if ev is not None:
            ev.outcome = outcome
            if outcome == "declined" and ev.oracle == "safe":
                self.violation("oracle-disagrees", f"the runtime declined the signal at {ev.where} "
                               f"({ev.pc:#x}) but preemu's oracle says it is an async safe point", pc=hex(ev.pc))
        if self.listener is not None:
            self.listener.on_sigreturn(t, ev, outcome, rec if outcome == "injected" else None)

    # --- the injection's path: asyncPreempt2, then off the CPU ---------------------------------
    def _on_async_preempt2(self, uc, addr, size, _) -> None:
        """asyncPreempt2 is entered (on the injected goroutine: getg() is the TLS g)."""
        if not self._awaiting or self.p.counter.stopping(addr):
            return
        rec = self._awaiting.get(self.p.read_u64(read_reg(uc, X.UC_X86_REG_FS_BASE) - 8))
        if rec is not None:
            rec.entered = True

    def _on_deschedule(self, uc, addr, size, name) -> None:
        """goschedImpl(gp, ...) or preemptPark(gp) on g0: gp (RAX) leaves its M, after asyncPreempt2's mcall."""
        if not self._awaiting or self.p.counter.stopping(addr):
            return
        rec = self._awaiting.get(read_reg(uc, X.UC_X86_REG_RAX))
        if rec is not None and rec.entered and not rec.descheduled:
            rec.descheduled = name
            if self.p.avx is not None:
                self._poison_vectors(uc)

    def _poison_vectors(self, uc) -> None:
        """--cpu v3/v4: on g0 at the descheduler's entry (an ABIInternal call: no vector register is live, X15
        must stay zero) the vector state the stub saves (`saved`, stubsaves.py), but X15's low half, gets a pattern
        of its own, as the model world's asyncPreempt2 clobbers its registers: a stub that does not restore one
        (an X register, a Y upper half, Z16-31, a mask) then resumes with the pattern, whatever the scheduler itself
        would have left there. State the stub does not save is left alone (a default build's stub keeps no Y upper
        half: only the XMM halves are written, as a legacy SSE write leaves the bits above)."""
        st, vf = self.saved, self.p.avx.vf
        low = (1 << 128) - 1
        for i in range(st.nvec):
            v = int.from_bytes(bytes([0xA0 + i]) * 64, "little")
            if i == 15:
                v &= ~low
            if st.vector == "X":
                if i < 15:
                    vf.set_zmm(i, (vf.zmm(i) & ~low) | (v & low))
                continue
            vf.set_zmm(i, v & ((1 << (8 * st.vector_bytes)) - 1))
        if st.nmask:
            self.p.avx.set_kregs([int.from_bytes(bytes([0xC0 + k]) * 8, "little") for k in range(st.nmask)])

    # --- asyncPreempt returning ------------------------------------------------------------
    def _vector_diffs(self, uc, rec, xmm: bytes, avx, diffs: list, found: list) -> None:
        """Y0-15 or Z0-31 and K0-K7 (what the stub saves at v3/v4: `saved`) at the RET against the state the
        signal frame saved."""
        xcr0, st = self.p.level.xcr0, self.saved
        ext = xstate.extended(uc, xcr0, avx.kregs())
        if ext == rec._ext and xmm == rec._xmm:
            return
        width = st.vector_bytes
        before = xstate.registers(rec._xmm, rec._ext, xcr0, st.nvec, width)
        after = xstate.registers(xmm, ext, xcr0, st.nvec, width)
        from ..check import verify               # a difference at v3/v4 only: a start-up does not load it
        kb, ka = (xstate.kregs(rec._ext, xcr0), xstate.kregs(ext, xcr0)) if st.nmask else ((), ())
        for name, was, v in verify.vector_diffs(st, before, after, kb, ka):
            diffs.append(f"{name}: {was:#x} -> {v:#x}")
            found.append(("register", name, was, v))

    def _on_ret(self, uc, addr, size, _) -> None:
        g = self.p.read_u64(read_reg(uc, X.UC_X86_REG_FS_BASE) - 8)
        rec = self._awaiting.pop(g, None)
        if rec is None:
            self.violation("unmatched-return", f"asyncPreempt returned on g {g:#x}, which was never injected")
            return
        rsp = read_reg(uc, X.UC_X86_REG_RSP)
        raw = _RET_REGS.raw(uc)
        now = _RET_GPRS.unpack_from(raw)
        rec.found = found = []            # (kind, name, expected, actual): the listener's structured form
        diffs = []
        if now[:-1] != rec._gprs:
            for n, v in zip(CHECKED, now):
                if v != rec._regs[n]:
                    diffs.append(f"{n}: {rec._regs[n]:#x} -> {v:#x}")
                    found.append(("register", n, rec._regs[n], v))
        fl = now[-1]
        if (fl ^ rec._regs["EFLAGS"]) & FLAGS_MASK:
            diffs.append(f"RFLAGS: {rec._regs['EFLAGS'] & FLAGS_MASK:#x} -> {fl & FLAGS_MASK:#x}")
            found.append(("flags", "RFLAGS", rec._regs["EFLAGS"] & FLAGS_MASK, fl & FLAGS_MASK))
        xmm = raw[_RET_GPRS.size:]
        avx = self.p.avx
        if avx is not None and self.saved.vector != "X":    # the stub's AVX path: Y0-15, or Z0-31 and K0-K7
            self._vector_diffs(uc, rec, xmm, avx, diffs, found)
        elif xmm != rec._xmm:
            for i in range(len(XMM)):
                was, v = (int.from_bytes(b[16 * i:16 * i + 16], "little") for b in (rec._xmm, xmm))
                if v != was:
                    diffs.append(f"X{i}: {was:#x} -> {v:#x}")
                    found.append(("register", f"XMM{i}", was, v))
        ret_to = self.p.read_u64(rsp)
        rec.ret_sp, rec.ret_to = rsp, ret_to          # RSP and the word it points to at the RET, for the listener
        if ret_to != rec.pc:
            diffs.append(f"return address {ret_to:#x}, interrupted at {rec.pc:#x}")
        if rsp + 8 != rec.sp:
            diffs.append(f"RSP: {rec.sp:#x} -> {rsp + 8:#x}")
        rec.resumed, rec.resume_ok, rec.resume_diffs = True, not diffs, diffs
        rec.resume_tid = self.p.cur.tid
        rec.path = "descheduled" if rec.descheduled else "not-descheduled" if rec.entered else "no-asyncPreempt2"
        # the listener (a sweep's) turns what it checks into violations of its own: True when it took the path
        claimed = self.listener is not None and self.listener.on_resumed(rec)
        if rec.path != "descheduled" and not claimed:
            self.violation(rec.path, f"goroutine {g:#x} preempted at {rec.where}: {PATHS[rec.path]}", pc=hex(rec.pc))
        if diffs:
            self.violation("resume-registers", f"goroutine {g:#x} preempted at {rec.where} resumed with "
                           f"different state: {'; '.join(diffs)}", pc=hex(rec.pc))
