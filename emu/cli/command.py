"""The `preemu` command itself: the parser with every subcommand, main() (one-line errors, exit codes, output
that cannot be written) and Ctrl-C at any moment (exit 130, the partial summary).
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..core.errors import EmuError
from .checks import _check_values
from .common import _PARTIAL, _Parser, _Stream, _shards_partial, _why
from .execute import _add_exec
from .explain import _add_explain
from .scenario import _add_preempt, _add_run
from .stubs import _add_check_stub, _add_disasm, _add_gen_stub
from .sweep import _add_sweep


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="preemu", description="Emulate Go's asynchronous goroutine preemption on x86-64, "
                "one instruction boundary at a time.")
    p.add_argument("--version", action="version", version=f"preemu {__version__}")
    p.add_argument("--traceback", action="store_true", help="show Python tracebacks for errors")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    add_parser = sub.add_parser

    def add_sub(*args, **kw):        # every subcommand also accepts --traceback after its name
        sp = add_parser(*args, **kw)
        sp.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="show Python tracebacks for errors")
        return sp
    sub.add_parser = add_sub
    for add in (_add_sweep, _add_preempt, _add_explain, _add_run, _add_check_stub, _add_gen_stub, _add_exec,
                _add_disasm):
        add(sub)                     # one small function per subcommand, in the order `preemu --help` lists them
    return p


def _as_command() -> bool:
    """Whether this process is the `preemu` command (its script or `python -m emu`), not a library user."""
    main_mod = sys.modules.get("__main__")
    spec = getattr(main_mod, "__spec__", None)
    return (bool(sys.argv) and os.path.basename(sys.argv[0]) == "preemu") or \
        (spec is not None and spec.name == "emu.__main__")


def main(argv: list[str] | None = None, out=None) -> int:
    """Run the command; every error is one line on stderr (exit 2), Ctrl-C exits 130. An output that cannot be
    written (stdout full or closed) is one more line, and exit 2 unless the run itself failed.

    Ctrl-C at any moment: before this function the package made SIGINT's default action quiet (emu/__init__.py);
    here it becomes a KeyboardInterrupt that every command turns into its partial summary and exit 130, also
    while the arguments are parsed; once the command has answered (its summary printed), a second Ctrl-C, or one
    while the interpreter shuts down, ends the process as SIGINT does (a shell shows 130), never a traceback."""
    import signal
    command = argv is None and out is None and _as_command()
    heard = None
    if command:
        signal.signal(signal.SIGINT, _on_sigint)
        heard = _hear_signals()
    stdout = _Stream(sys.stdout if out is None else out, "stdout")
    saved = sys.stdout, sys.stderr
    sys.stderr = _Stream(sys.stderr, "stderr")          # a full or closed stderr never raises either
    if out is None:
        sys.stdout = stdout                              # argparse's --help and --version write there
    try:
        try:
            code = _main(argv, stdout, command)
        except KeyboardInterrupt:                        # before the command started (parsing its arguments)
            _quiet_sigint(command)
            print("preemu: interrupted (Ctrl-C) before the command started; nothing to summarise",
                  file=sys.stderr)
            code = 130
    except SystemExit as e:                              # argparse: --help, --version, a usage error
        code = e.code
        if stdout.error is None or code:
            raise
    finally:
        _quiet_sigint(command)
        sys.stdout, sys.stderr = saved
    if heard is not None and _heard_sigint(heard) and code != 130:
        # a Ctrl-C that reached the process but no handler acted on: the interpreter runs a Python handler only
        # in the main thread, and one caught in another thread (a pool's) just before the command ended was
        # still pending when SIGINT went back to its default action, which drops it
        _say("preemu: interrupted (Ctrl-C) as the command ended; its output above is complete")
        code = 130
    if stdout.error is not None and not isinstance(stdout.error, BrokenPipeError):   # `| head` is no error
        why = f"stdout: cannot write the output ({_why(stdout.error)})"
        if code in (0, None):
            code = 2
            why += "; the command itself succeeded, but its output is lost"
        else:
            why += f"; it is lost (exit status {code} is the command's own)"
        _say(f"preemu: error: {why}")
    return code


#: how long a Ctrl-C that landed in the import system's own code waits before it is delivered again
SIGINT_RETRY_S = 0.01


def _on_sigint(signum, frame) -> None:
    """Ctrl-C as a KeyboardInterrupt (signal.default_int_handler), except in the import system's own code: an
    exception raised there may be in a weakref callback (importlib's module locks), which the interpreter
    prints as "Exception ignored ... Traceback" and drops, so the command would run on; there the signal is
    sent again SIGINT_RETRY_S later, by which time the import has let go."""
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        import signal
        import threading
        threading.Timer(SIGINT_RETRY_S, os.kill, (os.getpid(), signal.SIGINT)).start()
        return
    raise KeyboardInterrupt


def _hear_signals():
    """A pipe the interpreter writes each caught signal's number to (signal.set_wakeup_fd), as soon as it is
    caught, in whichever thread: what _heard_sigint reads once the command has ended."""
    import signal
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(r)
        os.close(w)
        return None
    return r, w


def _heard_sigint(pipe) -> bool:
    """Whether SIGINT was caught while the command ran (the pipe is closed)."""
    import signal
    r, w = pipe
    signal.set_wakeup_fd(-1)
    got = b""
    try:
        while chunk := os.read(r, 4096):
            got += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(r)
        os.close(w)
    return signal.SIGINT in got


def _caused_by_ctrl_c(e: BaseException) -> bool:
    """Whether a KeyboardInterrupt is behind this exception (its cause or context, at any depth)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _quiet_sigint(command: bool) -> None:
    """From now on (the command answered, or is answering, a Ctrl-C) SIGINT ends the process as its default
    action does: quietly, status 130 in a shell."""
    if command:
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _say(line: str) -> None:
    """One line on stderr, whatever has become of it."""
    if sys.stderr is None:                   # (print would fall back to stdout)
        return
    try:
        print(line, file=sys.stderr)
    except (OSError, AttributeError, ValueError):
        pass


def _main(argv: list[str] | None, out, command: bool = False) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    rest = None
    if argv and argv[0] in ("sweep", "exec", "explain") and "--" in argv:   # a Go program's own arguments, after --
        i = argv.index("--")                                     # (options may come before or after the target)
        argv, rest = argv[:i], argv[i + 1:]
    a = parser.parse_args(argv)
    a.raw_argv, a.raw_rest = list(argv), rest      # `exec --schedules` prints the command that replays a schedule
    if rest is not None:
        a.args = list(getattr(a, "args", None) or []) + rest
    _PARTIAL.clear()
    if a.cmd == "sweep" and a.max_points is None:
        a.max_points = 100_000
    try:
        _check_values(a)
        return a.fn(a, out)
    except EmuError as e:
        if a.traceback:
            import traceback
            traceback.print_exc()
        print(f"preemu: error: {e}", file=sys.stderr)
        return getattr(e, "run_code", None) or 2      # an output file that failed after a failed run: 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt as e:
        _quiet_sigint(command)                     # a second Ctrl-C while the summary is written: quiet
        partial = (_PARTIAL[0]() if _PARTIAL else None) or _shards_partial(e)
        if partial is not None:
            out.write(partial[0])
            out.flush()
            print(f"preemu: interrupted (Ctrl-C) {partial[1]}; the summary above is partial", file=sys.stderr)
        else:
            print(f"preemu: interrupted (Ctrl-C) during `preemu {a.cmd}`; nothing to summarise yet",
                  file=sys.stderr)
        return 130
    except Exception as e:          # a bug in preemu: still one line, unless --traceback
        if _caused_by_ctrl_c(e):        # a Ctrl-C that Python wrapped (a class being made: RuntimeError from
            _quiet_sigint(command)      # __set_name__) is a Ctrl-C
            print(f"preemu: interrupted (Ctrl-C) during `preemu {a.cmd}`; nothing to summarise yet", file=sys.stderr)
            return 130
        if a.traceback:
            import traceback
            traceback.print_exc()
        print(f"preemu: internal error: {type(e).__name__}: {e} (rerun with --traceback and report it)",
              file=sys.stderr)
        return 2
