"""The pytest plugin (entry point `pytest11: preemu`): installing preemu is enough.

    pytest --preemu-stub=path/to/stub.s [--preemu-layout go1.27] [--preemu-max-points N]
    pytest --preemu-scenarios=path/to/scenarios/

collects one test item per corpus loop of `check-stub` (node id `path/to/stub.s::adc_chain`) and
one per scenario file found under the directory (`dir/x.toml::x`); each fails with the violation
summary preemu prints. Items are independent, so pytest-xdist's `-n N` spreads them over cores.
The `preemu` fixture gives tests the Python API with a temporary directory and the command line's
stub and layout as defaults.

The module imports nothing of preemu at import time: pytest loads it in every run of every
project that has preemu installed.
"""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("preemu", "preemu: Go async preemption stub checks")
    g.addoption("--preemu-stub", metavar="FILE.s", default=None,
                help="collect one test per corpus loop: the asyncPreempt stub swept over preemu's corpus")
    g.addoption("--preemu-layout", metavar="LAYOUT", default=None,
                help="the Go world the stub runs in: go1.14 (default for a .s stub) or go1.27 (a Go program's)")
    g.addoption("--preemu-scenarios", metavar="DIR", default=None,
                help="collect one test per scenario file (*.toml) under DIR")
    g.addoption("--preemu-max-points", metavar="N", type=int, default=2000,
                help="injection points per corpus loop or scenario (default 2000)")


class PreemuFailure(Exception):
    """A preemu check failed: a one-line headline (what pytest's short summary shows) and the
    summary preemu prints."""

    def __init__(self, headline: str, summary: str):
        super().__init__(headline)
        self.summary = f"{headline}\n{summary}"


def _violated(violations) -> str:
    """The distinct (kind, what) of the violations, in order of first appearance."""
    from .output.report import group_violations
    return ", ".join(f"{kind} {what}" for kind, what in group_violations(violations))


def _error_text(excinfo) -> str | None:
    from .core.errors import EmuError
    if isinstance(excinfo.value, PreemuFailure):
        return excinfo.value.summary
    if isinstance(excinfo.value, EmuError):
        return f"preemu: error: {excinfo.value}"
    return None


class CorpusLoopItem(pytest.Item):
    """The stub under test swept over one corpus loop."""

    def __init__(self, *, loop: str, **kw):
        super().__init__(**kw)
        self.loop = loop

    def runtest(self) -> None:
        from . import api
        opt = self.config.getoption
        rep = api.check_stub(self.path, layout=opt("preemu_layout"), max_points=opt("preemu_max_points"),
                             loops=[self.loop])
        if not rep.ok:
            raise PreemuFailure(f"{_violated(rep.violations)} (corpus loop {self.loop})",
                                rep.summary())

    def repr_failure(self, excinfo, style=None):
        return _error_text(excinfo) or super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"preemu check-stub {self.path.name} [{self.loop}]"


class ScenarioItem(pytest.Item):
    """One scenario file run with `preemu run` semantics (the --preemu-stub, if any, as its stub)."""

    def runtest(self) -> None:
        from . import api
        opt = self.config.getoption
        stub = opt("preemu_stub")
        rep = api.run_scenario(self.path, stub=stub)
        if not rep.ok:
            failed = ", ".join(c.name for c in rep.failed_checks)
            raise PreemuFailure(f"scenario {rep.name} fails {failed}"
                                + (f": {_violated(rep.violations)}" if rep.violations else ""), rep.summary())

    def repr_failure(self, excinfo, style=None):
        return _error_text(excinfo) or super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"preemu run {self.path.name}"


class ExecScenarioItem(pytest.Item):
    """A whole-program scenario (scenarios/go/*.toml: it names a `program`) run as `preemu exec FILE.toml`
    runs it: the program under the emulated kernel, then the scenario's expectations."""

    def runtest(self) -> None:
        import io
        import json

        from . import cli
        out = io.StringIO()
        code = cli.main(["exec", str(self.path), "--json"], out)
        if code == 2:
            raise PreemuFailure(f"preemu exec {self.path.name}: bad input (exit 2)", "")
        j = json.loads(out.getvalue())
        if code != 0 or not j.get("ok"):
            failed = "; ".join((j.get("scenario") or {}).get("failed", [])) or j.get("stop_reason", "")
            raise PreemuFailure(f"scenario {self.name} fails: {failed}", json.dumps(j.get("violations", [])))

    def repr_failure(self, excinfo, style=None):
        return _error_text(excinfo) or super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"preemu exec {self.path.name}"


class StubFile(pytest.File):
    """The stub: one CorpusLoopItem per corpus loop (the stub is assembled once here, so a syntax
    error is a collection error naming file:line)."""

    def collect(self):
        from . import api
        from .front import gobuild
        from .drive import loader
        from .drive import checkstub
        layout = self.config.getoption("preemu_layout") or ("go1.27" if gobuild.is_go_input(self.path) else
                                                            checkstub.stub_layout(self.path)[0])
        loader.load_stub(layout, self.path)
        for name in api.corpus_loops(layout):
            yield CorpusLoopItem.from_parent(self, name=name, loop=name)

    def repr_failure(self, excinfo, style=None):
        return _error_text(excinfo) or super().repr_failure(excinfo, style)


class ScenarioFile(pytest.File):
    def collect(self):
        from .drive import scenario, tomlfile
        data = tomlfile.read_toml(self.path)
        if "program" in data:                  # a whole-program scenario: `preemu exec` runs it
            yield ExecScenarioItem.from_parent(self, name=str(data.get("name", self.path.stem)))
            return
        yield ScenarioItem.from_parent(self, name=scenario.load(self.path).name)

    def repr_failure(self, excinfo, style=None):
        return _error_text(excinfo) or super().repr_failure(excinfo, style)


def _collectors(session: pytest.Session) -> list[pytest.Collector]:
    opt = session.config.getoption
    out: list[pytest.Collector] = []
    stub = opt("preemu_stub")
    if stub:
        p = Path(stub).resolve()
        if not p.is_file():
            raise pytest.UsageError(f"--preemu-stub {stub}: no such file")
        out.append(StubFile.from_parent(session, path=p))
    scen = opt("preemu_scenarios")
    if scen:
        d = Path(scen).resolve()
        if not d.is_dir():
            raise pytest.UsageError(f"--preemu-scenarios {scen}: not a directory")
        out += [ScenarioFile.from_parent(session, path=p) for p in sorted(d.rglob("*.toml"))]
    return out


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    """Add the preemu items before -k, -m and --deselect filter the list."""
    for col in _collectors(session):
        rep = col.ihook.pytest_make_collect_report(collector=col)
        col.ihook.pytest_collectreport(report=rep)
        if rep.passed:
            items.extend(x for x in rep.result if isinstance(x, pytest.Item))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("preemu_max_points") <= 0:
        raise pytest.UsageError("--preemu-max-points must be positive")
    if config.getoption("preemu_layout") not in (None, "go1.14", "go1.27"):
        raise pytest.UsageError(f"--preemu-layout {config.getoption('preemu_layout')}: use go1.14 or go1.27")


def pytest_report_header(config: pytest.Config) -> str | None:
    stub = config.getoption("preemu_stub")
    if not stub and not config.getoption("preemu_scenarios"):
        return None
    return (f"preemu: stub {stub or '(generated)'}, layout {config.getoption('preemu_layout') or 'default'}, "
            f"max points {config.getoption('preemu_max_points')}")


class PreemuFixture:
    """The API bound to a temporary directory and the command line's stub and layout."""

    def __init__(self, tmp_path: Path, stub: str | None, layout: str, max_points: int):
        self.tmp_path, self.stub, self.layout, self.max_points = tmp_path, stub, layout, max_points

    def write(self, name: str, text: str) -> Path:
        """Write `text` to `name` in the temporary directory; return its path."""
        p = self.tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def sweep(self, path, func: str, **kw):
        """emu.sweep with the --preemu-stub and --preemu-layout as defaults."""
        from . import api
        kw.setdefault("layout", self.layout)
        kw.setdefault("stub", self.stub)
        return api.sweep(path, func, **kw)

    def check_stub(self, path=None, **kw):
        """emu.check_stub of `path` (default: --preemu-stub)."""
        from . import api
        kw.setdefault("layout", self.layout)
        kw.setdefault("max_points", self.max_points)
        target = path if path is not None else self.stub
        if target is None:
            raise ValueError("no stub: pass a path or run pytest with --preemu-stub")
        return api.check_stub(target, **kw)

    def run_scenario(self, path, **kw):
        """emu.run_scenario with the --preemu-stub as the stub of scenarios that name none."""
        from . import api
        kw.setdefault("stub", self.stub)
        return api.run_scenario(path, **kw)


@pytest.fixture
def preemu(tmp_path: Path, request: pytest.FixtureRequest) -> PreemuFixture:
    """preemu's Python API with a temporary directory (`preemu.write(name, text)`) and the
    command line's --preemu-stub / --preemu-layout as defaults."""
    opt = request.config.getoption
    return PreemuFixture(tmp_path, opt("preemu_stub"), opt("preemu_layout"), opt("preemu_max_points"))
