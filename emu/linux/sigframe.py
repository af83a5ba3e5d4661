"""The x86-64 signal frame: what Linux writes at delivery and reads back at rt_sigreturn.

Mirrors arch/x86/kernel/signal.c (get_sigframe, align_sigframe), signal_64.c (x64_setup_rt_frame,
restore_sigcontext), arch/x86/include/asm/sigframe.h (struct rt_sigframe) and the uapi ucontext/
sigcontext headers; Go reads the same bytes as runtime/defs_linux_amd64.go's ucontext/mcontext and
runtime/signal_linux_amd64.go's sigctxt. At --cpu v1/v2 the FP area is a 512-byte FXSAVE image (the CPU has
no XSAVE, see cpuid), so uc_flags carries UC_SIGCONTEXT_SS|UC_STRICT_RESTORE_SS but not UC_FP_XSTATE; at v3/v4
it is an XSAVE area with the level's components (xstate.py) and UC_FP_XSTATE.
Left out: x87 register stack contents (zeros), the 32-bit frame, SA_SIGINFO-less handlers.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from unicorn import x86_const as X

from unicorn import UcError

from . import xstate
from ..engine.native import lib as _native
from .regbatch import RegBatch, mem_read, mem_write, read_reg

# --- layout: one table, offsets from the frame base (RSP at handler entry) --------------------
PRETCODE = 0
UC = 8                                   # struct ucontext
UC_FLAGS, UC_LINK, UC_STACK = UC + 0, UC + 8, UC + 16        # uc_stack: ss_sp, ss_flags(+pad), ss_size
MCONTEXT = UC + 40                       # struct sigcontext (Go: mcontext.gregs[23], fpregs, reserved)
#: mcontext general registers in order (Go's gregs index = position)
GREGS = ("R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15", "RDI", "RSI", "RBP", "RBX", "RDX",
         "RAX", "RCX", "RSP", "RIP", "EFLAGS", "CSGSFS", "ERR", "TRAPNO", "OLDMASK", "CR2")
FPSTATE_PTR = MCONTEXT + 8 * len(GREGS)  # 232
UC_SIGMASK = MCONTEXT + 256              # 304
SIGINFO = UC_SIGMASK + 8                 # 312 (128 bytes)
FRAME_SIZE = SIGINFO + 128               # 440
FXSAVE_SIZE = 512
REDZONE = 128

UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS = 0x2, 0x4
SS_ONSTACK, SS_DISABLE = 1, 2
SI_USER, SI_TKILL = 0, -6                # kill(2); tkill(2)/tgkill(2) (include/uapi/asm-generic/siginfo.h)
SEGV_MAPERR, SEGV_ACCERR = 1, 2          # no page there; a page there that forbids the access
X86_TRAP_BP, X86_TRAP_PF = 3, 14       # int3's trap number; a page fault's (arch/x86/include/asm/trapnr.h)
SI_KERNEL = 0x80                        # a signal the kernel sent itself (force_sig: siginfo.h)
PF_PROT, PF_WRITE, PF_USER, PF_INSTR = 0x1, 0x2, 0x4, 0x10      # page-fault error code bits (arch/x86 traps.h)


@dataclass(frozen=True)
class SigInfo:
    """What siginfo and the mcontext's err/trapno/cr2 say about a signal."""

    signo: int
    code: int = SI_TKILL
    pid: int = 0              # SI_TKILL: the sender
    uid: int = 0
    addr: int | None = None   # SIGSEGV: the faulting address (si_addr; also cr2)
    trapno: int = 0
    err: int = 0
    status: int = 0           # SIGCHLD: si_status, the child's exit code or signal (CLD_EXITED, CLD_KILLED)
USER_CS, USER_SS = 0x33, 0x2B
#: EFLAGS bits rt_sigreturn takes from the frame (signal_64.c FIX_EFLAGS: AC OF DF TF SF ZF AF PF CF RF)
FIX_EFLAGS = 0x40DD5 | 0x10000
#: bits cleared at handler entry (DF, TF, AC; RF too)
ENTRY_CLEAR = 0x400 | 0x100 | 0x40000 | 0x10000

_REG = {n: getattr(X, f"UC_X86_REG_{n}") for n in GREGS[:17]}
_REG["EFLAGS"] = X.UC_X86_REG_EFLAGS
XMM = [getattr(X, f"UC_X86_REG_XMM{i}") for i in range(16)]


def greg_offset(name: str) -> int:
    return MCONTEXT + 8 * GREGS.index(name)


@dataclass
class Delivered:
    """What delivery left behind, to recognise the frame at rt_sigreturn."""

    frame: int          # frame base (RSP at handler entry)
    ucontext: int
    fpstate: int
    regs: dict          # the interrupted registers (GPRs, RIP, EFLAGS)
    xmm: bytes          # XMM0-15, 16 bytes each (little-endian, as FXSAVE stores them)
    mxcsr: int
    sig: int = 0
    fs_base: int = 0    # the thread's TLS base (Go keeps g at -8 from it)
    ext: bytes = b""    # at v3/v4: the XSAVE area past the FXSAVE image (xstate.py), as delivered
    oracle_due: bool = False    # the watch is still to ask its oracle about this signal
    vals: tuple = ()    # `regs`' values in GREGS[:18]'s order (a tuple compares at C speed)


_GREGS = RegBatch(_REG.values())
_GREGS_FS = RegBatch([*_REG.values(), X.UC_X86_REG_FS_BASE])     # and the TLS base, in the same call
_FX = RegBatch([X.UC_X86_REG_FPCW, X.UC_X86_REG_FPSW, X.UC_X86_REG_FPTAG, X.UC_X86_REG_MXCSR, *XMM], wide=XMM)
_FX_HEAD = struct.Struct("<Q8xQ8xQ8xQ8x")          # _FX.raw's first four slots
_FX_IMAGE_HEAD = struct.Struct("<HHBxHQQII")      # FXSAVE: FCW FSW FTW(abridged) FOP FIP FDP MXCSR MXCSR_MASK
_HANDLER_ENTRY = RegBatch([X.UC_X86_REG_RSP, X.UC_X86_REG_RIP, X.UC_X86_REG_RDI, X.UC_X86_REG_RSI, X.UC_X86_REG_RDX,
                           X.UC_X86_REG_RAX, X.UC_X86_REG_EFLAGS])     # the handler's entry state, in this order
_FX_RESTORE = RegBatch([X.UC_X86_REG_FPCW, X.UC_X86_REG_FPSW, X.UC_X86_REG_MXCSR, *XMM], wide=XMM)
_FX_RESTORE_HEAD = struct.Struct("<Q8xQ8xQ8x")
#: the mcontext's GPRs, RIP and EFLAGS as one pack/unpack (the order of GREGS[:18], which is _REG's)
_MC_GREGS = struct.Struct("<18Q")
assert list(_REG) == list(GREGS[:18])


def _frame_struct(siginfo: str) -> struct.Struct:
    """The whole rt_sigframe as one pack: each field at its offset above, zeros between (uc_link, oldmask, the
    mcontext's reserved words, the rest of siginfo), siginfo laid out as `siginfo` says."""
    fields = [(PRETCODE, "Q"), (UC_FLAGS, "QQ"), (UC_STACK, "QiiQ"), (MCONTEXT, "18Q"), (greg_offset("CSGSFS"), "HHHH"),
              (greg_offset("ERR"), "QQ"), (greg_offset("CR2"), "Q"), (FPSTATE_PTR, "Q"), (UC_SIGMASK, "Q"),
              (SIGINFO, siginfo)]
    fmt, at = "<", 0
    for off, f in fields:
        assert off >= at, "fields in offset order"
        fmt += (f"{off - at}x" if off > at else "") + f
        at = off + struct.calcsize("<" + f)
    st = struct.Struct(fmt + f"{FRAME_SIZE - at}x")
    assert st.size == FRAME_SIZE
    return st


_FRAME_KILL = _frame_struct("iiiiIIi")      # si_pid, si_uid, si_status (a kill/tgkill, SIGCHLD)
_FRAME_FAULT = _frame_struct("iiiiQ")       # si_addr (a fault)
_last_fx: list = [None, None]           # the last registers' raw read and the image made from them


def _fxsave(uc) -> tuple[bytes, bytes, int]:
    """The FXSAVE image of the thread's FPU/SSE state, the 16 XMM registers' bytes (as FXSAVE stores them)
    and MXCSR."""
    raw = _FX.raw(uc)
    if raw == _last_fx[0]:              # the same state as at the last delivery (a chain's points): its image
        return _last_fx[1]
    _last_fx[0], _last_fx[1] = raw, _fxsave_image(raw)
    return _last_fx[1]


def _fxsave_image(raw: bytes) -> tuple[bytes, bytes, int]:
    fcw, fsw, ftw, mxcsr = _FX_HEAD.unpack_from(raw)
    abridged_tag = 0
    for i in range(8):                    # FXSAVE keeps one "valid" bit per x87 register
        if (ftw >> (2 * i)) & 3 != 3:
            abridged_tag |= 1 << i
    xmm = raw[64:]
    return (_FX_IMAGE_HEAD.pack(fcw, fsw, abridged_tag, 0, 0, 0, mxcsr, 0xFFFF) + bytes(160 - _FX_IMAGE_HEAD.size)
            + xmm + bytes(FXSAVE_SIZE - 160 - len(xmm))), xmm, mxcsr


def setup_rt_frame(uc, info: SigInfo, handler: int, restorer: int, blocked_mask: int, altstack,
                   on_altstack: bool, xsave: tuple | None = None) -> Delivered:
    """Build the frame for `sig` on the current thread (loaded in uc) and enter the handler.

    altstack is (ss_sp, ss_size, ss_flags) or None for "use the current stack"; xsave is (XCR0, K0-K7) at
    --cpu v3/v4 (an XSAVE area), None below (the FXSAVE image alone). Without an XSAVE area the compiled path
    (emu/engine/_native.c's setup_frame: the same bytes, the same registers) does the work unless
    PREEMU_NATIVE=0.
    """
    if _native is not None and not xsave:
        return _setup_native(uc, info, handler, restorer, blocked_mask, altstack, on_altstack)
    vals = _GREGS_FS(uc)           # one batched read: a register read through the binding costs ~8 us
    fs_base, vals = vals[18], vals[:18]
    regs = dict(zip(_REG, vals))
    sp = regs["RSP"] - REDZONE
    if altstack is not None and not on_altstack:
        sp = altstack[0] + altstack[1]
    xcr0 = xsave[0] if xsave else 0
    fp_size = xstate.size(xcr0) + (4 if xcr0 else 0)             # FP_XSTATE_MAGIC2 after an XSAVE area
    fpstate = (sp - fp_size) & ~63
    frame = ((fpstate - FRAME_SIZE) & ~15) - 8
    fx, xmm, mxcsr = _fxsave(uc)
    ext = b""
    if xcr0:
        ext = xstate.extended(uc, xcr0, xsave[1])
        fx = fx[:xstate.SW_BYTES] + xstate.sw_bytes(xcr0)
        fx += ext + struct.pack("<I", xstate.FP_XSTATE_MAGIC2)
    sig = info.signo
    stack = (0, SS_DISABLE, 0, 0) if altstack is None else \
        (altstack[0], SS_ONSTACK if on_altstack else 0, 0, altstack[1])
    head = (restorer, UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | (xstate.UC_FP_XSTATE if xcr0 else 0), 0, *stack,
            *vals, USER_CS, 0, 0, USER_SS, info.err, info.trapno, info.addr or 0, fpstate, blocked_mask)
    if info.addr is None:
        b = _FRAME_KILL.pack(*head, sig, 0, info.code, 0, info.pid, info.uid, info.status)
    else:
        b = _FRAME_FAULT.pack(*head, sig, 0, info.code, 0, info.addr)
    mem_write(uc, fpstate, fx)
    mem_write(uc, frame, b)
    _HANDLER_ENTRY.write(uc, (frame, handler, sig, frame + SIGINFO, frame + UC, 0, regs["EFLAGS"] & ~ENTRY_CLEAR))
    return Delivered(frame, frame + UC, fpstate, regs, xmm, mxcsr, sig, fs_base, ext=ext, vals=vals)


def _setup_native(uc, info: SigInfo, handler: int, restorer: int, blocked_mask: int, altstack,
                  on_altstack: bool) -> Delivered:
    """setup_rt_frame with xsave=None in C: the decisions (stack, uc_stack, siginfo's layout) are passed in."""
    use_alt = altstack is not None and not on_altstack
    ss_sp, ss_flags, ss_size = (0, SS_DISABLE, 0) if altstack is None else \
        (altstack[0], SS_ONSTACK if on_altstack else 0, altstack[1])
    got = _native.setup_frame(uc._uch.value, use_alt, altstack[0] + altstack[1] if use_alt else 0, ss_sp, ss_flags,
                              ss_size, restorer, handler, blocked_mask, info.signo, info.code, info.pid, info.uid,
                              info.status, info.addr is not None, info.addr or 0, info.trapno, info.err)
    if isinstance(got, int):
        raise UcError(got)
    frame, fpstate, vals, fs_base, xmm, mxcsr = got
    return Delivered(frame, frame + UC, fpstate, dict(zip(_REG, vals)), xmm, mxcsr, info.signo, fs_base, vals=vals)


@dataclass
class Restored:
    regs: dict
    sigmask: int
    fpstate: int
    kregs: tuple = ()       # K0-K7 from an XSAVE area with the opmask component (the caller keeps them)
    vals: tuple = ()        # `regs`' values in GREGS[:18]'s order
    bad: str = ""           # why the FPU state could not be restored (XRSTOR's #GP): rt_sigreturn's SIGSEGV


def _restore_xstate(uc, fx: bytes, fpstate: int, xcr0: int, r: Restored) -> Restored:
    """The FPU part of rt_sigreturn at --cpu v3/v4, as __fpu_restore_sig does it (arch/x86/kernel/fpu/signal.c):
    the software bytes checked (xstate.check_sw_bytes; uc_flags is not looked at), then XRSTOR with the features
    they name (& XCR0) and the rest initialised; a frame that fails the check gets FXRSTOR of its FXSAVE image
    and every extended component initialised. XRSTOR's or FXRSTOR's #GP sets `bad`, and the FPU is initialised
    (fpu__restore_sig: fpu__clear_user_states when the restore fails)."""
    xfeatures = xstate.check_sw_bytes(fx, xcr0, lambda off: struct.unpack("<I", mem_read(uc, fpstate + off, 4))[0])
    mxcsr = struct.unpack_from("<I", fx, 24)[0]
    xmm = fx[160:160 + 16 * len(XMM)]
    fcw, fsw = struct.unpack_from("<HH", fx, 0)
    area = None
    if xfeatures is None:                             # fx_only: FXRSTOR
        if mxcsr >> 16:
            r.bad = f"MXCSR {mxcsr:#x} in the frame has reserved bits set (FXRSTOR #GP)"
            init_handler_fpu(uc, xcr0)
            return r
    else:
        rfbm = xfeatures & xcr0
        area = mem_read(uc, fpstate + FXSAVE_SIZE, xstate.size(xcr0) - FXSAVE_SIZE)
        r.bad = xstate.bad_header(area, xcr0, rfbm)
        if not r.bad and rfbm & 6 and mxcsr >> 16:         # loaded when SSE or AVX is requested
            r.bad = f"MXCSR {mxcsr:#x} in the frame has reserved bits set (XRSTOR #GP)"
        if r.bad:
            init_handler_fpu(uc, xcr0)
            return r
        bv = struct.unpack_from("<Q", area, 0)[0] & rfbm
        if not bv & 1:                                # x87 in its initial configuration
            fcw, fsw = 0x37F, 0
        if not bv & 2:                                # XMM0-15 zero
            xmm = bytes(len(xmm))
        if not rfbm & 2:                              # MXCSR from init_fpstate (os_xrstor of init_bv)
            mxcsr = 0x1F80
        _FX_RESTORE.write_raw(uc, _FX_RESTORE_HEAD.pack(fcw, fsw, mxcsr) + xmm)
        r.kregs = xstate.restore(uc, xcr0, area, rfbm)
        return r
    _FX_RESTORE.write_raw(uc, _FX_RESTORE_HEAD.pack(fcw, fsw, mxcsr) + xmm)
    r.kregs = xstate.restore(uc, xcr0, None, 0)
    return r


def init_handler_fpu(uc, xcr0: int) -> None:
    """The FPU state a signal handler starts with at --cpu v3/v4: handle_signal's fpu__clear_user_states
    (arch/x86/kernel/signal.c, fpu/core.c) loads init_fpstate: x87 initialised (FCW 0x37F), MXCSR 0x1F80,
    every XMM/YMM/ZMM register zero (K0-K7: the caller's)."""
    from ..engine.avxexec import ZMM, write_reg
    uc.reg_write(X.UC_X86_REG_FPCW, 0x37F)
    uc.reg_write(X.UC_X86_REG_FPSW, 0)
    uc.reg_write(X.UC_X86_REG_FPTAG, 0xFFFF)
    uc.reg_write(X.UC_X86_REG_MXCSR, 0x1F80)
    for r in ZMM[:32 if xcr0 >> 7 & 1 else 16]:
        write_reg(uc, r, 0, 64)


def restore_rt_frame(uc, xcr0: int = 0) -> Restored:
    """rt_sigreturn: the handler's RET popped pretcode, so the ucontext is at RSP (frame = RSP - 8). With
    xcr0 = 0 the compiled path does it (emu/engine/_native.c's restore_frame) unless PREEMU_NATIVE=0."""
    if _native is not None and not xcr0:
        got = _native.restore_frame(uc._uch.value)
        if isinstance(got, int):
            raise UcError(got)
        vals, sigmask, fpstate = got
        return Restored(dict(zip(_REG, vals)), sigmask, fpstate, vals=vals)
    frame = read_reg(uc, X.UC_X86_REG_RSP) - 8
    b = mem_read(uc, frame, FRAME_SIZE)
    vals = _MC_GREGS.unpack_from(b, MCONTEXT)
    vals = (*vals[:17], (read_reg(uc, X.UC_X86_REG_EFLAGS) & ~FIX_EFLAGS) | (vals[17] & FIX_EFLAGS))
    regs = dict(zip(_REG, vals))
    fpstate = struct.unpack_from("<Q", b, FPSTATE_PTR)[0]
    sigmask = struct.unpack_from("<Q", b, UC_SIGMASK)[0]
    _GREGS.write(uc, vals)
    if fpstate:
        fx = mem_read(uc, fpstate, FXSAVE_SIZE)
        if xcr0:
            return _restore_xstate(uc, fx, fpstate, xcr0, Restored(regs, sigmask, fpstate, vals=vals))
        fcw, fsw = struct.unpack_from("<HH", fx, 0)
        mxcsr = struct.unpack_from("<I", fx, 24)[0]
        _FX_RESTORE.write_raw(uc, _FX_RESTORE_HEAD.pack(fcw, fsw, mxcsr) + fx[160:160 + 16 * len(XMM)])
    else:                                   # NULL fpstate: the FPU is reset to its init state
        uc.reg_write(X.UC_X86_REG_FPCW, 0x37F)
        uc.reg_write(X.UC_X86_REG_MXCSR, 0x1F80)
        for r in XMM:
            uc.reg_write(r, 0)
    return Restored(regs, sigmask, fpstate, vals=vals)
