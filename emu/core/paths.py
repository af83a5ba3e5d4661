"""Where the files preemu ships with live: the asm/ and scenarios/ directories.

In a source checkout they sit beside the `emu` package (repo/asm, repo/scenarios); an installed
wheel carries them inside it as package data (site-packages/emu/asm, emu/scenarios; see
pyproject.toml). Scenarios name their assembly as ../asm/FILE.s, which resolves the same way in both.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent          # emu/ (this file is emu/core/paths.py)


def shipped_dir(name: str) -> Path:
    """The directory `name` (asm or scenarios): inside the installed package, else in the checkout."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


ASM_DIR = shipped_dir("asm")
SCENARIOS_DIR = shipped_dir("scenarios")
