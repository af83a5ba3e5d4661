"""preemu: Go's asynchronous goroutine preemption on x86-64, emulated one instruction at a time.

Package map (dependencies run downwards only):

  regs -> layout -> stubgen            one register table, the stub frame derived from it
  gostructs, memmap                    g/m/p field offsets and every guest address
  asmfront -> program                  .s files with metadata directives -> Program
  safepoint, inject                    isAsyncSafePoint and pushCall (pure, no Unicorn)
  rtcode -> machine                    runtime sentinels; the sole owner of the Unicorn engine
  gmp                                  g/m/p records in emulated memory
  sweeper (+ verify)                   inject at every boundary and check restoration
  scenario, report, junit, sarif       TOML scenarios, text/JSON/JUnit/SARIF output
  api -> cli, pytest_plugin            the Python API below; the `preemu` command and the pytest plugin

The Python API (emu/api.py, loaded on first use so that `import emu` stays cheap):

  emu.sweep(path, func, registers=..., layout=..., stub=..., max_points=...)  -> SweepReport
  emu.run_scenario(path, layout=..., max_points=..., stub=...)                -> ScenarioReport
  emu.check_stub(path, layout="go1.14", max_points=2000, loops=None)          -> StubReport
  emu.corpus_loops()                                                          -> [loop names]

Each report has .ok, .violations, .to_json(), .render() and .summary(); bad input raises
emu.EmuError (file:line for assembly, the key for a scenario).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["sweep", "run_scenario", "check_stub", "corpus_loops", "SweepReport", "ScenarioReport", "StubReport",
           "Violation", "EmuError", "__version__"]

if TYPE_CHECKING:
    from .api import ScenarioReport, SweepReport, check_stub, corpus_loops, run_scenario, sweep
    from .checkstub import StubReport
    from .errors import EmuError
    from .verify import Violation

_HOME = {"sweep": "api", "run_scenario": "api", "check_stub": "api", "corpus_loops": "api", "SweepReport": "api",
         "ScenarioReport": "api", "StubReport": "checkstub", "Violation": "verify", "EmuError": "errors"}


def __getattr__(name: str):
    if name in _HOME:
        import importlib
        mod = importlib.import_module(f".{_HOME[name]}", __name__)
        return getattr(mod, name)
    raise AttributeError(f"module 'emu' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
