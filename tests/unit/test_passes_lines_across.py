"""The ``lines`` pass with batch slots: one learning search across the lines of every file
(units ``(path, line)``) instead of one file after another. Same survivors as the per-file
search, 1-minimal over all lines, the syntax guard per file, and fewer rounds with W slots
(rounds counted by an in-process batch problem: W predicate calls at once)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import repomin.search.deletion.lockstep as lockstep
from repomin.passes.lines import DeleteLines
from repomin.search.problem import Batch, Problem
from repomin.tree import Tree
from tests.unit._pass_harness import (
    PredicateProblem,
    reduce_in_process,
    reduce_with_reduction,
    text_tree,
)


class Slots(PredicateProblem):
    """``try_batch`` as the reducer does it for a deterministic command: every candidate is
    decided against the incumbent (one round: up to W calls at once); when several are
    accepted, the search's own merge (``combine``) is checked by one more call, alongside the
    ``ahead`` trees (their verdicts wait for later batches); a rejected merge -- or one that is
    the incumbent again (a syntax guard) -- adopts the first accepted candidate only.
    ``rounds`` counts rounds that called the predicate."""

    def __init__(self, tree: Tree, predicate: Callable[[Tree], bool], width: int) -> None:
        super().__init__(tree, predicate)
        self.width = width
        self.rounds = 0
        self.verdicts: dict[str, bool] = {}
        self.trees_asked: list[Tree] = []
        #: (incumbent, tree) of every call.
        self.asked: list[tuple[Tree, Tree]] = []

    @property
    def batch_width(self) -> int:
        return self.width

    def decide(self, trees: Sequence[Tree]) -> list[bool]:
        fresh = {t.digest: t for t in trees if t.digest not in self.verdicts}
        assert len(fresh) <= self.width
        self.rounds += bool(fresh)
        for digest, tree in fresh.items():
            self.calls += 1
            self.trees_asked.append(tree)
            self.asked.append((self.current, tree))
            self.verdicts[digest] = self.predicate(tree)
        return [self.verdicts[t.digest] for t in trees]

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        for pos, (tree, _) in enumerate(candidates):
            if tree.digest != self.current.digest and self.decide([tree])[0]:
                self._current = tree
                return pos
        return None

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        candidates, ahead, combine = batch.candidates, batch.ahead, batch.combine
        base = self.current
        live = [t for t, _ in candidates if t.digest != base.digest]
        verdicts = dict(zip((t.digest for t in live), self.decide(live), strict=True))
        outcomes: list[bool | None] = [verdicts.get(t.digest, False) for t, _ in candidates]
        won = [i for i, ok in enumerate(outcomes) if ok]
        if not won:
            return outcomes
        merged = candidates[won[0]][0]
        if len(won) > 1:
            assert combine is not None
            merged = combine(won)
            spec = ahead(merged, outcomes)[: self.width - 1] if ahead else []
            if merged.digest == base.digest or not self.decide([merged, *spec])[0]:
                merged = candidates[won[0]][0]
                outcomes = [None if ok and i != won[0] else ok for i, ok in enumerate(outcomes)]
        self._current = merged
        return outcomes


def lines_of(tree: Tree) -> set[tuple[str, bytes]]:
    return {
        (path, line)
        for path, entry in tree.entries.items()
        for line in entry.data.splitlines(keepends=True)
    }


def files(sizes: Sequence[int]) -> dict[str, str]:
    return {f"f{j}.txt": "".join(f"{j}-{i}\n" for i in range(n)) for j, n in enumerate(sizes)}


def needs(wanted: set[tuple[str, bytes]]) -> Callable[[Tree], bool]:
    return lambda tree: wanted <= lines_of(tree)


def per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lockstep, "ACROSS", 10**9)


WANTED = {("f0.txt", b"0-7\n"), ("f2.txt", b"2-1\n"), ("f2.txt", b"2-2\n"), ("f4.txt", b"4-0\n")}
SIZES = (30, 12, 6, 5, 3, 1)
SIZES_PATHS = [f"f{j}.txt" for j in range(len(SIZES))]


def test_across_files_finds_the_survivors_of_the_per_file_search() -> None:
    tree = text_tree(files(SIZES))
    one = reduce_in_process(DeleteLines(), tree, needs(WANTED))
    wide = Slots(tree, needs(WANTED), 16)
    DeleteLines().run(wide)
    assert lines_of(one.current) == lines_of(wide.current) == WANTED
    assert wide.trees_asked  # it ran through try_batch


def test_across_files_uses_fewer_rounds_than_file_by_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six files, W = 16: file by file, every file that loses lines costs at least a batch
    and a merge check; in lockstep the rounds are shared. Measured with this code: 5 rounds
    (35 calls) in lockstep against 12 rounds (40 calls) file by file."""
    tree = text_tree(files(SIZES))
    across = Slots(tree, needs(WANTED), 16)
    DeleteLines().run(across)
    per_file(monkeypatch)
    single = Slots(tree, needs(WANTED), 16)
    DeleteLines().run(single)
    assert lines_of(single.current) == lines_of(across.current) == WANTED
    assert across.rounds <= 5 < 12 <= single.rounds
    assert across.calls <= single.calls


def test_one_slot_keeps_the_per_file_search() -> None:
    """Width 1 (and widths below lockstep.ACROSS) search file by file: every tree asked edits
    one file; at ACROSS slots some tree edits several."""

    def most_files_edited(width: int) -> int:
        tree = text_tree(files(SIZES))
        problem = Slots(tree, needs(WANTED), width)
        DeleteLines().run(problem)
        assert lines_of(problem.current) == WANTED
        return max(
            sum(asked.entries[p] != base.entries[p] for p in base.entries)
            for base, asked in problem.asked
        )

    assert most_files_edited(1) == most_files_edited(lockstep.ACROSS - 1) == 1
    assert most_files_edited(lockstep.ACROSS) > 1


def test_across_files_the_syntax_guard_stays_per_file() -> None:
    """A Python file that parses is never proposed unparsable, even as part of a candidate
    that also edits other files; a text file next to it is cut freely."""
    source = "def f():\n    x = 1\n    return x\n\n\nBUG = f()\n"
    tree = text_tree({"m.py": source, "notes.txt": "a\nb\nc\nd\n"})

    def predicate(t: Tree) -> bool:
        return b"BUG" in t.entries["m.py"].data and b"c\n" in t.entries["notes.txt"].data

    problem = Slots(tree, predicate, 8)
    DeleteLines().run(problem)
    for asked in problem.trees_asked:
        compile(asked.entries["m.py"].data, "m.py", "exec")
    assert problem.current.entries["notes.txt"].data == b"c\n"
    assert b"BUG = f()" in problem.current.entries["m.py"].data


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=2, max_size=5),
    seed=st.integers(0, 10_000),
    density=st.sampled_from([0.1, 0.4, 0.8]),
    width=st.sampled_from([2, 4, 16]),
)
def test_property_across_files_is_one_minimal(
    sizes: list[int], seed: int, density: float, width: int
) -> None:
    """An arbitrary (not monotone) predicate over the set of remaining lines, the pass run to
    its fixpoint as the driver does: the result satisfies it and deleting any one surviving
    line alone does not. (Within one run each file's survivors are 1-minimal against its own
    final version, as with one file after another; a run that changes nothing re-tests every
    survivor against the unchanged tree.)"""

    def predicate(tree: Tree) -> bool:
        key = repr(sorted(lines_of(tree))).encode() + str(seed).encode()
        hashed = int.from_bytes(hashlib.sha256(key).digest()[:4], "big") / 2**32
        must = {("f0.txt", b"0-0\n")}
        return must <= lines_of(tree) and (hashed >= density or lines_of(tree) == start)

    tree = text_tree(files(sizes))
    start = lines_of(tree)
    problem = Slots(tree, predicate, width)
    lines = DeleteLines()
    for _ in range(30):
        before = problem.current.digest
        lines.run(problem)
        if problem.current.digest == before:
            break
    final = problem.current
    assert final.digest == before and predicate(final)
    for path, entry in final.entries.items():
        body = entry.data.splitlines(keepends=True)
        for i in range(len(body)):
            smaller = final.replace(path, b"".join(body[:i] + body[i + 1 :]))
            assert not predicate(smaller)


def test_through_the_reducer_jobs_match_one_job() -> None:
    """The real driver, oracle and fold (``Reduction.try_batch``) with 4 and 1 jobs: the same
    payload when the needed lines are unique."""
    tree = text_tree(files(SIZES))
    one, _ = reduce_with_reduction({"lines": DeleteLines()}, tree, needs(WANTED), jobs=1)
    four, ledger = reduce_with_reduction({"lines": DeleteLines()}, tree, needs(WANTED), jobs=4)
    assert lines_of(one) == lines_of(four) == WANTED
    assert ledger.accepted >= 1


class EditsOnce(Slots):
    """After its first adoption, another edit lands in ``f1.txt`` (as a fold of some other
    search could): that file's search no longer matches its content."""

    edited = False

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        outcomes = super().try_batch(phase, Batch(batch.candidates, batch.ahead, batch.combine))
        if any(outcomes) and not self.edited:
            self.edited = True
            data = self._current.entries["f1.txt"].data
            self._current = self._current.replace("f1.txt", b"edited\n" + data)
        return outcomes


def test_a_file_cut_short_is_searched_again_on_its_new_content(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched: list[list[str]] = []
    inner = DeleteLines._search_files

    def spy(self: DeleteLines, problem: Problem, paths: Sequence[str]) -> list[str]:
        searched.append(list(paths))
        return inner(self, problem, paths)

    monkeypatch.setattr(DeleteLines, "_search_files", spy)
    tree = text_tree(files(SIZES))
    wanted = WANTED | {("f1.txt", b"edited\n")}
    problem = EditsOnce(tree, lambda t: needs(wanted if problem.edited else WANTED)(t), 8)
    DeleteLines().run(problem)
    assert problem.edited
    assert lines_of(problem.current) == wanted
    assert searched == [sorted(SIZES_PATHS, key=lambda p: -len(tree[p].data)), ["f1.txt"]]
