"""End-to-end: a pytest file of 30 tests, one failing; the ``alone`` pass deletes the other 29
in its first candidate, right after the traced run, and the payload still fails in the same test
with the same exception. The same reduction without ``alone`` pays the deletions in ``python``
candidates."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._reduce import reduce_ok, write_tree

COMMAND = f"'{sys.executable}' -m pytest -q -p no:cacheprovider"
MATCH = "mean mismatch"
NODE = "tests/test_ops.py::TestMul::test_mean"
#: A schedule small enough for a test: the trace, the stack, the pass and the statements.
PASSES = ("trace", "stack", "alone", "python")

FILES = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "calc/__init__.py": "",
    "calc/ops.py": (
        "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n\n\n"
        "def mean(values):\n    return sum(values) // len(values)\n"
    ),
    "tests/__init__.py": "",
    "tests/test_ops.py": "import pytest\n\nfrom calc.ops import add, mean, mul\n\n\n"
    + "".join(f"def test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n\n\n" for i in range(14))
    + "class TestMul:\n"
    + "".join(
        f"    def test_mul_{i}(self):\n        assert mul({i}, 2) == {2 * i}\n\n" for i in range(14)
    )
    + "    def test_mean(self):\n        assert mean([1, 2]) == 1.5, 'mean mismatch'\n\n\n"
    "def test_mean_int():\n    assert mean([2, 4]) == 3\n",
}


def _reduce(tmp_path: Path, name: str, passes: tuple[str, ...]) -> tuple[dict[str, Any], Path]:
    src, out = write_tree(tmp_path / f"repo-{name}", FILES), tmp_path / f"min-{name}"
    report = reduce_ok(src, out, COMMAND, MATCH, "-j", "1", "--passes", ",".join(passes))
    return report, out


def _pytest(payload: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    work = payload.parent / f"run-{payload.name}"
    shutil.copytree(payload, work)
    proc = subprocess.run(
        COMMAND, shell=True, cwd=work, capture_output=True, env=env, timeout=60, check=False
    )
    return proc.stdout.decode() + proc.stderr.decode()


@pytest.mark.slow
def test_the_failing_test_alone_is_accepted_first_and_saves_runs(tmp_path: Path) -> None:
    report, out = _reduce(tmp_path, "alone", PASSES)
    proposals = [e for e in report["events"] if e["phase"] not in ("baseline", "trace")]
    assert proposals[0]["phase"] == "alone" and proposals[0]["decision"] == "accepted"
    assert (
        proposals[0]["description"]
        == "delete the other tests of tests/test_ops.py (29 definitions)"
    )
    [alone] = [p for p in report["phase_statistics"]["phases"] if p["name"] == "alone"]
    assert (alone["attempts"], alone["accepted"]) == (1, 1)
    [value] = report["failure_identity"]["facets"]["python"]
    assert (value["test"], value["exception_class"]) == (NODE, "AssertionError")
    output = _pytest(out)
    assert f"FAILED {NODE} - AssertionError: mean mismatch" in output
    assert "1 failed in" in output  # the other 29 are gone
    without, _ = _reduce(tmp_path, "without", tuple(p for p in PASSES if p != "alone"))
    runs, runs_without = (r["execution"]["candidate_runs"] for r in (report, without))
    assert runs < runs_without, (runs, runs_without)
