"""A scenario file's TOML table and its keys' types, shared by both kinds of scenario: the model world's
(scenario.py) and the real program's (exec_scenario.py).

Kept apart from scenario.py so that `preemu exec` of a whole-program scenario does not import the model
world (its loader, the assembler front end, Keystone) just to read a TOML file.
"""
from __future__ import annotations

from pathlib import Path

from ..core.errors import ScenarioError, read_utf8

_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "a table",
               list: "a list"}


def check_type(ps: str, key: str, v, want) -> None:
    """A ScenarioError naming the key unless v is of the kind(s) `want` (a bool is no int)."""
    kinds = want if isinstance(want, tuple) else (want,)
    if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
        names = "a number" if set(kinds) == {int, float} else \
            " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise ScenarioError(ps, key, f"must be {names} (got {type(v).__name__} {v!r})")


def read_toml(path: str | Path) -> dict:
    """The scenario file's TOML table; an unreadable or non-UTF-8 file or a syntax error is a ScenarioError."""
    import tomllib                       # here: a run without a scenario file does not pay for it
    ps = str(path)
    text, line, why = read_utf8(path)
    if text is None:
        raise ScenarioError(ps, f"line {line}" if line else "", why)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(ps, "", f"not valid TOML: {e}") from None
    except RecursionError:               # tomllib parses nested arrays and inline tables recursively
        raise ScenarioError(ps, "", "arrays or inline tables nested more deeply than Python's TOML reader can follow; "
                                    "not a scenario") from None
