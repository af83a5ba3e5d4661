"""The docs cannot drift: every `$ preemu ...` example in README.md, the docs site's pages (docs/**/*.md) and
scenarios/README.md is run here (from the repo root) and its output compared with the block.

How a block is read (keep this in sync with docs/get-started.md "Examples are tests"):
* A fenced block whose first line starts with `$ preemu ` is an example. Each `$ preemu ...` line
  is a command; the lines after it, up to the next `$ ` line or the end of the block, are its
  expected output (stdout, then stderr).
* A line that is just `...` stands for any number of output lines (zero or more).
* `...` inside a line stands for any text on that line.
* The one masking rule: on a line that contains `per second`, every number (with the spaces that
  pad it) is masked (machine speed); everything else must match exactly (trailing spaces ignored).
* The exit status must be 0 or 1 (2 is bad input: a broken example).
* An output file a command names (`--html OUT.html`, `--trace`, `--timeline`, `--junit-xml`, `--sarif`,
  `--results`) is written to a temporary directory, under the same name, not into the repository.
* `--help` is rendered 100 columns wide (argparse follows the terminal otherwise); what the command prints
  on stdout itself (argparse's help) counts as its output.

When an output changes on purpose, update the block; the failure shows the block, the
command's actual output and a diff.
"""
from __future__ import annotations

import contextlib
import difflib
import functools
import io
import os
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

from emu import cli

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "scenarios" / "README.md"]
#: options whose value is a file preemu writes: redirected to a temporary directory
OUTPUT_OPTIONS = ("--html", "--trace", "--timeline", "--junit-xml", "--sarif", "--results")
_NUMBER = re.compile(r" *\d[\d,.]*")
MASK = "<N>"


@dataclass
class Example:
    doc: Path
    line: int            # line of the `$ preemu` command in the doc
    command: str
    expected: list[str]

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def examples(doc: Path) -> list[Example]:
    out: list[Example] = []
    block: list[tuple[int, str]] | None = None
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        if line.startswith("```"):
            if block is None:
                block = []
                continue
            if block and block[0][1].startswith("$ preemu "):
                cur = None
                for ln, text in block:
                    if text.startswith("$ "):
                        cur = Example(doc, ln, text[2:], [])
                        out.append(cur)
                    else:
                        cur.expected.append(text)
            block = None
        elif block is not None:
            block.append((n, line))
    return out


def _mask(line: str) -> str:
    return _NUMBER.sub(" " + MASK, line) if "per second" in line else line


def _line_pattern(line: str) -> str:
    parts = [re.escape(p) for p in _mask(line.rstrip()).split("...")]
    return ".*".join(parts)


def matches(expected: list[str], actual: list[str]) -> bool:
    pat = []
    for e in expected:
        pat.append(r"(?:[^\n]*\n)*?" if e.strip() == "..." else _line_pattern(e) + r"\n")
    text = "".join(_mask(a.rstrip()) + "\n" for a in actual)
    return re.fullmatch("".join(pat), text) is not None


def outputs_to(argv: list[str], directory: Path) -> list[str]:
    """`argv` with the file of every output option moved into `directory` (the same file name)."""
    out = list(argv)
    for i, a in enumerate(out):
        if a in OUTPUT_OPTIONS and i + 1 < len(out):
            out[i + 1] = str(directory / Path(out[i + 1]).name)
        elif a.split("=", 1)[0] in OUTPUT_OPTIONS and "=" in a:
            opt, path = a.split("=", 1)
            out[i] = f"{opt}={directory / Path(path).name}"
    return out


def run_command(command: str) -> tuple[int, list[str]]:
    argv = shlex.split(command)
    assert argv[0] == "preemu"
    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(ROOT), contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(out), _environ(COLUMNS="100"):
        try:
            code = cli.main(outputs_to(argv[1:], Path(tmp)), out)
        except SystemExit as e:
            code = e.code
    return code, (out.getvalue() + err.getvalue()).splitlines()


@functools.cache
def run_cached(command: str) -> tuple[int, tuple[str, ...]]:
    """run_command, once per command in a process (tests/test_docs.py measures the same outputs)."""
    code, lines = run_command(command)
    return code, tuple(lines)


@contextlib.contextmanager
def _environ(**kv):
    old = {k: os.environ.get(k) for k in kv}
    os.environ.update(kv)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


ALL = [ex for doc in DOCS for ex in examples(doc)]


def test_the_readme_and_the_docs_have_examples():
    assert len([e for e in ALL if e.doc == ROOT / "README.md"]) >= 2
    docs = {e.doc.relative_to(ROOT / "docs").parts[0] for e in ALL if ROOT / "docs" in e.doc.parents}
    assert {"tutorial", "how-to", "reference", "explanation", "get-started.md"} <= docs, docs
    tutorial = sorted((ROOT / "docs" / "tutorial").glob("[1-9]-*.md"))
    assert len(tutorial) == 8 and all(any(e.doc == p for e in ALL) for p in tutorial)


@pytest.mark.parametrize("ex", ALL, ids=[e.id for e in ALL])
def test_readme_example(ex: Example):
    code, actual = run_cached(ex.command)
    actual = list(actual)
    if code in (0, 1) and matches(ex.expected, actual):
        return
    diff = "\n".join(difflib.unified_diff(ex.expected, actual, "doc", "preemu", lineterm="", n=2))
    pytest.fail(f"{ex.id}: `$ {ex.command}` (exit {code}) no longer prints what the doc shows.\n"
                "--- the doc's block ---\n" + "\n".join(ex.expected) +
                "\n--- what the tool prints ---\n" + "\n".join(actual) +
                f"\n--- diff (doc -> tool; `...` and masked speed numbers may show as differences) ---\n{diff}\n"
                "Update the doc's block (or fix the tool).", pytrace=False)


# --- the harness itself bites -----------------------------------------------------------------------
def test_matching_rules():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "b"], ["a", "b"])
    assert matches(["x (y: ...) z"], ["x (y: anything here) z"])
    assert matches(["  speed    582   verified points per second"], ["  speed  10,111   verified points per second"])
    assert not matches(["  boundaries  1,034"], ["  boundaries  1,035"])
    assert not matches(["a", "b"], ["a", "b", "c"])
    assert not matches(["a ... c"], ["a b", "c"])


def test_output_files_go_to_the_temporary_directory(tmp_path):
    argv = ["explain", "x.s", "--html", "out/a.html", "--trace=t.json", "--at", "3"]
    assert outputs_to(argv, tmp_path) == ["explain", "x.s", "--html", str(tmp_path / "a.html"),
                                          f"--trace={tmp_path / 't.json'}", "--at", "3"]


def test_examples_are_found_with_their_output(tmp_path):
    doc = tmp_path / "R.md"
    doc.write_text("text\n```\n$ preemu run x.toml\nout 1\n$ preemu run y.toml\nout 2\n```\n```\nnot an example\n```\n")
    exs = examples(doc)
    assert [(e.line, e.command, e.expected) for e in exs] == [(3, "preemu run x.toml", ["out 1"]),
                                                              (5, "preemu run y.toml", ["out 2"])]


def test_scenarios_readme_lists_every_scenario_and_documents_every_key():
    from emu.drive import scenario
    text = (ROOT / "scenarios" / "README.md").read_text()
    missing = [p.stem for p in sorted((ROOT / "scenarios").glob("*.toml")) if f"`{p.stem}`" not in text]
    assert not missing, f"scenarios/README.md does not list: {missing}"
    keys = set(scenario._TOP) | set(scenario._EXPECT) | set(scenario._SCHED_TOP) | set(scenario._SCHED_EXPECT)
    undocumented = sorted(k for k in keys if not re.search(rf"(?m)^\s*(\[+(expect\.)?)?{re.escape(k)}\b", text))
    assert not undocumented, f"scenarios/README.md does not document the keys: {undocumented}"
