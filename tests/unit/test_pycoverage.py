"""Which Python functions the traced run called: the start-up hook on real interpreters, the
records read as hostile input, never-run bodies, and the ``coverage`` pass emptying them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from repomin.analysis.pycoverage import (
    FILL,
    LINE_BUDGET,
    PYCOV_DIR,
    install,
    never_run_bodies,
    read_pycoverage,
)
from repomin.analysis.trace import trace_opened_files, with_python_hook, wrapper_script
from repomin.passes.coverage import CoverageCut
from repomin.passes.hints import SearchHints
from repomin.passes.pyimports import NameSites
from repomin.passes.textedit import splice
from repomin.runners.host import HostRunner
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree

LIB = '''\
import functools


def used(x):
    return helper(x) + 1


def helper(x):
    return x * 2


def unused(x):
    """Never called."""
    for i in range(x):
        print(i)
    return x


@functools.lru_cache
def decorated_unused(x):
    return x


class Thing:
    def called(self):
        def inner_never():
            return 3

        return 1

    def never(self):
        return {"a": 1, "b": [1, 2, 3]}

    async def never_async(self):
        await self.never()

    def one_line(self): return 42
'''

APP = "import lib\n\nprint(lib.used(2), lib.Thing().called())\nraise SystemExit(lib.undefined)\n"


def bodies(data: str, started: set[int]) -> list[str]:
    spans = never_run_bodies(data.encode(), started) or []
    return [data.encode()[s:e].decode() for s, e in spans]


def test_never_run_bodies_are_the_outermost_bodies_of_functions_that_never_started() -> None:
    # lines where each def's code object starts (decorated: the decorator's line)
    started = {4, 8, 25}  # used, helper, Thing.called
    found = bodies(LIB, started)
    assert found[0].startswith('"""Never called."""') and found[0].endswith("return x")
    assert "return x" in found[1]  # decorated_unused, keyed by its decorator's line
    assert "return 3" in found  # a nested function of a function that ran
    assert 'return {"a": 1, "b": [1, 2, 3]}' in found
    assert "await self.never()" in found
    assert "return 42" in found  # a body on the def's own line
    assert not any("helper(x) + 1" in b or "x * 2" in b for b in found)
    assert bodies(LIB, {4, 8, 19, 25}).count("return x") == 0  # decorated_unused started
    assert bodies(LIB, {4, 8, 20, 25}).count("return x") == 1  # its def line is not the key


def test_a_body_that_is_already_the_fill_is_no_unit_and_bad_python_is_no_answer() -> None:
    assert bodies("def f():\n    ...\n", set()) == []
    assert never_run_bodies(b"def f(:\n", set()) is None
    assert never_run_bodies(b"\xff\xfe\x00", set()) is None


def _run_hook(tmp: Path, script: str, env_path: str, python: str = sys.executable) -> None:
    hook = tmp / "log" / PYCOV_DIR
    hook.parent.mkdir(exist_ok=True)
    install(hook)
    (tmp / "proj").mkdir(exist_ok=True)
    (tmp / "proj" / "main.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = env_path.replace("HOOK", str(hook))
    subprocess.run([python, "main.py"], cwd=tmp / "proj", env=env, check=False, timeout=60)


def test_the_hook_records_started_code_and_leaves_sys_path_as_it_was(tmp_path: Path) -> None:
    script = (
        "import sys, json\n"
        "def f():\n    return 1\n"
        "def g():\n    return 2\n"
        "f()\n"
        "print(json.dumps([p for p in sys.path if 'pycov' in p]))\n"
    )
    _run_hook(tmp_path, script, "HOOK")
    records = list((tmp_path / "log" / PYCOV_DIR).glob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    lines = record["files"][str(tmp_path / "proj" / "main.py")]
    assert 0 in lines and 2 in lines and 4 not in lines
    assert record["cwd"] == str(tmp_path / "proj")


def test_the_shadowed_sitecustomize_still_runs(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    script = "import builtins, sys\nprint(getattr(builtins, 'SHADOWED_RAN', False))\n"
    script += "open('out', 'w').write(str(getattr(builtins, 'SHADOWED_RAN', False)))\n"
    _run_hook(tmp_path, script, f"HOOK:{other}")
    assert (tmp_path / "proj" / "out").read_text() == "True"
    assert list((tmp_path / "log" / PYCOV_DIR).glob("*.json"))


def _other_pythons() -> list[str]:
    root = Path.home() / ".pyenv" / "versions"
    found = sorted(str(p / "bin" / "python3") for p in root.glob("3.1[2-9]*"))
    return [p for p in found if os.access(p, os.X_OK)][:1]


@pytest.mark.skipif(not _other_pythons(), reason="no Python 3.12+ (sys.monitoring) installed")
def test_the_hook_uses_sys_monitoring_where_there_is_one(tmp_path: Path) -> None:
    script = "def f():\n    return 1\ndef g():\n    return 2\nfor _ in range(3):\n    f()\n"
    _run_hook(tmp_path, script, "HOOK", python=_other_pythons()[0])
    (record,) = (tmp_path / "log" / PYCOV_DIR).glob("*.json")
    lines = json.loads(record.read_text())["files"][str(tmp_path / "proj" / "main.py")]
    assert sorted(lines) == [0, 1]


def test_records_are_hostile_input(tmp_path: Path) -> None:
    tree = text_tree({"lib.py": LIB, "data.txt": "x"})
    directory = tmp_path / PYCOV_DIR
    directory.mkdir()
    root = "/sample/tree"
    good = {"cwd": root, "files": {f"{root}/lib.py": [0, 4, 8, 25], "lib.py": [19]}}
    (directory / "a.json").write_text(json.dumps(good))
    (directory / "b.json").write_text("{not json")
    (directory / "c.json").write_text(json.dumps({"files": {f"{root}/lib.py": ["x", True]}}))
    (directory / "d.json").write_text(json.dumps({"files": {f"{root}/data.txt": [0]}}))
    (directory / "e.json").write_text(json.dumps({"files": {"/etc/passwd": [0]}}))
    (directory / "f.json").write_text(json.dumps([1, 2]))
    os.symlink("/etc/hostname", directory / "g.json")
    coverage = read_pycoverage(directory, [root], tree)
    assert coverage is not None and set(coverage) == {"lib.py"}
    texts = [LIB.encode()[s:e] for s, e, _ in coverage["lib.py"].never]
    assert not any(b"x * 2" in t for t in texts)  # helper started (line 8)
    assert b"return x" not in texts  # decorated_unused: a relative name, resolved by cwd
    assert sum(b"Never called" in t for t in texts) == 1  # unused never started
    assert read_pycoverage(tmp_path / "missing", [root], tree) is None


def test_a_file_whose_module_code_never_ran_is_not_covered(tmp_path: Path) -> None:
    tree = text_tree({"lib.py": LIB})
    directory = tmp_path / PYCOV_DIR
    directory.mkdir()
    (directory / "a.json").write_text(json.dumps({"files": {"/r/lib.py": [4]}}))
    assert read_pycoverage(directory, ["/r"], tree) == {}


def test_the_commands_own_pythonpath_keeps_the_hook_in_front() -> None:
    sink = "/tmp/repomin-trace-1-abc"
    hook = f"{sink}/{PYCOV_DIR}"
    assert with_python_hook("PYTHONPATH=src python -m pytest", sink) == (
        f"PYTHONPATH={hook}:src python -m pytest"
    )
    assert with_python_hook("cd a && env PYTHONPATH='x y' py t.py", sink) == (
        f"cd a && env PYTHONPATH={hook}:'x y' py t.py"
    )
    assert with_python_hook("PYTHONPATH= python t.py", sink) == "PYTHONPATH= python t.py"
    assert with_python_hook("MYPYTHONPATH=x python", sink) == "MYPYTHONPATH=x python"
    assert with_python_hook("PYTHONPATH=x py", "/tmp/a b") == "PYTHONPATH=x py"
    script = wrapper_script("PYTHONPATH=src py", sink, "tok", ("strace",))
    assert f'export PYTHONPATH="$__rm_d/{PYCOV_DIR}${{PYTHONPATH:+:$PYTHONPATH}}"' in script
    assert f"PYTHONPATH={hook}:src py" in script
    assert "PYCOV" not in wrapper_script("py", None, "tok", ("strace",)).upper()


def _trace(tree: Tree, command: str) -> object:
    runner = HostRunner()
    try:
        return trace_opened_files(runner, tree, command, {}, 60, methods=("atime",))
    finally:
        runner.close()


def test_the_traced_run_collects_python_coverage_on_the_host() -> None:
    tree = text_tree({"src/lib.py": LIB, "main.py": APP})
    py = sys.executable
    trace = _trace(tree, f"PYTHONPATH=src {py} main.py")
    coverage = getattr(trace, "coverage", None)
    assert coverage is not None and "src/lib.py" in coverage, getattr(trace, "reason", "")
    assert "main.py" in coverage
    texts = [LIB.encode()[s:e] for s, e, _ in coverage["src/lib.py"].never]
    assert any(b"Never called" in t for t in texts)
    assert not any(b"x * 2" in t for t in texts)


def _cut(lib: str, app: str) -> tuple[PredicateProblem, Callable[[Tree], bool]]:
    """The coverage pass run on ``src/lib.py`` + ``main.py`` after a real traced run; the
    predicate is the real failure (``AttributeError`` of ``lib.undefined``) in a fresh copy."""
    tree = text_tree({"src/lib.py": lib, "main.py": app})
    py = sys.executable
    trace = _trace(tree, f"PYTHONPATH=src {py} main.py")

    def fails(candidate: Tree) -> bool:
        with tempfile.TemporaryDirectory() as root:
            materialise(candidate, Path(root))
            env = {**os.environ, "PYTHONPATH": "src"}
            run = subprocess.run([py, "main.py"], cwd=root, capture_output=True, env=env)
        return b"AttributeError: module 'lib' has no attribute 'undefined'" in run.stderr

    assert fails(tree)
    problem = PredicateProblem(tree, fails)
    CoverageCut(SearchHints(trace=trace)).run(problem)  # type: ignore[arg-type]
    return problem, fails


def test_the_pass_empties_never_run_python_bodies_then_deletes_them_and_keeps_the_failure() -> None:
    problem, _ = _cut(LIB, APP)
    assert problem.calls == 2  # emptied, then deleted whole, each in one candidate
    data = problem.current["src/lib.py"].data
    assert b"Never called" not in data and b"return 42" not in data and b"[1, 2, 3]" not in data
    assert b"x * 2" in data and FILL not in data
    for gone in (b"def unused", b"decorated_unused", b"lru_cache", b"inner_never", b"async def"):
        assert gone not in data
    assert b"def called" in data and b"def helper" in data
    compile(data, "lib.py", "exec")


def test_never_run_functions_still_named_stay_stubs_and_an_emptied_class_keeps_pass() -> None:
    lib = (
        "def used(x):\n    return x\n\n\n"
        "def named(x):\n    return x + 1\n\n\n"
        "def other(x):\n    return x + 2\n\n\n"
        "class Empty:\n    def a(self):\n        return 1\n\n"
        "    def b(self):\n        return 2\n\n\n"
        "class P:\n    def _get(self):\n        return 1\n\n    value = property(_get)\n\n\n"
        "TABLE = {'n': named}\n"
    )
    problem, fails = _cut(lib, APP.replace("lib.Thing().called()", "1"))
    data = problem.current["src/lib.py"].data
    assert problem.calls == 2  # emptied, then deleted: only what nothing names was proposed
    assert b"def named(x):\n    ...\n" in data  # deleting it is a NameError: another failure
    assert b"    def _get(self):\n        ...\n" in data  # named bare by property(_get)
    assert b"def other" not in data and b"def a" not in data and b"def b" not in data
    assert b"class Empty:\n    pass\n" in data
    assert fails(problem.current)


def test_a_never_run_function_only_imported_goes_with_its_imports_and_its_all_entry() -> None:
    lib = (
        '__all__ = ["used", "stub", "kept"]\n\n\n'
        "def used(x):\n    return x\n\n\n"
        "def stub(x):\n    return x + 1\n\n\n"
        "def kept(x):\n    return x + 2\n\n\n"
        "def dotted(x):\n    return x + 3\n"
    )
    app = (
        "from lib import used, stub\n"
        "from lib import kept\n"
        "import lib\n\n"
        "if lib:\n    from lib import stub\n\n"
        "print(used(2), kept, lib.dotted)\n"
        "raise SystemExit(lib.undefined)\n"
    )
    problem, fails = _cut(lib, app)
    data = problem.current["src/lib.py"].data
    main = problem.current["main.py"].data
    assert problem.calls == 2  # emptied, then the stub deleted with its three sites at once
    assert b"def stub" not in data and b'"stub"' not in data
    assert data.startswith(b'__all__ = ["used", "kept"]\n')
    assert main.startswith(b"from lib import used\nfrom lib import kept\n")
    assert b"if lib:\n    pass\n" in main  # the only statement of its block
    assert b"def kept(x):\n    ...\n" in data  # named bare by main: a stub for later passes
    assert b"def dotted(x):\n    ...\n" in data  # lib.dotted: a module function named dotted
    assert fails(problem.current)


def test_name_sites_drop_names_from_imports_and_all_lists_and_count_only_those() -> None:
    code = (
        b"from a import (f,  # why\n    g)\n"
        b"from b import f as h\n"
        b"from c import *\n"
        b"x = 1; from d import f\n"
        b"__all__ = ('f', 'g', )\n"
        b"def inner():\n    from e import f\n"
    )
    sites = NameSites({"m.py": code}, {"f", "g"}, {"m.py": [(code.index(b"def inner"), len(code))]})
    assert sites.count("f") == 2 and sites.count("g") == 2  # renamed, shared line, skipped: no
    out = splice(code, sites.edits("m.py", {"f"}))
    assert out.startswith(b"from a import g\nfrom b import f as h\n")
    assert b"__all__ = ('g', )\n" in out
    both = splice(code, sites.edits("m.py", {"f", "g"}))
    assert b"from a" not in both and b"__all__ = ( )\n" in both
    compile(both, "m.py", "exec")


BRANCHY = """\
import functools


def run(x):
    if x:
        y = 1
    else:
        y = 2
        y += 1
    if x > 5:
        y = 3
    elif x > 0:
        y = 4
    elif x > -5:
        y = 5
    try:
        y += 1
    except ValueError:
        y = 6
    for _ in range(0):
        y = 7
    else:
        y += 1
    if x: y += 1
    if not x:
        @functools.lru_cache
        def inner():
            return 8
    return y
"""
#: The lines of BRANCHY that run when ``run(1)`` is called.
BRANCHY_RAN = {4, 5, 6, 10, 12, 13, 16, 17, 20, 22, 23, 24, 25, 29}


def test_never_run_blocks_are_the_blocks_of_run_code_none_of_whose_lines_ran() -> None:
    spans = never_run_bodies(BRANCHY.encode(), {0, 4}, BRANCHY_RAN) or []
    texts = [BRANCHY.encode()[s:e].decode() for s, e in spans]
    assert texts == [
        "y = 2\n        y += 1",  # else
        "y = 3",  # the if's body; the elif that ran is no block of its own
        "y = 5",  # the second elif's body
        "y = 6",  # except
        "y = 7",  # a loop body that never ran; its else ran
        "@functools.lru_cache\n        def inner():\n            return 8",
    ]
    only = never_run_bodies(BRANCHY.encode(), {0, 4})  # no lines: functions only
    assert [BRANCHY.encode()[s:e] for s, e in only or []] == [b"return 8"]
    assert never_run_bodies(BRANCHY.encode(), {0}, BRANCHY_RAN) == [
        (BRANCHY.index("if x:\n"), BRANCHY.index("\n", BRANCHY.index("return y")))
    ]  # run never started: its body is one function body, nothing inside it counts


@pytest.mark.parametrize("python", [sys.executable, *_other_pythons()])
def test_the_hook_records_the_lines_that_ran(tmp_path: Path, python: str) -> None:
    script = "def f(x):\n    if x:\n        return 1\n    return 2\n\nf(1)\n"
    _run_hook(tmp_path, script, "HOOK", python=python)
    (record,) = (tmp_path / "log" / PYCOV_DIR).glob("*.json")
    lines = json.loads(record.read_text())["lines"][str(tmp_path / "proj" / "main.py")]
    assert {1, 2, 3, 6} <= set(lines) and 4 not in lines


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring: no line budget")
def test_a_process_out_of_line_budget_records_no_lines_and_no_file_uses_lines(
    tmp_path: Path,
) -> None:
    hook = tmp_path / "log" / PYCOV_DIR
    hook.parent.mkdir()
    install(hook)
    text = (hook / "sitecustomize.py").read_text()
    (hook / "sitecustomize.py").write_text(text.replace(f"[{LINE_BUDGET}]", "[5]"))
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "main.py").write_text("for i in range(10):\n    i += 1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(hook)
    subprocess.run([sys.executable, "main.py"], cwd=tmp_path / "proj", env=env, timeout=60)
    (record,) = hook.glob("*.json")
    assert json.loads(record.read_text())["lines"] is None
    root = str(tmp_path / "proj")
    tree = text_tree({"main.py": BRANCHY})
    full = {"cwd": root, "files": {"main.py": [0, 4]}, "lines": {"main.py": sorted(BRANCHY_RAN)}}
    (hook / "full.json").write_text(json.dumps(full))
    coverage = read_pycoverage(hook, [root], tree)
    assert coverage is not None and len(coverage["main.py"].never) == 1  # inner's body only
    record.unlink()
    coverage = read_pycoverage(hook, [root], tree)
    assert coverage is not None and len(coverage["main.py"].never) == 6


def test_the_pass_empties_never_run_blocks_of_run_functions_and_keeps_the_failure() -> None:
    lib = BRANCHY + "\n\ndef used(x):\n    return run(x)\n"
    problem, fails = _cut(lib, APP.replace("lib.Thing().called()", "1"))
    data = problem.current["src/lib.py"].data.decode()
    for gone in ("y = 2", "y = 3", "y = 5", "y = 6", "y = 7", "return 8"):
        assert gone not in data
    assert "y = 4" in data and "y += 1" in data
    assert fails(problem.current)


def test_line_records_are_hostile_input_too(tmp_path: Path) -> None:
    tree = text_tree({"lib.py": BRANCHY})
    directory = tmp_path / PYCOV_DIR
    directory.mkdir()
    root = "/sample/tree"
    lines = {f"{root}/lib.py": [*sorted(BRANCHY_RAN), "x", True, 2.5], "/etc/passwd": [1]}
    (directory / "a.json").write_text(
        json.dumps({"cwd": root, "files": {"lib.py": [0, 4]}, "lines": lines})
    )
    (directory / "b.json").write_text(json.dumps({"files": {}, "lines": {"lib.py": "1-9"}}))
    coverage = read_pycoverage(directory, [root], tree)
    assert coverage is not None and len(coverage["lib.py"].never) == 6
