"""The docs site and the terminal (issue #52 items 1-3): `mkdocs build --strict` passes, the README stays short
and leads to a first sweep of one's own package within three links, and no text output line of a documented
command (the README's, the tutorial's, every `$ preemu` block of docs/ and scenarios/README.md) or of
`make demo` is wider than 120 columns (emu/output/fit.py)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from test_readme import ALL, run_cached

from emu.output.fit import WIDTH, elide, fields, fit, fit_line, table

README = ROOT / "README.md"
#: the examples whose every output line must fit a terminal: all of them (the README's and the tutorial's
#: first; tests/test_readme.py runs the same commands, once per process)
TERMINAL = ALL


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(site)], cwd=config.parent, capture_output=True, text=True,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})


def test_the_docs_site_builds_strict(tmp_path):
    r = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "site" / "tutorial" / "7-real-program" / "index.html").exists()
    assert "Every option" in (tmp_path / "site" / "reference" / "commands" / "index.html").read_text()
    included = (tmp_path / "site" / "reference" / "scenarios" / "index.html").read_text()
    assert "equal_buffers" in included, "scenarios/README.md is included in the reference"


def test_a_broken_link_fails_the_strict_build(tmp_path):
    """The check above can fail: the same configuration over a page with a dead link is refused."""
    import yaml
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config = {k: v for k, v in config.items() if k not in ("nav", "markdown_extensions", "site_dir")}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# x\n\n[gone](nowhere.md)\n")
    r = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert r.returncode != 0 and "nowhere.md" in r.stdout + r.stderr


def test_the_readme_and_the_tutorial_are_measured():
    ids = {ex.doc for ex in TERMINAL}
    assert README in ids and len({d for d in ids if d.parent == ROOT / "docs" / "tutorial"}) == 8


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 250


def _links(page: Path) -> list[Path]:
    out = []
    for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text()):
        p = (page.parent / target).resolve()
        if p.is_file():
            out.append(p)
    return out


def _sweeps_a_package_under_its_test(page: Path) -> bool:
    return any(ex.doc == page and re.match(r"sweep \S+ --test \w+ --func", ex.command[len("preemu "):])
               for ex in ALL)


def test_a_newcomer_reaches_a_sweep_of_their_package_within_three_links():
    seen, frontier = {README.resolve()}, [README.resolve()]
    for depth in range(1, 4):
        frontier = [q for p in frontier for q in _links(p) if q not in seen and not seen.add(q)]
        if any(_sweeps_a_package_under_its_test(q) for q in frontier):
            assert depth <= 3
            return
    pytest.fail("no page within three links of the README shows `preemu sweep PKGDIR --test NAME --func F`")


def test_every_tutorial_step_and_how_to_page_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert pages and [p for p in pages if p not in nav] == []


@pytest.mark.parametrize("ex", TERMINAL, ids=[e.id for e in TERMINAL])
def test_the_output_fits_a_terminal(ex):
    """Every line a documented command prints, and every line its block shows."""
    _, lines = run_cached(ex.command)
    wide = [ln for ln in lines if len(ln) > WIDTH]
    assert wide == [], f"{ex.id}: `{ex.command}` prints {len(wide)} line(s) over {WIDTH} columns: {wide[:3]}"
    assert [e for e in ex.expected if len(e) > WIDTH] == []


def _demo() -> tuple[list[str], list[str]]:
    """`make demo`'s preemu commands (as `preemu ...`) and the lines it echoes."""
    make = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    recipe = re.search(r"(?m)^demo:.*\n((?:\t.*\n)+)", make).group(1)
    commands, echoes = [], []
    for line in recipe.splitlines():
        m = re.search(r"\$\(BIN\)/preemu ([^;]*)", line)
        if m:
            commands.append("preemu " + " ".join(m.group(1).split()))
        m = re.search(r'@echo "([^"]*)"', line)
        if m:
            echoes.append(m.group(1))
    return commands, echoes


def _fenced(doc: Path, lang: str) -> list[list[str]]:
    """The blocks of `doc` fenced as ```lang."""
    blocks, cur = [], None
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            if cur is None and line[3:].strip() == lang:
                cur = []
            elif cur is not None:
                blocks.append(cur)
                cur = None
        elif cur is not None:
            cur.append(line)
    return blocks


def test_every_command_block_is_checked():
    """A `$ preemu` block is run by tests/test_readme.py; a ```sh block may only hold make targets the Makefile
    has (make demo's commands are run below, make test is the suite): any other command would go untested."""
    targets = set(re.findall(r"(?m)^([\w-]+):", (ROOT / "Makefile").read_text()))
    docs = [README, *(ROOT / "docs").rglob("*.md")]
    lines = [ln.split("#")[0].split() for d in docs for b in _fenced(d, "sh") for ln in b]
    lines = [w for w in lines if w]
    assert lines and all(w[0] == "make" and set(w[1:]) <= targets for w in lines), lines
    assert not [d for d in docs for b in _fenced(d, "") if b and b[0].startswith("preemu ")]


def test_make_demo_fits_a_terminal():
    commands, echoes = _demo()
    assert len(commands) == 5 and any("--stub" in c for c in commands)
    for c in commands:
        code, lines = run_cached(c)
        assert code in (0, 1), (c, lines[-3:])
        assert [ln for ln in lines if len(ln) > WIDTH] == [], c
    assert [e for e in echoes if len(e) > WIDTH] == []


@pytest.mark.parametrize("script,inside", [("avx_diff.py", "forms:"), ("bench_schedules.py", "| correct twin |")])
def test_a_generated_table_has_its_markers_in_the_page_its_generator_writes(script, inside):
    """bench/avx_diff.py --docs and bench/bench_schedules.py --docs rewrite what lies between their markers."""
    text = (ROOT / "bench" / script).read_text()
    doc = ROOT / re.search(r'DOC = ROOT / (.*)\n', text).group(1).replace('"', "").replace(" / ", "/").strip()
    begin, end = re.search(r'MARKERS = \("([^"]+)", "([^"]+)"\)', text).groups()
    page = doc.read_text()
    assert doc.is_relative_to(ROOT / "docs") and 0 <= page.index(begin) < page.index(end)
    assert inside in page[page.index(begin):page.index(end)]


# --- emu/output/fit.py ---------------------------------------------------------------------------------
def test_a_report_row_wraps_under_its_note():
    row = "  refused                  684   " + "the runtime declined, " * 8
    lines = fit_line(row)
    assert len(lines) == 2 and all(len(ln) <= WIDTH for ln in lines)
    assert lines[1].startswith(" " * 33) and not lines[1].startswith(" " * 34)
    assert " ".join(ln.strip() for ln in lines).split() == row.split()


def test_prose_continues_two_columns_in_and_short_lines_stay():
    line = "    " + "word " * 40
    first, *rest = fit_line(line.rstrip())
    assert first.startswith("    w") and rest and all(r.startswith("      w") for r in rest)
    assert fit(["short", "two\nlines"]) == ["short", "two", "lines"]


def test_a_header_wraps_between_its_fields():
    parts = ["preemu sweep: " + "d" * 40, "func " + "f" * 40, "first call during TestSum", "stub s" * 8, "seed 1"]
    lines = fields(parts)
    assert len(lines) == 2 and all(len(ln) <= WIDTH for ln in lines)
    assert lines[0].endswith("f" * 40) and lines[1].startswith("  first call during TestSum  stub")


def test_a_long_list_is_elided_with_a_count():
    items = [f"~r0.next{'.next' * k} = &main.Node" for k in range(16)]
    text = elide(items, 200)
    assert len(text) <= 200 and text.startswith(items[0])
    kept = text.count("= &main.Node")
    assert text.endswith(f"... and {16 - kept} more in --json") and 0 < kept < 16
    assert elide(["a", "b"], 200) == "a, b"


def test_a_wide_table_wraps_its_cells():
    rows = [["check", "runtime/preempt.go:406", "sp - stack.lo >= asyncPreemptStack " * 3, "pass"]]
    lines = table(["check", "Go source", "asks", "outcome"], rows, "    ")
    assert all(len(ln) <= WIDTH for ln in lines) and len(lines) > 2
    assert "runtime/preempt.go:406" in lines[1]            # a cell without spaces is never cut

