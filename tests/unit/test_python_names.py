"""Which Python statements bind a name that code still present loads (``passes.python_names``),
and what holding them back saves the ``python`` pass on a real exec-based predicate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from repomin.passes import python_ast
from repomin.passes.python_ast import PythonReduce
from repomin.passes.python_names import NameHolds, loaded_from_elsewhere
from repomin.passes.python_source import PySource, Unit, child_locs
from repomin.tree import Tree
from tests.unit._pass_harness import reduce_in_process, text_tree


def level(source: str, loc: tuple[Any, ...] = ()) -> tuple[PySource, list[Unit]]:
    src = PySource.parse(source.encode())
    assert src is not None
    body = src.body_at(loc)
    assert body is not None
    return src, src.units(body)[0]


def held_lines(
    source: str,
    present: Sequence[int] | None = None,
    external: Sequence[str] = (),
    loc: tuple[Any, ...] = (),
) -> list[str]:
    """The first lines of the held units of the body at ``loc`` (every unit present unless
    ``present`` says which)."""
    src, units = level(source, loc)
    holds = NameHolds(src, units, external)
    chosen = range(len(units)) if present is None else present
    return [src.line(units[i].line).decode().strip() for i in sorted(holds.held(chosen))]


def test_an_import_used_at_import_time_waits_and_one_used_in_a_function_does_not() -> None:
    source = "import re\nimport os\nPATTERN = re.compile('x')\ndef f():\n    return os.sep\n"
    assert held_lines(source) == ["import re"]
    assert held_lines(source, present=[0, 1, 3]) == []  # PATTERN gone: re is free


def test_a_base_class_waits_for_its_subclasses_and_a_decorator_for_what_it_decorates() -> None:
    source = (
        "class A:\n    pass\n"
        "class B(A):\n    pass\n"
        "def deco(f):\n    return f\n"
        "@deco\ndef g():\n    pass\n"
    )
    assert held_lines(source) == ["class A:", "def deco(f):"]


def test_another_present_binding_frees_both() -> None:
    source = "X = 1\nX = 2\nprint(X)\n"
    assert held_lines(source) == []
    assert held_lines(source, present=[0, 2]) == ["X = 1"]


def test_a_local_waits_for_its_reader_in_the_same_body() -> None:
    source = "def f(a):\n    x = a\n    y = 2\n    return x\n"
    src = PySource.parse(source.encode())
    assert src is not None
    (loc,) = child_locs(src.module.body, ())
    assert held_lines(source, loc=loc) == ["x = a"]


def test_a_parameter_is_another_binding() -> None:
    source = "def f(x):\n    x = x or 0\n    return x\n"
    src = PySource.parse(source.encode())
    assert src is not None
    (loc,) = child_locs(src.module.body, ())
    assert held_lines(source, loc=loc) == []


def test_class_names_are_not_seen_by_methods_but_self_attributes_are() -> None:
    source = (
        "class C:\n"
        "    x = 1\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "    def add(self, v):\n"
        "        self.items.append(v)\n"
        "        return x\n"
        "    def helper(self):\n"
        "        return self.add(1)\n"
    )
    src = PySource.parse(source.encode())
    assert src is not None
    (loc,) = child_locs(src.module.body, ())
    # ``x`` in ``add`` is the module's, not the class's; ``add`` is called through self.
    assert held_lines(source, loc=loc) == ["def __init__(self):", "def add(self, v):"]
    init = child_locs(src.body_at(loc) or [], loc)[0]
    assert held_lines(source, loc=init) == ["self.items = []"]


def test_global_and_nonlocal_declarations_resolve_outward() -> None:
    source = (
        "COUNT = 0\n"
        "def bump():\n    global COUNT\n    COUNT += 1\n"
        "def outer():\n    n = 0\n    def inner():\n        nonlocal n\n        n += 1\n"
        "    return inner\n"
    )
    # ``bump`` binds COUNT too (another binding); nothing at import time reads it.
    assert held_lines(source) == []


def test_names_other_files_load() -> None:
    files = {
        "pkg/__init__.py": b"",
        "pkg/mod.py": b"A = 1\nB = 2\nC = 3\nD = 4\nE = 5\n",
        "pkg/user.py": b"from pkg.mod import A\nfrom . import mod\nprint(mod.B)\n",
        "pkg/sub/__init__.py": b"from ..mod import C as see\n",
        "script.py": b"import pkg.mod as m\nimport pkg.mod\nm.D\npkg.mod.E.real\n",
        "broken.py": b"def (:\n",
    }
    assert loaded_from_elsewhere(files, "pkg/mod.py") == {"A", "B", "C", "D", "E"}
    assert loaded_from_elsewhere(files, "pkg/user.py") == set()
    assert held_lines("A = 1\nB = 2\nZ = 3\n", external=["A", "B"]) == ["A = 1", "B = 2"]


MODULE = """\
import json
import re
import os

SEP = os.sep
WORD = re.compile(r"\\w+")
EXTRA = [SEP, WORD]


class Base:
    kind = "base"


class Loader(Base):
    def __init__(self, text):
        self.text = text
        self.words = WORD.findall(text)
        self.count = len(self.words)

    def load(self):
        return json.loads(self.text)

    def describe(self):
        return f"{self.kind}: {self.count} words"


class Other(Base):
    pass


def main():
    return Loader("{").load()
"""


def fails_like_original(tree: Tree) -> bool:
    namespace: dict[str, Any] = {}
    try:
        exec(compile(tree["m.py"].data, "m.py", "exec"), namespace)
        namespace["main"]()
    except Exception as exc:
        return type(exc).__name__ == "JSONDecodeError"
    return False


def test_holding_saves_runs_and_keeps_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = text_tree({"m.py": MODULE})
    held = reduce_in_process(PythonReduce(), tree, fails_like_original)

    class NoHolds(NameHolds):
        def held(self, present: Any) -> set[int]:
            return set()

    monkeypatch.setattr(python_ast, "NameHolds", NoHolds)
    free = reduce_in_process(PythonReduce(), tree, fails_like_original)
    assert held.current.digest == free.current.digest
    text = held.current["m.py"].data.decode()
    assert "import json" in text and "re.compile" not in text and "class Other" not in text
    assert held.calls < free.calls, (held.calls, free.calls)


def test_a_file_nested_deeper_than_the_walk_is_reduced_without_holds() -> None:
    source = "x = " + " + ".join(["1"] * 1200) + "\nMARK = 1\n"
    src, units = level(source)
    with pytest.raises(RecursionError):
        NameHolds(src, units, ())
    problem = reduce_in_process(
        PythonReduce(), text_tree({"m.py": source}), lambda t: b"MARK" in t["m.py"].data
    )
    assert problem.current["m.py"].data == b"MARK = 1\n"
