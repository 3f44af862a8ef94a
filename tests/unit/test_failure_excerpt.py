"""The failure excerpt: real compilers' diagnostics with their carets, the fallbacks, and the
Markdown fence against hostile text."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from repomin.report.excerpt import (
    EXCERPT_LINES,
    LINE_LIMIT,
    clean_line,
    failure_excerpt,
    fenced,
)
from repomin.report.human import render_repomin_md


def _compile(tmp_path: Path, tool: str, name: str, source: str, *args: str) -> str:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    (tmp_path / name).write_text(source)
    proc = subprocess.run(
        [tool, *args, name], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode != 0
    return proc.stdout + "\n" + proc.stderr


def test_gcc_the_error_with_its_caret_not_the_warning_or_note(tmp_path: Path) -> None:
    source = 'int main(void) {\n  int x = "a";\n  return y;\n}\n'
    output = _compile(tmp_path, "gcc", "a.c", source, "-c", "-fno-diagnostics-color")
    found = failure_excerpt(output)
    assert found is not None and found.kind == "compiler"
    assert found.lines[0].startswith("a.c:3:10: error: ")
    assert found.lines[1].strip().startswith("3 |   return y;")
    assert found.lines[2].strip() == "|          ^"
    assert len(found.lines) == 3  # the note below is another diagnostic


def test_rustc_the_error_and_its_labels(tmp_path: Path) -> None:
    output = _compile(tmp_path, "rustc", "m.rs", 'fn main() {\n    let x: i32 = "a";\n}\n')
    found = failure_excerpt(output)
    assert found is not None and found.kind == "compiler"
    assert found.lines[0] == "error[E0308]: mismatched types"
    assert any("^^^ expected `i32`" in line for line in found.lines)
    assert not any("aborting" in line for line in found.lines)


def test_match_picks_the_diagnostic_and_lines() -> None:
    output = "x.c:1:1: error: first\nx.c:9:2: error: the one we want\n   9 | q\n     | ^\n"
    found = failure_excerpt(output, match="we want")
    assert found is not None and found.lines == (
        "x.c:9:2: error: the one we want",
        "   9 | q",
        "     | ^",
    )
    many = "\n".join(f"step {i} BUG {i}" for i in range(40)) + "\ndone\n"
    by_match = failure_excerpt(many, match="BUG")
    assert by_match is not None and by_match.kind == "match"
    assert by_match.lines[-1] == "step 39 BUG 39" and len(by_match.lines) == EXCERPT_LINES
    tail = failure_excerpt("a\nb\n\n\n")
    assert tail is not None and tail.kind == "tail" and tail.lines == ("a", "b")
    assert failure_excerpt("\x1b[0m\n\x00\n") is None


def test_hostile_lines_are_cleaned_and_bounded() -> None:
    evil = "\x1b]0;title\x07\x1b[2J\x1bP+q\x1b\\ok\u202etxt.exe\r\x9b31mred\x00\x7f\ufffd"
    assert clean_line(evil) == "ok" + "txt.exe" + "red"
    long = clean_line("y" * 10_000)
    assert len(long) == LINE_LIMIT and long.endswith("…")
    huge = "Traceback (most recent call last):\n" + "  x\n" * 200_000 + "E" * 10**6 + ": boom\n"
    found = failure_excerpt(huge)
    assert found is not None and len(found.lines) <= EXCERPT_LINES
    assert all(len(line) <= LINE_LIMIT for line in found.lines)


@pytest.mark.parametrize(
    "text",
    ["```", "````", "`" * 150, "a ``` b", "~~~", "```\n# Injected heading", "    ```"],
)
def test_no_line_can_close_the_fence(text: str) -> None:
    block = fenced(["before", *text.split("\n"), "after"])
    fence = block[0].removesuffix("text")
    assert set(fence) == {"`"} and len(fence) >= 3
    assert block[-1] == fence
    for line in block[1:-1]:
        stripped = line.lstrip(" ")
        assert not (stripped.startswith(fence) and set(stripped.strip()) == {"`"})


def test_a_sent_report_cannot_break_out_of_repomin_md() -> None:
    """A report from someone else: forged lines, too many, too long, with controls."""
    lines = ["```", "# Heading", "\x1b[31mred\x1b[0m", "z" * 5000] + ["n"] * 40
    report = _minimal_report({"source": "baseline", "kind": "tail", "lines": lines})
    notes = render_repomin_md(report, "out", [])
    section = notes.split("## The failure", 1)[1].split("## Kept files", 1)[0]
    body = section.split("````text\n", 1)[1].split("\n````\n", 1)[0].split("\n")
    assert body[:3] == ["```", "# Heading", "red"]
    assert len(body) == EXCERPT_LINES and all(len(line) <= LINE_LIMIT for line in body)
    assert "\x1b" not in notes


def _minimal_report(excerpt: object) -> dict[str, object]:
    return {
        "repomin_version": "0",
        "command": "true",
        "failure_spec": {"match": "x"},
        "source": {"files": 1, "bytes": 1},
        "output": {"files": 1, "bytes": 1},
        "execution": {
            "oracle_samples": 1,
            "backend": "host",
            "min_candidate_rate": 0.5,
            "final_validation_passed": True,
            "final_passes": 1,
            "final_runs": 1,
            "baseline_passes": 1,
            "baseline_runs": 1,
            "confidence": 0.95,
        },
        "failure_excerpt": excerpt,
    }
