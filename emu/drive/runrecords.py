"""What a run of the real-program sweep leaves (gsweep.py makes them): how it Ended (exit status, output, the
reason it stopped), a Reference (F's boundaries, results and globals, and its Ending; the legitimate runs'
differences once references.py compared them), and ReferenceEnded, the uninterrupted run ending the program
before F returned. Mirrors nothing in Go: preemu's records of a run.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.errors import EmuError


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
                out.append((what, shown(a), shown(b)))
        return out


def shown(v) -> str:
    """A value as a violation quotes it: bytes decoded, at most 120 characters (its middle cut), else str(v)."""
    if isinstance(v, bytes):
        s = v.decode(errors="replace")
        return repr(s if len(s) <= 120 else s[:60] + " ... " + s[-55:])
    return str(v)


class ReferenceEnded(EmuError):
    """The uninterrupted run from the snapshot ended the program before F returned (a crash, an exit): the
    program fails without any injection; `ending` says how."""

    def __init__(self, msg: str, ending: "Ending"):
        super().__init__(msg)
        self.ending = ending


@dataclass
class Reference:
    """The uninterrupted run from the snapshot: F's boundaries and effects, and how the program ended; with
    `unstable`, what differed between it and the other uninterrupted runs (references.py)."""
    boundaries: int
    results: dict
    globals: dict
    ending: Ending
    unstable: object = None             # references.Unstable, once the other references ran
    shared: set = frozenset()           # globals other goroutines wrote while G was held (held_reference)
    #: gc_reference: (k, uses after free, the crash's Ending or None) when the run with a cycle at boundary k
    #: found a GC bug without any injection; such a run is a finding, not a legitimate run (references.py)
    gc_evidence: tuple | None = None
    findings: list = field(default_factory=list)      # the primary's: those gc_evidence of its GC references
    label: str = "the uninterrupted run"              # which legitimate run this is, as a report names it
    returned: bool = True               # False: the program ended before F returned (no results or globals)
