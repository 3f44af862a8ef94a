"""The ``restart`` pass (``passes.restart``): each surviving file's original content retried
against the current tree in a scratch search, adopted only when smaller than the file now."""

from __future__ import annotations

from collections.abc import Callable

from repomin.passes import STALL_ONLY
from repomin.passes.lines import DeleteLines
from repomin.passes.restart import BUDGET, GIVE_UP, MAX_FILES, Restart
from repomin.search.reducer import Reduction, run_passes
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, predicate_oracle, text_tree


class ProbeProblem(PredicateProblem):
    """A predicate problem that can also decide a tree without adopting it (``probe``)."""

    def __init__(self, tree: Tree, predicate: Callable[[Tree], bool]) -> None:
        super().__init__(tree, predicate)
        self.probed: list[Tree] = []

    @property
    def runs(self) -> int:  # every decision is one run (the scratch search's budget)
        return self.calls

    def probe(self, phase: str, tree: Tree) -> bool:
        self.calls += 1
        self.probed.append(tree)
        return self.predicate(tree)


def data(tree: Tree, path: str) -> bytes:
    entry = tree.entries.get(path)
    return entry.data if entry is not None else b""


def restart_over(origin: Tree) -> Restart:
    restart = Restart(origin)
    restart.bind({"lines": DeleteLines()})
    return restart


def either(tree: Tree) -> bool:
    """Reproduces with the line ``c`` in m.txt, or with both long lines (two local minima);
    other.txt must keep its line."""
    lines = set(data(tree, "m.txt").splitlines())
    keep = data(tree, "other.txt") == b"keep\n"
    return keep and (b"c" in lines or {b"a" * 10, b"b" * 10} <= lines)


ORIGIN = text_tree({"m.txt": b"a" * 10 + b"\n" + b"b" * 10 + b"\nc\n", "other.txt": "keep\n"})
#: The local minimum the search reached: both long lines (``c`` went first).
STUCK = ORIGIN.replace("m.txt", b"a" * 10 + b"\n" + b"b" * 10 + b"\n")


def test_restart_finds_the_smaller_minimum_another_path_reaches() -> None:
    assert either(STUCK) and not lines_can_shrink(STUCK, either)
    problem = ProbeProblem(STUCK, either)
    restart = restart_over(ORIGIN)
    restart.run(problem)
    assert data(problem.current, "m.txt") == b"c\n"
    assert data(problem.current, "other.txt") == b"keep\n"  # the other files as they were
    assert problem.accepted == [("restart", "restart m.txt from its original content: 22 -> 2 B")]
    [(path, runs, now, original, found, kept)] = restart.log
    assert (path, now, original, found, kept) == ("m.txt", 22, 24, 2, True)
    assert 0 < runs <= BUDGET
    # the scratch search's candidates all keep the other files exactly as they are now
    assert all(data(t, "other.txt") == b"keep\n" for t in problem.probed)
    restart.run(problem)  # m.txt's new content was never cut from the original: not retried
    assert len(restart.log) == 1


def lines_can_shrink(tree: Tree, predicate: Callable[[Tree], bool]) -> bool:
    problem = PredicateProblem(tree, predicate)
    DeleteLines().run(problem)
    return problem.current.digest != tree.digest


def test_restart_keeps_the_incumbent_when_the_original_leads_nowhere_smaller() -> None:
    def both(tree: Tree) -> bool:
        return {b"a" * 10, b"b" * 10} <= set(data(tree, "m.txt").splitlines())

    problem = ProbeProblem(STUCK, both)
    restart = restart_over(ORIGIN)
    restart.run(problem)
    assert problem.current is STUCK and problem.accepted == []
    [(_, runs, now, _, found, kept)] = restart.log
    assert (now, found, kept) == (22, 22, False) and runs > 0


def test_restart_never_adopts_a_larger_tree() -> None:
    """From the original the scratch search reaches ``zzzzzz`` alone (7 B), a minimum larger
    than the file now (3 B; an edit line deletion cannot make): accepted in the scratch, never
    adopted."""

    def pred(tree: Tree) -> bool:
        return b"zzzzzz" in data(tree, "m.txt").splitlines() or data(tree, "m.txt") == b"ab\n"

    origin = text_tree({"m.txt": "zzzzzz\nq\n"})
    stuck = origin.replace("m.txt", b"ab\n")
    problem = ProbeProblem(stuck, pred)
    restart = restart_over(origin)
    restart.run(problem)
    assert problem.current is stuck and problem.accepted == []
    [(_, _, now, _, found, kept)] = restart.log
    assert (now, found, kept) == (3, 7, False)
    assert any(pred(t) and t.byte_count > stuck.byte_count for t in problem.probed)


def test_restart_skips_large_trees() -> None:
    files = {f"f{i}.txt": "x\ny\n" for i in range(MAX_FILES + 1)}
    origin = text_tree(files)
    cut = origin.replace("f0.txt", b"x\n")
    restart = restart_over(origin)
    assert restart.targets(cut, origin, lambda _: False) == []
    assert restart.targets(cut.without(["f1.txt"]), origin, lambda _: False) == ["f0.txt"]


def test_restart_through_the_reducer_adopts_from_the_cache_and_logs_one_event() -> None:
    """With the real Reduction and Oracle: the source is ``history[0]``, the scratch runs are
    counted under ``restart`` as rejected or superseded, the adoption is a cache hit, and the
    phase identities of the report hold."""
    oracle, ledger = predicate_oracle(STUCK, either)
    reduction = Reduction(
        initial=STUCK,
        oracle=oracle,
        ledger=ledger,
        jobs=1,
        protected=lambda _: False,
        history=[ORIGIN, STUCK],
    )
    passes = {"lines": DeleteLines(), "restart": Restart()}
    passes["restart"].bind(passes)  # type: ignore[attr-defined]
    result = run_passes(reduction, tuple(passes), passes=passes, stall_only=STALL_ONLY)
    assert data(result.tree, "m.txt") == b"c\n"
    phase = ledger.phases["restart"]
    assert phase.accepted == 1 and phase.cache_hits >= 1
    # the adoption cost no run (the scratch's cached verdict): the phase's runs are the scratch's
    restart = passes["restart"]
    assert isinstance(restart, Restart)
    assert phase.oracle_samples == restart.log[0][1] > 0
    assert phase.attempts == phase.no_op + phase.rejected + phase.accepted + phase.superseded
    assert phase.superseded >= 1  # the scratch acceptances: accepted by the oracle, not adopted
    [event] = [e for e in ledger.events if e["phase"] == "restart" and e["decision"] == "info"]
    assert event["kept"] is True and event["bytes_found"] == 2 and event["bytes_before"] == 22


def test_restart_gives_up_on_a_file_whose_original_never_reproduces() -> None:
    """The original content breaks the program whatever single edit is made (here: any tree
    with a line ``import gone``): the scratch search stops after GIVE_UP runs, not BUDGET."""
    body = "".join(f"import gone{i}\n" for i in range(200))

    def pred(tree: Tree) -> bool:
        return b"import gone" not in data(tree, "m.txt") and b"x" in data(tree, "m.txt")

    origin = text_tree({"m.txt": body + "x\n"})
    stuck = origin.replace("m.txt", b"x\n")
    problem = ProbeProblem(stuck, pred)
    restart = restart_over(origin)
    restart.run(problem)
    [(_, runs, _, _, _, kept)] = restart.log
    assert runs == GIVE_UP < BUDGET and not kept and problem.current is stuck
