"""Text output that fits a terminal: no line longer than WIDTH columns (issue #52 item 3).

The renderers build their lines as before and pass them through `fit`: a line that is too long is wrapped at
its words, each continuation indented under the text it continues (a report row's note under the note, a
prose line two columns in), and `fields` wraps a header made of fields at the gaps between them. `elide` cuts
a long list to what fits, with a count of what it left out (the JSON keeps everything), and `table` wraps the
cells of a table that would be too wide. A single word longer than the line (a long path) stays whole.
"""
from __future__ import annotations

import re
import textwrap

WIDTH = 120
_GAP = re.compile(r"\S( {2,})(?=\S)")


def _hang(line: str) -> int:
    """The column a wrapped line's continuations start at: under the text after the last gap of two or more
    spaces in the line's first half (a report row's note, an event's text), else two columns in."""
    indent = len(line) - len(line.lstrip(" "))
    hang = indent + 2
    for m in _GAP.finditer(line, indent):
        if m.end(1) > WIDTH // 2:
            break
        hang = m.end(1)
    return hang


def fit_line(line: str, width: int = WIDTH) -> list[str]:
    """One line as lines of at most `width` columns (only a word longer than that can exceed it)."""
    if len(line) <= width:
        return [line]
    hang = _hang(line)
    head, rest = line[:hang], line[hang:]
    if hang >= width - 20:              # no room under the gap: continue two columns in
        hang = len(line) - len(line.lstrip(" ")) + 2
        head, rest = line[:hang], line[hang:]
    first, *more = textwrap.wrap(rest, width - hang, break_long_words=False, break_on_hyphens=False) or [""]
    return [head + first] + [" " * hang + m for m in more]


def fit(lines: list[str] | str, width: int = WIDTH) -> list[str]:
    """Every line of `lines` (a list, or text with newlines; an item may hold several lines) fitted to `width`."""
    if isinstance(lines, str):
        lines = [lines]
    return [out for item in lines for line in item.split("\n") for out in fit_line(line, width)]


def fit_text(text: str, width: int = WIDTH) -> str:
    return "\n".join(fit(text, width))


def fields(parts: list[str], indent: int = 2, width: int = WIDTH, sep: str = "  ") -> list[str]:
    """A header of fields joined by `sep`, wrapped between fields; continuation lines indented by `indent`."""
    out = [parts[0]]
    for p in parts[1:]:
        if len(out[-1]) + len(sep) + len(p) <= width:
            out[-1] += sep + p
        else:
            out.append(" " * indent + p)
    return [o for line in out for o in fit_line(line, width)]


def elide(items: list[str], budget: int, sep: str = ", ", more: str = "more in --json") -> str:
    """`items` joined by `sep`, cut to at most `budget` columns: the rest counted ("... and 7 more in --json")."""
    text = sep.join(items)
    if len(text) <= budget:
        return text
    kept: list[str] = []
    for k, item in enumerate(items):
        rest = len(items) - k - 1
        tail = f"{sep}... and {rest} {more}" if rest else ""
        if len(sep.join(kept + [item])) + len(tail) > budget:
            break
        kept.append(item)
    if not kept:
        return f"... {len(items)} {more}"
    return sep.join(kept) + f"{sep}... and {len(items) - len(kept)} {more}"


def table(columns: list[str], rows: list[list[str]], indent: str = "", width: int = WIDTH) -> list[str]:
    """A left-aligned table, two spaces between columns; when too wide, the cells of the widest columns that
    hold words are wrapped (each column at least 12 wide) so that every line fits."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    words = [any(" " in r[i] for r in rows) for i in range(len(columns))]
    budget = width - len(indent) - 2 * (len(columns) - 1)
    while sum(widths) > budget:
        shrink = [i for i in range(len(widths)) if words[i] and widths[i] > 12]
        if not shrink:
            break
        widths[max(shrink, key=lambda j: widths[j])] -= 1
    out = []
    for r in [columns] + rows:
        cells = [textwrap.wrap(c, widths[i]) or [""] for i, c in enumerate(r)]
        for k in range(max(len(c) for c in cells)):
            out.append((indent + "  ".join((c[k] if k < len(c) else "").ljust(widths[i])
                                           for i, c in enumerate(cells))).rstrip())
    return out
