"""Where the shipped data lives: the corpus scenarios and the .s files they sweep, and the stubs.

In a checkout (and an editable install) they are scenarios/ and asm/ beside the package; a wheel
carries the same two directories as emu/_data/scenarios and emu/_data/asm (pyproject.toml), so the
scenarios' relative `asm = "../asm/x.s"` paths hold in both.
"""
from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_root() -> Path:
    """The directory holding scenarios/ and asm/."""
    checkout = _PKG.parent
    if (checkout / "scenarios").is_dir() and (checkout / "asm").is_dir():
        return checkout
    return _PKG / "_data"


SCENARIOS = data_root() / "scenarios"
ASM = data_root() / "asm"
