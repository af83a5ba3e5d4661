"""How a real program's run ended badly, in the runtime's own words: describe(ending) -> Crash | None.

A run (runrecords.Ending: exit status, stdout, stderr, the engine's stop reason) that ends in a runtime fatal
error, a panic, a death by a signal or a hang is described by what the Go runtime printed and how the
process ended, so a violation can say "fatal error: sync: unlock of unlocked mutex in
internal/sync.(*Mutex).unlockSlow (goroutine 1 [running]); exit status 2" rather than only that stderr
differs. What is read, from the runtime's printing:
- the message: `fatal error: ...` (runtime/panic.go throw and fatal; indented by a tab after the lines of a
  panic under way, printPreFatalDeferPanic, and then the headline over them), `panic: ...` with
  `[recovered]` or `[recovered, repanicked]` and the nested `\tpanic: ...` lines (panic.go printpanics),
  `[signal SIGSEGV: segmentation violation code=... addr=... pc=...]` (panic.go dopanic_m), fatalsignal's `SIGSEGV:
  segmentation violation` with its `PC=... m=... sigcode=...` line (signal_unix.go:847-856), `fatal: ...`
  (writeErrStr), the `runtime: ...` lines just before a throw, or else the lines (up to DIAGNOSTIC_LINES, up
  to a blank line) a throw's caller printed just above its `fatal error:` (signal_unix.go sigpanic's
  `unexpected fault address 0x...` before "fatal error: fault", traceback.go's "traceback: unexpected
  SPWRITE function runtime.mcall" before "fatal error: traceback");
- the first goroutine's traceback (traceback.go goroutineheader `goroutine N [status]:`, the gp=/m=/mp=
  addresses dropped): its top FRAMES function names (arguments dropped; `created by F in goroutine N` kept
  apart), and the `runtime stack:` a throw on the system stack prints first (panic.go dopanic_m);
- how the process ended: its exit status, or the signal that killed it (sigdeliver.py: a signal whose action
  is SIG_DFL ends the process with exit status 128+N and the stop reason "killed by signal N (NAME)"), or,
  for a run that did not end, the engine's stop reason (the instruction budget, --max-virtual-ms, every
  thread waiting: a hang);
- stderr's last TAIL_LINES lines, each cut at LINE_CHARS.
The runtime ends a crash by exit(2) (panic.go fatalthrow, fatalpanic) or by a signal (GOTRACEBACK=crash), so
a message is looked for only then (or in a run that did not end). A run that exited without any of these,
whatever its status, is not a crash: describe returns None.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FRAMES = 5                 # top frames of the faulting goroutine kept
TAIL_LINES = 20            # stderr lines kept from its end
LINE_CHARS = 200           # ... each cut at this many characters
SUMMARY_CHARS = 300        # Crash.summary()'s cap
DIAGNOSTIC_LINES = 8       # lines a throw's caller printed just above its "fatal error:", kept as context

_KILLED = re.compile(r"killed by signal (\d+) \(([^)]*)\)")
_HEADER = re.compile(r"^goroutine (\d+)(?: gp=\S+)?(?: m=\S+)?(?: mp=\S+)? \[(.*)\]:$")
_SIGNAL_LINE = re.compile(r"^\[signal .*\]$")
_FATALSIGNAL = re.compile(r"^SIG[A-Z0-9]+: .+")            # sigtable[sig].name, as fatalsignal prints it
#: a line the runtime prints as (part of) its message, and the kind of message it heads (None: context only)
_MESSAGE = ((re.compile(r"^\t?fatal error: "), "fatal error"),        # a tab after a pending panic's lines
            (re.compile(r"^panic: "), "panic"),
            (re.compile(r"^fatal: "), "fatal error"),
            (_SIGNAL_LINE, None),
            (re.compile(r"^\tpanic: "), None),
            (re.compile(r"^runtime: "), None),
            (re.compile(r"^PC=0x[0-9a-f]+ m=\d+ sigcode="), None),
            (re.compile(r"^signal arrived during "), None))
#: frames a crash's summary looks past to say where it happened (panic.go throw, fatal, gopanic; the
#: switch to the system stack; sync's fatal, which calls the runtime's)
_MACHINERY = {"runtime.throw", "runtime.fatal", "runtime.fatalthrow", "runtime.fatalpanic", "runtime.gopanic", "panic",
              "runtime.systemstack", "runtime.systemstack_switch", "internal/sync.fatal", "internal/sync.throw",
              "sync.fatal", "sync.throw"}
#: which headline wins when a block has several (a fatal error after a pending panic is the fatal error)
_RANK = {"fatal error": 0, "fatal signal": 1, "panic": 2}


@dataclass
class Crash:
    """How one run ended badly (describe)."""
    kind: str                  # "fatal error", "panic", "fatal signal", "killed", "hang" or "error"
    exit_code: int | None      # None: the run did not end (a hang, an error of the engine)
    signal: int | None         # the signal that killed the process
    signal_name: str
    reason: str                # the engine's stop reason (runrecords.Ending.reason)
    message: str               # the runtime's headline: "fatal error: ...", "panic: ...", "SIGSEGV: ..."
    context: list[str] = field(default_factory=list)   # the message's other lines ([signal ...], nested panics)
    goroutine: str = ""        # "goroutine 1 [running]": the first goroutine the traceback shows
    frames: list[str] = field(default_factory=list)    # its top FRAMES function names, innermost first
    created_by: str = ""       # "main.level2 in goroutine 1" when the block says who started it
    runtime_stack: list[str] = field(default_factory=list)   # a throw on g0: its "runtime stack:" top frames
    stderr_tail: list[str] = field(default_factory=list)

    @property
    def ended(self) -> str:
        """How the process ended, in words: "exit status 2", "killed by signal 9 (SIGKILL)", "did not end: ..."."""
        if self.signal is not None:
            return f"killed by signal {self.signal} ({self.signal_name})"
        if self.exit_code is not None:
            return f"exit status {self.exit_code}"
        return f"did not end: {self.reason.removeprefix('error: ')}"

    def summary(self) -> str:
        """One line: the runtime's message (with its [signal ...] line), where, and how the process ended; for a
        silent death, the engine's reason (the signal and the fault); for a hang, what stopped the run."""
        if self.message:
            sig = next((c for c in self.context if _SIGNAL_LINE.match(c)), "")
            text = self.message + (f" {sig}" if sig else "")
            where = _where(self.runtime_stack) or _where(self.frames)
            if where:
                text += f" in {where} (" + ("runtime stack" if _where(self.runtime_stack) else self.goroutine) + ")"
            text += f"; {self.ended}"
        elif self.kind == "killed":
            text = self.reason
        else:
            text = f"the program {self.ended}"
        return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 3] + "..."

    def to_json(self) -> dict:
        return {"kind": self.kind, "exit_code": self.exit_code, "signal": self.signal,
                "signal_name": self.signal_name or None, "ended": self.ended, "reason": self.reason,
                "message": self.message, "context": list(self.context), "goroutine": self.goroutine,
                "frames": list(self.frames), "created_by": self.created_by, "runtime_stack": list(self.runtime_stack),
                "stderr_tail": list(self.stderr_tail)}


#: a failed test's header in a test binary's output (testing.go: "--- FAIL: TestX (0.00s)")
_TEST_FAILED = re.compile(r"--- FAIL: (\S+)")


def first_said(ending) -> str:
    """The first line the program said about how it ended, stripped: stderr first (the runtime's panic and
    fatal messages go there), then stdout, skipping blank lines and the testing package's "=== " framing. A
    failed test's header is joined with the line after it, its first reason: "--- FAIL: TestX: x_test.go:9: ...".
    "" when it said nothing."""
    lines = [ln.strip() for stream in (ending.stderr, ending.stdout)
             for ln in stream.decode(errors="replace").splitlines() if ln.strip() and not ln.startswith("=== ")]
    if not lines:
        return ""
    m = _TEST_FAILED.match(lines[0])
    if m is None:
        return lines[0]
    return f"--- FAIL: {m[1]}" + (f": {lines[1]}" if len(lines) > 1 and not lines[1].startswith("---") else "")


def describe(ending) -> Crash | None:
    """What the runtime said and how the run ended (the module docstring), or None for a run that ended by
    an exit with nothing of the runtime's on stderr (and for an interrupted run)."""
    lines = ending.stderr.decode(errors="replace").splitlines()
    m = _KILLED.search(ending.reason or "")
    signal, signal_name = (int(m[1]), m[2]) if m else (None, "")
    reason = ending.reason or ""
    # the runtime dies by exit(2) after its message (panic.go fatalthrow, fatalpanic), or by a signal (crash())
    said = ending.exit_code == 2 or signal is not None or ending.exit_code is None
    message, kind, context = _message(lines) if said else ("", None, [])
    if kind is None:
        if signal is not None:
            kind = "killed"
        elif ending.exit_code is None and (reason.startswith("reached ") or reason.startswith("error: deadlock")):
            kind = "hang"
        elif ending.exit_code is None and reason.startswith("error: "):
            kind = "error"
        else:
            return None
    g = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    rs = next((i for i, ln in enumerate(lines) if ln == "runtime stack:"), None)
    m = _HEADER.match(lines[g]) if g is not None else None
    frames, created_by = _frames(lines, g)
    tail = [ln if len(ln) <= LINE_CHARS else ln[:LINE_CHARS - 3] + "..." for ln in lines[-TAIL_LINES:]]
    return Crash(kind, ending.exit_code, signal, signal_name, reason, message, context,
                 f"goroutine {m[1]} [{m[2]}]" if m else "", frames, created_by, _frames(lines, rs)[0], tail)


def _where(frames: list[str]) -> str:
    """The first frame that is not the crash's own machinery (throw, fatal, panic, the switch to g0)."""
    return next((f for f in frames if f not in _MACHINERY), "")


def _first_header(lines: list[str]) -> int:
    """The index of the first traceback block's header (len(lines) when there is none)."""
    return next((i for i, ln in enumerate(lines) if _HEADER.match(ln) or ln == "runtime stack:"), len(lines))


def _message(lines: list[str]) -> tuple[str, str | None, list[str]]:
    """(headline, its kind, the other lines of the message): the runtime's block of message lines just before
    the first traceback (or, with none, the last such block on stderr)."""
    end = _first_header(lines)
    blocks, cur, first = [], [], 0           # (message lines, the index of the first)
    for i, ln in enumerate(lines[:end]):
        if _is_message(ln, lines[i + 1] if i + 1 < len(lines) else ""):
            if not cur:
                first = i
            cur.append(ln)
        elif cur:
            blocks.append((cur, first))
            cur = []
    if cur:
        blocks.append((cur, first))
    # a message block has a headline; the one nearest the traceback is the runtime's last word
    for block, first in reversed(blocks):
        heads = [(ln, k) for ln in block for k in [_kind(ln)] if k is not None]
        if heads:
            head, kind = min(heads, key=lambda h: _RANK[h[1]])
            before = []
            if kind == "fatal error" and block[0] == head:     # what a throw's caller printed just above it
                for ln in reversed(lines[max(0, first - DIAGNOSTIC_LINES):first]):
                    if not ln.strip():
                        break
                    before.insert(0, ln.strip())
                # a "runtime: ..." line above a longer dump is the caller's explanation (mgcsweep.go:861
                # reportZombies prints one, then a line per object): it leads, whatever the dump's length
                said = next((ln.strip() for ln in reversed(lines[:first]) if ln.startswith("runtime: ")), None)
                if said is not None and said not in before:
                    before = [said] + before[-(DIAGNOSTIC_LINES - 1):]
            return head.strip(), kind, before + [ln.strip() for ln in block if ln != head]
    return "", None, []


def _is_message(line: str, following: str) -> bool:
    if _FATALSIGNAL.match(line):
        return following.startswith("PC=")
    return any(rx.match(line) for rx, _ in _MESSAGE)


def _kind(line: str) -> str | None:
    if _FATALSIGNAL.match(line):
        return "fatal signal"
    return next((k for rx, k in _MESSAGE if rx.match(line)), None)


def _frames(lines: list[str], header: int | None) -> tuple[list[str], str]:
    """The traceback block after lines[header]: its top FRAMES function names, and who created the goroutine."""
    if header is None:
        return [], ""
    frames, created = [], ""
    for i in range(header + 1, len(lines)):
        ln = lines[i]
        if not ln.strip():
            break
        if ln.startswith("\t") or ln.startswith("..."):
            continue
        if ln.startswith("created by "):
            created = ln.removeprefix("created by ")
        elif ln.endswith(")") and "(" in ln and i + 1 < len(lines) and lines[i + 1].startswith("\t"):
            frames.append(ln[:ln.rindex("(")])
    return frames[:FRAMES], created


def crash_violation(sw, ending, boundary: int, pc: int, context: str):
    """A final-state "control flow" Violation naming the crash `ending` describes (None when it describes none):
    `actual` is Crash.summary(), `facts` {"crash": Crash.to_json()}, `detail` the run it ended (`context`). sw
    is the gsweep.RealSweep whose make_violation places the point. "control flow" is the subject of the
    never-returned violation it stands for, and names no value (references.key_of: None), so the reference
    runs never take it for a nondeterministic output."""
    c = describe(ending)
    if c is None:
        return None
    v = sw.make_violation("final-state", "control flow", "the program ends as it does uninterrupted",
                          c.summary(), boundary, pc, context)
    v.facts = {"crash": c.to_json()}
    return v
