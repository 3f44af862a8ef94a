"""ReproMin never writes through a symlink it finds where it writes its outputs.

Another local user who can create entries beside OUTPUT (a shared, sticky directory such as a
common scratch area) may plant a symlink at ``OUTPUT.repomin``, ``OUTPUT`` or the session
directory before the reduction starts, or while it runs (a sample in ``supervisor`` mode can do
the same). Each is refused with exit 2 and one line; the link's target is never written.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import make_repo, reduce_argv

NEEDED = ["f1.txt"]
COMMAND = "grep -q NEEDED f1.txt 2>/dev/null && { echo BUG; exit 1; }; exit 0"


def _reduce(
    src: Path, out: Path, *extra: str, command: str = COMMAND
) -> subprocess.CompletedProcess[str]:
    argv = reduce_argv(
        src, out, command, "BUG", "--jobs", "1", "--baseline-runs", "2", "--final-runs", "2",
        "--passes", "files", "--user-shell-runs", "0", "-q", *extra,
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def _repo(tmp_path: Path) -> Path:
    src = tmp_path / "repo"
    make_repo(src, 6, NEEDED, seed=5)
    return src


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_symlinked_sidecar_is_refused_before_any_run(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    out = tmp_path / "out"
    (tmp_path / "out.repomin").symlink_to(target)
    res = _reduce(src, out, command="echo ran >> " + str(tmp_path / "ran") + "; " + COMMAND)
    assert res.returncode == 2, res.stderr
    line = _one_error_line(res.stderr)
    assert "out.repomin is a symlink" in line and "-o" in line
    assert _listing(target) == []
    assert not (tmp_path / "ran").exists(), "refused at start-up: no sample ran"
    assert not out.exists() and not (tmp_path / "out.repomin-session").exists()


def test_symlinked_output_is_refused_even_with_force(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine\n")
    out = tmp_path / "out"
    out.symlink_to(target)
    res = _reduce(src, out, "--force")
    assert res.returncode == 2, res.stderr
    assert "out is a symlink" in _one_error_line(res.stderr)
    assert _listing(target) == ["keep.txt"] and out.is_symlink()
    assert not (tmp_path / "out.repomin").exists()


def test_symlinked_session_directory_is_refused(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    out = tmp_path / "out"
    (tmp_path / "out.repomin-session").symlink_to(target)
    res = _reduce(src, out)
    assert res.returncode == 2, res.stderr
    line = _one_error_line(res.stderr)
    assert "out.repomin-session is a symlink" in line and "--session" in line
    assert _listing(target) == []
    assert not out.exists() and not (tmp_path / "out.repomin").exists()


def test_sidecar_symlink_planted_during_the_run_is_not_followed(tmp_path: Path) -> None:
    """The link appears after the start-up check (here the command plants it, as another user
    or a sample in supervisor mode could): the report is still never written through it."""
    src = _repo(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    out = tmp_path / "out"
    plant = f"ln -s {target} {tmp_path / 'out.repomin'} 2>/dev/null; "
    res = _reduce(src, out, command=plant + COMMAND)
    assert res.returncode == 2, res.stderr
    assert "out.repomin is a symlink" in _one_error_line(res.stderr)
    assert _listing(target) == []
    assert (tmp_path / "out.repomin").is_symlink()


def test_output_symlink_planted_during_the_run_is_not_followed(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    target = tmp_path / "elsewhere"
    target.mkdir()
    out = tmp_path / "out"
    plant = f"ln -s {target} {out} 2>/dev/null; "
    res = _reduce(src, out, command=plant + COMMAND)
    assert res.returncode == 2, res.stderr
    assert "out is a symlink" in _one_error_line(res.stderr)
    assert _listing(target) == [] and out.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []


def test_sidecar_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    """A real directory someone else made at OUTPUT.repomin would let them read the report."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a directory owned by another user")
    src = _repo(tmp_path)
    side = tmp_path / "out.repomin"
    side.mkdir()
    os.chown(side, 65534, 65534)
    res = _reduce(src, tmp_path / "out")
    assert res.returncode == 2, res.stderr
    assert "owned by another user" in _one_error_line(res.stderr)
    assert _listing(side) == []


def test_ordinary_reduction_still_writes_its_sidecar(tmp_path: Path) -> None:
    src = _repo(tmp_path)
    out = tmp_path / "out"
    (tmp_path / "out.repomin").mkdir()  # an existing sidecar of an earlier run is reused
    res = _reduce(src, out)
    assert res.returncode == 0, res.stderr
    assert _listing(out) == NEEDED
    report = json.loads((tmp_path / "out.repomin" / "report.json").read_text())
    assert report["output"]["files"] == 1
    assert (tmp_path / "out.repomin" / "REPOMIN.md").read_text().strip()
