"""The XSAVE part of a signal frame's fpstate at --cpu v3/v4: the vector state above XMM, saved at delivery
and restored by rt_sigreturn, so that a signal handler cannot lose a Y/Z upper half or a K register.

Mirrors what Linux writes with XSAVE into the frame's fpstate (arch/x86/kernel/fpu/signal.c
copy_fpstate_to_sigframe, save_sw_bytes; arch/x86/include/uapi/asm/sigcontext.h struct _fpx_sw_bytes) in the
standard (non-compacted) XSAVE layout of the SDM (vol. 1 13.4-13.5, the offsets of CPUID leaf 0xD): the
512-byte FXSAVE image, the 64-byte header (XSTATE_BV at +512), then YMM_Hi128 (component 2) at 576, the
opmask registers (5) at 1088, ZMM_Hi256 (6) at 1152, Hi16_ZMM (7) at 1664; FP_XSTATE_MAGIC1 and the sizes
in the FXSAVE image's software-reserved bytes (464), FP_XSTATE_MAGIC2 after the area; UC_FP_XSTATE in
uc_flags. Which components exist is the level's XCR0 (core/cpulevel.py).

XSTATE_BV (XINUSE): Linux clears the header and executes XSAVE (arch/x86/kernel/fpu/xstate.h
xsave_to_user_sigframe), which writes every enabled component and sets XSTATE_BV[i] to XINUSE[i]; then
save_xstate_epilog sets the x87 and SSE bits whatever they were (signal.c: "for legacy compatible, we always
set FP/SSE bits"). The SDM (vol. 1 13.6, 13.7) lets XINUSE[i] be 0 or 1 for a component in its initial
configuration and requires 1 otherwise; preemu's CPU clears it exactly when the component is in its initial
configuration (all zeros: the Y upper halves, K0-K7, the Z upper halves, Z16-31). rt_sigreturn honours it as
XRSTOR does (`restore`): a component is loaded only when the frame's software bytes name it (fx_sw.xfeatures,
restore_fpregs_from_user) and its XSTATE_BV bit is set; every other one is put in its initial configuration.
A frame whose software bytes do not check out (magics, sizes: check_xstate_in_sigframe) restores the FXSAVE
image alone and the rest goes to its initial configuration. XRSTOR's #GP (an XSTATE_BV bit XCR0 lacks, a
nonzero XCOMP_BV or reserved header bytes, MXCSR reserved bits) makes rt_sigreturn fail: `bad_header`.
Left out: the compacted format, the x87 registers' contents (Go uses no x87).
"""
from __future__ import annotations

import struct

FXSAVE_SIZE, HEADER = 512, 64
XFEATURE_MASK_FPSSE = 0x3               # x87 and SSE: always set in a frame Linux writes
SW_BYTES = 464                          # struct _fpx_sw_bytes inside the FXSAVE image
FP_XSTATE_MAGIC1, FP_XSTATE_MAGIC2 = 0x46505853, 0x46505845
UC_FP_XSTATE = 0x1
#: component -> (offset, size) in the standard format (CPUID.(0xD, n) EBX/EAX)
COMPONENTS = {2: (576, 256), 5: (1088, 64), 6: (1152, 512), 7: (1664, 1024)}


def size(xcr0: int) -> int:
    """The XSAVE area's size for the components `xcr0` enables (0: no XSAVE, the FXSAVE image alone)."""
    if not xcr0:
        return FXSAVE_SIZE
    return max(o + n for c, (o, n) in COMPONENTS.items() if xcr0 >> c & 1)


def extended(uc, xcr0: int, kregs) -> bytes:
    """The area past the FXSAVE image: the header and every enabled component, from the engine's ZMM registers
    and `kregs` (K0-K7, which the engine does not keep)."""
    from ..engine.avxexec import ZMM, read_reg       # only at v3/v4: a v1 process never imports the vector unit
    out = bytearray(size(xcr0) - FXSAVE_SIZE)
    zmm = [read_reg(uc, r, 64) for r in ZMM[:32 if xcr0 >> 7 & 1 else 16]]
    struct.pack_into("<Q", out, 0, xstate_bv(xcr0, zmm, kregs))
    for c, (off, n) in COMPONENTS.items():
        if not xcr0 >> c & 1:
            continue
        o = off - FXSAVE_SIZE
        if c == 2:
            out[o:o + n] = b"".join(((z >> 128) & ((1 << 128) - 1)).to_bytes(16, "little") for z in zmm[:16])
        elif c == 5:
            out[o:o + n] = struct.pack("<8Q", *(tuple(kregs) or (0,) * 8))
        elif c == 6:
            out[o:o + n] = b"".join((z >> 256).to_bytes(32, "little") for z in zmm[:16])
        else:
            out[o:o + n] = b"".join(z.to_bytes(64, "little") for z in zmm[16:32])
    return bytes(out)


def xinuse(xcr0: int, zmm, kregs) -> int:
    """XINUSE's bits of the extended components `xcr0` enables: set for one not in its initial configuration
    (zmm: the registers' 512-bit values, 16 or 32 of them; kregs: K0-K7 or ())."""
    hi128 = ((1 << 128) - 1) << 128
    bits = 0
    if xcr0 >> 2 & 1 and any(z & hi128 for z in zmm[:16]):
        bits |= 1 << 2
    if xcr0 >> 5 & 1 and any(kregs or ()):
        bits |= 1 << 5
    if xcr0 >> 6 & 1 and any(z >> 256 for z in zmm[:16]):
        bits |= 1 << 6
    if xcr0 >> 7 & 1 and any(zmm[16:32]):
        bits |= 1 << 7
    return bits


def xstate_bv(xcr0: int, zmm, kregs) -> int:
    """The header's XSTATE_BV as Linux's signal frame has it: XINUSE, x87 and SSE always set."""
    return XFEATURE_MASK_FPSSE | xinuse(xcr0, zmm, kregs)


def sw_bytes(xcr0: int) -> bytes:
    """The 48 software-reserved bytes of the FXSAVE image that tell a reader the XSAVE area follows."""
    n = size(xcr0)
    return struct.pack("<IIQI", FP_XSTATE_MAGIC1, n + 4, xcr0, n).ljust(48, b"\0")


def check_sw_bytes(fx: bytes, xcr0: int, magic2_at) -> int | None:
    """check_xstate_in_sigframe (arch/x86/kernel/fpu/signal.c): the features the frame's software bytes
    name (fx_sw.xfeatures) when they check out -- MAGIC1, min <= xstate_size <= the XSAVE area's size and
    <= extended_size, MAGIC2 right after xstate_size bytes (`magic2_at(offset)` reads that u32) -- else None
    (the FXSAVE image alone is restored)."""
    magic1, extended_size, xfeatures, xsize = struct.unpack_from("<IIQI", fx, SW_BYTES)
    if magic1 != FP_XSTATE_MAGIC1 or not FXSAVE_SIZE + HEADER <= xsize <= size(xcr0) or xsize > extended_size:
        return None
    return xfeatures if magic2_at(xsize) == FP_XSTATE_MAGIC2 else None


def bad_header(area: bytes, xcr0: int, rfbm: int) -> str:
    """Why XRSTOR (standard form) with requested features `rfbm` would raise #GP on this area's header, or ""
    (SDM vol. 1 13.8.1: an XSTATE_BV bit XCR0 lacks, bytes 23:8 of the header not zero)."""
    bv = struct.unpack_from("<Q", area, 0)[0]
    if bv & ~xcr0:
        return f"XSTATE_BV {bv:#x} has bits XCR0 ({xcr0:#x}) lacks"
    if any(area[8:24]):
        return "XCOMP_BV or the reserved header bytes are not zero"
    return ""


def restore(uc, xcr0: int, area: bytes | None, rfbm: int) -> tuple[int, ...]:
    """The extended components after rt_sigreturn, from `area` (the part past the FXSAVE image; XMM0-15
    already loaded as the caller's XRSTOR decided): component i is loaded when rfbm[i] (the features the frame
    names, & XCR0) and XSTATE_BV[i] are set, else put in its initial configuration (zeros), as XRSTOR and
    os_xrstor(&init_fpstate, init_bv) leave it; area None: every one initialised (FXRSTOR only). Returns K0-K7
    for the caller to keep."""
    from ..engine.avxexec import ZMM, read_reg, write_reg
    bv = struct.unpack_from("<Q", area, 0)[0] & rfbm if area is not None else 0
    xmm = b"".join(read_reg(uc, r, 16).to_bytes(16, "little") for r in ZMM[:16])
    nz, width = (32, 64) if xcr0 >> 7 & 1 else (16, 32)
    if area is None:
        area = bytes(size(xcr0) - FXSAVE_SIZE)
    masked = bytearray(area)
    for c, (off, n) in COMPONENTS.items():
        if xcr0 >> c & 1 and not bv >> c & 1:
            masked[off - FXSAVE_SIZE:off - FXSAVE_SIZE + n] = bytes(n)
    for i, v in enumerate(registers(xmm, bytes(masked), xcr0, nz, width)):
        write_reg(uc, ZMM[i], v, 64)
    return kregs(bytes(masked), xcr0)


def registers(xmm: bytes, area: bytes, xcr0: int, nvec: int, width: int) -> list[int]:
    """The vector registers' whole values (`nvec` of `width` bytes: Y0-15 or Z0-31) from a frame's XMM bytes
    (16 each) and its extended area."""
    def comp(c: int) -> bytes:
        off, n = COMPONENTS[c]
        return area[off - FXSAVE_SIZE:off - FXSAVE_SIZE + n]
    out = []
    for i in range(nvec):
        if i < 16:
            v = int.from_bytes(xmm[16 * i:16 * i + 16], "little")
            v |= int.from_bytes(comp(2)[16 * i:16 * i + 16], "little") << 128
            if width == 64:
                v |= int.from_bytes(comp(6)[32 * i:32 * i + 32], "little") << 256
        else:
            v = int.from_bytes(comp(7)[64 * (i - 16):64 * (i - 15)], "little")
        out.append(v)
    return out


def kregs(area: bytes, xcr0: int) -> tuple[int, ...]:
    if not xcr0 >> 5 & 1:
        return ()
    off, n = COMPONENTS[5]
    return struct.unpack("<8Q", area[off - FXSAVE_SIZE:off - FXSAVE_SIZE + n])
