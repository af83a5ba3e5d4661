"""Bad input of every kind: exit 2, exactly one line on stderr, never a traceback (issue #13 item 4).

Each case is (id, files to create, argv, text the one line must contain). Files are written to a
temporary directory that is also the working directory; `{asm}` and `{sc}` in argv are the repo's
asm/ and scenarios/ directories.
"""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
from conftest import ASM, ROOT

from emu import cli

SC = ROOT / "scenarios"
LOOP = "f:\n    xor eax, eax\n.l:\n    inc rax\n    cmp rax, rcx\n    jb .l\n    ret\n"
SUM = ["sweep", "{asm}/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=3"]
GOOD_TOML = 'name = "t"\ndescription = "d"\nasm = "t.s"\nentry = "f"\n[registers]\nRCX = 3\n'


def _stub_without(line: str) -> str:
    return "".join(x for x in (ASM / "preempt_amd64_go114.s").read_text().splitlines(True) if line not in x)


CASES = [
    # --- files that cannot be read --------------------------------------------------------------
    ("missing .s", {}, ["sweep", "nope.s", "--func", "f"], "nope.s: cannot read"),
    ("directory as .s", {}, ["sweep", ".", "--func", "f"], "a directory without .go files, so not a Go package"),
    ("non-UTF-8 .s", {"t.s": b"f:\n    ret\n; caf\xe9\n"}, ["sweep", "t.s", "--func", "f"],
     "t.s:3: not UTF-8 text: byte 0xe9 at byte offset 16"),
    ("non-UTF-8 .toml", {"t.toml": b'name = "caf\xe9"\n'}, ["run", "t.toml"],
     "t.toml: line 1: not UTF-8 text: byte 0xe9 at byte offset 11"),
    ("non-UTF-8 disasm", {"t.s": b"\xff"}, ["disasm", "t.s"], "t.s:1: not UTF-8"),
    ("missing scenario", {}, ["run", "nope.toml"], "nope.toml: cannot read"),
    ("missing stub", {}, SUM + ["--stub", "nostub.s"], "nostub.s: cannot read"),
    ("check-stub missing file", {}, ["check-stub", "nostub.s"], "nostub.s: cannot read"),
    # --- assembly -------------------------------------------------------------------------------
    ("empty file", {"t.s": ""}, ["sweep", "t.s", "--func", "f"], "no function found"),
    ("unknown mnemonic", {"t.s": "f:\n    frobnicate rax\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "t.s:2:"),
    ("instruction before label", {"t.s": "    nop\nf:\n    ret\n"}, ["sweep", "t.s", "--func", "f"],
     "t.s:1: instruction before the first function label"),
    ("unknown directive", {"t.s": ";@frob\nf:\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "unknown directive"),
    ("label twice", {"t.s": "f:\n.a:\n.a:\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "defined twice"),
    ("function twice", {"t.s": "f:\n    ret\nf:\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "defined twice"),
    ("bad ;@data", {"t.s": ";@data buf zero\nf:\n    ret\n"}, ["sweep", "t.s", "--func", "f"], ";@data"),
    ("assembler directive", {"t.s": ".text\nf:\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "not supported"),
    ("SP delta conflict", {"t.s": "f:\n    test rcx, rcx\n    jz .x\n    push rax\n.x:\n    ret\n"},
     ["sweep", "t.s", "--func", "f"], "SP delta"),
    # --- guest instructions that leave the goroutine's world ------------------------------------
    ("hlt", {"t.s": "f:\n    hlt\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "t.s:2: `hlt`"),
    ("syscall", {"t.s": "f:\n    syscall\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "t.s:2: `syscall`"),
    ("sysenter", {"t.s": "f:\n    sysenter\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "`sysenter`"),
    ("int 0x80", {"t.s": "f:\n    int 0x80\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "`int 0x80`"),
    ("int3", {"t.s": "f:\n    int3\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "`int3`"),
    ("in", {"t.s": "f:\n    in al, dx\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "port I/O"),
    ("out", {"t.s": "f:\n    out dx, al\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "port I/O"),
    ("cpuid", {"t.s": "f:\n    cpuid\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "not be deterministic"),
    ("rdtsc", {"t.s": "f:\n    rdtsc\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "time-stamp counter"),
    ("rdrand in a stub", {"s.s": "asyncPreempt:\n    rdrand rax\n    ret\n"}, SUM + ["--stub", "s.s"],
     "s.s:2: `rdrand rax`"),
    # --- the goroutine goes wrong ----------------------------------------------------------------
    ("runaway loop", {"t.s": "f:\n    jmp f\n"}, ["sweep", "t.s", "--func", "f", "--budget", "10000"],
     "did not finish within 10000"),
    ("read unmapped", {"t.s": "f:\n    xor eax, eax\n    mov rax, [rax]\n    ret\n"},
     ["sweep", "t.s", "--func", "f"], "f+0x2: mov rax, qword ptr [rax]  (t.s:3)"),
    ("read unmapped, its address", {"t.s": "f:\n    mov eax, 0x10\n    mov rax, [rax + 8]\n    ret\n"},
     ["sweep", "t.s", "--func", "f"], "reading 0x18 (unmapped"),
    ("divide by zero", {"t.s": "f:\n    xor ecx, ecx\n    div rcx\n    ret\n"}, ["sweep", "t.s", "--func", "f"],
     "div rcx  (t.s:3)): divide error"),
    ("fall off the end", {"t.s": "f:\n    xor eax, eax\n    inc rax\n"}, ["sweep", "t.s", "--func", "f"],
     "fell off the end of the function after `inc rax` (t.s:3)"),
    ("jump to 0", {"t.s": "f:\n    xor eax, eax\n    jmp rax\n"}, ["sweep", "t.s", "--func", "f", "--budget", "10000"],
     "outside any function"),
    ("self-modifying code", {"t.s": "f:\n    lea rax, [rip]\n    mov byte ptr [rax], 0x90\n    ret\n"},
     ["sweep", "t.s", "--func", "f"], "self-modifying code is not supported"),
    ("stack overflow", {"t.s": "f:\n    call f\n    ret\n"}, ["sweep", "t.s", "--func", "f"], "guard page"),
    # --- stubs -----------------------------------------------------------------------------------
    ("stub ret 8", {"s.s": "asyncPreempt:\n    call asyncPreempt2\n    ret 8\n"}, SUM + ["--stub", "s.s"],
     "s.s:3: `ret 8`"),
    ("stub without asyncPreempt", {"s.s": "other:\n    ret\n"}, SUM + ["--stub", "s.s"], "asyncPreempt"),
    ("check-stub --mutants with FILE", {}, ["check-stub", "x.s", "--mutants"], "give no FILE"),
    ("check-stub without FILE", {}, ["check-stub"], "needs a stub FILE"),
    # --- options ---------------------------------------------------------------------------------
    ("--func missing", {}, ["sweep", "{asm}/sum_loop.s"], "--func"),
    ("--func unknown", {}, ["sweep", "{asm}/sum_loop.s", "--func", "nope"], "no function 'nope'"),
    ("--reg without =", {}, SUM + ["--reg", "RCX"], "NAME=VALUE"),
    ("--reg unknown register", {}, SUM + ["--reg", "RZZ=1"], "unknown register"),
    ("--reg RSP", {}, SUM + ["--reg", "RSP=1"], "RSP cannot be set"),
    ("--reg too big", {}, SUM + ["--reg", "RAX=0x1" + "0" * 17], "does not fit"),
    ("--reg unknown symbol", {}, SUM + ["--reg", "RSI=nobuf"], "unknown symbol 'nobuf'"),
    ("--reg RFLAGS with TF", {}, SUM + ["--reg", "RFLAGS=0x102"], "TF would single-step"),
    ("--max-points 0", {}, SUM + ["--max-points", "0"], "--max-points must be positive, got 0"),
    ("--budget -5", {}, SUM + ["--budget", "-5"], "--budget must be positive, got -5"),
    ("--max-points not a number", {}, SUM + ["--max-points", "many"], "invalid int value"),
    ("--layout bogus", {}, SUM + ["--layout", "go1.99"], "invalid choice"),
    ("unknown option", {}, SUM + ["--frob"], "unrecognized arguments: --frob"),
    ("unknown command", {}, ["frob"], "invalid choice"),
    ("no command", {}, [], "required"),
    ("--gc-scanner without --gc", {}, SUM + ["--gc-scanner", "skip-save-area"], "add --gc"),
    ("--table with --json", {}, SUM + ["--table", "--json"], "--table"),
    ("--signal-delay -1", {}, ["preempt", "{asm}/call_loop.s", "--func", "call_loop", "--at", "1",
                               "--signal-delay", "-1"], "--signal-delay must not be negative"),
    ("preempt --at beyond", {}, ["preempt", "{asm}/call_loop.s", "--func", "call_loop", "--at", "line:999"],
     "no instruction on line 999"),
    ("preempt --at nonsense", {}, ["preempt", "{asm}/call_loop.s", "--func", "call_loop", "--at", "later"], "later"),
    # --- scenarios -------------------------------------------------------------------------------
    ("toml syntax", {"t.toml": "name = \n"}, ["run", "t.toml"], "t.toml: not valid TOML"),
    ("scenario runaway", {"t.s": LOOP, "t.toml": "budget = 3\n" + GOOD_TOML}, ["run", "t.toml"],
     "t.toml: goroutine f did not finish within 3 instructions"),
    ("scenario guest fault", {"t.s": "f:\n    xor eax, eax\n    mov rax, [rax]\n    ret\n", "t.toml": GOOD_TOML},
     ["run", "t.toml"], "t.toml: guest fault at"),
    ("scenario unknown key", {"t.s": LOOP, "t.toml": "registerz = 1\n" + GOOD_TOML}, ["run", "t.toml"],
     "t.toml: registerz: unknown key"),
    ("scenario missing asm", {"t.toml": GOOD_TOML.replace('"t.s"', '"none.s"')}, ["run", "t.toml"], "t.toml"),
    ("scenario wrong type", {"t.s": LOOP, "t.toml": GOOD_TOML.replace('entry = "f"', "entry = 3")},
     ["run", "t.toml"], "t.toml: entry"),
    ("sweep scenario with --trace", {"t.s": LOOP, "t.toml": GOOD_TOML}, ["run", "t.toml", "--trace", "x.json"],
     "--trace applies to scheduler scenarios"),
    ("--trace unwritable", {}, ["run", "{sc}/starvation.toml", "--trace", "nodir/x.json"],
     "--trace nodir/x.json: directory nodir does not exist"),
    ("--timeline is a directory", {}, ["run", "{sc}/starvation.toml", "--timeline", "."], "is a directory"),
    ("scheduler scenario with --table", {}, ["run", "{sc}/starvation.toml", "--table"], "to sweep scenarios"),
    # --- issue #23's cases (round 3), and the real-program commands of this round ------------------
    ("--junit-xml into /proc", {}, SUM + ["--junit-xml", "/proc/preemu.xml"], "--junit-xml /proc/preemu.xml"),
    ("--sarif and --junit-xml the same file", {}, SUM + ["--junit-xml", "o.xml", "--sarif", "o.xml"], "o.xml"),
    ("binary --results", {"r.jsonl": b"\xff\xfe\x00binary"}, SUM + ["--results", "r.jsonl"], "r.jsonl"),
    ("exec --max-virtual-ms nan", {}, ["exec", "{sc}/go/hello", "--max-virtual-ms", "nan"], "--max-virtual-ms"),
    ("exec --max-virtual-ms inf", {}, ["exec", "{sc}/go/hello", "--max-virtual-ms", "inf"], "--max-virtual-ms"),
    ("exec --ns-per-insn 1e20", {}, ["exec", "{sc}/go/hello", "--ns-per-insn", "1e20"], "--ns-per-insn"),
    ("--executor with no port", {}, SUM + ["--executor", "dask://localhost:notaport"], "notaport"),
    ("exec of a truncated ELF", {"t.elf": b"\x7fELF\x02\x01\x01" + bytes(9)}, ["exec", "t.elf"], "t.elf"),
    ("run of an exec scenario", {}, ["run", "{sc}/go/hello.toml"], "preemu exec"),
    ("scheduler duration_ms too long", {"t.toml": 'name = "l"\nasm = "t.s"\nduration_ms = 1e9\n'
                                                 '[[goroutines]]\nentry = "f"\n', "t.s": LOOP},
     ["run", "t.toml"], "at most 10,000 ms"),
    ("Go sweep with --layout", {}, ["sweep", "{root}/tests/go/corpus", "--func", "sumsq", "--layout", "go1.14"],
     "--layout: preemu's model world only"),
    ("Go sweep with --force-unsafe", {}, ["sweep", "{root}/tests/go/corpus", "--func", "sumsq", "--force-unsafe"],
     "--force-unsafe: preemu's model world only"),
    ("Go sweep --gc with GOGC=off", {}, ["sweep", "{root}/tests/go/corpus", "--func", "sumsq", "--gc",
                                        "--env", "GOGC=off"], "GOGC=off"),
    ("Go sweep of a function never called", {}, ["sweep", "{root}/tests/data/go/kinds", "--func", "neverCalled"],
     "was never called"),
    ("Go explain --at FUNC+OFF inside an instruction", {}, ["explain", "{root}/tests/data/go/kinds", "--func", "spin",
                                                            "--at", "main.spin+0x5"], "is not the start of an instruction"),
    ("Go explain --at beyond", {}, ["explain", "{root}/tests/data/go/kinds", "--func", "spin", "--reg", "RAX=3",
                                    "--at", "99999"], "boundaries 0 to"),
]


def test_the_table_is_big_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("files,argv,needle", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, files, argv, needle):
    for name, content in files.items():
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.chdir(tmp_path)
    argv = [a.format(asm=ASM, sc=SC, root=ROOT) for a in argv]
    try:
        code = cli.main(argv, io.StringIO())
    except SystemExit as e:          # argparse's own errors
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("preemu: error: "), err
    assert needle in lines[0]
    assert "internal error" not in err and "Traceback" not in err


def test_traceback_is_accepted_after_the_subcommand(capsys):
    code = cli.main(["sweep", str(ASM / "sum_loop.s"), "--func", "nope", "--traceback"], io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" in err and "no function 'nope'" in err     # the status stays bad input


_CTRL_C_AFTER_FIRST_LOOP = """
import os, signal, sys
from emu import api, cli

class Results(list):                     # Ctrl-C the moment the first corpus loop's result exists
    def append(self, x):
        super().append(x)
        os.kill(os.getpid(), signal.SIGINT)

orig = api.check_stub
def check_stub(*a, on_report=None, **k):
    def report(rep):
        rep.results = Results(rep.results)
        on_report(rep)
    return orig(*a, on_report=report, **k)
api.check_stub = check_stub
sys.exit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_prints_a_note_and_the_partial_summary_and_exits_130():
    # The signal is sent by the process itself right after the first corpus loop finishes (not after a
    # wall-clock wait, which a loaded machine made flaky): a real SIGINT, at a known point.
    p = subprocess.run([sys.executable, "-c", _CTRL_C_AFTER_FIRST_LOOP, "check-stub", str(ASM / "preempt_amd64_go127.s"),
                        "--layout", "go1.27", "--max-points", "100000", "--jobs", "1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    out, err = p.stdout, p.stderr
    assert p.returncode == 130, (out, err)
    assert err.strip().startswith("preemu: interrupted (Ctrl-C) after 1 corpus loop(s)") and \
        len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert "corpus loop" in out and "INTERRUPTED" in out
