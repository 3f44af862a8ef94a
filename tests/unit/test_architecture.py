"""The shape of the package, checked from its source.

Static checks over ``src/repomin`` with :mod:`ast`: the package root holds only the entry points
and the shared values (every other module lives in a concept folder), no import circle (every
import counts, ``TYPE_CHECKING`` blocks included: a circle hidden from the interpreter is still
one for a reader), no function over 80 lines, ``Oracle`` holds at most 12 attributes, and no
attribute of another module's object is written: no ``self.a.b = …`` (writing through a
collaborator) and no ``p.b = …`` where ``p`` is a parameter annotated with a class imported from
another ``repomin`` module. There is no cap on a module's length: a file holds one concept,
whatever its length. The concept folders import only downward: every import, at any depth
(module level, inside a function, under ``TYPE_CHECKING``), goes from a folder to one below it
in :data:`LAYERS`, the order of ARCHITECTURE.md's folder table.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "repomin"
MAX_FUNCTION_LINES = 80
MAX_ORACLE_ATTRIBUTES = 12
#: The only modules at the package root: the entry points and the shared values.
ROOT_MODULES = {"__init__.py", "__main__.py", "errors.py", "tree.py"}
#: The floors from the top down: ``python -m repomin``, the concept folders in the order of
#: ARCHITECTURE.md's table, and the shared values at the ground (the package itself, ``tree``,
#: ``errors``). A module imports only from its own floor or one below it.
LAYERS = (
    "__main__",
    "cli",
    "app",
    "passes",
    "search",
    "analysis",
    "report",
    "sampling",
    "cluster",
    "failure",
    "runners",
    "",
)
#: Imports allowed to go up, ``(importer, imported): reason``; a new upward import fails.
UPWARD_EXCEPTIONS: dict[tuple[str, str], str] = {}


@cache
def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@cache
def parsed(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text("utf-8"))


def _absolute(name: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(name: str) -> set[str]:
    """The ``repomin`` modules ``name`` imports at module level (``TYPE_CHECKING`` included)."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(name, node)
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    found.add(full if full in modules() else module)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)

    visit(parsed(name).body)
    return {m for m in found if m in modules() and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    graph = {name: imports(name) for name in modules()}
    assert cycles(graph) == []


def test_the_root_holds_only_entry_points_and_shared_values() -> None:
    loose = {p.name for p in PACKAGE.glob("*.py")}
    assert loose <= ROOT_MODULES


def test_functions_are_short() -> None:
    long: list[str] = []
    for name in modules():
        for node in ast.walk(parsed(name)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert long == []


def test_oracle_holds_few_attributes() -> None:
    (oracle,) = (
        n
        for n in parsed("repomin.sampling.oracle").body
        if isinstance(n, ast.ClassDef) and n.name == "Oracle"
    )
    names = {
        target.attr
        for node in ast.walk(oracle)
        for target in _targets(node)
        if isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    }
    assert 0 < len(names) <= MAX_ORACLE_ATTRIBUTES, sorted(names)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def _foreign_classes(name: str) -> set[str]:
    """Class names ``name`` imports from other repomin modules."""
    out: set[str] = set()
    for node in parsed(name).body:
        if isinstance(node, ast.ImportFrom) and _absolute(name, node).startswith("repomin"):
            out.update(a.asname or a.name for a in node.names if a.name[:1].isupper())
    return out


def foreign_writes(name: str) -> list[str]:
    """Attribute writes into objects this module does not own (see the module docstring)."""
    foreign = _foreign_classes(name)
    found: list[str] = []
    for func in ast.walk(parsed(name)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        params = {
            a.arg: ast.unparse(a.annotation)
            for a in [*func.args.args, *func.args.kwonlyargs]
            if a.annotation is not None
        }
        for node in ast.walk(func):
            for target in _targets(node):
                if not isinstance(target, ast.Attribute):
                    continue
                base = target.value
                through = isinstance(base, ast.Attribute) and (
                    isinstance(base.value, ast.Name) and base.value.id == "self"
                )
                annotated = isinstance(base, ast.Name) and any(
                    cls in foreign for cls in params.get(base.id, "").replace("|", " ").split()
                )
                if through or annotated:
                    found.append(f"{name}:{getattr(node, 'lineno', 0)}: {ast.unparse(target)}")
    return found


def test_foreign_write_finder_finds_one(tmp_path: Path) -> None:
    source = (
        "from repomin.sampling.oracle import Oracle\n"
        "class R:\n"
        "    def f(self, o: Oracle) -> None:\n"
        "        self.oracle.sample_jobs = 1\n"
        "        o.jobs = 2\n"
        "        self.mine = 3\n"
    )
    modules()["repomin._probe"] = tmp_path / "probe.py"
    (tmp_path / "probe.py").write_text(source)
    try:
        parsed.cache_clear()
        assert foreign_writes("repomin._probe") == [
            "repomin._probe:4: self.oracle.sample_jobs",
            "repomin._probe:5: o.jobs",
        ]
    finally:
        del modules()["repomin._probe"]
        parsed.cache_clear()


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_write_into_another_modules_object(name: str) -> None:
    assert foreign_writes(name) == []


def test_architecture_table_names_every_module() -> None:
    text = (SRC.parent / "ARCHITECTURE.md").read_text("utf-8")
    start = text.index("| folder | owns |")
    table = text[start : text.index("\n\n", start)]
    named = {
        cell.strip("`") for row in table.splitlines() for cell in row.split("|")[1].split(", ")
    }
    named = {n.strip().strip("`") for n in named}
    top = {
        f"{p.name}/" if p.is_dir() else p.name
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name not in ("__init__.py", "__main__.py"))
    }
    assert top - named == set()


def layer(module: str) -> str:
    """The floor of a ``repomin`` module: its concept folder, ``__main__``, or ``""`` (root)."""
    parts = module.split(".")
    if parts[1:] == ["__main__"]:
        return "__main__"
    return parts[1] if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() else ""


def all_imports(name: str) -> set[tuple[int, str]]:
    """``(line, module)`` for every ``repomin`` import of ``name``, at any depth."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(parsed(name)):
        if isinstance(node, ast.Import):
            found.update((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(name, node)
            for alias in node.names:
                full = f"{module}.{alias.name}"
                found.add((node.lineno, full if full in modules() else module))
    return {(line, m) for line, m in found if m == "repomin" or m.startswith("repomin.")}


def upward_imports(names: list[str]) -> list[str]:
    """Imports of ``names`` that go to a higher floor and are not in ``UPWARD_EXCEPTIONS``."""
    rank = {floor: i for i, floor in enumerate(LAYERS)}
    found: list[str] = []
    for name in names:
        for line, target in sorted(all_imports(name)):
            if rank[layer(target)] < rank[layer(name)] and (name, target) not in UPWARD_EXCEPTIONS:
                found.append(f"{name}:{line} imports {target}: up from {layer(name)}/")
    return found


def test_layer_of_a_module() -> None:
    assert layer("repomin.report.replay") == "report"
    assert layer("repomin.sampling.stats.bounds") == "sampling"
    assert layer("repomin.sampling") == "sampling"
    assert layer("repomin.tree") == layer("repomin") == ""
    assert layer("repomin.__main__") == "__main__"
    assert {layer(name) for name in modules()} == set(LAYERS)


def test_upward_import_finder_finds_every_kind(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from repomin.tree import Tree\n"
        "from repomin.search import problem\n"
        "if TYPE_CHECKING:\n"
        "    from repomin.app.options import ReduceOptions\n"
        "def f() -> None:\n"
        "    import repomin.cli.main\n"
        "    from ..report import build\n"
    )
    modules()["repomin.sampling._probe"] = tmp_path / "probe.py"
    (tmp_path / "probe.py").write_text(source)
    try:
        parsed.cache_clear()
        assert upward_imports(["repomin.sampling._probe"]) == [
            "repomin.sampling._probe:3 imports repomin.search.problem: up from sampling/",
            "repomin.sampling._probe:5 imports repomin.app.options: up from sampling/",
            "repomin.sampling._probe:7 imports repomin.cli.main: up from sampling/",
            "repomin.sampling._probe:8 imports repomin.report.build: up from sampling/",
        ]
    finally:
        del modules()["repomin.sampling._probe"]
        parsed.cache_clear()


def test_folders_import_only_downward() -> None:
    assert upward_imports(sorted(modules())) == []


def test_upward_exceptions_are_still_needed() -> None:
    used = {(name, target) for name in modules() for _line, target in all_imports(name)}
    assert set(UPWARD_EXCEPTIONS) <= used


def table_floors() -> list[str]:
    """The floors ARCHITECTURE.md's folder table lists, top row first (``""``: the root's row)."""
    text = (SRC.parent / "ARCHITECTURE.md").read_text("utf-8")
    start = text.index("| folder | owns |")
    rows = text[start : text.index("\n\n", start)].splitlines()[2:]
    first = [row.split("|")[1].strip().split(", ")[0].strip("`") for row in rows]
    return [cell.rstrip("/") if cell.endswith("/") else "" for cell in first]


def test_layers_are_the_tables_order() -> None:
    assert table_floors() == [floor for floor in LAYERS if floor != "__main__"]
