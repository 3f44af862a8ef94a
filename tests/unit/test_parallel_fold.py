"""Folding accepted candidates (``parallel.fold_accepted``) and the reducer's use of it."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from repomin.sampling.parallel import fold_accepted
from repomin.search.fold import TreeMerge, merge_text, tree_delta
from repomin.tree import Entry, Tree
from tests.unit.test_reduction import _tree, assert_identities, needs, reduce_tree


def _evaluate(verdicts: dict[int, bool], delay: dict[int, float]):  # type: ignore[no-untyped-def]
    def evaluate(c: int, cancel: threading.Event) -> bool | None:
        time.sleep(delay.get(c, 0.0))
        return None if cancel.is_set() else verdicts[c]

    return evaluate


@dataclass
class _Steps:
    """``FoldSteps`` over integer candidates, each prepared as itself unless ``prepare`` says
    otherwise."""

    evaluate: Callable[[int, threading.Event], bool | None]
    prepare: Callable[[int], int | None] = lambda c: c
    fold: Callable[[int], bool] = lambda p: True

    def accepted(self, result: bool | None) -> bool:
        return bool(result)

    def spare(self) -> None:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_fold_keeps_every_compatible_acceptance_in_order(seed: int) -> None:
    rng = random.Random(seed)
    verdicts = {i: rng.random() < 0.6 for i in range(30)}
    delay = {i: rng.random() * 0.004 for i in range(30)}
    fold = fold_accepted(range(30), _Steps(_evaluate(verdicts, delay)), 3, 100)
    assert [f.order for f in fold.accepted] == [i for i in range(30) if verdicts[i]]
    assert [r.order for r in fold.results] == list(range(30))
    assert all(r.status == ("accepted" if verdicts[r.order] else "rejected") for r in fold.results)


def test_fold_stops_at_first_conflict_and_at_the_limit() -> None:
    verdicts = dict.fromkeys(range(20), True)
    folded: list[int] = []

    def fold_in(c: int) -> bool:  # 5 conflicts with 0 (same class mod 5)
        if any(k % 5 == c % 5 for k in folded):
            return False
        folded.append(c)
        return True

    fold = fold_accepted(range(20), _Steps(_evaluate(verdicts, {}), fold=fold_in), 2, 100)
    assert [f.order for f in fold.accepted] == [0, 1, 2, 3, 4]
    assert [r.order for r in fold.results] == list(range(len(fold.results)))
    assert all(r.status == "superseded" for r in fold.results if r.order >= 5)
    # A candidate that cannot be prepared (rebased) ends the round before it runs.
    unless_7 = _Steps(_evaluate(verdicts, {}), prepare=lambda c: None if c == 7 else c)
    stopped = fold_accepted(range(20), unless_7, 2, 100)
    assert [f.order for f in stopped.accepted] == list(range(7))
    limited = fold_accepted(range(20), _Steps(_evaluate(verdicts, {})), 2, 3)
    assert [f.order for f in limited.accepted] == [0, 1, 2]


def test_fold_propagates_exceptions() -> None:
    def evaluate(c: int, cancel: threading.Event) -> bool:
        if c == 3:
            raise RuntimeError("budget")
        return False

    with pytest.raises(RuntimeError):
        fold_accepted(range(10), _Steps(evaluate), 2, 10)


def test_three_way_merge() -> None:
    base = Tree.of({p: Entry("file", b"1\n2\n3\n4\n5\n") for p in ("a", "b", "c", "d")})
    merge = TreeMerge(base)
    assert merge.add(tree_delta(base, base.without(["a"])))
    assert merge.add(tree_delta(base, base.without(["a", "d"])))  # the same deletion again
    assert merge.add(tree_delta(base, base.replace("c", b"2\n3\n4\n5\n")))
    assert merge.add(tree_delta(base, base.replace("c", b"1\n2\n3\n5\n")))  # other lines
    assert merge.combine(tree_delta(base, base.replace("c", b"1\n3\n5\n"))) is None
    assert merge.combine(tree_delta(base, base.replace("a", b"x"))) is None  # edit vs delete
    merged = merge.tree()
    assert sorted(merged.paths) == ["b", "c"] and merged["c"].data == b"2\n3\n5\n"
    assert merge.folded == 4


def test_merge_text_refuses_overlaps_and_touching_insertions() -> None:
    base = b"a\nb\nc\nd\n"
    assert merge_text(base, b"b\nc\nd\n", b"a\nb\nc\n") == b"b\nc\n"
    assert merge_text(base, b"a\nd\n", b"a\nb\nd\n") is None
    assert merge_text(base, b"a\nX\nb\nc\nd\n", b"a\nc\nd\n") is None
    assert merge_text(b"x" * (1 << 19), b"", b"y") is None


def test_jobs_fold_same_payload_and_fewer_rounds() -> None:
    tree = _tree(150)
    fails = needs(("d3/sub1/f10.txt", b"b10"), ("d5/sub2/f5.txt", b"c5"))
    r1, _, _, _ = reduce_tree(tree, fails, jobs=1)
    r4, ledger, _, _ = reduce_tree(tree, fails, jobs=4)
    assert r4.tree.digest == r1.tree.digest
    assert_identities(ledger)
    folds = [e for e in ledger.events if e["description"].startswith("fold of")]
    assert folds, "no round folded several acceptances"
    # Every fold event carries its own verification evidence (one run, deterministic).
    assert all(e["oracle_runs"] == 1 and e["oracle_passes"] == 1 for e in folds)
    assert ledger.accepted >= len(folds) * 2


def test_failed_verification_keeps_only_the_first() -> None:
    # Non-monotone failure: deleting either x or y alone keeps it, deleting both loses it.
    entries = {f"f{i}": Entry("file", b"z") for i in range(6)}
    entries.update({"x": Entry("file", b"x"), "y": Entry("file", b"y"), "k": Entry("file", b"k")})
    tree = Tree.of(entries)

    def fails(t: Tree) -> bool:
        return "k" in t and ("x" in t or "y" in t)

    r1, _, _, _ = reduce_tree(tree, fails, jobs=1)
    r2, ledger, _, _ = reduce_tree(tree, fails, jobs=2)
    assert fails(r2.tree) and "k" in r2.tree
    assert len(r2.tree) == len(r1.tree) == 2
    assert_identities(ledger)
