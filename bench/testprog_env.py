"""The environment each runtime/testdata/testprog entry runs with in Go's own runtime tests, read from the
source of the toolchain's runtime `*_test.go` files (issue #50 item 6), not typed in here.

Go's tests start an entry in three ways, all read here:
  runTestProg(t, "testprog", NAME, ENV...)         runtime/crash_test.go:81
  runBuiltTestProg(t, exe, NAME, ENV...) and runBuiltTestProgErr, after exe, err := buildTestProg(t, "testprog")
                                                    runtime/crash_test.go:97, :104
  testenv.Command(t, exe, NAME) / exec.Command(exe, NAME), then cmd.Env = append(cmd.Env, ENV...)
                                                    (runtime/crash_unix_test.go:92 CrashDumpsAllThreads)
Each adds ENV to the test's own environment minus GODEBUG and GOTRACEBACK (internal/testenv/exec.go:126
CleanCmdEnv), and runBuiltTestProgErr adds RUNTIME_TEST_SHORT=1 under -short (runtime/crash_test.go:115); the
bench's base environment is empty, so a run's environment is ENV plus RUNTIME_TEST_SHORT=1.

Left out, and counted in `Found.dropped` (the bench's docstring gives the figures): a NAME or an ENV value that
is not a string literal (a loop's variable, `progName+"Deadlock"`, `fmt.Sprintf(...)` of a test-table value):
an entry reached only that way runs with the base environment; an ENV argument that is not literal is left out
of its call's environment. Files built for another GOOS (`_windows_test.go`, ...) and calls in a function that
builds testprog with flags (`buildTestProg(t, "testprog", "-gcflags=...")`: another binary) are not read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

BASE_ENV = ("RUNTIME_TEST_SHORT=1",)
#: GOOS names a `_GOOS_test.go` or `_GOOS_ARCH_test.go` suffix restricts a file to (go/build's knownOS)
OTHER_OS = ("aix android darwin dragonfly freebsd hurd illumos ios js netbsd openbsd plan9 solaris wasip1 "
            "windows zos").split()
_LIT = re.compile(r'^"((?:[^"\\]|\\.)*)"$')
_CALL = re.compile(r'\b(runTestProg|runBuiltTestProgErr|runBuiltTestProg|Command)\(')


@dataclass
class Found:
    #: entry name -> the distinct environments (tuples of VAR=value) its tests start it with, each with where
    envs: dict = field(default_factory=dict)
    #: "file:line: why" for every call that named no literal entry or passed a non-literal ENV argument
    dropped: list = field(default_factory=list)


def _args(text: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose '(' is at text[start]."""
    depth, i, cur, out, quote = 0, start, [], [], None
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and quote == '"':
                cur.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"`'":
            quote = c
            cur.append(c)
        elif c in "([{":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append("".join(cur).strip())
                return [a for a in out if a], i
            cur.append(c)
        elif c == "," and depth == 1:
            out.append("".join(cur).strip())
            cur = []
        elif c == "/" and text.startswith("//", i):
            i = text.index("\n", i) - 1
        else:
            cur.append(c)
        i += 1
    raise ValueError("unbalanced call")


def _literal(arg: str) -> str | None:
    m = _LIT.match(arg)
    return m.group(1).encode().decode("unicode_escape") if m else None


def _for_linux(name: str) -> bool:
    parts = name[:-len("_test.go")].split("_")
    return not any(p in OTHER_OS for p in parts[1:])


def read(runtime_src: Path) -> Found:
    """Every testprog start in `runtime_src`'s *_test.go files (runtime_src = GOROOT/src/runtime)."""
    found = Found()
    for path in sorted(runtime_src.glob("*_test.go")):
        if not _for_linux(path.name):
            continue
        text = path.read_text()
        funcs = [m.start() for m in re.finditer(r"^func ", text, re.M)] + [len(text)]
        for a, b in zip(funcs, funcs[1:]):
            _read_func(text, a, b, path.name, found)
    return found


def _read_func(text: str, a: int, b: int, fname: str, found: Found) -> None:
    body = text[a:b]
    built = re.search(r'\bbuildTestProg\(t, "testprog"\)', body) is not None
    commands = []                                    # (entry, line) of the Command calls, for cmd.Env below
    for m in _CALL.finditer(body):
        args, _ = _args(body, m.end() - 1)
        line = text.count("\n", 0, a + m.start()) + 1
        where = f"{fname}:{line}"
        if m.group(1) == "runTestProg":
            if len(args) < 3 or args[1] != '"testprog"':
                continue
            name_arg, env_args = args[2], args[3:]
        elif m.group(1) == "Command":
            rest = args[1:] if args and args[0] == "t" else args
            if not built or len(rest) < 2 or rest[0] != "exe":
                continue
            name = _literal(rest[1])
            stmt = body[body.rfind("\n", 0, m.start()) + 1:m.start()].strip()
            if name is not None:
                commands.append((name, where, m.end() if stmt.startswith(("cmd :=", "cmd =")) else None))
            continue
        else:
            if not built or len(args) < 3 or args[1] != "exe":
                continue
            name_arg, env_args = args[2], args[3:]
        _add(found, name_arg, env_args, where)
    for name, where, end in commands:               # cmd.Env = append(cmd.Env, ...) before cmd is set again
        m = None if end is None else re.compile(r"\bcmd\.Env = append\(|\bcmd :?= (?!.*\(cmd\))").search(body, end)
        args = _args(body, m.end() - 1)[0][1:] if m and m.group().startswith("cmd.Env") else []
        _add(found, f'"{name}"', args, where)


def _add(found: Found, name_arg: str, env_args: list[str], where: str) -> None:
    name = _literal(name_arg)
    if name is None:
        found.dropped.append(f"{where}: entry {name_arg} is not a literal")
        return
    env = []
    for e in env_args:
        if e.endswith("..."):
            e = e[:-3]
        v = _literal(e)
        if v is None:
            found.dropped.append(f"{where}: {name}'s ENV argument {e} is not a literal")
        else:
            env.append(v)
    found.envs.setdefault(name, {}).setdefault(tuple(env), where)


def runs(entries: list[str], found: Found) -> list[tuple[str, tuple[str, ...], str]]:
    """(entry, environment, where the test starts it so) for every registered entry and every name a test
    starts that is not one (proc_test.go:1162 NonexistentTest checks the unknown-entry message): one run per
    distinct environment its tests use, the base environment alone where no test starts it by a literal name."""
    out = []
    for name in dict.fromkeys(entries + list(found.envs)):
        for env, where in sorted(found.envs.get(name, {(): "no literal call"}).items()):
            out.append((name, BASE_ENV + env, where))
    return out
