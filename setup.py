"""Builds preemu's one compiled module, emu.engine._native (emu/engine/_native*.c: the per-point signal path,
issue #49), against the headers the unicorn wheel ships. Everything else is in pyproject.toml.

It needs gcc (or the platform's C compiler) and Python's headers; the unicorn package comes from the build's
own requirements. Unicorn is not linked: the module calls the library the Python binding has loaded.
"""
from __future__ import annotations

import importlib.util
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HINT = ("preemu builds a small C module (emu/engine/_native.c) at install time: it needs gcc and the Python "
        "headers (Debian: apt-get install gcc python3-dev)")


def unicorn_include() -> str:
    spec = importlib.util.find_spec("unicorn")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("preemu: the build needs the unicorn package (pyproject.toml's [build-system] requires it)")
    inc = os.path.join(list(spec.submodule_search_locations)[0], "include")
    if not os.path.isfile(os.path.join(inc, "unicorn", "unicorn.h")):
        raise SystemExit(f"preemu: unicorn's C headers are not in {inc} (the unicorn 2.1.4 wheel ships them)")
    return inc


class BuildExt(build_ext):
    """build_ext with one clear error when the compiler is missing or fails, instead of a traceback."""

    def finalize_options(self) -> None:
        super().finalize_options()
        for ext in self.extensions:
            ext.include_dirs.append(unicorn_include())

    def build_extension(self, ext) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:          # CCompilerError, CompileError, DistutilsExecError, a missing gcc
            raise SystemExit(f"preemu: could not compile {ext.name}: {e}\n{HINT}") from None


SOURCES = ["emu/engine/_native.c", "emu/engine/_native_sigframe.c", "emu/engine/_native_hooks.c"]

setup(ext_modules=[Extension("emu.engine._native", SOURCES, depends=["emu/engine/_native.h"], extra_compile_args=["-O2"])],
      cmdclass={"build_ext": BuildExt})
