"""A real library compiled by real ``javac`` and run by ``java``: the ``refs`` pass cuts inside
the files, from the failing stack and from what no code names.

``Format.format`` calls ``Util.check``, which throws; the rest of ``format`` (a ``Helper`` of
another package, a loop) never runs. Through the CLI, with only ``refs`` scheduled: the stack cut
ends ``format`` after the call (``throw null;``), the member cut deletes what nothing names any
more (``Util``'s helpers, ``Format.guarded``), and the file cut then deletes ``Helper.java``,
which only the cut rest named. The payload fails with the same exception at every step.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e._reduce import accepted_descriptions, reduce_ok, write_tree
from tests.unit.test_java_members import FORMAT, HELPER, STACK_DRIVER, UTIL

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("javac") and shutil.which("java")), reason="javac/java not installed"
    ),
]

COMMAND = 'c=$(mktemp -d) && javac -nowarn -d "$c" $(find . -name "*.java") && java -cp "$c" Driver'


def test_the_stack_and_member_cuts_run_in_a_real_reduction(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "lib",
        {
            "src/org/x/Util.java": UTIL,
            "src/org/x/Format.java": FORMAT,
            "src/org/x/help/Helper.java": HELPER,
            "Driver.java": STACK_DRIVER,
        },
    )
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, COMMAND, r"IllegalArgumentException: negative: -1",
        "--passes", "refs", "--no-trace", "--jobs", "1", final_runs=2,
    )  # fmt: skip
    payload = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert payload == ["Driver.java", "src/org/x/Format.java", "src/org/x/Util.java"], json.dumps(
        report["events"], indent=1
    )
    accepted = accepted_descriptions(report, "refs")
    assert any("on the failing stack" in d for d in accepted), accepted
    assert any("Java members nothing names" in d for d in accepted), accepted
    fmt = (out / "src/org/x/Format.java").read_text()
    assert "Util.check(millis); throw null;" in fmt and "guarded" not in fmt
    util = (out / "src/org/x/Util.java").read_text()
    assert "helper" not in util and "class Token" not in util and "check(long value)" in util
