"""``report validate`` (and replay, which validates first) refuses a payload whose cheap facts
disagree with the report before it reads a single file.

A payload arrives with the bug report, so it can hold a sparse file of gigabytes that costs no
disk but costs every byte's hashing. The file count, the per-file sizes (``lstat``) and their
total are known from the directory walk alone; when they disagree with ``output`` the payload is
refused (``payload.counts``) and nothing is hashed. An audit hook records every file the process
opens, so "never opened" is observed on the real validator, not inferred from timing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.report.fingerprint import fingerprint
from repomin.report.validate import validate_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"
SPARSE = 1 << 30  # 1 GiB of holes: free on disk, about 3 s of hashing

_opened: list[str] = []
_watching = threading.local()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and getattr(_watching, "on", False) and args and args[0] is not None:
        path = args[0]
        _opened.append(os.fsdecode(path) if isinstance(path, str | bytes) else str(path))


sys.addaudithook(_audit)  # an audit hook cannot be removed; it only records while watching


@contextmanager
def opened_files() -> Iterator[list[str]]:
    _opened.clear()
    _watching.on = True
    try:
        yield _opened
    finally:
        _watching.on = False


def payload_and_report(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A two-file payload and a valid report whose ``output`` describes it exactly."""
    payload = tmp_path / "payload"
    payload.mkdir()
    (payload / "a.txt").write_text("hello\n")
    (payload / "b.txt").write_text("b\n")
    data: dict[str, Any] = json.loads((FIXTURES / "v1.json").read_text())
    fp = fingerprint(payload)
    data["output"].update(
        files=fp.files,
        bytes=fp.bytes,
        tree_sha256=fp.tree_sha256,
        tree_content_sha256=fp.tree_content_sha256,
    )
    data["holdout_certification"] = {"status": "not_requested"}
    assert validate_report(data, payload=payload).payload_fingerprint_mode == "exact"
    return payload, data


def sparse(path: Path, size: int = SPARSE) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


def test_an_extra_sparse_file_is_refused_by_count_without_reading(tmp_path: Path) -> None:
    payload, data = payload_and_report(tmp_path)
    sparse(payload / "huge.bin")
    with opened_files() as opened:
        result = validate_report(data, payload=payload)
    assert result.rules() == {"payload.counts"}  # no fingerprint was computed to mismatch
    assert "3 files" in result.lines()[0]
    assert [p for p in opened if p.startswith(str(payload))] == []


def test_a_file_grown_sparse_is_refused_by_size_without_reading(tmp_path: Path) -> None:
    payload, data = payload_and_report(tmp_path)
    sparse(payload / "b.txt")  # same count, a size no report recorded
    with opened_files() as opened:
        result = validate_report(data, payload=payload)
    assert result.rules() == {"payload.counts"}
    assert f"{SPARSE + 6} bytes" in result.lines()[0]
    assert [p for p in opened if p.startswith(str(payload))] == []


def test_matching_counts_are_still_hashed(tmp_path: Path) -> None:
    """Cheap facts first does not mean cheap facts only: equal sizes get the fingerprint."""
    payload, data = payload_and_report(tmp_path)
    (payload / "b.txt").write_text("c\n")  # same size, other content
    result = validate_report(data, payload=payload)
    assert result.rules() == {"payload.fingerprint"}


@pytest.mark.parametrize("command", ["validate", "replay"])
def test_the_cli_refuses_before_hashing(tmp_path: Path, command: str) -> None:
    payload, data = payload_and_report(tmp_path)
    sparse(payload / "huge.bin")
    report = tmp_path / "r.repomin" / "report.json"
    report.parent.mkdir()
    report.write_text(json.dumps(data))
    extra = ["--yes", "--env", "REPOMIN_FIXTURE_TOKEN=x"] if command == "replay" else []
    with opened_files() as opened:
        result = CliRunner().invoke(
            cli, ["report", command, str(report), "--payload", str(payload), *extra]
        )
    assert result.exit_code == 2, result.output
    assert "payload.counts" in result.stderr
    assert "payload.fingerprint" not in result.stderr
    assert [p for p in opened if p.startswith(str(payload))] == []
