"""The XSAVE part of a signal frame's fpstate at --cpu v3/v4: the vector state above XMM, saved at delivery
and restored by rt_sigreturn, so that a signal handler cannot lose a Y/Z upper half or a K register.

Mirrors what Linux writes with XSAVE into the frame's fpstate (arch/x86/kernel/fpu/signal.c
copy_fpstate_to_sigframe, save_sw_bytes; arch/x86/include/uapi/asm/sigcontext.h struct _fpx_sw_bytes) in the
standard (non-compacted) XSAVE layout of the SDM (vol. 1 13.4-13.5, the offsets of CPUID leaf 0xD): the
512-byte FXSAVE image, the 64-byte header (XSTATE_BV at +512), then YMM_Hi128 (component 2) at 576, the
opmask registers (5) at 1088, ZMM_Hi256 (6) at 1152, Hi16_ZMM (7) at 1664; FP_XSTATE_MAGIC1 and the sizes
in the FXSAVE image's software-reserved bytes (464), FP_XSTATE_MAGIC2 after the area; UC_FP_XSTATE in
uc_flags. Which components exist is the level's XCR0 (core/cpulevel.py). Left out: the compacted format,
XSTATE_BV bits for components in their init state (every enabled component is written).
"""
from __future__ import annotations

import struct

FXSAVE_SIZE, HEADER = 512, 64
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
    struct.pack_into("<Q", out, 0, xcr0)                                    # XSTATE_BV
    zmm = [read_reg(uc, r, 64) for r in ZMM[:32 if xcr0 >> 7 & 1 else 16]]
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


def sw_bytes(xcr0: int) -> bytes:
    """The 48 software-reserved bytes of the FXSAVE image that tell a reader the XSAVE area follows."""
    n = size(xcr0)
    return struct.pack("<IIQI", FP_XSTATE_MAGIC1, n + 4, xcr0, n).ljust(48, b"\0")


def restore(uc, xcr0: int, area: bytes) -> tuple[int, ...]:
    """Load the enabled components of `area` (the part past the FXSAVE image; XMM0-15 already restored from
    it) into the engine's ZMM registers; return K0-K7 for the caller to keep."""
    from ..engine.avxexec import ZMM, read_reg, write_reg
    xmm = b"".join(read_reg(uc, r, 16).to_bytes(16, "little") for r in ZMM[:16])
    nz, width = (32, 64) if xcr0 >> 7 & 1 else (16, 32)
    for i, v in enumerate(registers(xmm, area, xcr0, nz, width)):
        write_reg(uc, ZMM[i], v, 64)
    return kregs(area, xcr0)


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
