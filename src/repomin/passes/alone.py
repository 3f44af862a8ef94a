"""The ``alone`` pass: the failing test alone in its file.

A test file holds many tests and the failure needs one; deleting the others statement by
statement (``python``) costs a candidate each, hundreds on a real suite's test file. The user's
``-k`` or node id is theirs to keep, but the other tests of the failing test's file can go in
one candidate. So this pass proposes, once, one candidate: in each file holding a failing test
(the baseline's first reproducing run, read by the identity's parser
:func:`repomin.failure.facets.python_facet`),

- every other top-level ``def test*``/``async def test*`` and every other top-level class a
  test runner collects (``Test*``, or a base named ``…TestCase``) deleted,
- inside a class holding a failing test, its other ``test*`` methods (and nested ``Test*``
  classes) deleted,
- everything else kept: imports, fixtures (a ``test*`` function decorated ``…fixture`` is one),
  helpers, ``setUp``, and any deleted definition whose name the kept code still uses (a base
  class, a test called as a helper), to a fixpoint.

Which test failed: pytest's node ids (``tests/test_x.py::TestA::test_b[1-2]``: the parameters
are dropped, every part must be a name) and unittest's ids (``test_b (pkg.test_x.TestA.test_b)``
or ``(pkg.test_x.TestA)``: the module path names the file; ``__main__`` is the stack's file that
defines the class). A path is a tree file when the two agree from the end (pytest writes node
ids from its rootdir), and only when exactly one file does; a path with ``..`` or outside the
working directory names nothing. Several failing tests are all kept.

Nothing is proposed when no failing test is found or more than :data:`MAX_TESTS` are, a file
does not parse or is larger than :data:`MAX_BYTES`, a failing test's name is not defined at its
file's top level, the edit would not compile, or nothing would be deleted. Edits are whole lines
(``ast`` spans, as the ``python`` pass edits), each with the blank lines before it; a class body
left empty becomes ``pass``. When the candidate is accepted the cuts follow. It costs one
candidate decision.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from repomin.failure.facets import python_facet
from repomin.failure.normalise import Normaliser
from repomin.passes.cuts import FromFailures, follow
from repomin.passes.python_source import PySource
from repomin.passes.stack import stack_files
from repomin.passes.textedit import compiles, indentation, splice
from repomin.runners.base import Outcome
from repomin.search.problem import Problem
from repomin.tree import Tree

#: Test files larger than this are left alone (parsing and the name fixpoint are linear in
#: the file, but a generated file of many megabytes is not a hand-written test module).
MAX_BYTES = 2 * 1024 * 1024

#: More failing tests than this (a whole suite failing) and nothing is proposed: keeping them
#: all would delete little, and each costs a look-up in the tree.
MAX_TESTS = 256

#: A kept test's name chain: class names, then the test's name; ``()`` for "this whole class".
Chain = tuple[str, ...]
#: The names kept at one level, each with the chains below it (empty: kept whole).
Trie = dict[str, "Trie"]

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class FailingTest:
    """A failing test: the tree file that defines it and its name chain (``("TestA",
    "test_b")``; a class alone when the failure was the class's, as in ``setUpClass``)."""

    path: str
    chain: Chain


# -- which tests failed ------------------------------------------------------------------------


def failing_tests(output: str, workdir: str, tree: Tree) -> list[FailingTest]:
    """The failing tests ``output`` reports (pytest's, else unittest's) that name a tree
    file, each once; none when it reports more than :data:`MAX_TESTS`."""
    outcome = Outcome(exit_code=None, stdout=output.encode("utf-8", "replace"), workdir=workdir)
    values = python_facet(outcome, Normaliser.for_outcome(outcome))
    if len(values) > MAX_TESTS:
        return []
    found: list[FailingTest] = []
    for value in values:
        test = value.get("test", "")
        if value.get("runner") == "pytest":
            one = pytest_test(test, workdir, tree)
        elif value.get("runner") == "unittest":
            one = unittest_test(test, tree, lambda: stack_files(output, workdir, tree))
        else:
            one = None
        if one is not None and one not in found:
            found.append(one)
    return found


def pytest_test(node: str, workdir: str, tree: Tree) -> FailingTest | None:
    """A pytest node id's file and name chain, or ``None`` (no test part, odd parts, no
    single tree file)."""
    path, sep, rest = node.partition("::")
    if not sep:
        return None
    rest = rest.split("[", 1)[0]  # parameters may hold anything, "::" included
    chain = tuple(part for part in rest.split("::") if part != "()")  # pytest < 4's instance
    if not chain or not all(part.isidentifier() for part in chain):
        return None
    rel = tree_file(path, workdir, tree)
    return None if rel is None else FailingTest(rel, chain)


def unittest_test(
    test: str, tree: Tree, stack: Callable[[], Sequence[str]] = list
) -> FailingTest | None:
    """A unittest id's file and chain: ``test_b (pkg.mod.TestA.test_b)`` (3.11+) or
    ``test_b (pkg.mod.TestA)``, a subtest's ``(i=1)`` after it ignored; the module names the
    file, and ``__main__`` (or a module that names none) the file of ``stack`` that defines
    the class."""
    name, sep, rest = test.partition(" (")
    if not sep or ")" not in rest:
        return None
    dotted = rest.split(")", 1)[0].split(".")
    if len(dotted) > 1 and dotted[-1] == name:
        dotted = dotted[:-1]
    if len(dotted) < 2 or not all(part.isidentifier() for part in [*dotted, name]):
        return None
    cls, module = dotted[-1], dotted[:-1]
    chain = (cls, name) if name.startswith("test") else (cls,)
    base = "/".join(module)
    for path in (f"{base}.py", f"{base}/__init__.py"):
        rel = tree_file(path, "", tree)
        if rel is not None:
            return FailingTest(rel, chain)
    defining = [p for p in stack() if _defines_class(tree, p, cls)]
    return FailingTest(defining[0], chain) if len(defining) == 1 else None


def tree_file(path: str, workdir: str, tree: Tree) -> str | None:
    """The one tree file ``path`` names: relative, or absolute under ``workdir``; equal, or
    agreeing from the end (a rootdir above or below the tree's root); else ``None``."""
    root = workdir.rstrip("/") + "/" if workdir else ""
    if root and path.startswith(root):
        path = path[len(root) :]
    if not path or path.startswith("/") or "\\" in path:
        return None
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts) or posixpath.normpath(path) != path:
        return None
    if _is_file(tree, path):
        return path
    found = [
        p
        for p, e in tree.entries.items()
        if e.kind == "file" and (p.endswith("/" + path) or path.endswith("/" + p))
    ]
    return found[0] if len(found) == 1 else None


def _is_file(tree: Tree, path: str) -> bool:
    entry = tree.entries.get(path)
    return entry is not None and entry.kind == "file"


def _defines_class(tree: Tree, path: str, cls: str) -> bool:
    entry = tree.entries.get(path)
    if entry is None or entry.size > MAX_BYTES:
        return False
    src = PySource.parse(entry.data)
    return src is not None and any(
        isinstance(s, ast.ClassDef) and s.name == cls for s in src.module.body
    )


# -- the edit ----------------------------------------------------------------------------------


def alone_edit(data: bytes, chains: Sequence[Chain]) -> tuple[bytes, int] | None:
    """``data`` with every test but ``chains`` deleted (see the module docstring) and how many
    definitions went, or ``None`` when it does not parse, a chain's first name is not defined
    at the top level, the result does not compile or nothing would be deleted."""
    if len(data) > MAX_BYTES or not chains:
        return None
    src = PySource.parse(data)
    if src is None:
        return None
    trie = _trie(chains)
    defined = {s.name for s in src.module.body if isinstance(s, _Def)}
    if not set(trie) <= defined:
        return None
    doomed: list[_Def] = []
    _select(src.module.body, trie, top=True, into=doomed)
    doomed = [s for s in _still_unused(src.module, doomed) if src.stmt_alone([s])]
    if not doomed:
        return None
    edited = splice(data, _edits(src, doomed))
    return (edited, len(doomed)) if edited != data and compiles(edited) else None


def _trie(chains: Sequence[Chain]) -> Trie:
    root: Trie = {}
    for chain in chains:
        node = root
        for name in chain:
            if name in node and not node[name]:
                break  # kept whole already
            node = node.setdefault(name, {})
        else:
            node.clear()  # this chain keeps the whole of what it ends in
    return root


def _select(body: Sequence[ast.stmt], trie: Trie, *, top: bool, into: list[_Def]) -> None:
    """The tests of ``body`` that ``trie`` does not keep, into ``into``; recurse into the kept
    classes that keep only some of their tests."""
    for stmt in body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(stmt, ast.ClassDef) and stmt.name in trie:
            if trie[stmt.name]:
                _select(stmt.body, trie[stmt.name], top=False, into=into)
        elif stmt.name not in trie and _is_test(stmt, top=top):
            into.append(stmt)


def _is_test(stmt: _Def, *, top: bool) -> bool:
    """A test function (``test*``, not a fixture), or a class a runner collects: pytest's
    ``Test*`` (nested ones too), unittest's ``TestCase`` subclass, judged by the base's own
    name."""
    if isinstance(stmt, ast.ClassDef):
        if stmt.name.startswith("Test"):
            return True
        return top and any(_last_name(base).endswith("TestCase") for base in stmt.bases)
    if not stmt.name.startswith("test"):
        return False
    return not any(_last_name(d).endswith("fixture") for d in stmt.decorator_list)


def _last_name(expr: ast.expr) -> str:
    while isinstance(expr, ast.Call):
        expr = expr.func
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _still_unused(module: ast.Module, doomed: list[_Def]) -> list[_Def]:
    """``doomed`` less every definition the rest of the module names (a name, an attribute or
    a parameter: a fixture), and what those name in turn (a worklist: each kept definition is
    read once, so a hostile chain of references stays linear)."""
    by_name: dict[str, list[_Def]] = {}
    for stmt in doomed:
        by_name.setdefault(stmt.name, []).append(stmt)
    todo = [name for name in set(_names(module, {id(s) for s in doomed})) if name in by_name]
    kept: set[int] = set()
    while todo:
        for stmt in by_name.pop(todo.pop(), []):
            kept.add(id(stmt))
            todo += [name for name in set(_names(stmt, set())) if name in by_name]
    return [s for s in doomed if id(s) not in kept]


def _names(node: ast.AST, skip: set[int]) -> Iterator[str]:
    """Every name used under ``node`` outside the subtrees in ``skip`` (iteratively: a deep
    file must not exhaust the recursion limit)."""
    todo = [node]
    while todo:
        one = todo.pop()
        if id(one) in skip:
            continue
        if isinstance(one, ast.Name):
            yield one.id
        elif isinstance(one, ast.Attribute):
            yield one.attr
        elif isinstance(one, ast.arg):
            yield one.arg
        todo.extend(ast.iter_child_nodes(one))


def _edits(src: PySource, doomed: Sequence[ast.stmt]) -> list[tuple[int, int, bytes]]:
    """Whole-line deletions, each with the blank lines before it; a class body left empty keeps
    ``pass`` in its first statement's place."""
    gone = {id(s) for s in doomed}
    edits: list[tuple[int, int, bytes]] = []
    emptied: set[int] = set()
    for node in ast.walk(src.module):
        if isinstance(node, ast.ClassDef) and all(id(s) in gone for s in node.body):
            emptied.add(id(node.body[0]))
    for stmt in doomed:
        first = src.first_line(stmt)
        last = stmt.end_lineno or first
        text = indentation(src.line(first)) + b"pass" + src.eol if id(stmt) in emptied else b""
        while first > 1 and not src.line(first - 1).strip():
            first -= 1  # the blank lines before it go with it
        start, end = src.whole_lines(first, last)
        edits.append((start, end, text))
    return edits


# -- the pass ----------------------------------------------------------------------------------


class AloneCut(FromFailures):
    """Proposes the failing test alone once (see the module docstring)."""

    name: ClassVar[str] = "alone"

    def run(self, problem: Problem) -> None:
        if not self.first_run():
            return
        tree = problem.current
        tests = self.gather(lambda output, workdir: failing_tests(output, workdir, tree))
        if len(tests) > MAX_TESTS:
            return
        candidate, files, count = alone_tree(tree, tests, problem.protected)
        if not files:
            return
        where = files[0] if len(files) == 1 else f"{len(files)} files"
        description = f"delete the other tests of {where} ({count} definitions)"
        if problem.try_first(self.name, iter([(candidate, description)])) is not None:
            follow(problem, self.cuts, self.name)


def alone_tree(
    tree: Tree, tests: Sequence[FailingTest], protected: Callable[[str], bool]
) -> tuple[Tree, list[str], int]:
    """The tree with each failing test's file edited (protected files stay), the files edited
    and how many definitions went."""
    chains: dict[str, list[Chain]] = {}
    for test in tests:
        chains.setdefault(test.path, []).append(test.chain)
    candidate, files, count = tree, [], 0
    for path, kept in sorted(chains.items()):
        entry = tree.entries.get(path)
        if entry is None or entry.kind != "file" or protected(path):
            continue
        edited = alone_edit(entry.data, kept)
        if edited is not None:
            candidate = candidate.replace(path, edited[0])
            files.append(path)
            count += edited[1]
    return candidate, files, count
