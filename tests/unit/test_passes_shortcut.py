"""The ``shortcut`` pass and the module-level frames it reads (in-process predicates, and one
real Node or Python run each where the interpreter is there)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repomin.analysis.loadframes import in_tree, module_frames
from repomin.passes.shortcut import LoadShortcut, entries, loader
from repomin.passes.trace import TraceCut
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

NODE_STACK = """\
fs.js:44
} = primordials;
    ^

ReferenceError: primordials is not defined
    at fs.js:44:5
    at req_ (/tmp/s1/w/node_modules/natives/index.js:143:24)
    at Object.req [as require] (/tmp/s1/w/node_modules/natives/index.js:55:10)
    at Object.<anonymous> (/tmp/s1/w/node_modules/graceful-fs/fs.js:1:37)
    at Module._compile (node:internal/modules/cjs/loader:1521:14)
    at Object.<anonymous> (/tmp/s1/w/node_modules/graceful-fs/graceful-fs.js:3:10)
    at Object.<anonymous> (/usr/lib/node_modules/npm/index.js:1:1)
"""

PY_TRACEBACK = """\
Traceback (most recent call last):
  File "/tmp/s2/w/route.py", line 1, in <module>
    import networkx
  File "/tmp/s2/w/networkx/__init__.py", line 3, in <module>
    from networkx.classes import Graph
  File "/elsewhere/copy/networkx/classes/graph.py", line 1, in <module>
    from collections import Mapping
  File "/usr/lib/python3.11/collections/__init__.py", line 9, in helper
ImportError: cannot import name 'Mapping' from 'collections'
"""

GULP = {
    "node_modules/gulp/bin/gulp.js": "var liftoff = require('liftoff');\n" * 20,
    "node_modules/graceful-fs/fs.js": "require('natives').require('fs', [])\n",
    "node_modules/graceful-fs/graceful-fs.js": "var fs = require('./fs.js')\n",
    "node_modules/natives/index.js": "exports.require = function () {}\n",
}


def test_node_module_level_frames_innermost_first_in_the_tree_only() -> None:
    tree = text_tree(GULP)
    assert module_frames(NODE_STACK, "/tmp/s1/w", tree) == [
        "node_modules/graceful-fs/fs.js",
        "node_modules/graceful-fs/graceful-fs.js",
    ]  # not natives (its frames are functions), not npm's own file outside the tree


def test_python_module_level_frames_innermost_first_by_suffix_outside_the_workdir() -> None:
    tree = text_tree(
        {
            "route.py": "import networkx\n",
            "networkx/__init__.py": "from networkx.classes import Graph\n",
            "networkx/classes/graph.py": "from collections import Mapping\n",
        }
    )
    assert module_frames(PY_TRACEBACK, "/tmp/s2/w", tree) == [
        "networkx/classes/graph.py",
        "networkx/__init__.py",
        "route.py",
    ]
    assert in_tree("/tmp/s2/w/missing.py", "/tmp/s2/w", tree) is None


def test_entries_are_the_script_files_the_command_names() -> None:
    tree = text_tree({"app.js": "x", "tests/testhelpers.py": "x", "data.txt": "x"})
    assert entries("node app.js --port 3", tree) == ["app.js"]
    assert entries("python -m unittest tests.testhelpers", tree) == ["tests/testhelpers.py"]
    assert entries("cat data.txt", tree) == []


def test_loaders_name_the_module_from_the_entry() -> None:
    assert (
        loader("node_modules/gulp/bin/gulp.js", "node_modules/graceful-fs/fs.js")
        == b'require("../../graceful-fs/fs.js");\n'
    )
    assert loader("app.js", "lib/x.cjs") == b'require("./lib/x.cjs");\n'
    assert loader("route.py", "networkx/classes/graph.py") == b"import networkx.classes.graph\n"
    assert loader("tools/run.py", "tools/pkg/__init__.py") == b"import pkg\n"
    assert loader("tests/t.py", "mock.py") == b"import mock\n"
    assert loader("app.js", "lib/x.py") is None
    assert loader("app.js", "app.js") is None
    assert loader("run.py", "my-pkg/x.py") is None


def _loads_fs(tree: Tree) -> bool:
    """gulp's shape: the failure needs graceful-fs/fs.js loaded by the entry, directly or
    through the liftoff chain (the entry's original content)."""
    entry = tree.entries.get("node_modules/gulp/bin/gulp.js")
    if entry is None or "node_modules/graceful-fs/fs.js" not in tree:
        return False
    return b"liftoff" in entry.data or b'require("../../graceful-fs/fs.js")' in entry.data


def test_the_innermost_loadable_module_replaces_the_entry_and_the_cuts_follow() -> None:
    problem = PredicateProblem(text_tree(GULP), _loads_fs)
    shortcut = LoadShortcut("node node_modules/gulp/bin/gulp.js build", [(NODE_STACK, "/tmp/s1/w")])
    ran: list[str] = []

    class Cut:
        name = "refs"

        def run(self, problem: object) -> None:
            ran.append("refs")

    shortcut.bind({"refs": Cut(), "trace": TraceCut(None)})
    shortcut.run(problem)
    assert problem.current["node_modules/gulp/bin/gulp.js"].data == (
        b'require("../../graceful-fs/fs.js");\n'
    )
    assert problem.accepted == [
        (
            "shortcut",
            "load node_modules/graceful-fs/fs.js straight from node_modules/gulp/bin/gulp.js",
        )
    ]
    assert ran == ["refs"]  # a trace cut that never ran (no trace) is not re-traced
    calls = problem.calls
    shortcut.run(problem)
    assert problem.calls == calls  # once per reduction


def test_nothing_is_proposed_without_module_frames_or_for_a_protected_entry() -> None:
    runtime_error = (
        "TypeError: x is not a function\n    at lex (/tmp/w/node_modules/pug-lexer/index.js:9:3)\n"
    )
    problem = PredicateProblem(text_tree(GULP), lambda t: True)
    LoadShortcut("node node_modules/gulp/bin/gulp.js", [(runtime_error, "/tmp/w")]).run(problem)
    assert problem.calls == 0
    guarded = PredicateProblem(text_tree(GULP), lambda t: True, protected=lambda p: True)
    LoadShortcut("node node_modules/gulp/bin/gulp.js", [(NODE_STACK, "/tmp/s1/w")]).run(guarded)
    assert guarded.calls == 0


def _real_stack(tmp_path: Path, files: dict[str, str], argv: list[str]) -> str:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    return proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")
def test_a_real_node_stack_names_the_module_whose_top_level_failed(tmp_path: Path) -> None:
    files = {
        "main.js": (
            "function launch(cb) { cb(); }\nlaunch(function () { require('./lib/a.js'); });\n"
        ),
        "lib/a.js": "require('./b.js');\n",
        "lib/b.js": "undefinedThing.call();\n",
    }
    output = _real_stack(tmp_path, files, ["node", "main.js"])
    tree = text_tree(files)
    assert module_frames(output, str(tmp_path), tree)[:2] == ["lib/b.js", "lib/a.js"]


def test_a_real_python_traceback_names_the_module_whose_top_level_failed(tmp_path: Path) -> None:
    files = {
        "run.py": "def main():\n    import pkg.mod\nmain()\n",
        "pkg/__init__.py": "",
        "pkg/mod.py": "from collections import Mapping\n",
    }
    output = _real_stack(tmp_path, files, [sys.executable, "run.py"])
    tree = text_tree(files)
    assert module_frames(output, str(tmp_path), tree) == ["pkg/mod.py", "run.py"]
    assert loader("run.py", "pkg/mod.py") == b"import pkg.mod\n"
