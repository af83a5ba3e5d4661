"""The `preemu` command: sweep, run, preempt, explain, check-stub, gen-stub, disasm, exec.

Exit codes: 0 all checks hold, 1 a check failed, 2 bad input (one line on stderr, no traceback).
May import: every layer below (api and what the commands run).

One module per command or family: sweep, scenario (run, preempt), explain, stubs (check-stub, gen-stub, disasm),
execute (exec), schedules (exec's and sweep's --schedules), with what they share in common and the
options' checks in checks; command.py is the command itself (the parser, main, Ctrl-C). Commands import what
they use when they run: `preemu --help` and a small sweep pay for no module they do not need
(bench/bench_sweep.py reports the fixed startup cost).
"""
from .command import build_parser, main

__all__ = ["build_parser", "main"]
