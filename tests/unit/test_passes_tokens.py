"""The ``tokens`` pass (last resort) and the driver's stall-only scheduling."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repomin.passes import STALL_ONLY
from repomin.passes.lines import DeleteLines
from repomin.passes.textedit import compiles
from repomin.passes.tokens import MAX_BYTES, DeleteTokens, tokens
from repomin.tree import Tree
from tests.unit._pass_harness import (
    PredicateProblem,
    reduce_in_process,
    reduce_with_reduction,
    text_tree,
)


def test_tokenizer() -> None:
    data = b'print("a b", x+1)  # c'
    assert [t.text for t in tokens(data)] == [
        b"print", b"(", b'"a b"', b",", b"x", b"+", b"1", b")", b"#", b"c",
    ]  # fmt: skip
    # a word-initial token takes the blanks after it
    spaced = b"a  b c"
    assert [spaced[t.start : t.end] for t in tokens(spaced)] == [b"a  ", b"b ", b" c"]


def test_cuts_below_lines() -> None:
    source = "value = compute(alpha, beta, gamma) + offset\n"

    def predicate(tree: Tree) -> bool:
        return re.search(rb"compute\(.*beta", tree["x.txt"].data) is not None

    by_tokens = reduce_in_process(DeleteTokens(), text_tree({"x.txt": source}), predicate)
    by_lines = reduce_in_process(DeleteLines(), text_tree({"x.txt": source}), predicate)
    assert by_tokens.current["x.txt"].data.replace(b" ", b"") == b"compute(beta\n"
    assert by_lines.current.byte_count == len(source)


def test_python_guard_and_size_limit() -> None:
    seen: list[bytes] = []

    def predicate(tree: Tree) -> bool:
        seen.append(tree["m.py"].data)
        return b"MARK" in tree["m.py"].data

    big = "x = 1\n" * (MAX_BYTES // 6 + 1)
    tree = text_tree({"m.py": "MARK = f(1, 2)\n", "big.txt": big})
    problem = reduce_in_process(DeleteTokens(), tree, predicate)
    assert problem.current["big.txt"].data == big.encode()
    assert all(compiles(data) for data in seen)
    out = problem.current["m.py"].data
    assert compiles(out) and out.startswith(b"MARK") and b"f" not in out and b"1" not in out


def test_tokens_run_only_when_the_others_stall() -> None:
    assert "tokens" in STALL_ONLY
    order: list[str] = []

    class Recorder(DeleteLines):
        def run(self, problem: object) -> None:
            order.append("lines")
            super().run(problem)  # type: ignore[arg-type]

    class TokenRecorder(DeleteTokens):
        def run(self, problem: object) -> None:
            order.append("tokens")
            super().run(problem)  # type: ignore[arg-type]

    source = "keep(this) and drop\nother line\n"
    tree = text_tree({"x.txt": source})
    result, ledger = reduce_with_reduction(
        {"tokens": TokenRecorder(), "lines": Recorder()},
        tree,
        lambda t: b"keep(this)" in t["x.txt"].data,
    )
    assert result["x.txt"].data == b"keep(this)\n"
    # lines runs first although tokens is scheduled first; tokens only after lines stalled,
    # then lines gets another round after tokens made progress
    assert order[:3] == ["lines", "lines", "tokens"]
    assert order[-2:] == ["lines", "tokens"]
    assert ledger.phase("tokens").accepted >= 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(st.sampled_from(["a", "b", "MARK", "(", ")", "x1", '"s t"']), max_size=25))
def test_property(words: list[str]) -> None:
    text = " ".join(words)
    marks = text.count("MARK")

    def predicate(tree: Tree) -> bool:
        return tree["t.txt"].data.count(b"MARK") == marks

    tree = text_tree({"t.txt": text})
    first = reduce_in_process(DeleteTokens(), tree, predicate)
    assert predicate(first.current)
    assert first.current["t.txt"].data.replace(b" ", b"") == b"MARK" * marks
    second = reduce_in_process(DeleteTokens(), first.current, predicate)
    assert second.accepted == []


def test_a_swept_content_is_not_swept_again() -> None:
    tree = text_tree({"a.txt": "keep this\n", "b.txt": "x\n"})
    problem = PredicateProblem(tree, lambda t: b"keep this" in t["a.txt"].data)
    tokens_pass = DeleteTokens()
    tokens_pass.run(problem)
    first = problem.proposed
    assert first > 0
    problem._current = problem.current.without(["b.txt"])  # another pass changed the tree
    tokens_pass.run(problem)
    assert problem.proposed == first


def test_no_stray_blanks_before_closers() -> None:
    source = "def f(a : int, b) -> None :\n    pass\n"

    def predicate(tree: Tree) -> bool:
        data = tree["m.py"].data
        return compiles(data) and b"def f(a" in data

    problem = reduce_in_process(DeleteTokens(), text_tree({"m.py": source}), predicate)
    assert problem.current["m.py"].data == b"def f(a):\n    pass\n"


class _TwoSlots(PredicateProblem):
    """Two batch slots (--jobs 2, deterministic): records the files of every try_first call."""

    batch_width = 2

    def __init__(self, tree: Tree, predicate: object) -> None:
        super().__init__(tree, predicate)  # type: ignore[arg-type]
        self.streams: list[list[str]] = []

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        files: list[str] = []

        def noted() -> Iterable[tuple[Tree, str]]:
            for tree, description in candidates:
                path = description.rsplit(" in ", 1)[-1]
                if path not in files:
                    files.append(path)
                yield tree, description

        try:
            return super().try_first(phase, noted())
        finally:
            self.streams.append(files)


def test_with_slots_a_files_last_chunks_are_followed_by_the_next_files_first() -> None:
    tree = text_tree({"a.txt": "alpha beta\n", "b.txt": "gamma delta\n", "c.txt": "eps zeta\n"})
    problem = _TwoSlots(tree, lambda t: False)
    DeleteTokens().run(problem)
    # every file's only call also carries the next file's first chunks (none is accepted);
    # the next call starts with those very chunks (decided: no run in a real reducer)
    firsts = [stream[0] for stream in problem.streams]
    assert sorted(firsts) == ["a.txt", "b.txt", "c.txt"]
    assert problem.streams == [[firsts[0], firsts[1]], [firsts[1], firsts[2]], [firsts[2]]]


def test_with_slots_an_accepted_chunk_of_the_next_file_ends_this_files_search() -> None:
    tree = text_tree({"a.txt": "keep me\n", "b.txt": "drop these words\n"})

    def keeps_a(t: Tree) -> bool:  # a.txt (the smaller, searched first) must stay as it is
        return "a.txt" in t and t["a.txt"].data == b"keep me\n"

    problem = _TwoSlots(tree, keeps_a)
    DeleteTokens().run(problem)
    one = reduce_in_process(DeleteTokens(), tree, keeps_a, rounds=1)
    assert problem.current["a.txt"].data == b"keep me\n"
    assert problem.current["b.txt"].data.strip() == b"" == one.current["b.txt"].data.strip()
    # a.txt's one call ended with b.txt's first chunk (all of it) accepted: b.txt is empty
    # and needs no search of its own; the same runs as one slot, one call instead of two
    assert problem.streams == [["a.txt", "b.txt"]] and problem.calls == one.calls
