"""End-to-end with real pytest: the traced run records which Python functions started, even
under ``PYTHONPATH=src`` set by the command itself; one accepted ``coverage`` candidate makes
``...`` of every function body that never ran; the payload still fails in the same test with
the same assertion, and the report (its ``coverage`` phase and event) validates."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e._reduce import reduce_ok, write_tree

UNUSED = "".join(
    f"\n\ndef unused_{i}(values):\n"
    f'    """Never called by the failing test ({i})."""\n'
    f"    total = 0\n"
    f"    for v in values:\n"
    f"        total += v * {i}\n"
    f"    return total\n"
    for i in range(12)
)
LIB = (
    "def tax(amount):\n"
    "    return round_cents(amount * 0.2)\n"
    "\n\n"
    "def round_cents(value):\n"
    "    return int(value * 100) / 100  # the bug: truncates\n" + UNUSED + "\n\n"
    "class Ledger:\n"
    "    def add(self, x):\n"
    "        raise NotImplementedError('never used by the failing test')\n"
)
TEST = (
    "from shop.money import tax\n"
    "\n\n"
    "def test_tax():\n"
    "    assert tax(6.29) == 1.26, 'tax mismatch'\n"
)


@pytest.mark.slow
def test_python_coverage_empties_never_run_bodies_and_keeps_the_failure(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "repo",
        {
            "src/shop/__init__.py": "",
            "src/shop/money.py": LIB,
            "tests/test_money.py": TEST,
        },
    )
    out = tmp_path / "out"
    command = f"PYTHONPATH=src '{sys.executable}' -m pytest -x -q -p no:cacheprovider tests"
    report = reduce_ok(src, out, command, "tax mismatch", "--jobs", "2", final_runs=2)
    phases = {p["name"]: p for p in report["phase_statistics"]["phases"]}
    assert phases["coverage"]["accepted"] >= 1, phases["coverage"]
    info = [e for e in report["events"] if e["phase"] == "coverage" and e["decision"] == "info"]
    assert info and "never-run bodies" in info[0]["description"]
    money = (out / "src" / "shop" / "money.py").read_text()
    assert "int(value * 100) / 100" in money  # the bug is kept
    assert "total += v" not in money and "NotImplementedError" not in money
    facets = report["failure_identity"]["facets"]
    assert any("test_tax" in str(v) for v in facets.values()), facets
    assert "AssertionError" in str(facets)
