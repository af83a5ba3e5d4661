"""What every command shares: usage and output errors, the stdout that never raises, warnings, writing an output
file, the option groups several commands take (--jobs, --cpu, a test's name), and running a process with
progress and Ctrl-C.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys

from ..core.errors import EmuError


class _Parser(argparse.ArgumentParser):
    """preemu's parsers: no abbreviated options (`--cpu` must never be taken for `--cpus`), one-line errors."""

    def __init__(self, *args, **kw):
        kw["allow_abbrev"] = False
        super().__init__(*args, **kw)

    def error(self, message):  # exit 2 with one line (the usage is one `--help` away)
        print(f"preemu: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


class UsageError(EmuError):
    """An option value or combination the command cannot honour (exit 2, one line)."""


class OutputError(EmuError):
    """An output file that could not be written after the run (exit 2, or the run's own status if it failed)."""

    def __init__(self, message: str, run_code: int | None = None):
        super().__init__(message)
        self.run_code = run_code


def _why(e: OSError) -> str:
    return (e.strerror or str(e)).lower() if e.errno != errno.EBADF else "it is closed"


def _write_file(option: str, path: str, write, run_code: int | None = None) -> None:
    """write() the output file of `option`; a full disk or a device that refuses it is one clean line."""
    try:
        write()
    except OSError as e:
        failed = f"; exit status {run_code}: the run itself failed" if run_code else ""
        raise OutputError(f"{option} {path}: cannot write it ({_why(e)}){failed}", run_code) from None


class _Stream:
    """stdout or stderr for a command: a write that fails (a full disk, a closed descriptor: `> /dev/full`,
    `>&-`) is remembered, not raised in the middle of a run (an exec's program goes on, its output lost);
    main() reports it once the command has its exit status."""

    def __init__(self, stream, name: str):
        self.stream, self.name, self.error = stream, name, None

    def write(self, text: str) -> int:
        if self.error is None and text:
            try:
                if self.stream is None:     # Python's sys.stdout when descriptor 1 was closed (`>&-`)
                    raise OSError(errno.EBADF, "it is closed")
                self.stream.write(text)
            except OSError as e:
                self._failed(e)
        return len(text)

    def flush(self) -> None:
        if self.error is None and self.stream is not None:
            try:
                self.stream.flush()
            except OSError as e:
                self._failed(e)

    def _failed(self, e: OSError) -> None:
        self.error = e
        real = sys.__stdout__ if self.name == "stdout" else sys.__stderr__
        if self.stream is real and real is not None:   # what is still buffered would fail again at exit
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), real.fileno())
            except OSError:
                pass

    def isatty(self) -> bool:
        return self.error is None and self.stream is not None and self.stream.isatty()

    def __getattr__(self, name):
        return getattr(self.stream, name)


#: A command may leave here a callable returning (partial summary text, how far it got) or None:
#: on Ctrl-C, main() prints it before exiting 130.
_PARTIAL: list = []


def warn(message: str) -> None:
    print(f"preemu: warning: {message}", file=sys.stderr)


def _writable(path: str | None, option: str) -> None:
    """Fail before a long run, not after it, when an output file cannot be written."""
    if path is None:
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    existed = os.path.exists(path)
    try:                            # os.access says yes to root everywhere, /proc and /sys included: open it
        with open(path, "a"):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there ({e.strerror.lower()})") from None
    if not existed:
        os.remove(path)


def _regs(items: list[str]) -> dict[str, str]:
    out = {}
    for it in items or []:
        if "=" not in it:
            raise EmuError(f"--reg {it!r}: write NAME=VALUE, e.g. --reg RCX=100 or --reg RSI=src")
        k, v = (x.strip() for x in it.split("=", 1))
        if not k or not v:
            raise UsageError(f"--reg {it!r}: write NAME=VALUE with both, e.g. --reg RCX=100")
        same = next((old for old in out if old.upper() == k.upper()), None)
        if same is not None:                 # the last one would win silently
            raise UsageError(f"--reg {it!r}: {k} is already set by --reg {same}={out[same]}")
        out[k] = v
    return out


def _emit(a, rep, out, text: str) -> int:
    """Write the --junit-xml and --sarif files if asked, then the JSON or the text; return the exit code."""
    from ..output import junit, sarif
    code = 0 if rep.ok else 1
    if getattr(a, "junit_xml", None):
        _write_file("--junit-xml", a.junit_xml, lambda: junit.write(a.junit_xml, junit.from_report(rep)), code)
    if getattr(a, "sarif", None):
        _write_file("--sarif", a.sarif, lambda: sarif.write(a.sarif, sarif.from_report(rep)), code)
    if a.json:
        json.dump(rep.to_json(), out, indent=1)
        out.write("\n")
    else:
        out.write(text)
    return code


def _jobs(a) -> int:
    return a.jobs if a.jobs is not None else (os.cpu_count() or 1)


def _shard_options(a) -> dict:
    """--jobs/--executor/--results/--quiet as the API's shard options (progress only on a terminal)."""
    return {"jobs": _jobs(a), "executor": a.executor, "results": a.results,
            "progress": not a.quiet and sys.stderr.isatty()}


def _check_regs(given: dict[str, str], world) -> None:
    """Say what happens with entry registers that compiled Go code would never see."""
    from ..core import regs
    names = {regs.lookup(k).name for k in given}       # build_world has validated them
    start = world.start_regs
    if "R14" in names:
        warn(f"--reg R14: R14 holds g ({world.gp:#x}) on entry in Go's ABIInternal; the goroutine starts with "
             f"R14 = {start['R14']:#x} instead (as code that uses R14 as a scratch register would)")
    if "RFLAGS" in names:
        fl = start["RFLAGS"]
        extra = fl & ~(regs.USER_FLAGS_MASK | 0x2)
        if extra:
            raise UsageError(f"--reg RFLAGS={fl:#x}: only the arithmetic flags and DF can be set "
                             f"(CF PF AF ZF SF DF OF); {extra:#x} has other bits (TF would single-step trap)")
        if fl & (1 << regs.FLAG_BITS["DF"]):
            warn("--reg RFLAGS: DF is set; Go's ABI requires DF clear at function entry, and the goroutine "
                 "starts with DF set (string instructions run downwards)")
    if "XMM15" in names and world.layout.name != "go1.14" and start["XMM15"] != 0:
        warn(f"--reg XMM15: X15 is the zero register in Go's ABIInternal ({world.layout.name} layout); the "
             "goroutine starts with X15 != 0, which compiled Go code never sees")


def _model_world(a) -> list[str]:
    """The sweep flags given that only preemu's model world (.s input) has."""
    from .. import api
    return [flag for _, flag in api.model_world_options(a.force_unsafe, a.nested_signals, a.layout, a.gc_scanner)]


def _shards_partial(e: BaseException):
    """(summary, note) of the shards a Ctrl-C'd sweep finished (shards.Interrupted carries them), or None."""
    done = getattr(e, "done", None)
    live = getattr(e, "live", "")
    if not done:
        return (f"partial: {live}\n", "during the chain in progress") if live else None
    pts = sum(r.points for r in done)
    inj = sum(r.injected for r in done)
    viol = sum(r.violations.count for r in done)
    return (f"partial: {len(done)} of {e.total} shards finished: {pts:,} points, {inj:,} injected, "
            f"{viol:,} violation(s)" + (f"; {live}" if live else "") + "\n", f"after {len(done)} of {e.total} shards")


def _test_of(a) -> tuple:
    """--test / --bench of a command: ("test", NAME), ("bench", NAME) or ()."""
    from ..front.gobuild import test_selection
    return test_selection(getattr(a, "test", None), getattr(a, "bench", None))


def _run_with_progress_and_ctrl_c(p, a) -> None:
    """Run a whole program: Ctrl-C stops it between two slices (never inside a syscall the kernel model is
    handling), and a run longer than 2 s shows its progress on a terminal (not with --quiet or --json)."""
    import signal
    import time
    t0 = time.perf_counter()
    shown = [0.0]
    tty = sys.stderr.isatty() and not getattr(a, "quiet", False) and not a.json

    def progress(proc) -> None:
        now = time.perf_counter()
        if tty and now - t0 > 2 and now - shown[0] > 0.5:
            shown[0] = now
            sys.stderr.write(f"\rpreemu: {(proc.clock - proc.boot_ns) / 1e6:,.1f} ms virtual, {proc.insns:,} "
                             f"instructions, {len(proc.threads)} threads, {sum(proc.syscall_counts.values()):,} "
                             "syscalls \x1b[K")
            sys.stderr.flush()

    def on_sigint(signum, frame) -> None:
        p.interrupted = True
        if p.in_slice:
            p.uc.emu_stop()                   # the slice ends; the run loop stops before the next one

    old = signal.signal(signal.SIGINT, on_sigint)
    p.on_slice = progress
    try:
        p.run()
    finally:
        signal.signal(signal.SIGINT, old)
        if shown[0]:
            sys.stderr.write("\r\x1b[K")


def _fit(lines: list[str]) -> list[str]:
    """exec's summary lines on stderr, each fitted to the terminal's 120 columns (the program's output is not)."""
    from ..output.fit import fit
    return fit(lines)


def _parallel(sp) -> None:
    sp.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="run the sweep's shards in N local processes (default: the number of CPUs)")
    sp.add_argument("--executor", metavar="dask://HOST:PORT",
                    help="run the shards on a Dask cluster instead (default: $DASK_SCHEDULER_ADDRESS if set)")
    sp.add_argument("--results", metavar="FILE.jsonl",
                    help="append each finished shard to FILE; re-running the same command skips those shards")
    sp.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def _common(sp) -> None:
    _parallel(sp)
    sp.add_argument("--max-points", type=int, default=None, metavar="N",
                    help="inject at no more than N boundaries (default: 100000); with --gc on Go input, inject "
                         "at every (boundaries/N)-th boundary of the swept run, which the cycles lengthen")
    sp.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    sp.add_argument("--table", action="store_true", help="print the per-PC verdict table")
    _ci_outputs(sp)


def _ci_outputs(sp) -> None:
    sp.add_argument("--junit-xml", metavar="FILE", help="also write JUnit XML (one testcase per loop or scenario)")
    sp.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 (one result per violation group)")


def _add_test_options(p) -> None:
    """--test and --bench: a package directory's test binary runs one test, example or benchmark."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--test", metavar="NAME", help="FILE is a Go package directory: build its test binary (go test -c) "
                   "and run only this test or example (-test.run '^NAME$' -test.short, in the package directory); "
                   "--func names a function of the package it calls")
    g.add_argument("--bench", metavar="NAME", help="as --test, for a benchmark (run once: -test.benchtime=1x)")


def _size(text: str) -> int:
    """A size in bytes: 512M, 2G, 1.5GiB, 65536 (K, M, G, T: powers of 1024, as free(1) and cgroups write)."""
    import re
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (write 512M, 2G or a number of bytes)")
    unit = m.group(2).upper()
    n = int(float(m.group(1)) * (1024 ** ("KMGT".index(unit) + 1) if unit else 1))
    if n < 1 << 20:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1M (a Go program maps a few MiB to start)")
    return n


def _pids(text: str) -> int:
    """--max-pids: a whole number of tasks, at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of processes and threads, at least 1")
    return int(text)


def _cpu_option(p) -> None:
    from ..core.cpulevel import DEFAULT, LEVELS
    p.add_argument("--cpu", default=DEFAULT, choices=list(LEVELS), metavar="LEVEL",
                   help="the CPU's x86-64 level, as GOAMD64 names them: v1 (default) and v2 have no AVX; v3 adds "
                   "AVX2 and FMA, v4 AVX-512 (preemu executes those instructions itself). CPUID and XGETBV say so, "
                   "the verifier compares the level's Y/Z and K registers, and Go sources are built for it")
