"""The tool versions asked through a runner (a Docker image, cluster workers): the probe script
run by the real host runner on an empty tree, and its parser against hostile output."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from repomin.app.versions import (
    OS_KERNEL,
    OS_RELEASE,
    VERSION_LIMIT,
    parse_probe_output,
    probe_through,
)
from repomin.runners.host import HostRunner

MARKERS = {"python3": "m-py", "gcc": "m-gcc", OS_RELEASE: "m-rel", OS_KERNEL: "m-os"}


@pytest.fixture
def runner() -> Iterator[HostRunner]:
    r = HostRunner()
    try:
        yield r
    finally:
        r.close()


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_each_tool_answers_through_the_runner(runner: HostRunner) -> None:
    name = os.path.basename(sys.executable)
    versions = probe_through(runner, f"'{sys.executable}' -m pytest -q && nosuchtool9", {})
    assert versions is not None
    major, minor = sys.version_info[:2]
    assert versions[name].startswith(f"Python {major}.{minor}.")
    assert versions["pytest"].startswith("pytest ")
    uname = os.uname()
    assert uname.sysname in versions["os"] and uname.release in versions["os"]


def test_a_tool_missing_where_the_samples_run_is_simply_absent(runner: HostRunner) -> None:
    versions = probe_through(runner, "gcc -o x x.c && node x.js", {"PATH": "/nonexistent"})
    assert versions is not None and "gcc" not in versions and "node" not in versions


def test_a_tool_cannot_forge_another_tools_line(runner: HostRunner, tmp_path: Path) -> None:
    """A hostile ``gcc`` reads the markers of ``node`` (probed before it) and ``python3``
    (after it) from the script's command line and prints each with a forged version: those
    probes are dropped, never recorded with its text; the others stay."""
    marker = "s/.*command -v %s .*printf '[^']*' \\(repomin-probe-[0-9a-f]*\\).*/\\1/p"
    _tool(
        tmp_path,
        "gcc",
        "for t in node python3; do\n"
        "  m=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n' "
        f'| sed -n "{marker % "$t"}" | head -n 1)\n'
        "  printf '%s\\nForged 6.6.6\\n' \"$m\"\n"
        "done\n",
    )
    _tool(tmp_path, "node", "printf 'v20.0.0\\n'\n")
    path = f"{tmp_path}:{os.environ['PATH']}"
    versions = probe_through(runner, "node a.js && gcc a.c && python3 b.py", {"PATH": path})
    assert versions is not None and "os" in versions
    assert not any("Forged" in v for v in versions.values()), versions
    assert "node" not in versions and "python3" not in versions and "gcc" not in versions
    # without the forger both answer
    clean = probe_through(runner, "node a.js && python3 b.py", {"PATH": path})
    assert clean is not None and clean["node"] == "v20.0.0" and "python3" in clean


def test_output_is_bounded_and_printable(runner: HostRunner, tmp_path: Path) -> None:
    _tool(tmp_path, "node", "head -c 300000 /dev/zero | tr '\\0' 'x'; printf '\\n'\n")
    _tool(tmp_path, "gcc", "printf '\\033[31m\\001gcc\\t(X) 1.0\\033[0m\\377\\n'\n")
    _tool(tmp_path, "cargo", "printf '\\n\\n   \\n'\n")  # nothing printable: absent
    _tool(tmp_path, "make", "echo 'make: unknown option'; exit 2\n")  # failed: absent
    path = f"{tmp_path}:{os.environ['PATH']}"
    versions = probe_through(runner, "node a.js; gcc a.c; cargo b; make", {"PATH": path})
    assert versions is not None
    assert versions["node"] == "x" * VERSION_LIMIT
    assert versions["gcc"] == "gcc (X) 1.0"
    assert "cargo" not in versions and "make" not in versions


def test_a_probe_run_that_fails_gives_no_versions(runner: HostRunner, tmp_path: Path) -> None:
    # kills the probe script's shells: its ancestors running the script, and only those
    _tool(
        tmp_path,
        "make",
        "p=$PPID; while [ \"$p\" -gt 1 ]; do n=$(cut -d' ' -f4 /proc/$p/stat)\n"
        "grep -q repomin-probe-status /proc/$p/cmdline && kill -9 $p; p=$n; done\n",
    )
    path = f"{tmp_path}:{os.environ['PATH']}"
    assert probe_through(runner, "make", {"PATH": path}) is None


def test_the_parser_drops_duplicated_markers_and_binary() -> None:
    out = (
        b"\nm-py\nPython 3.12.1\nm-gcc\n\x00\x01\xff\xfe\n"
        b"gcc 13\nm-os\nLinux 6.1 x86_64\nm-py\nPython 9 (forged)\n"
    )
    assert parse_probe_output(out, MARKERS) == {"gcc": "gcc 13", OS_KERNEL: "Linux 6.1 x86_64"}


def test_the_parser_reads_each_status_once() -> None:
    ok = b"m-py\nPython 3.12.1\nm-py-rc 0\nm-gcc\ngcc: fatal\nm-gcc-rc 1\n"
    assert parse_probe_output(ok, MARKERS) == {"python3": "Python 3.12.1"}
    forged = b"m-py\nm-py-rc 0\nPython 3.12.1\nm-py-rc 1\n"
    assert parse_probe_output(forged, MARKERS) == {}
    head = b"m-py\nPython 3.12.1\nm-py-rc 141\nm-os\nLinux\nm-os-rc\n"
    assert parse_probe_output(head, MARKERS) == {"python3": "Python 3.12.1", "os": "Linux"}


def test_the_parser_is_bounded_for_one_huge_line() -> None:
    out = b"m-gcc\n" + b"y" * (1 << 20) + b"\nm-os\n  Linux\n"
    parsed = parse_probe_output(out, MARKERS)
    assert parsed == {"gcc": "y" * VERSION_LIMIT, OS_KERNEL: "Linux"}
    assert parse_probe_output(b"no markers at all\n" * 10, MARKERS) == {}
    # a marker with more on its line is text, not a marker
    assert parse_probe_output(b"m-py\nm-gcc trailing\n", MARKERS) == {"python3": "m-gcc trailing"}
