"""A real static library built by ``make`` and ``gcc``, and a driver that crashes inside it:
through the CLI, the ``refs`` pass deletes the functions and tables nothing the driver reaches
names, with their prototypes, in one build, and the payload still dies of the same SIGSEGV
after the same line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e._reduce import accepted_descriptions, reduce_ok, write_tree
from tests.unit.test_c_functions import COMMAND, DRIVE_C, LIST_C, MAKEFILE, TEXT_C, TEXT_H

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("gcc") and shutil.which("make") and shutil.which("ar")),
        reason="gcc, make or ar not installed",
    ),
]


def test_the_function_cut_runs_in_a_real_reduction(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "lib",
        {"Makefile": MAKEFILE, "text.h": TEXT_H, "text.c": TEXT_C, "list.c": LIST_C,
         "drive.c": DRIVE_C},
    )  # fmt: skip
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, COMMAND, r"copying the title",
        "--exit-code", "139", "--passes", "refs", "--no-trace", "--jobs", "1", final_runs=2,
    )  # fmt: skip
    accepted = accepted_descriptions(report, "refs")
    assert any("C and C++ functions and variables nothing names" in d for d in accepted), (
        json.dumps(report["events"], indent=1)
    )
    text = (out / "text.c").read_text()
    assert "text_copy" in text and "text_length" in text
    for gone in ("text_upper", "mapped", "text_join", "text_hash", "primes"):
        assert gone not in text and gone not in (out / "text.h").read_text(), gone
    assert "list_total" not in (out / "list.c").read_text()
