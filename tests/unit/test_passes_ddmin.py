"""The shared ddmin loop: with batch slots one ``try_first`` call carries every smaller chunk
size after the current one, and what is proposed in which order is as with one slot."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from repomin.search.deletion.ddmin import ddmin_delete
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree


class _Slots(PredicateProblem):
    """The predicate problem with ``batch_width`` slots; records each call's proposals."""

    def __init__(self, tree: Tree, needed: set[str], width: int) -> None:
        super().__init__(tree, lambda t: needed <= set(t["f"].data.decode().split()))
        self.width = width
        self.rounds: list[list[str]] = []

    @property
    def batch_width(self) -> int:
        return self.width

    def try_first(self, phase: str, candidates: Iterable[tuple[Tree, str]]) -> int | None:
        seen: list[str] = []

        def watched() -> Iterable[tuple[Tree, str]]:
            for tree, description in candidates:
                seen.append(description)
                yield tree, description

        try:
            return super().try_first(phase, watched())
        finally:
            self.rounds.append(seen)


def _reduce(words: Sequence[str], needed: set[str], width: int) -> tuple[list[str], _Slots]:
    problem = _Slots(text_tree({"f": " ".join(words)}), needed, width)

    def build(keep: Sequence[str]) -> Tree:
        return problem.current.replace("f", " ".join(keep).encode())

    kept = ddmin_delete(problem, "t", list(words), build, lambda c: " ".join(c))
    return kept, problem


@pytest.mark.parametrize("needed", [{"w3"}, {"w0", "w7"}, {"w1", "w2", "w5", "w6"}, set()])
def test_slots_propose_the_same_candidates_in_the_same_order(needed: set[str]) -> None:
    words = [f"w{i}" for i in range(8)]
    one_kept, one = _reduce(words, needed, 1)
    two_kept, two = _reduce(words, needed, 2)
    assert one_kept == two_kept == [w for w in words if w in needed]
    assert [d for r in one.rounds for d in r] == [d for r in two.rounds for d in r]
    assert one.calls == two.calls
    # with slots a call goes on to the smaller sizes: fewer calls, the whole file's chunk
    # followed by its halves in the first one
    if not needed:  # the whole file's chunk is accepted: one call either way
        assert one.rounds == two.rounds == [[" ".join(words)]]
        return
    assert len(two.rounds) < len(one.rounds)
    assert two.rounds[0][:3] == [" ".join(words), " ".join(words[:4]), " ".join(words[4:])]
    assert one.rounds[0] == [" ".join(words)]
