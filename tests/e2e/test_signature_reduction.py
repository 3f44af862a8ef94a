"""End-to-end: a regex alone (``--match 'Error' --identity off``) slips to another error; the
default identity and a signature do not.

The generated repository fails with a KeyError in ``calc/core.py``. Any Python error contains
"Error", so the regex also accepts trees in which ``calc/core.py`` is gone (ModuleNotFoundError)
or the import line is gone (NameError): the naive payload has lost the bug. By default the
baseline's identity (KeyError, its message, ``calc/core.py``) is pinned, and with
``--python-exception`` the KeyError raised from ``calc/core.py:total`` is, so every such
candidate is rejected and the payload still contains the buggy file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from repomin.cli.main import cli
from repomin.failure.python_exc import PythonExceptionMode
from repomin.report.io import structural_errors
from repomin.runners.base import Outcome

COMMAND = f"'{sys.executable}' main.py"
SOURCES = {
    "main.py": "from calc.core import total\n\nprint(total({'apple': 3}, 'pear'))\n",
    "calc/__init__.py": '"""A tiny price calculator."""\n',
    "calc/core.py": (
        '"""Prices with tax."""\n\nTAX = 0.2\n\n\n'
        "def total(prices, item):\n    return prices[item] * (1 + TAX)\n\n\n"
        "def describe(prices):\n    return ', '.join(sorted(prices))\n"
    ),
    "calc/fmt.py": "def money(value):\n    return f'{value:.2f}'\n",
    "README.md": "# calc\n\nComputes prices.\n",
}
FILLER = {f"docs/page{i}.md": f"# Page {i}\n\n" + "text\n" * (i + 2) for i in range(8)}


def make_repo(root: Path) -> None:
    for rel, text in {**SOURCES, **FILLER}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def reduce(src: Path, out: Path, *failure: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli,
        [
            "reduce",
            str(src),
            "-o",
            str(out),
            "--command",
            COMMAND,
            *failure,
            "--baseline-runs",
            "3",
            "--final-runs",
            "3",
            "-j",
            "2",
            "-q",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(
        (out.parent / f"{out.name}.repomin" / "report.json").read_text()
    )
    assert structural_errors(report) == []
    return report


def replay(out: Path, payload: Path, *extra: str) -> int:
    report = out.parent / f"{out.name}.repomin" / "report.json"
    result = CliRunner().invoke(
        cli,
        [
            "report",
            "replay",
            str(report),
            "--payload",
            str(payload),
            "--yes",
            "--runs",
            "2",
            *extra,
        ],
        catch_exceptions=False,
    )
    return result.exit_code


def run_payload(payload: Path, scratch: Path) -> Outcome:
    """Run the command on a fresh copy (running it must not touch the exported payload)."""
    work = scratch / f"run-{payload.name}"
    shutil.copytree(payload, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        COMMAND, shell=True, cwd=work, capture_output=True, timeout=60, env=env, check=False
    )
    return Outcome(proc.returncode, proc.stdout, proc.stderr, workdir=str(work))


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_match_error_slips_but_python_exception_keeps_the_key_error(tmp_path: Path) -> None:
    src = tmp_path / "repo"
    make_repo(src)
    mode = PythonExceptionMode()
    original = mode.extract(run_payload(src, tmp_path))
    assert original is not None and original["exception_class"] == "KeyError"

    naive_out = tmp_path / "naive"
    naive = reduce(src, naive_out, "--match", "Error", "--identity", "off")
    assert naive["failure_spec"]["python_exception"] is False
    assert "failure_identity" not in naive
    slipped = run_payload(naive_out, tmp_path)
    assert "Error" in slipped.output
    slipped_sig = mode.extract(slipped)
    assert slipped_sig is not None
    assert slipped_sig["exception_class"] != "KeyError"  # e.g. ModuleNotFoundError, NameError
    assert not mode.matches(original, slipped_sig)

    default_out = tmp_path / "default"
    default = reduce(src, default_out, "--match", "Error")
    [value] = default["failure_identity"]["facets"]["python"]
    assert (value["exception_class"], value["message"], value["file"]) == (
        "KeyError",
        "'pear'",
        "calc/core.py",
    )
    assert "prices[item]" in (default_out / "calc" / "core.py").read_text()
    kept_by_default = mode.extract(run_payload(default_out, tmp_path))
    assert kept_by_default is not None and kept_by_default["exception_class"] == "KeyError"
    assert replay(default_out, default_out) == 0
    assert replay(default_out, naive_out, "--allow-modified") == 1

    pinned_out = tmp_path / "pinned"
    pinned = reduce(src, pinned_out, "--python-exception")
    signature = pinned["python_exception_signature"]
    assert pinned["failure_spec"]["python_exception"] is True
    assert "java_exception_signature" not in pinned
    assert "process_failure_signature" not in pinned
    assert (signature["exception_class"], signature["message"]) == ("KeyError", "'pear'")
    assert signature["frames"][-1] == {"file": "calc/core.py", "function": "total"}
    kept = files(pinned_out)
    assert "calc/core.py" in kept and "main.py" in kept
    assert "prices[item]" in (pinned_out / "calc" / "core.py").read_text()
    assert not any(name.startswith("docs/") for name in kept)
    replayed = mode.extract(run_payload(pinned_out, tmp_path))
    assert replayed is not None and mode.matches(signature, replayed)

    # Replay keeps the pinned signature: the payload reproduces, the naive one never does.
    assert replay(pinned_out, pinned_out) == 0
    assert replay(pinned_out, naive_out, "--allow-modified") == 1
