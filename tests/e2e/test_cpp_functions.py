"""A real C++ program compiled by ``g++ -Wall -Werror``, refused for one unused variable:
through the CLI, the ``refs`` pass deletes the member functions and the free function nothing
the program reaches names, in one compile, and the payload is refused with the same
diagnostic."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e._reduce import accepted_descriptions, reduce_ok, write_tree
from tests.unit.test_cpp_functions import _PROGRAM

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which("g++"), reason="g++ not installed"),
]


def test_the_cpp_function_cut_runs_in_a_real_reduction(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "prog", dict(_PROGRAM))
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, "g++ -Wall -Werror -c main.cpp -o main.o",
        r"error: unused variable .unused_local. \[-Werror=unused-variable\]",
        "--exit-code", "1", "--passes", "refs", "--no-trace", "--jobs", "1", final_runs=2,
    )  # fmt: skip
    accepted = accepted_descriptions(report, "refs")
    assert any("C and C++ functions and variables nothing names" in d for d in accepted), accepted
    header = (out / "shapes.hpp").read_text()
    for gone in ("perimeter", "scale", "mirror", "clear", "unused_free_function"):
        assert gone not in header, gone
    for kept in ("Polygon()", "void add", "int area"):
        assert kept in header, kept
