"""preemu: Go's asynchronous goroutine preemption on x86-64, emulated one instruction at a time.

Package map: the pipeline, one subpackage per role, imports running downwards only (LAYERS; a module
may import its own subpackage and the layers below; tests/test_layers.py enforces it, lazy imports
included). Each subpackage's docstring says what it owns.

  1 core     the tables (registers, stub frame, g/m/p offsets, addresses) and the program model
  2 front    front ends filling the program model: `.s` (Keystone), Go binaries (pclntab, DWARF), Go builds
  3 check    the oracle (isAsyncSafePoint, pushCall) and the verifiers (bit-exact restoration)
  3 engine   Unicorn below both engines: native callbacks, the TLB fill, a page fault's address
  4 model    engine for `.s` input: the model world (machine, g/m/p, preemu's GC and scheduler)
  4 linux    engine for Go input: the real process under an emulated Linux (beside model, not above it)
  5 goruntime the Go runtime inside a real process, read and checked through the kernel: the watch, GC, effects
  5 output   text, JSON, JUnit, SARIF, timelines
  6 drive    drivers: sweeps (model world and real program), scenarios, check-stub, episodes, disasm
  7 teach    `preemu explain`: one preemption told step by step, as text and as a page
  8 api      the Python API (emu.sweep, emu.check_stub, emu.run_scenario)
  9 cli      the `preemu` command, on top of the API
 10 pytest_plugin, __main__: the pytest plugin (the API and the CLI's options), `python -m emu`

The Python API (emu/api.py, loaded on first use so that `import emu` stays cheap):

  emu.sweep(path, func, registers=..., layout=..., stub=..., max_points=...)  -> SweepReport
  emu.run_scenario(path, layout=..., max_points=..., stub=...)                -> ScenarioReport
  emu.check_stub(path, layout="go1.14", max_points=2000, loops=None)          -> StubReport
  emu.corpus_loops()                                                          -> [loop names]

Each report has .ok, .violations, .to_json(), .render() and .summary(); bad input raises
emu.EmuError (file:line for assembly, the key for a scenario).

The modules' old flat paths (emu.sweeper, emu.linux.realsweep, emu.explain, ...) still import, with a
DeprecationWarning, for one release (MOVED).
"""
from __future__ import annotations

import sys

# Run as the `preemu` command (its script, or `python -m emu` while the package loads), first of all: a Ctrl-C
# before the command's own handling starts (cli.main) ends the process as SIGINT's default action does, quietly
# (a shell shows 130), instead of a KeyboardInterrupt traceback from the middle of an import. Imported as a
# library, nothing changes. (The interpreter's own start-up before this line, site and runpy, is not ours.)
if sys.argv[:1] == ["-m"] or (sys.argv and sys.argv[0].rsplit("/", 1)[-1] == "preemu"):
    import _signal          # the builtin: `signal`'s enum set-up takes milliseconds, a window a Ctrl-C hit (measured)
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)

import importlib
import importlib.machinery
import warnings
from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = ["sweep", "run_scenario", "check_stub", "corpus_loops", "SweepReport", "ScenarioReport", "StubReport",
           "Violation", "EmuError", "__version__"]

#: subpackage (or top-level module) -> layer; imports go to the same subpackage or a lower layer
LAYERS = {"core": 1, "front": 2, "check": 3, "engine": 3, "model": 4, "linux": 4, "goruntime": 5,
          "output": 5, "drive": 6, "teach": 7,
          "api": 8, "cli": 9, "pytest_plugin": 10, "__main__": 10}

#: old module path (under emu) -> where it lives now; the old path works for one release, with a warning
MOVED = {
    "errors": "core.errors",
    "paths": "core.paths",
    "regs": "core.regs",
    "layout": "core.layout",
    "gostructs": "core.gostructs",
    "memmap": "core.memmap",
    "structref": "core.structref",
    "dump": "core.dump",
    "stubgen": "core.stubgen",
    "program": "core.program",
    "asmfront": "front.asmfront",
    "guestcheck": "front.guestcheck",
    "elfsym": "front.elfsym",
    "gobinary": "front.gobinary",
    "godwarf": "front.godwarf",
    "goabi": "front.goabi",
    "gofront": "front.gofront",
    "gobuild": "front.gobuild",
    "goreleases": "front.goreleases",
    "toolchains": "front.toolchains",
    "safepoint": "check.safepoint",
    "inject": "check.inject",
    "verify": "check.verify",
    "mutants": "check.mutants",
    "rtcode": "model.rtcode",
    "machine": "model.machine",
    "heap": "model.heap",
    "stack": "model.stack",
    "goslice": "model.goslice",
    "unwind": "model.unwind",
    "gcscan": "model.gcscan",
    "gcworld": "model.gcworld",
    "gmp": "model.gmp",
    "sched": "model.sched",
    "report": "output.report",
    "timeline": "output.timeline",
    "junit": "output.junit",
    "sarif": "output.sarif",
    "loader": "drive.loader",
    "sweeper": "drive.sweeper",
    "shards": "drive.shards",
    "scenario": "drive.scenario",
    "checkstub": "drive.checkstub",
    "episode": "drive.episode",
    "modelcheck": "drive.modelcheck",
    "disasm": "drive.disasm",
    "linux.report": "output.exec_report",
    "linux.sweep_report": "output.realsweep_report",
    "linux.scenario": "drive.exec_scenario",
    "linux.gsweep": "drive.gsweep",
    "linux.realsweep": "drive.realsweep",
    "explain": "teach.story",
    "explain_notes": "teach.notes",
    "explain_sched": "teach.sched",
    "explain_text": "teach.text",
    "explain_html": "teach.html",
    "linux.gexplain": "teach.real",
}

if TYPE_CHECKING:
    from .api import ScenarioReport, SweepReport, check_stub, corpus_loops, run_scenario, sweep
    from .check.verify import Violation
    from .core.errors import EmuError
    from .drive.checkstub import StubReport

_HOME = {"sweep": "api", "run_scenario": "api", "check_stub": "api", "corpus_loops": "api", "SweepReport": "api",
         "ScenarioReport": "api", "StubReport": "drive.checkstub", "Violation": "check.verify",
         "EmuError": "core.errors"}


def __getattr__(name: str):
    if name in _HOME:
        mod = importlib.import_module(f".{_HOME[name]}", __name__)
        return getattr(mod, name)
    raise AttributeError(f"module 'emu' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _MovedModules:
    """Imports of an old path (`emu.sweeper`) give the module at its new one (`emu.drive.sweeper`), the
    same object, after a DeprecationWarning naming both. A meta-path finder and its own loader, by the
    protocol alone: importing importlib.abc for its base classes would add ~16 ms to every `import emu`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("emu.") and fullname[4:] in MOVED:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        new = f"emu.{MOVED[spec.name[4:]]}"
        warnings.warn(f"{spec.name} moved to {new}; the old path goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):
        pass


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())
