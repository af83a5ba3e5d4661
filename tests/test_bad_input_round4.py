"""Bad input, round 4 (issue #40 items 2 and 5): no internal error, no traceback, no silently wrong input.

Each case is (id, files, argv, exit code, phrase of the message, stdout). Files are written to a temporary
directory that is also the working directory ({root}, {asm}, {sc} and {go} in argv and in file text are the
repository, asm/, scenarios/ and tests/data/go); a file's content may be a callable returning bytes. stdout
is "ok" (a StringIO), "full" (every write fails with ENOSPC, as `> /dev/full` does) or "closed" (Python's
sys.stdout is None, as after `>&-`). Exit 2 is bad input; 1 is kept where the run itself failed (a check,
or an expectation) and only writing its output did not work.

The classes: writing the output (stdout full or closed, and each output file on a device that refuses it),
every key of the three kinds of scenario file (type, range, NaN and infinity, a regex that does not compile,
a string where a list is wanted, variants), command-line values that used to be taken silently (a register
given twice, an empty value, a duplicate --mount guest path, --call 0 in explain), inputs that are devices
(/dev/zero was read forever), misleading messages (an offset past a function, a scenario of the other kind,
a PIE, a stub whose layout cannot be told).
"""
from __future__ import annotations

import errno
import io
import os
import struct
import subprocess
import sys

import pytest
from conftest import ASM, ROOT

from emu import cli

SC = ROOT / "scenarios"
GO = ROOT / "tests" / "data" / "go"
LOOP = "f:\n    xor eax, eax\n.l:\n    inc rax\n    cmp rax, rcx\n    jb .l\n    ret\n"
SWEEP_TOML = 'name = "t"\nasm = "t.s"\nentry = "f"\n[registers]\nRCX = 3\n'
SCHED_TOML = 'name = "tiny"\nasm = "{asm}/starvation.s"\nduration_ms = 0.2\n'
ONE_G = '[[goroutines]]\nentry = "spin"\n'
XS = 'program = "{sc}/go/hello"\nmax_virtual_ms = 50\n'
SUM = ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=5"]
KINDS = "{go}/kinds"
TINY_RUN = {"s.toml": SCHED_TOML + ONE_G}
FAILING = SUM + ["--stub", "{root}/tests/data/stub_no_pushfq.s"]       # a sweep whose check fails: exit 1


def _xs(extra: str) -> dict:
    """An exec scenario of hello world with `extra` appended."""
    return {"x.toml": XS + extra}


def _sw(extra: str) -> dict:
    """A sweep scenario of LOOP: `extra` is a [table], or top-level keys (which go before [registers])."""
    text = SWEEP_TOML + extra if extra.startswith("[") else extra + SWEEP_TOML
    return {"t.s": LOOP, "t.toml": text}


def _sched(top: str = "", goroutines: str = ONE_G, tail: str = "") -> dict:
    base = SCHED_TOML.replace("duration_ms = 0.2\n", "") if top.startswith("duration_ms") else SCHED_TOML
    return {"s.toml": base + top + "\n" + goroutines + tail}


def _hello_with_type(e_type: int):
    def make() -> bytes:
        from emu.front import gobuild
        data = gobuild.build(SC / "go" / "hello").binary.read_bytes()
        return data[:16] + struct.pack("<H", e_type) + data[18:]
    return make


def _stub(edit):
    def make() -> bytes:
        return edit((ASM / "preempt_amd64_go114.s").read_text()).encode()
    return make


_MIXED = _stub(lambda s: s.replace("    call asyncPreempt2", "    movups xmmword ptr [rdi], xmm1\n    call asyncPreempt2"))
_NO_X = _stub(lambda s: "".join(ln for ln in s.splitlines(True) if "xmm" not in ln))

CASES = [
    # --- stdout full (`> /dev/full`): exit 2, or the run's own 1 when its check failed ----------------------
    ("full: sweep text", {}, SUM, 2, "stdout: cannot write the output (no space left on device)", "full"),
    ("full: sweep --json", {}, SUM + ["--json"], 2, "the command itself succeeded, but its output is lost", "full"),
    ("full: sweep --table", {}, SUM + ["--table"], 2, "no space left on device", "full"),
    ("full: a failing sweep keeps 1", {}, FAILING, 1, "exit status 1 is the command's own", "full"),
    ("full: run sweep scenario", _sw(""), ["run", "t.toml"], 2, "stdout: cannot write", "full"),
    ("full: run scheduler scenario --json", TINY_RUN, ["run", "s.toml", "--json"], 2, "stdout: cannot write", "full"),
    ("full: preempt", {}, ["preempt", "{asm}/call_loop.s", "--func", "call_loop", "--at", "3", "--reg", "RCX=4"], 2,
     "stdout: cannot write", "full"),
    ("full: explain", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at", "3", "--reg", "RCX=5"], 2,
     "stdout: cannot write", "full"),
    ("full: explain --json", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at", "3", "--reg", "RCX=5",
                                  "--json"], 2, "stdout: cannot write", "full"),
    ("full: disasm", {}, ["disasm", "{asm}/sum_loop.s"], 2, "stdout: cannot write", "full"),
    ("full: disasm --json", {}, ["disasm", "{asm}/sum_loop.s", "--json"], 2, "stdout: cannot write", "full"),
    ("full: gen-stub --check", {}, ["gen-stub", "--check"], 2, "stdout: cannot write", "full"),
    ("full: exec (the program's output)", {}, ["exec", KINDS], 2, "the command itself succeeded, but its output is lost",
     "full"),
    ("full: exec --json", {}, ["exec", KINDS, "--json"], 2, "stdout: cannot write", "full"),
    ("full: exec scenario", {}, ["exec", "{sc}/go/hello.toml"], 2, "stdout: cannot write", "full"),
    ("full: check-stub --json", {}, ["check-stub", "{asm}/preempt_amd64_go114.s", "--max-points", "1", "--json",
                                     "--jobs", "1"], 2, "stdout: cannot write", "full"),
    # --- stdout closed (`>&-`) --------------------------------------------------------------------------
    ("closed: sweep", {}, SUM, 2, "stdout: cannot write the output (it is closed)", "closed"),
    ("closed: a failing sweep keeps 1", {}, FAILING, 1, "(it is closed); it is lost (exit status 1", "closed"),
    ("closed: exec", {}, ["exec", KINDS], 2, "(it is closed)", "closed"),
    ("closed: exec --json", {}, ["exec", KINDS, "--json"], 2, "(it is closed)", "closed"),
    ("closed: disasm", {}, ["disasm", "{asm}/sum_loop.s"], 2, "(it is closed)", "closed"),
    ("closed: --help", {}, ["--help"], 2, "(it is closed)", "closed"),
    ("closed: sweep --help", {}, ["sweep", "--help"], 2, "(it is closed)", "closed"),
    ("closed: --version", {}, ["--version"], 2, "(it is closed)", "closed"),
    ("closed: run scheduler scenario", TINY_RUN, ["run", "s.toml"], 2, "(it is closed)", "closed"),
    ("closed: bad input stays one line", {}, ["sweep", "nope.s", "--func", "f"], 2, "nope.s: cannot read", "closed"),
    # --- output files on a device that refuses them -----------------------------------------------------
    ("--junit-xml /dev/full", {}, SUM + ["--junit-xml", "/dev/full"], 2,
     "--junit-xml /dev/full: cannot write it (no space left on device)", "ok"),
    ("--sarif /dev/full", {}, SUM + ["--sarif", "/dev/full"], 2, "--sarif /dev/full: cannot write it", "ok"),
    ("--junit-xml /dev/full after a failing run", {}, FAILING + ["--junit-xml", "/dev/full"], 1,
     "exit status 1: the run itself failed", "ok"),
    ("run --sarif /dev/full", _sw(""), ["run", "t.toml", "--sarif", "/dev/full"], 2, "--sarif /dev/full", "ok"),
    ("run --trace /dev/full", TINY_RUN, ["run", "s.toml", "--trace", "/dev/full"], 2, "--trace /dev/full: cannot write",
     "ok"),
    ("run --timeline /dev/full", TINY_RUN, ["run", "s.toml", "--timeline", "/dev/full"], 2, "--timeline /dev/full", "ok"),
    ("exec --trace /dev/full", {}, ["exec", KINDS, "--trace", "/dev/full"], 2, "--trace /dev/full: cannot write", "ok"),
    ("explain --html /dev/full", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at", "3", "--reg", "RCX=5",
                                      "--html", "/dev/full"], 2, "--html /dev/full: cannot write it", "ok"),
    ("check-stub --junit-xml /dev/full", {}, ["check-stub", "{asm}/preempt_amd64_go114.s", "--max-points", "1",
                                              "--jobs", "1", "--junit-xml", "/dev/full"], 2, "--junit-xml /dev/full", "ok"),
    ("--results /dev/full (read back forever)", {}, SUM + ["--results", "/dev/full"], 2,
     "--results /dev/full: not a regular file", "ok"),
    ("run --results /dev/zero", _sw(""), ["run", "t.toml", "--results", "/dev/zero"], 2, "not a regular file", "ok"),
    # --- whole-program (exec) scenarios: every key typed, ranges checked, the key named -------------------
    ("xs: stdout_regex does not compile", _xs("[expect]\nstdout_regex = '('\n"), ["exec", "x.toml"], 2,
     "x.toml: expect.stdout_regex: '(' is not a valid regular expression", "ok"),
    ("xs: stdout_number_range = [5]", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = [5]\n"),
     ["exec", "x.toml"], 2, "expect.stdout_number_range: must be a [low, high] pair of numbers, got [5]", "ok"),
    ("xs: number range, regex without a group", _xs("[expect]\nstdout_regex = 'hello'\nstdout_number_range = [1, 2]\n"),
     ["exec", "x.toml"], 2, "needs a group in expect.stdout_regex", "ok"),
    ("xs: number range without a regex", _xs("[expect]\nstdout_number_range = [1, 2]\n"), ["exec", "x.toml"], 2,
     "needs expect.stdout_regex", "ok"),
    ("xs: number range [nan, 1]", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = [nan, 1]\n"),
     ["exec", "x.toml"], 2, "pair of numbers, got [nan, 1]", "ok"),
    ("xs: number range [1, inf]", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = [1, inf]\n"),
     ["exec", "x.toml"], 2, "pair of numbers", "ok"),
    ("xs: number range of strings", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = ['a', 'b']\n"),
     ["exec", "x.toml"], 2, "pair of numbers", "ok"),
    ("xs: number range of booleans", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = [true, 2]\n"),
     ["exec", "x.toml"], 2, "pair of numbers", "ok"),
    ("xs: number range upside down", _xs("[expect]\nstdout_regex = '(h)'\nstdout_number_range = [5, 1]\n"),
     ["exec", "x.toml"], 2, "low 5 is above high 1", "ok"),
    ("xs: the group is no number", _xs("[expect]\nstdout_regex = '(h)ello'\nstdout_number_range = [1, 2]\n"),
     ["exec", "x.toml"], 1, "expect.stdout_number_range: the first group of stdout_regex matched 'h', not a number",
     "ok"),
    ("xs: expect = 3", _xs("expect = 3\n"), ["exec", "x.toml"], 2, "x.toml: expect: must be a table (got int 3)", "ok"),
    ("xs: exit_code 300", _xs("[expect]\nexit_code = 300\n"), ["exec", "x.toml"], 2,
     "expect.exit_code: an exit status is 0 to 255, got 300", "ok"),
    ("xs: exit_code -1", _xs("[expect]\nexit_code = -1\n"), ["exec", "x.toml"], 2, "0 to 255, got -1", "ok"),
    ("xs: exit_code a string", _xs("[expect]\nexit_code = '0'\n"), ["exec", "x.toml"], 2,
     "expect.exit_code: must be an integer (got str '0')", "ok"),
    ("xs: starved = 1", _xs("[expect]\nstarved = 1\n"), ["exec", "x.toml"], 2, "expect.starved: must be true or false",
     "ok"),
    ("xs: stdout_regex a number", _xs("[expect]\nstdout_regex = 5\n"), ["exec", "x.toml"], 2,
     "expect.stdout_regex: must be a string", "ok"),
    ("xs: min_async_preemptions -1", _xs("[expect]\nmin_async_preemptions = -1\n"), ["exec", "x.toml"], 2,
     "expect.min_async_preemptions: must be 0 or more, got -1", "ok"),
    ("xs: min above max", _xs("[expect]\nmin_async_preemptions = 5\nmax_async_preemptions = 2\n"), ["exec", "x.toml"],
     2, "no run can hold both", "ok"),
    ("xs: unknown expectation", _xs("[expect]\nexit = 0\n"), ["exec", "x.toml"], 2, "expect.exit: unknown key", "ok"),
    ("xs: variants = 'a' (wrong type)", _xs("variants = 'a'\n"), ["exec", "x.toml"], 2,
     "x.toml: variants: must be a table (got str 'a')", "ok"),
    ("xs: variants = 'a' with --variant a", _xs("variants = 'a'\n"), ["exec", "x.toml", "--variant", "a"], 2,
     "variants: must be a table", "ok"),
    ("xs: a variant that is no table", _xs("variants = { a = 1 }\n"), ["exec", "x.toml", "--variant", "a"], 2,
     "variants.a: must be a table (got int 1)", "ok"),
    ("xs: a variant's max_virtual_ms = nan", _xs("[variants.v]\nmax_virtual_ms = nan\n"), ["exec", "x.toml"], 2,
     "variants.v.max_virtual_ms: must be a positive number, got nan", "ok"),
    ("xs: a variant's unknown key", _xs("[variants.v]\nmax_virtual_mss = 5\n"), ["exec", "x.toml"], 2,
     "variants.v.max_virtual_mss: unknown key", "ok"),
    ("xs: a variant's own variants", _xs("[variants.v.variants.w]\nseed = 2\n"), ["exec", "x.toml"], 2,
     "variants.v.variants: unknown key", "ok"),
    ("xs: a variant's regex", _xs("[variants.v.expect]\nstdout_regex = '['\n"), ["exec", "x.toml"], 2,
     "variants.v.expect.stdout_regex", "ok"),
    ("xs: a variant's env without =", _xs("[variants.v]\nenv = ['GODEBUG']\n"), ["exec", "x.toml"], 2,
     "variants.v.env: 'GODEBUG': write KEY=VALUE", "ok"),
    ("xs: max_virtual_ms = nan", {"x.toml": 'program = "{sc}/go/hello"\nmax_virtual_ms = nan\n'}, ["exec", "x.toml"],
     2, "x.toml: max_virtual_ms: must be a positive number, got nan", "ok"),
    ("xs: max_virtual_ms = inf", {"x.toml": 'program = "{sc}/go/hello"\nmax_virtual_ms = inf\n'}, ["exec", "x.toml"],
     2, "max_virtual_ms: must be a positive number, got inf", "ok"),
    ("xs: max_virtual_ms = -inf", {"x.toml": 'program = "{sc}/go/hello"\nmax_virtual_ms = -inf\n'},
     ["exec", "x.toml"], 2, "max_virtual_ms: must be a positive number", "ok"),
    ("xs: ns_per_insn too large", _xs("ns_per_insn = 2000000\n"), ["exec", "x.toml"], 2,
     "ns_per_insn: must be at most 1,000,000", "ok"),
    ("xs: budget = 0", _xs("budget = 0\n"), ["exec", "x.toml"], 2, "budget: must be a positive number, got 0", "ok"),
    ("xs: cpus = 0", _xs("cpus = 0\n"), ["exec", "x.toml"], 2, "cpus: must be between 1 and 64", "ok"),
    ("xs: quantum = 1.5", _xs("quantum = 1.5\n"), ["exec", "x.toml"], 2, "quantum: must be an integer", "ok"),
    ("xs: seed = 1.5", _xs("seed = 1.5\n"), ["exec", "x.toml"], 2, "seed: must be an integer", "ok"),
    ("xs: name = 3", _xs("name = 3\n"), ["exec", "x.toml"], 2, "x.toml: name: must be a string (got int 3)", "ok"),
    ("xs: description = []", _xs("description = []\n"), ["exec", "x.toml"], 2, "description: must be a string", "ok"),
    ("xs: cites = 1", _xs("cites = 1\n"), ["exec", "x.toml"], 2, "cites: must be a string", "ok"),
    ("xs: args = 5", _xs("args = 5\n"), ["exec", "x.toml"], 2, "args: must be a list or a string", "ok"),
    ("xs: args with a number", _xs("args = ['-v', 3]\n"), ["exec", "x.toml"], 2, "args[1]: must be a string (got int 3)",
     "ok"),
    ("xs: args a string a shell cannot split", _xs("args = '-v \"unclosed'\n"), ["exec", "x.toml"], 2,
     "args: '-v \"unclosed': cannot split it as a shell would", "ok"),
    ("xs: env without =", _xs("env = ['NOEQ']\n"), ["exec", "x.toml"], 2, "env: 'NOEQ': write KEY=VALUE", "ok"),
    ("xs: env a string with a bad word", _xs("env = 'A=1 NOEQ'\n"), ["exec", "x.toml"], 2, "'NOEQ': write KEY=VALUE",
     "ok"),
    ("xs: env with a number", _xs("env = [1]\n"), ["exec", "x.toml"], 2, "env[0]: must be a string", "ok"),
    ("xs: program = 3", {"x.toml": "program = 3\n"}, ["exec", "x.toml"], 2, "program: must be a string (got int 3)",
     "ok"),
    ("xs: program = ''", {"x.toml": "program = ''\n"}, ["exec", "x.toml"], 2, "program: empty", "ok"),
    ("xs: program missing", {"x.toml": "name = 'x'\n"}, ["exec", "x.toml"], 2, "program: required", "ok"),
    ("xs: program does not exist", {"x.toml": "program = 'nope'\n"}, ["exec", "x.toml"], 2, "does not exist", "ok"),
    ("exec of a sweep scenario", _sw(""), ["exec", "t.toml"], 2,
     "t.toml: a sweep scenario (it names an `asm` file, not a `program`): run it with `preemu run t.toml`", "ok"),
    ("exec of a scheduler scenario", TINY_RUN, ["exec", "s.toml"], 2, "a scheduler scenario", "ok"),
    # --- sweep scenarios -----------------------------------------------------------------------------------
    ("sw: violations = -1", _sw("[expect]\nviolations = -1\n"), ["run", "t.toml"], 2,
     "t.toml: expect.violations: a count: must be 0 or more, got -1", "ok"),
    ("sw: refused count true", _sw("[expect]\nrefused = { unsafe-point = true }\n"), ["run", "t.toml"], 2,
     "expect.refused.unsafe-point: must be an integer (got bool True)", "ok"),
    ("sw: refused count -2", _sw("[expect]\nrefused = { unsafe-point = -2 }\n"), ["run", "t.toml"], 2,
     "expect.refused.unsafe-point: a count", "ok"),
    ("sw: min_injected -3", _sw("[expect]\nmin_injected = -3\n"), ["run", "t.toml"], 2, "expect.min_injected: a count",
     "ok"),
    ("sw: retained_conservatively -1", _sw("[expect]\nretained_conservatively = -1\n"), ["run", "t.toml"], 2,
     "expect.retained_conservatively: a count", "ok"),
    ("sw: min_freed -1", _sw("[expect]\nmin_freed = -1\n"), ["run", "t.toml"], 2, "expect.min_freed: a count", "ok"),
    ("sw: max_points = nan", _sw("max_points = nan\n"), ["run", "t.toml"], 2, "max_points: must be an integer", "ok"),
    ("sw: budget = inf", _sw("budget = inf\n"), ["run", "t.toml"], 2, "budget: must be an integer", "ok"),
    ("sw: max_points = 0", _sw("max_points = 0\n"), ["run", "t.toml"], 2, "max_points: must be positive", "ok"),
    ("sw: refused = 3", _sw("[expect]\nrefused = 3\n"), ["run", "t.toml"], 2, "expect.refused: must be a table", "ok"),
    ("sw: explain of a bad sweep scenario", _sw("[expect]\nviolations = -1\n"), ["explain", "t.toml", "--at", "1"], 2,
     "expect.violations: a count", "ok"),
    # --- scheduler scenarios -------------------------------------------------------------------------------
    ("sched: duration_ms = nan", _sched("duration_ms = nan"), ["run", "s.toml"], 2,
     "s.toml: duration_ms: must be positive (a finite number above 0), got nan", "ok"),
    ("sched: ns_per_insn = nan", _sched("ns_per_insn = nan"), ["run", "s.toml"], 2, "ns_per_insn: must be positive",
     "ok"),
    ("sched: ns_per_insn = inf", _sched("ns_per_insn = inf"), ["run", "s.toml"], 2, "got inf", "ok"),
    ("sched: ns_per_insn = 1e-300 (years of emulation)", _sched("ns_per_insn = 1e-300"), ["run", "s.toml"], 2,
     "ns_per_insn: 1e-300 ns per instruction makes duration_ms", "ok"),
    ("sched: quantum_us = inf", _sched("quantum_us = inf"), ["run", "s.toml"], 2, "quantum_us: must be positive", "ok"),
    ("sched: quantum_us = nan", _sched("quantum_us = nan"), ["run", "s.toml"], 2, "quantum_us: must be positive", "ok"),
    ("sched: quantum shorter than an instruction", _sched("quantum_us = 1e-9"), ["run", "s.toml"], 2,
     "quantum_us: 1e-09 us is shorter than one instruction", "ok"),
    ("sched: starvation_ms = nan", _sched("starvation_ms = nan"), ["run", "s.toml"], 2, "starvation_ms: must be positive",
     "ok"),
    ("sched: gc_every_ms = inf", _sched("gc_every_ms = inf"), ["run", "s.toml"], 2, "gc_every_ms: must be positive",
     "ok"),
    ("sched: gomaxprocs = 100000", _sched("gomaxprocs = 100000"), ["run", "s.toml"], 2,
     "s.toml: gomaxprocs: must be 1 to 16 (got 100000)", "ok"),
    ("sched: 49 goroutines", _sched(goroutines=ONE_G * 49), ["run", "s.toml"], 2,
     "goroutines: between 1 and 48 goroutines (got 49)", "ok"),
    ("sched: a goroutine's name = 5", _sched(goroutines=ONE_G + "name = 5\n"), ["run", "s.toml"], 2,
     "goroutines[0].name: must be a string", "ok"),
    ("sched: wake latency [nan, 1]", _sched(tail="[expect]\nwake_latency_p50_ms = [nan, 1]\n"), ["run", "s.toml"], 2,
     "expect.wake_latency_p50_ms: must be a [low, high] pair of numbers", "ok"),
    ("sched: wake latency upside down", _sched(tail="[expect]\nwake_latency_max_ms = [5, 1]\n"), ["run", "s.toml"], 2,
     "low 5 must be a finite number no higher than high 1", "ok"),
    ("sched: gc wait range of one", _sched(tail="[expect]\ngc_wait_max_ms = [1]\n"), ["run", "s.toml"], 2,
     "expect.gc_wait_max_ms: must be a [low, high] pair", "ok"),
    ("sched: cpu share of strings", _sched(tail="[expect]\ncpu_share = { g1 = ['a', 1] }\n"), ["run", "s.toml"], 2,
     "expect.cpu_share.g1: must be a [low, high] pair of numbers", "ok"),
    ("sched: cpu share from -inf", _sched(tail="[expect]\ncpu_share = { g1 = [-inf, 1] }\n"), ["run", "s.toml"], 2,
     "expect.cpu_share.g1: low -inf must be a finite number", "ok"),
    ("sched: min_wakeups -1", _sched(tail="[expect]\nmin_wakeups = -1\n"), ["run", "s.toml"], 2,
     "expect.min_wakeups: must be 0 or more", "ok"),
    ("sched: async_on's count -1", _sched(tail="[expect.async_on]\nmin_preemptions_async = -1\n"), ["run", "s.toml"], 2,
     "expect.async_on.min_preemptions_async: must be 0 or more", "ok"),
    ("sched: duration_ms = true", _sched("duration_ms = true"), ["run", "s.toml"], 2,
     "duration_ms: must be a number (got bool True)", "ok"),
    ("sched: explain of a bad one", _sched("ns_per_insn = nan"), ["explain", "s.toml"], 2, "ns_per_insn", "ok"),
    # --- options taken silently before ------------------------------------------------------------------
    ("--reg twice", {}, SUM + ["--reg", "rcx=6"], 2, "--reg 'rcx=6': rcx is already set by --reg RCX=5", "ok"),
    ("--reg with no value", {}, ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "RCX="], 2,
     "--reg 'RCX=': write NAME=VALUE with both", "ok"),
    ("--reg with no name", {}, ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "=5"], 2,
     "--reg '=5': write NAME=VALUE with both", "ok"),
    ("Go --reg twice", {}, ["sweep", KINDS, "--func", "spin", "--reg", "RAX=1", "--reg", "RAX=2"], 2,
     "RAX is already set", "ok"),
    ("explain --reg twice", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at", "1", "--reg", "RCX=1",
                                 "--reg", "RCX=2"], 2, "already set", "ok"),
    ("Go sweep --env without =", {}, ["sweep", KINDS, "--func", "spin", "--env", "NOEQ"], 2,
     "--env 'NOEQ': write KEY=VALUE", "ok"),
    ("exec --env =x", {}, ["exec", KINDS, "--env", "=x"], 2, "--env '=x': write KEY=VALUE", "ok"),
    ("Go explain --env without =", {}, ["explain", KINDS, "--func", "spin", "--at", "3", "--env", "X"], 2,
     "--env 'X'", "ok"),
    ("Go explain --call 0", {}, ["explain", KINDS, "--func", "spin", "--at", "3", "--call", "0"], 2,
     "--call 0: calls are counted from 1", "ok"),
    ("sweep of ''", {}, ["sweep", "", "--func", "f"], 2, "the input file is an empty string", "ok"),
    ("exec of ''", {}, ["exec", ""], 2, "the input file is an empty string", "ok"),
    ("exec --mount twice at one guest path", {}, ["exec", KINDS, "--mount", "{root}/asm:/data", "--mount",
                                                  "{root}/tests:/data"], 2,
     "--mount '{root}/tests:/data': --mount '{root}/asm:/data' is already at /data", "ok"),
    ("exec --mount at /data and /data/", {}, ["exec", KINDS, "--mount", "{root}/asm:/data", "--mount",
                                              "{root}/tests:/data/"], 2, "is already at /data", "ok"),
    ("exec --mount at /x/../data and /data", {}, ["exec", KINDS, "--mount", "{root}/asm:/x/../data:ro", "--mount",
                                                  "{root}/tests:/data:rw"], 2, "is already at /data", "ok"),
    # --- devices as input files (/dev/zero was read until memory ran out) ------------------------------------
    ("sweep /dev/zero", {}, ["sweep", "/dev/zero", "--func", "f"], 2, "/dev/zero: cannot read: it is a device", "ok"),
    ("run /dev/zero", {}, ["run", "/dev/zero"], 2, "/dev/zero: cannot read: it is a device", "ok"),
    ("disasm /dev/zero", {}, ["disasm", "/dev/zero"], 2, "it is a device", "ok"),
    ("check-stub /dev/zero", {}, ["check-stub", "/dev/zero"], 2, "it is a device", "ok"),
    ("explain /dev/zero", {}, ["explain", "/dev/zero", "--func", "f", "--at", "1"], 2, "it is a device", "ok"),
    ("preempt /dev/urandom", {}, ["preempt", "/dev/urandom", "--func", "f", "--at", "1"], 2, "it is a device", "ok"),
    ("sweep --stub /dev/zero", {}, SUM + ["--stub", "/dev/zero"], 2, "/dev/zero: cannot read: it is a device", "ok"),
    # --- messages that misled --------------------------------------------------------------------------------
    ("explain --at past the function", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at",
                                            "sum_loop+0x999", "--reg", "RCX=3"], 2,
     "the offset is past the end of sum_loop (0x21 bytes)", "ok"),
    ("explain --at inside an instruction", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at",
                                                "sum_loop+0x1", "--reg", "RCX=3"], 2,
     "0x400001 is not the start of an instruction of sum_loop (its offsets: 0x0, 0x2,", "ok"),
    ("explain --at a bad offset", {}, ["explain", "{asm}/sum_loop.s", "--func", "sum_loop", "--at", "sum_loop+zz",
                                       "--reg", "RCX=3"], 2, "the offset 'zz' is not a number", "ok"),
    ("preempt --at past the function", {}, ["preempt", "{asm}/call_loop.s", "--func", "call_loop", "--at",
                                            "call_loop+0x999"], 2, "past the end of call_loop", "ok"),
    ("check-stub: a stub that saves no X register", {}, ["check-stub", "{root}/tests/data/stub_ret_only.s"], 2,
     "cannot tell the stub's layout: it saves no X register before it calls asyncPreempt2; give --layout go1.14", "ok"),
    ("check-stub: X registers saved both ways", {"mixed.s": _MIXED}, ["check-stub", "mixed.s"], 2,
     "saves X registers both in its frame (MOVUPS at mixed.s:25) and through rdi", "ok"),
    ("check-stub: no X save in a go1.14 stub", {"nox.s": _NO_X}, ["check-stub", "nox.s"], 2, "give --layout", "ok"),
    ("check-stub of a Go program with another layout", {}, ["check-stub", KINDS, "--layout", "go1.14"], 2,
     "runs in the go1.27 world, not go1.14's: drop --layout", "ok"),
    ("exec of a PIE", {"pie": _hello_with_type(3)}, ["exec", "pie"], 2,
     "rebuild it with `go build -buildmode=exe`, which makes a static non-PIE binary", "ok"),
    ("sweep of a PIE", {"pie": _hello_with_type(3)}, ["sweep", "pie", "--func", "main"], 2, "-buildmode=exe", "ok"),
    ("exec of an object file", {"x.o": _hello_with_type(1)}, ["exec", "x.o"], 2, "not an executable (e_type ET_REL)",
     "ok"),
]


def test_the_table_is_big_enough():
    assert len(CASES) >= 100
    assert len({c[0] for c in CASES}) == len(CASES)


class _Full(io.StringIO):
    """A stdout on a full disk."""

    def write(self, s):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")


def _fmt(text: str) -> str:
    for key, path in (("{root}", ROOT), ("{asm}", ASM), ("{sc}", SC), ("{go}", GO)):
        text = text.replace(key, str(path))
    return text


@pytest.mark.parametrize("files,argv,code,needle,stdout", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, monkeypatch, capsys, files, argv, code, needle, stdout):
    run_case(tmp_path, monkeypatch, capsys, files, argv, code, needle, stdout)


def run_case(tmp_path, monkeypatch, capsys, files, argv, code, needle, stdout="ok") -> None:
    """One case of the table (also test_bad_input_round5.py's): the files written, the command run in-process."""
    for name, content in files.items():
        data = content() if callable(content) else _fmt(content).encode()
        (tmp_path / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    argv = [_fmt(a) for a in argv]
    out = {"ok": io.StringIO(), "full": _Full(), "closed": None}[stdout]
    if stdout == "closed":
        monkeypatch.setattr(sys, "stdout", None)
    try:
        got = cli.main(argv, out)
    except SystemExit as e:          # argparse's own errors
        got = e.code
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err and "internal error" not in err and "Exception ignored" not in err, err
    errors = [ln for ln in err.splitlines() if ln.startswith("preemu: error: ")]
    if code == 1 and stdout == "ok":          # the run failed: a failed expectation, or an output file after it
        assert len(errors) <= 1 and _fmt(needle) in err, err
        return
    assert len(errors) == 1 and _fmt(needle) in errors[0], err
    if code == 2 and stdout == "ok":
        assert err.strip().splitlines()[-1] == errors[0]          # the error is the last word


# --- the same at the level of file descriptors: nothing printed at exit by Python ------------------------------
@pytest.mark.parametrize("redirect,argv", [
    ("> /dev/full", ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=5", "--json"]),
    (">&-", ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=5"]),
    ("> /dev/full", ["exec", "{go}/kinds"]),
    (">&-", ["exec", "{go}/kinds"]),
    ("2>&-", ["sweep", "nope.s", "--func", "f"]),
], ids=["sweep --json > /dev/full", "sweep >&-", "exec > /dev/full", "exec >&-", "bad input 2>&-"])
def test_a_full_or_closed_descriptor(redirect, argv):
    close = {">&-": 1, "2>&-": 2}.get(redirect)
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "emu", *map(_fmt, argv)], cwd=ROOT, timeout=120,
                           stdin=subprocess.DEVNULL, stdout=full if redirect == "> /dev/full" else subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL if close == 2 else subprocess.PIPE, text=True,
                           preexec_fn=(lambda: os.close(close)) if close else None)
    assert r.returncode == 2, r.stderr
    if close == 2:
        return                                           # nothing to say it on, and no crash
    err = r.stderr
    assert "Traceback" not in err and "Exception ignored" not in err and "internal error" not in err, err
    assert err.strip().splitlines()[-1].startswith("preemu: error: stdout: cannot write the output"), err


def test_a_results_file_on_a_full_disk(tmp_path):
    """A regular file that stops taking writes (RLIMIT_FSIZE stands in for a full disk): one clean line."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
    res = tmp_path / "r.jsonl"
    r = subprocess.run([sys.executable, "-m", "emu", *map(_fmt, SUM), "--results", str(res)], cwd=ROOT, timeout=120,
                       capture_output=True, text=True, preexec_fn=limit)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"preemu: error: --results {res}: cannot write it (file too large); 1 shard(s) finished"


# --- what the fixes do when the input is good ---------------------------------------------------------------
def test_args_given_as_a_string_are_split_as_a_shell_would(tmp_path):
    from emu.drive import exec_scenario
    f = tmp_path / "x.toml"
    f.write_text(_fmt(XS) + "args = \"-v 'a b' c\"\nenv = 'A=1 B=\"x y\"'\n")
    sc = exec_scenario.load(str(f))
    assert sc.args == ["-v", "a b", "c"] and sc.env == ["A=1", "B=x y"]     # (before: ['-', 'v', ...])


def test_check_stub_tells_the_layout_from_the_stubs_code(capsys):
    from emu.drive import checkstub
    assert checkstub.stub_layout(ASM / "preempt_amd64_go114.s")[0] == "go1.14"
    lay, why = checkstub.stub_layout(ASM / "preempt_amd64_go127.s")
    assert lay == "go1.27" and "through rax" in why and "p.xRegs" in why
    out = io.StringIO()                # the project's own go1.27 stub, without --layout: no violation (before: 598)
    code = cli.main(["check-stub", str(ASM / "preempt_amd64_go127.s"), "--max-points", "3", "--jobs", "1"], out)
    text = out.getvalue()
    assert code == 0 and "PASS" in text, text
    assert "layout go1.27 told from the stub's code" in text and "--layout go1.14" in text


def test_a_frame_address_copied_to_another_register_is_still_the_frame(tmp_path):
    src = (ASM / "preempt_amd64_go114.s").read_text()
    stub = tmp_path / "rbx.s"             # X registers saved through RBX = RSP: still the go1.14 layout
    stub.write_text(src.replace("    movups xmmword ptr [rsp + 112], xmm0",
                                "    mov rbx, rsp\n    movups xmmword ptr [rbx + 112], xmm0"))
    assert "[rbx + 112]" in stub.read_text()
    from emu.drive import checkstub
    assert checkstub.stub_layout(stub)[0] == "go1.14"


def test_a_go_explain_offset_that_is_not_a_number_is_named(capsys):
    from emu import cli
    code = cli.main(["explain", "tests/data/go/kinds", "--func", "spin", "--reg", "RAX=3", "--at", "main.spin+zz"])
    err = capsys.readouterr().err
    assert code == 2 and "the offset 'zz' is not a number (write main.spin+0x9 or main.spin+9)" in err
