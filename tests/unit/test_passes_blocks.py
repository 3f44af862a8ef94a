"""The ``blocks`` pass: indentation blocks with their bodies, hierarchically, bottom-up."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes.blocks import Block, DeleteBlocks, blocks_in
from repomin.tree import Tree
from tests.unit._pass_harness import reduce_in_process, reduce_with_reduction, text_tree

CONFIG = """top:
  a:
    x: 1
    y: 2
  b:
    bug: true
    z:
      - 1
      - 2
other:
  q: 1
  r:
    s: 2
"""


def has_bug_under_b(tree: Tree) -> bool:
    text = tree["c.yaml"].data.decode()
    return "  b:\n    bug: true" in text and text.startswith("top:")


def test_structure() -> None:
    lines = CONFIG.encode().splitlines(keepends=True)
    assert blocks_in(lines, 0, len(lines)) == [Block(0, 9), Block(9, 13)]
    assert blocks_in(lines, 1, 9) == [Block(1, 4), Block(4, 9)]


def test_blank_lines_inside_and_after_a_block_belong_to_it() -> None:
    lines = b"a:\n\n  b\n\nc\n".splitlines(keepends=True)
    assert blocks_in(lines, 0, len(lines)) == [Block(0, 4), Block(4, 5)]


def test_reduces_nested_blocks() -> None:
    problem = reduce_in_process(DeleteBlocks(), text_tree({"c.yaml": CONFIG}), has_bug_under_b)
    assert problem.current["c.yaml"].data == b"top:\n  b:\n    bug: true\n"
    assert all(phase == "blocks" for phase, _ in problem.accepted)


def test_single_lines_are_left_to_the_lines_pass() -> None:
    problem = reduce_in_process(DeleteBlocks(), text_tree({"f.txt": "a\nb\nc\n"}), lambda t: True)
    assert problem.proposed == 0


def test_compiling_python_is_left_to_the_python_pass() -> None:
    source = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    problem = reduce_in_process(DeleteBlocks(), text_tree({"m.py": source}), lambda t: True)
    assert problem.proposed == 0


def test_json_guard_skips_invalid_candidates() -> None:
    source = '{\n  "a": {\n    "b": 1\n  },\n  "c": 2\n}\n'
    seen: list[bytes] = []

    def predicate(tree: Tree) -> bool:
        seen.append(tree["x.json"].data)
        return True

    reduce_in_process(DeleteBlocks(), text_tree({"x.json": source}), predicate)
    assert seen == []  # every block deletion here would break the JSON


@pytest.mark.parametrize("jobs", [1, 2])
def test_real_reduction_jobs(jobs: int) -> None:
    tree = text_tree({"c.yaml": CONFIG, "d.yaml": CONFIG.replace("bug", "ok")})
    result, ledger = reduce_with_reduction(
        {"blocks": DeleteBlocks()}, tree, has_bug_under_b, jobs=jobs
    )
    reference, _ = reduce_with_reduction({"blocks": DeleteBlocks()}, tree, has_bug_under_b)
    assert result.digest == reference.digest
    assert result["c.yaml"].data == b"top:\n  b:\n    bug: true\n"
    assert ledger.phase("blocks").accepted >= 3


@st.composite
def outlines(draw: st.DrawFn) -> str:
    def level(depth: int) -> list[str]:
        out = []
        for i in range(draw(st.integers(1, 3))):
            word = draw(st.sampled_from(["alpha", "beta", "MARK", "gamma"]))
            out.append("  " * depth + f"{word}{i}:")
            if depth < 3 and draw(st.booleans()):
                out.extend(level(depth + 1))
            if draw(st.booleans()):
                out.append("")
        return out

    return "\n".join(level(0)) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=outlines())
def test_property_interesting_smaller_stable(text: str) -> None:
    marks = text.count("MARK")

    def predicate(tree: Tree) -> bool:
        return tree["o.txt"].data.count(b"MARK") == marks

    tree = text_tree({"o.txt": text})
    first = reduce_in_process(DeleteBlocks(), tree, predicate)
    assert predicate(first.current)
    assert first.current.byte_count <= tree.byte_count
    second = reduce_in_process(DeleteBlocks(), first.current, predicate)
    assert second.accepted == []
