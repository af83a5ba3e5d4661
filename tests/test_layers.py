"""The package's imports run one way (issue 24): every import goes to the importer's own subpackage or a
lower layer of emu.LAYERS, no import cycle among emu's modules, lazy imports inside functions included
(imports under `if TYPE_CHECKING:` are not run and do not count); the Python API is a function
(`emu.sweep`), not a module made callable; the old flat module paths still import, with a warning."""
import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "emu"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    """module -> the emu modules it imports (lazy imports included; those under `if TYPE_CHECKING:` too if
    `type_only`)."""
    mods = {_module(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        typing_only = set() if type_only else {
            id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
            and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    deps.add(f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def layer_of(module: str) -> str | None:
    """The LAYERS key of an emu module: its subpackage, or the top-level module's name (None: emu itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_violations(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Every import that goes up, or sideways into another subpackage of the same layer."""
    out = []
    for src, deps in sorted(graph.items()):
        a = layer_of(src)
        for dst in sorted(deps):
            b = layer_of(dst)
            if a is None or b is None or a == b:      # the package root (__version__) may be imported by all
                continue
            if layers[b] >= layers[a]:
                out.append(f"{src} (layer {layers[a]} {a}) imports {dst} (layer {layers[b]} {b})")
    return out


def test_imports_follow_the_declared_layers_lazy_imports_included():
    import emu
    graph = import_graph()
    assert len(graph) > 80 and "emu.drive.sweeper" in graph["emu.api"]
    on_disk = {layer_of(m) for m in graph} - {None}
    assert on_disk == set(emu.LAYERS), "every subpackage and top-level module has a layer, and no other"
    assert layer_violations(graph, emu.LAYERS) == []


def test_the_layer_check_finds_an_upward_and_a_sideways_import():
    layers = {"core": 1, "model": 4, "linux": 4, "drive": 6}
    graph = {"emu.core.regs": {"emu.drive.sweeper"}, "emu.model.machine": {"emu.linux.process", "emu.core.regs"},
             "emu.drive.sweeper": {"emu.model.machine", "emu.drive.shards", "emu"}, "emu.drive.shards": set(),
             "emu.linux.process": set()}
    assert layer_violations(graph, layers) == [
        "emu.core.regs (layer 1 core) imports emu.drive.sweeper (layer 6 drive)",
        "emu.model.machine (layer 4 model) imports emu.linux.process (layer 4 linux)"]


def test_the_package_map_names_every_subpackage_and_each_says_what_it_may_import():
    import emu
    for name in emu.LAYERS:
        path = ROOT / name / "__init__.py"
        if path.exists():
            assert f" {name} " in emu.__doc__, name
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and "May import:" in doc, name
    subpackages = {p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name != "__pycache__"}
    assert subpackages <= set(emu.LAYERS), subpackages - set(emu.LAYERS)


def test_the_installed_package_list_has_every_subpackage():
    """pyproject's explicit package list: a subpackage missing there is missing from a non-editable install."""
    import tomllib
    listed = set(tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert {f"emu.{p.parent.name}" for p in ROOT.glob("*/__init__.py")} <= listed


def test_no_import_cycle_lazy_imports_included():
    graph = import_graph()
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_report_does_not_import_check_stub_and_the_api_is_a_function():
    import emu
    from emu import api
    from emu.drive import sweeper
    assert "emu.drive.checkstub" not in import_graph()["emu.output.report"]
    assert emu.sweep is api.sweep and not isinstance(emu.sweep, type(sweeper))


@pytest.mark.parametrize("old", ["sweeper", "report", "linux.realsweep", "explain", "gmp"])
def test_an_old_module_path_imports_the_moved_module_with_a_deprecation_warning(old):
    import emu
    new = importlib.import_module(f"emu.{emu.MOVED[old]}")
    sys.modules.pop(f"emu.{old}", None)
    with pytest.warns(DeprecationWarning, match=f"emu.{old} moved to emu.{emu.MOVED[old]}"):
        mod = importlib.import_module(f"emu.{old}")
    assert mod is new


def test_every_old_path_is_a_moved_module_and_the_new_paths_do_not_warn():
    import emu
    for old, new in emu.MOVED.items():
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), old
        assert (ROOT / (new.replace(".", "/") + ".py")).exists(), new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module("emu.drive.realsweep")
        importlib.import_module("emu.teach.story")


def test_the_docs_layout_names_every_module():
    layout = (ROOT.parent / "docs" / "reference" / "layout.md").read_text()
    for sub in {p.parent.name for p in ROOT.glob("*/__init__.py")}:
        assert f"emu/{sub}/" in layout, sub
    missing = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py") and f" {p.name} " not in layout
               and f"emu/{p.name} " not in layout]
    assert missing == []
