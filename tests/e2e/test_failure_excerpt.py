"""End-to-end: ``REPOMIN.md`` shows the failure itself, as the tool printed it: pytest's ``E``
lines and ``file:line: Exception`` line, a Python traceback's exception line, a few lines and
never a fence a line could close."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.e2e._reduce import reduce_ok, write_tree

PYTEST = f"'{sys.executable}' -m pytest -x -q -p no:cacheprovider --color=yes"
PYTHON = f"'{sys.executable}' -B main.py"
#: The excerpt comes from the baseline: deleting files is all the search needs to do here.
FAST = ("--passes", "files", "--no-trace", "--user-shell-runs", "0")


def _notes(out: Path) -> str:
    return (out.parent / f"{out.name}.repomin" / "REPOMIN.md").read_text()


def _block(notes: str) -> list[str]:
    """The lines of the fenced block in ``## The failure``."""
    section = notes.split("## The failure", 1)[1]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("```"))
    fence = lines[start].removesuffix("text")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == fence)
    return lines[start + 1 : end]


def test_a_pytest_failure_shows_its_e_lines(tmp_path: Path) -> None:
    src = write_tree(
        tmp_path / "src",
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "test_calc.py": (
                "from calc import add\n\n\ndef test_add():\n"
                "    assert add(2, 1) == 3, 'sum ``` is wrong'\n"
            ),
            **{f"noise_{i}.txt": "filler\n" * 20 for i in range(2)},
        },
    )
    out = tmp_path / "out"
    report: dict[str, Any] = reduce_ok(src, out, PYTEST, "AssertionError", *FAST)
    assert report["failure_excerpt"]["kind"] == "pytest"
    block = _block(_notes(out))
    assert any(line.startswith("E ") and "assert 1 == 3" in line for line in block), block
    assert "test_calc.py:5: AssertionError" in block
    assert not any("\x1b" in line for line in block)  # --color=yes: no escapes left
    assert _notes(out).count("````text") == 1  # longer than the message's backtick run
    assert len(block) <= 15


def test_a_python_traceback_shows_its_exception_line(tmp_path: Path) -> None:
    deep = "".join(f"def f{i}(x):\n    return f{i + 1}(x)\n\n" for i in range(12))
    src = write_tree(
        tmp_path / "src",
        {
            "main.py": "from chain import f0\n\nprint('starting')\nf0({})\n",
            "chain.py": deep
            + "def f12(x):\n    raise ValueError('\\x1b]0;pwned\\x07bad \\x1b[31mkey\\x1b[0m')\n",
            "README.md": "docs\n" * 30,
        },
    )
    out = tmp_path / "out"
    report = reduce_ok(src, out, PYTHON, "ValueError", *FAST)
    assert report["failure_excerpt"]["kind"] == "python_traceback"
    block = _block(_notes(out))
    assert block[0] == "Traceback (most recent call last):"
    assert block[-1] == "ValueError: bad key"  # the OSC title, BEL and colours are gone
    assert 'File "chain.py"' in "\n".join(block)  # the sample's directory left the paths
    assert "\x1b" not in _notes(out) and "\x07" not in _notes(out)  # the identity's too
    assert len(block) <= 15
