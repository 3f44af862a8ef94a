"""Before the search, one run in the user's own shell: a failure that only the samples'
environment makes is caught there, not after the whole reduction.

A loose contract (``--exit-code 1``) is satisfied by two different failures: the user's bug in
their own shell, and whatever a fresh empty HOME makes of the command in a sample (a missing
``pip install --user`` package, a missing config file under ``~``). Without the check the
reduction pins the samples' failure, reduces it, and only the your-shell check at the end says
that the payload does not fail in the user's shell (exit 1 after all the work). With it,
``reduce`` stops with exit 2 before any search, naming both failures and ``--home inherit``.

Real tool output throughout: pytest's own report, Python's own tracebacks. ``repomin`` runs as
a subprocess with HOME set to a temporary directory (never the real one).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e._reduce import base_python, write_tree

SMALL = ["--baseline-runs", "3", "--final-runs", "3", "--jobs", "2", "--no-session"]


def _reduce(
    src: Path, out: Path, command: str, home: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "repomin", "reduce", str(src), "-o", str(out)]
    argv += ["--command", command, "--exit-code", "1", *SMALL, *extra]
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


def _payload(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


# -- pytest: a config file under ~ ------------------------------------------------------------

APP = """\
import configparser
import os


def rate():
    config = configparser.ConfigParser()
    with open(os.path.expanduser("~/.config/invoice/settings.ini")) as f:
        config.read_file(f)
    return config.getfloat("tax", "rate")


def total(net):
    return round(net * (1 + rate()), 1)
"""

TEST = """\
from app import total


def test_total():
    assert total(100) == 119.0, "invoice total mismatch"
"""


def _pytest_case(tmp_path: Path) -> tuple[Path, Path, str]:
    home = tmp_path / "home"
    write_tree(home, {".config/invoice/settings.ini": "[tax]\nrate = 0.2\n"})
    files = {"app.py": APP, "test_app.py": TEST, "conftest.py": "# shared fixtures\n"}
    files.update({f"docs/page{n}.txt": f"page {n}\n" * 5 for n in range(4)})
    src = write_tree(tmp_path / "src", files)
    python = shlex.quote(sys.executable)
    return home, src, f"{python} -m pytest -q -p no:cacheprovider test_app.py"


def test_pytest_failing_otherwise_in_the_samples_stops_before_the_search(tmp_path: Path) -> None:
    home, src, command = _pytest_case(tmp_path)
    out = tmp_path / "out"
    done = _reduce(src, out, command, home)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("repomin: error: the command fails differently in your own shell")
    assert "AssertionError" in error and "FileNotFoundError" in error  # both failures named
    assert "test_app.py::test_total" in error
    assert "--home inherit" in error
    assert "pass " not in done.stderr  # no search ran
    assert not out.exists()


@pytest.mark.slow
def test_with_home_inherit_the_same_pytest_case_keeps_the_users_failure(tmp_path: Path) -> None:
    home, src, command = _pytest_case(tmp_path)
    out = tmp_path / "out"
    done = _reduce(src, out, command, home, "--home", "inherit")
    assert done.returncode == 0, done.stderr
    assert "AssertionError" in done.stderr  # the pinned identity, shown first
    assert "docs/page0.txt" not in _payload(out)
    assert "app.py" in _payload(out) and "test_app.py" in _payload(out)


# -- a `pip install --user` package ----------------------------------------------------------


def test_a_user_site_package_missing_in_the_samples_under_exit_code_1(tmp_path: Path) -> None:
    python, version = base_python()
    home = tmp_path / "home"
    site = f".local/lib/python{version}/site-packages"
    write_tree(home, {f"{site}/invoicing/__init__.py": "def run():\n    raise KeyError('vat')\n"})
    files = {"main.py": "import invoicing\n\ninvoicing.run()\n", "README": "an app\n"}
    src = write_tree(tmp_path / "src", files)
    done = _reduce(src, tmp_path / "out", f"{shlex.quote(python)} main.py", home)
    assert done.returncode == 2, done.stderr
    error = done.stderr.strip().splitlines()[-1]
    assert "fails differently in your own shell" in error
    assert "ModuleNotFoundError" in error  # what the samples pinned
    assert "--home inherit" in error


# -- not reproduced in your shell, and when nothing runs there --------------------------------

SAMPLES_ONLY = (
    'test -f "$HOME/.cache/warm" && exit 0; '
    "grep -q BUG main.txt && { echo 'BUG: cold cache' >&2; exit 1; }; exit 0"
)


def test_a_deterministic_failure_your_shell_does_not_show_is_said_before_the_search(
    tmp_path: Path,
) -> None:
    home = write_tree(tmp_path / "home", {".cache/warm": "1\n"})
    src = write_tree(tmp_path / "src", {"main.txt": "BUG\n", "other.txt": "x\n"})
    done = _reduce(src, tmp_path / "out", SAMPLES_ONLY, home)
    err = done.stderr
    notice = err.index("did not reproduce the failure (exit code 0, no output) although every")
    assert notice < err.index("pass ")  # said before the search, which goes on
    assert done.returncode == 1  # the your-shell check at the end decides, as before


@pytest.mark.parametrize("flag", ["--identity", "--user-shell-runs"])
def test_no_run_in_your_shell_before_the_search(tmp_path: Path, flag: str) -> None:
    """``--identity off`` asks for the contract's text alone; ``--user-shell-runs 0`` says the
    user's environment is not safe to run in (then nothing runs there at all)."""
    home = tmp_path / "home"
    home.mkdir()
    marker = home / "ran-in-your-shell"
    command = f'touch "$HOME/{marker.name}"; grep -q BUG main.txt && exit 1; exit 0'
    src = write_tree(tmp_path / "src", {"main.txt": "BUG\n", "other.txt": "x\n"})
    extra = ["--identity", "off"] if flag == "--identity" else ["--user-shell-runs", "0"]
    done = _reduce(src, tmp_path / "out", command, home, *extra)
    assert done.returncode == 0, done.stderr
    assert "your shell (before the search)" not in done.stderr
    assert "pass " in done.stderr  # the search ran
    if flag == "--user-shell-runs":
        assert not marker.exists()
    else:
        assert marker.exists()  # the your-shell check after the search still ran


def test_the_check_before_the_search_is_a_stage_in_a_pipe(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    src = write_tree(tmp_path / "src", {"main.txt": "BUG\n", "other.txt": "x\n"})
    done = _reduce(src, tmp_path / "out", "grep -q BUG main.txt && exit 1; exit 0", home)
    assert done.returncode == 0, done.stderr
    assert " your shell (before the search) (1 run): " in done.stderr
