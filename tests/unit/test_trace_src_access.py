"""The traced run's log names the first access under SRC's absolute path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repomin.analysis.trace import first_access_under, trace_opened_files
from repomin.runners import sandbox
from repomin.runners.host import HostRunner
from repomin.tree import Entry, Tree

LOG = [
    b'12 execve("/bin/sh", ["/bin/sh", "-c", "cat /src/argv-only"], 0x7ff /* 6 vars */) = 0',
    b'12 openat(AT_FDCWD</work>, "data.txt", O_RDONLY) = 3</work/data.txt>',
    b'[pid 13] newfstatat(AT_FDCWD</work>, "../src/../src/a.txt", 0x7f, 0) = -1 ENOENT',
    b'13 openat(AT_FDCWD</work>, "/src/b.txt", O_RDONLY) = 3</src/b.txt>',
]


def test_first_access_in_log_order_ignores_argv_strings() -> None:
    assert first_access_under(LOG, ["/src"]) == "/src/a.txt"
    assert first_access_under(LOG[:2] + LOG[3:], ["/src"]) == "/src/b.txt"
    assert first_access_under(LOG[:2], ["/src"]) is None
    assert first_access_under(LOG, ["/sr"]) is None, "a prefix of a name is not a parent"


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(
            "namespace",
            marks=pytest.mark.skipif(sandbox.bwrap_problem() is not None, reason="no bwrap"),
        ),
        "supervisor",
    ],
)
def test_traced_run_reports_the_source_access(tmp_path: Path, mode: str) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "helper.txt").write_text("helper\n")
    (tmp_path / "base").mkdir()
    runner = HostRunner(base_dir=tmp_path / "base", source=src, isolation=mode)
    tree = Tree.of({"a.txt": Entry("file", b"a\n", text=True)})
    try:
        command = f"cat a.txt; cat {src}/helper.txt; exit 1"
        result = trace_opened_files(runner, tree, command, {}, 10, forbidden=[str(src)])
        if result.method != "strace":
            pytest.skip(f"strace cannot trace here: {result.reason}")
        assert result.forbidden_access == str(src / "helper.txt")
        assert result.opened is not None and "a.txt" in result.opened
        clean = trace_opened_files(runner, tree, "cat a.txt", {}, 10, forbidden=[str(src)])
        assert clean.forbidden_access is None
    finally:
        runner.close()
