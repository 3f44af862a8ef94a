"""End-to-end: pytest with ``--match`` on an assertion message keeps *the* failure by default.

An invoice project whose ``test_total`` fails on a rounding bug three imports below the test
(``billing/util/money.py`` truncates instead of rounding). The assertion's message is also in
the test's source, which pytest echoes. With the regex alone and the whole output searched, a
reduction can delete the assertion and keep its message in a line that fails with
``NameError`` (the echoed source still matches), or keep the assertion and delete the
computation under it. By default neither is possible: the echoed source does not count, and the
identity pins pytest's node id, ``AssertionError`` and its explanation (``assert 1.25 ==
1.26``), so the payload still fails in the same test on the same values, and the bug is kept.
The same holds when the failure is flaky.
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
from tests.e2e._reduce import reduce_ok, write_tree

COMMAND = f"'{sys.executable}' -m pytest -x -q -p no:cacheprovider"
MATCH = "invoice total mismatch"

ROUNDING = "    return int(value * 100) / 100\n"
FLAKY_ROUNDING = (
    "    import random\n"
    "    if random.random() < 0.6:\n"
    "        return int(value * 100) / 100\n"
    "    return round(value, 2)\n"
)


def project(rounding: str) -> dict[str, str]:
    fillers = {
        f"billing/util/extra_{i}.py": f'"""Helper {i}."""\n\n\ndef helper_{i}(x):\n'
        f"    return x * {i}\n"
        for i in range(6)
    }
    return {
        "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        "billing/__init__.py": "",
        "billing/core/__init__.py": "",
        "billing/util/__init__.py": "",
        "billing/util/money.py": (
            '"""Money helpers."""\n\n\ndef to_cents(amount):\n    return int(amount * 100)\n\n\n'
            "def round_half_up(value):\n" + rounding + "\n\n"
            'def fmt(amount):\n    return f"{amount:.2f}"\n'
        ),
        "billing/core/lines.py": (
            "from billing.util.money import round_half_up\n\n\nclass Line:\n"
            "    def __init__(self, name, qty, price):\n        self.name = name\n"
            "        self.qty = qty\n        self.price = price\n\n"
            "    def total(self):\n        return round_half_up(self.qty * self.price * 1.2)\n\n"
            '    def describe(self):\n        return f"{self.name} x{self.qty}"\n'
        ),
        "billing/core/invoice.py": (
            "from billing.core.lines import Line\nfrom billing.util.money import fmt\n\n\n"
            "class Invoice:\n    def __init__(self, customer):\n"
            "        self.customer = customer\n        self.lines = []\n\n"
            "    def add(self, name, qty, price):\n"
            "        self.lines.append(Line(name, qty, price))\n        return self\n\n"
            "    def total(self):\n        return sum(line.total() for line in self.lines)\n\n"
            "    def render(self):\n"
            '        body = "\\n".join(line.describe() for line in self.lines)\n'
            '        return body + "\\n" + fmt(self.total())\n'
        ),
        "tests/conftest.py": (
            "import pytest\n\nfrom billing.core.invoice import Invoice\n\n\n"
            '@pytest.fixture\ndef invoice():\n    return Invoice("ACME")\n\n\n'
            '@pytest.fixture\ndef empty():\n    return Invoice("nobody")\n'
        ),
        "tests/test_invoice.py": (
            "def test_render(invoice):\n"
            '    invoice.add("pen", 1, 1.0)\n    assert "pen" in invoice.render()\n\n\n'
            "def test_total(invoice):\n"
            '    invoice.add("widget", 3, 0.35)\n    total = invoice.total()\n'
            "    expected = 1.26\n"
            '    assert total == expected, "invoice total mismatch for " + invoice.customer\n\n\n'
            "def test_empty(empty):\n    assert empty.total() == 0\n"
        ),
        **fillers,
    }


def run_payload(payload: Path, scratch: Path) -> str:
    work = scratch / f"run-{payload.name}"
    shutil.copytree(payload, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        COMMAND, shell=True, cwd=work, capture_output=True, timeout=60, env=env, check=False
    )
    shutil.rmtree(work)
    return proc.stdout.decode() + proc.stderr.decode()


def check_payload(report: dict[str, Any], out: Path) -> None:
    [value] = report["failure_identity"]["facets"]["python"]
    assert value["runner"] == "pytest"
    assert value["test"] == "tests/test_invoice.py::test_total"
    assert value["exception_class"] == "AssertionError"
    assert "assert 1.25 == 1.26" in value["message"]
    assert "int(value * 100) / 100" in (out / "billing" / "util" / "money.py").read_text()
    assert "assert total == expected" in (out / "tests" / "test_invoice.py").read_text()


@pytest.mark.slow
def test_the_assertion_and_the_bug_are_kept_by_default(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "repo", project(ROUNDING))
    out = tmp_path / "min"
    report = reduce_ok(src, out, COMMAND, MATCH, "-j", "2")
    assert report["failure_spec"]["identity"] == "auto"
    assert report["failure_spec"]["match_scope"] == "no_echoed_source"
    check_payload(report, out)
    output = run_payload(out, tmp_path)
    assert "AssertionError: invoice total mismatch for ACME" in output
    assert "NameError" not in output
    assert not (out / "billing" / "util" / "extra_0.py").exists()
    check_one_count_of_runs(report, out)


def check_one_count_of_runs(report: dict[str, Any], out: Path) -> None:
    """REPOMIN.md, validate (text, JSON, Markdown) and compare say the same number of runs."""
    runs = report["execution"]["oracle_samples"]
    sidecar = out.parent / f"{out.name}.repomin"
    notes = (sidecar / "REPOMIN.md").read_text()
    assert f" in {runs} runs" in notes
    assert "## The failure" in notes and "AssertionError" in notes
    path = str(sidecar / "report.json")
    cli_runner = CliRunner()
    text = cli_runner.invoke(cli, ["report", "validate", path]).stdout
    assert f", {runs} runs, " in text
    summary = json.loads(cli_runner.invoke(cli, ["report", "validate", path, "--json"]).stdout)
    assert summary["runs"] == runs
    markdown = cli_runner.invoke(cli, ["report", "validate", path, "--format", "markdown"]).stdout
    assert f"| Runs of the command | {runs} |" in markdown
    compared = json.loads(cli_runner.invoke(cli, ["report", "compare", path, path]).stdout)
    assert [snapshot["runs"] for snapshot in compared["runs"]] == [runs, runs]


@pytest.mark.slow
def test_the_bug_is_kept_when_the_failure_is_flaky(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "repo", project(FLAKY_ROUNDING))
    out = tmp_path / "min"
    report = reduce_ok(src, out, COMMAND, MATCH, "-j", "2", "--baseline-runs", "12", final_runs=12)
    assert report["execution"]["sampling_policy"] != "deterministic"
    check_payload(report, out)  # the randomness may go (then it fails every run); the bug stays
