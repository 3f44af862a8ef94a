"""``--payload``: safe entries, counts, and the complete/content fingerprints of the payload.

A real stored report (``tests/fixtures/reports/v1.json``) is pointed at a payload built in
``tmp_path`` by rewriting its ``output`` counts and fingerprints with what
:func:`repomin.report.fingerprint.fingerprint` computes, exactly as the exporter records them.
"""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from repomin.cli.main import cli
from repomin.report.fingerprint import fingerprint
from repomin.report.payload import scan_payload
from repomin.report.validate import validate_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reports"


def make_payload(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "main.txt").write_text("FATAL: widget overflow\n")
    (root / "sub" / "run.sh").write_text("echo hi\n")
    (root / "sub" / "run.sh").chmod(0o755)
    (root / "link").symlink_to("sub/run.sh")
    (root / "up").symlink_to("sub/..")
    return root


def report_for(payload: Path, base: str = "v1.json", *, legacy: bool = False) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((FIXTURES / base).read_text())
    fp = fingerprint(payload)
    report["output"].update(files=fp.files, bytes=fp.bytes)
    if not legacy:
        report["output"].update(
            tree_sha256=fp.tree_sha256, tree_content_sha256=fp.tree_content_sha256
        )
        hold = report.get("holdout_certification", {})
        if "artifact_tree_sha256" in hold:
            hold.update(
                artifact_tree_sha256=fp.tree_sha256,
                artifact_tree_content_sha256=fp.tree_content_sha256,
            )
    return report


def write_report(tmp_path: Path, report: dict[str, Any]) -> Path:
    side = tmp_path / "out.repomin"
    side.mkdir(exist_ok=True)
    path = side / "report.json"
    path.write_text(json.dumps(report))
    return path


def validate(report: Path, payload: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        cli, ["report", "validate", str(report), "--payload", str(payload), *extra]
    )


@pytest.fixture
def payload(tmp_path: Path) -> Path:
    return make_payload(tmp_path / "out")


@pytest.fixture
def report(tmp_path: Path, payload: Path) -> Path:
    return write_report(tmp_path, report_for(payload))


def test_untouched_payload_is_an_exact_match(report: Path, payload: Path) -> None:
    result = validate(report, payload, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["payload_fingerprint_mode"] == "exact"
    assert summary["payload_fingerprint_verified"] is True
    assert summary["payload_path"] == str(payload.resolve())


def test_one_changed_byte_is_a_mismatch(report: Path, payload: Path) -> None:
    target = payload / "main.txt"
    st = target.stat()
    target.write_text("FATAL: widget overfloW\n")  # same size
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    result = validate(report, payload)
    assert result.exit_code == 2
    assert (
        "repomin: error: payload.fingerprint: payload fingerprint mismatch: neither "
        "tree-sha256-v1 nor tree-content-sha256-v1 matches" in result.stderr
    )
    assert "payload.counts" not in result.stderr


def test_one_mode_bit_falls_back_to_content(report: Path, payload: Path) -> None:
    target = payload / "sub" / "run.sh"
    target.chmod(stat.S_IMODE(target.stat().st_mode) ^ stat.S_IXOTH)
    result = validate(report, payload)
    assert result.exit_code == 0, result.output
    assert "content-only match" in result.stdout
    summary = json.loads(validate(report, payload, "--json").stdout)
    assert summary["payload_fingerprint_mode"] == "content"
    assert summary["payload_fingerprint_verified"] is True


def test_one_mtime_falls_back_to_content(report: Path, payload: Path) -> None:
    target = payload / "main.txt"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    data = json.loads(report.read_text())
    result = validate_report(data, payload=payload)
    assert result.valid
    assert result.payload_fingerprint_mode == "content"


def test_symlink_mtime_is_in_the_complete_fingerprint(report: Path, payload: Path) -> None:
    link = payload / "link"
    st = link.lstat()
    os.utime(link, ns=(st.st_atime_ns, st.st_mtime_ns + 1000), follow_symlinks=False)
    result = validate_report(json.loads(report.read_text()), payload=payload)
    assert result.payload_fingerprint_mode == "content"


def test_metadata_and_content_change_is_a_mismatch(report: Path, payload: Path) -> None:
    (payload / "sub" / "run.sh").write_text("echo HI\n")
    (payload / "sub" / "run.sh").chmod(0o700)
    result = validate_report(json.loads(report.read_text()), payload=payload)
    assert result.rules() == {"payload.fingerprint"}
    assert result.payload_fingerprint_mode is None
    assert result.payload_fingerprint_verified is False


def test_extra_file_is_size_drift(report: Path, payload: Path) -> None:
    (payload / "extra.txt").write_text("12345")
    result = validate(report, payload)
    assert result.exit_code == 2
    assert (
        "payload.counts: size drift: the payload has 5 files / 36 bytes, the report says "
        "4 files / 31 bytes" in result.stderr
    )
    assert "payload.fingerprint" not in result.stderr  # refused before any file is hashed


def test_copy_of_the_report_into_the_payload_is_drift(report: Path, payload: Path) -> None:
    (payload / "report.json").write_bytes(report.read_bytes())
    result = validate(report, payload)
    assert result.exit_code == 2
    assert "payload.counts: size drift" in result.stderr


def test_legacy_report_gets_count_only_validation(tmp_path: Path, payload: Path) -> None:
    path = write_report(tmp_path, report_for(payload, "legacy.json", legacy=True))
    summary = json.loads(validate(path, payload, "--json").stdout)
    assert summary["valid"] is True
    assert summary["payload_fingerprint_mode"] == "unavailable"
    assert summary["payload_fingerprint_verified"] is False
    (payload / "main.txt").write_text("something else entirely\n")
    result = validate(path, payload)
    assert result.exit_code == 2
    assert "payload.counts: size drift" in result.stderr


def test_legacy_report_with_a_holdout_fingerprint_uses_it(tmp_path: Path, payload: Path) -> None:
    report = report_for(payload)
    for key in list(report["output"]):
        if key not in ("files", "bytes"):
            del report["output"][key]
    result = validate_report(report, payload=payload)
    assert result.valid, result.lines()
    assert result.payload_fingerprint_mode == "exact"


def test_markdown_shows_the_fingerprint_status(report: Path, payload: Path) -> None:
    result = validate(report, payload, "--format", "markdown")
    assert result.exit_code == 0
    assert "| Payload fingerprint verified | yes |" in result.stdout
    assert "| Payload fingerprint mode | exact |" in result.stdout


def test_missing_payload(report: Path, tmp_path: Path) -> None:
    result = validate(report, tmp_path / "absent")
    assert result.exit_code == 2
    assert "payload.missing: payload " in result.stderr


def test_report_inside_the_payload_is_refused(tmp_path: Path, payload: Path) -> None:
    inside = payload / "report.json"
    inside.write_text(json.dumps(report_for(payload)))
    result = validate(inside, payload)
    assert result.exit_code == 2
    assert "payload.sidecar: the report lies inside the payload" in result.stderr


UNSAFE_LINKS = [
    ("absolute", "/etc/passwd", "absolute path"),
    ("escaping", "../outside", "points outside the payload"),
    ("deep-escape", "sub/../../outside", "points outside the payload"),
]


@pytest.mark.parametrize(("name", "target", "reason"), UNSAFE_LINKS)
def test_unsafe_symlinks(report: Path, payload: Path, name: str, target: str, reason: str) -> None:
    (payload / name).symlink_to(target)
    result = validate(report, payload)
    assert result.exit_code == 2
    assert f"payload.unsafe: '{name}': " in result.stderr
    assert reason in result.stderr


def test_symlink_escape_through_another_link_is_caught(payload: Path) -> None:
    # Lexically "here/.." is the root, but "here" is the root itself, so it resolves above it.
    (payload / "here").symlink_to(".")
    (payload / "sneaky").symlink_to("here/..")
    scan = scan_payload(payload)
    assert scan.unsafe == ("'sneaky': symlink to 'here/..' points outside the payload",)


def test_chained_escape_and_loops(payload: Path) -> None:
    (payload / "sub" / "hop").symlink_to("../..")
    (payload / "via").symlink_to("sub/hop/x")
    (payload / "loop1").symlink_to("loop2")
    (payload / "loop2").symlink_to("loop1")
    unsafe = "\n".join(scan_payload(payload).unsafe)
    assert "'sub/hop': symlink to '../..' points outside the payload" in unsafe
    assert "'via': symlink to 'sub/hop/x' points outside the payload" in unsafe
    assert "'loop1': symlink loop" in unsafe


def test_links_that_stay_inside_are_fine(payload: Path) -> None:
    (payload / "sub" / "back").symlink_to("../main.txt")
    (payload / "dangling").symlink_to("sub/not-there/../x")
    assert scan_payload(payload).unsafe == ()


def test_fifo_is_unsafe(report: Path, payload: Path) -> None:
    os.mkfifo(payload / "pipe")
    result = validate(report, payload)
    assert result.exit_code == 2
    assert "payload.unsafe: 'pipe': FIFO (not a file or link)" in result.stderr
    assert "payload.fingerprint" not in result.stderr  # a refused tree is never hashed


def test_socket_is_unsafe(report: Path, payload: Path) -> None:
    path = payload / "s"
    if len(os.fsencode(path)) > 100:
        pytest.skip("tmp path too long for an AF_UNIX socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
        result = validate(report, payload)
    assert result.exit_code == 2
    assert "payload.unsafe: 's': socket" in result.stderr


def test_device_file_is_unsafe(payload: Path) -> None:
    try:
        os.mknod(payload / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating device files needs CAP_MKNOD")
    assert scan_payload(payload).unsafe == ("'null': device file (not a file or link)",)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (b"new\nline", "control or format character U+000A"),
        (b"esc\x1b[31m", "control or format character U+001B"),
        ("rtl\u202etxt.sh".encode(), "control or format character U+202E"),
        (b"bad\xffutf8", "not valid UTF-8"),
    ],
)
def test_hard_to_read_names(report: Path, payload: Path, name: bytes, reason: str) -> None:
    with open(os.path.join(os.fsencode(payload), name), "wb") as fh:
        fh.write(b"x")
    result = validate(report, payload)
    assert result.exit_code == 2
    line = next(x for x in result.stderr.splitlines() if "payload.unsafe" in x)
    assert f"hard-to-read name ({reason})" in line
    assert "\x1b" not in result.stderr and "\n" not in line


def test_many_unsafe_entries_are_summarised(payload: Path) -> None:
    for i in range(25):
        (payload / f"abs{i:02d}").symlink_to(f"/tmp/x{i}")
    data = report_for(payload)
    result = validate_report(data, payload=payload)
    unsafe = [p for p in result.problems if p.rule == "payload.unsafe"]
    assert len(unsafe) == 21
    assert unsafe[-1].message == "... and 5 more entries"


def test_counts_match_the_fingerprint(payload: Path) -> None:
    (payload / "empty-dir").mkdir()
    scan, fp = scan_payload(payload), fingerprint(payload)
    assert (scan.files, scan.bytes) == (fp.files, fp.bytes) == (4, 31)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(report: Path, payload: Path) -> None:
    (payload / "main.txt").chmod(0)
    result = validate(report, payload)
    assert result.exit_code == 2
    assert "payload.unreadable: cannot read 'main.txt'" in result.stderr
