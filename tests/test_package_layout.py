"""The package's shape: no module over 900 lines, no import circle, the engine apart from the
planners and the simulator, no top-level name hiding a module of the same name."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import hetcoll

SRC = Path(hetcoll.__file__).resolve().parent
MAX_LINES = 900
#: modules still being split by their owners (each entry is a promise, not a licence)
SPLITTING: set[str] = set()


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports when it runs: at the top or inside a
    function, but not under ``if TYPE_CHECKING:`` (annotations only)."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


def test_no_module_is_over_900_lines():
    long = {
        str(path.relative_to(SRC)): n
        for path in _modules().values()
        if (n := path.read_text().count("\n")) > MAX_LINES
        and str(path.relative_to(SRC)) not in SPLITTING
    }
    assert not long, long


def test_the_engine_modules_that_run_every_call_stay_small():
    for name in ("comm.py", "executor.py"):
        lines = (SRC / "runtime" / name).read_text().count("\n")
        assert lines < 400, (name, lines)


def test_the_import_graph_has_no_circle():
    """Depth-first search for a back edge over every import the code makes when it runs."""
    modules = _modules()
    graph = {m: sorted(_imports(m, p, modules)) for m, p in modules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in graph[m]:
            if state.get(n) == 1:
                raise AssertionError(" -> ".join([*path[path.index(n) :], n]))
            if n not in state:
                visit(n, [*path, n])
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m, [m])


def test_the_engine_imports_neither_planners_nor_the_simulator():
    """``runtime/`` executes schedules: it never plans, selects, compares or simulates."""
    modules = _modules()
    banned = ("hetcoll.planners", "hetcoll.simulator", "hetcoll.selection", "hetcoll.compare")
    for name, path in modules.items():
        if not name.startswith("hetcoll.runtime"):
            continue
        for target in _imports(name, path, modules):
            assert not target.startswith(banned), (name, target)


def test_the_circle_finder_sees_lazy_imports():
    """The helper reads imports inside functions (where circles used to hide)."""
    modules = _modules()
    assert "hetcoll.simulator" in _imports(
        "hetcoll.planners.switch_aware", modules["hetcoll.planners.switch_aware"], modules
    )


def test_no_top_level_name_hides_a_module():
    """``import hetcoll.X`` and ``hetcoll.X`` are the same thing for every module X of the
    package (``hetcoll.simulate`` is the function; the simulator is ``hetcoll.simulator``)."""
    for info in pkgutil.iter_modules(hetcoll.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"hetcoll.{info.name}")
        assert getattr(hetcoll, info.name) is module, info.name
