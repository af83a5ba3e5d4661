"""What one signal of a real run is recorded as for `preemu explain` of Go input (real.py): the registers and the
signal frame at delivery, at doSigPreempt, at rt_sigreturn and at the stub's CALL, and the threads and goroutines
that ran while G was away, captured from code hooks and the watch's own calls (nothing in the run is changed).
realsignal.py and realresume.py tell the story from it. Mirrors no Go source (the hooks sit on
runtime.doSigPreempt, the runtime's TLS g stores and the stub's CALL); left out: what other threads did in detail.
"""
from __future__ import annotations

from unicorn import UC_HOOK_CODE
from unicorn import x86_const as X

from . import story as E
from ..core import regs as R
from ..drive import gsweep
from ..linux import sigframe
from ..linux.regbatch import RegBatch

ALL = RegBatch([r.uc_id for r in R.GP_REGS] + [X.UC_X86_REG_RBP, X.UC_X86_REG_RSP, X.UC_X86_REG_RIP,
                                                X.UC_X86_REG_EFLAGS] + [r.uc_id for r in R.XMM_REGS],
                wide=[r.uc_id for r in R.XMM_REGS])
NAMES = [r.name for r in R.GP_REGS] + ["RBP", "RSP", "RIP", "RFLAGS"] + [r.name for r in R.XMM_REGS]


def regs(values, p=None) -> dict[str, str]:
    """The registers, formatted, in REG_ORDER; at --cpu v3/v4 (`p`, the process, has a vector unit) whose stub
    saves more than X0-15 (watch.saved) followed by those whole vector registers and masks (Y0-15; Z0-31 and
    K0-7), the state its stub must keep."""
    d = dict(zip(NAMES, values))
    out = {n: E.fmt_reg(n, d[n]) for n in E.REG_ORDER}
    if p is not None and p.avx is not None and p.watch.saved.vector != "X":
        lvl = p.watch.saved
        for i, name in enumerate(lvl.vector_names()):
            out[name] = f"{p.avx.vf.zmm(i) & ((1 << (8 * lvl.vector_bytes)) - 1):#0{2 + 2 * lvl.vector_bytes}x}"
        for name, k in zip(lvl.mask_names(), p.avx.kregs()):
            out[name] = f"{k:#018x}"
    return out


class Recorder:
    """What happens to one signal, captured from hooks and the watch (nothing is changed)."""

    def __init__(self, sw: gsweep.RealSweep, window):
        self.sw, self.p, self.window = sw, sw.p, window     # window(): G's stack window's words now
        self.delivered = self.handler_regs = self.dsp = self.sigret = self.stub_frame = self.resumed = None
        self.at_ret: dict | None = None
        self.done = False                               # G has resumed: stop recording
        p = sw.p
        w = p.watch
        real_delivered, real_sigreturn = w.delivered, w.sigreturn

        def delivered(ev, t, frame):
            real_delivered(ev, t, frame)
            if self.delivered is None and ev is not None and ev.sig == gsweep.SIGURG:
                self.delivered = (t.tid, frame, ev)
                self.handler_regs = regs(ALL(p.uc), p)
                self.sig_bytes = p.read(frame.frame, sigframe.FRAME_SIZE)
                self.win_delivered = self.window()

        def sigreturn(t, frame, restored):
            if self.delivered is not None and frame is self.delivered[1] and self.sigret is None:
                self.sigret = (restored, p.read(frame.frame, sigframe.FRAME_SIZE), regs(ALL(p.uc), p), self.window())
            real_sigreturn(t, frame, restored)
        w.delivered, w.sigreturn = delivered, sigreturn
        dsp = p.image.symbols.get("runtime.doSigPreempt", (None, 0))[0]
        self._hooks = []
        if dsp is not None:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_dsp, None, dsp, dsp))
            p.uc.ctl_remove_cache(dsp, dsp + 1)
        if sw._stub_code is not None:            # a --stub loaded over the binary's: its own instructions
            import capstone
            ap = p.image.symbol("runtime.asyncPreempt.abi0")
            md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
            self.stub_insns = [Loaded(a, f"{mn} {ops}".strip(), mn, ops)
                               for a, _, mn, ops in md.disasm_lite(sw._stub_code[1], ap)]
        else:
            self.stub_insns = [i for i in sw.prog.get_func("runtime.asyncPreempt").insns] if sw.prog else []
        self.ran: list[tuple[int, int]] = []           # (thread, g) made current while G was away
        from ..goruntime.gclock import g_store_sites
        self._sites = {a: (reg, imm) for a, reg, imm in g_store_sites(p.image)}
        for a in self._sites:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_g_store, None, a, a))
            p.uc.ctl_remove_cache(a, a + 1)
        call = next((i.addr for i in self.stub_insns if i.mnemonic == "call"), None)
        if call is not None:
            self._hooks.append(p.uc.hook_add(UC_HOOK_CODE, self._on_stub_call, None, call, call))
            p.uc.ctl_remove_cache(call, call + 1)

    def _on_g_store(self, uc, addr, size, _):
        if self.sigret is None or self.done or self.p.counter.stopping(addr):
            return
        reg, imm = self._sites[addr]
        g = imm if reg is None else uc.reg_read(reg)
        t = self.p.cur
        if g and (not self.ran or self.ran[-1] != (t.tid, g)):
            self.ran.append((t.tid, g))

    def _on_dsp(self, uc, addr, size, _):
        if self.dsp is None and self.delivered is not None and not self.p.counter.stopping(addr):
            gp = uc.reg_read(X.UC_X86_REG_RAX)          # doSigPreempt(gp, ctxt): ABIInternal's first argument
            o = self.p.watch.oracle
            state = None if o is None else (o.sched_state(gp), self.p.read_u64(o.headroom_addr))
            self.dsp = (regs(ALL(uc), self.p), gp, state, self.window())

    def _on_stub_call(self, uc, addr, size, _):
        if self.stub_frame is None and self.sigret is not None and not self.p.counter.stopping(addr):
            rsp = uc.reg_read(X.UC_X86_REG_RSP)
            self.stub_frame = (regs(ALL(uc), self.p), rsp, addr, self.window())

    def close(self):
        for h in self._hooks:
            self.p.uc.hook_del(h)


class Loaded:
    """An instruction of a --stub loaded over runtime.asyncPreempt (no pclntab entry: no SP delta)."""

    def __init__(self, addr, text, mnemonic, op_str):
        self.addr, self.text, self.mnemonic, self.op_str, self.sp_delta = addr, text, mnemonic, op_str, None
