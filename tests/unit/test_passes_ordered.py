"""The ``ordered`` pass: first-open order from the trace, content passes file by file with a
re-traced cut after every changed file, settled files skipped by the stand-alone passes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from repomin.analysis.trace import TraceResult, strace_order
from repomin.passes.hints import SearchHints
from repomin.passes.lines import DeleteLines
from repomin.passes.ordered import TraceOrder, Unsettled, wrap_unsettled
from repomin.passes.trace import TraceCut
from repomin.search.problem import Batch
from repomin.search.view import focus
from repomin.tree import Tree
from tests.unit._pass_harness import (
    BesideProblem,
    PredicateProblem,
    reduce_with_reduction,
    text_tree,
)

ROOT = "/dev/shm/s/tree"


def test_strace_order_is_the_order_of_first_mention() -> None:
    log = [
        b'1 execve("/bin/sh", ["/bin/sh", "-c", "node app.js"], 0x7ffd /* 3 vars */) = 0',
        b'1 openat(AT_FDCWD</dev/shm/s/tree>, "app.js", O_RDONLY) = 3</dev/shm/s/tree/app.js>',
        b'1 statx(AT_FDCWD</dev/shm/s/tree>, "m/z/index.js", 0) = 0',
        b'2 openat(AT_FDCWD</dev/shm/s/tree>, "m/a/package.json", O_RDONLY) = 3',
        b'1 openat(AT_FDCWD</dev/shm/s/tree>, "app.js", O_RDONLY) = 3</dev/shm/s/tree/app.js>',
        b'1 openat(AT_FDCWD</dev/shm/s/tree>, "m/a/index.js", O_RDONLY) = 4',
    ]
    order = strace_order(log, [ROOT])
    assert [p for p in order if p.startswith(("app", "m/"))] == [
        "app.js",
        "m/z/index.js",
        "m/a/package.json",
        "m/a/index.js",
    ]
    assert len(order) == len(set(order))


# A tiny interpreter: a file's lines are ``load NAME`` (run NAME, which must exist), ``BUG``
# (the failure) or filler. The run starts at main.txt; the trace is every file it loaded, in
# the order it loaded them (depth first), like strace's log of a ``require`` chain.


def _run(tree: Tree) -> tuple[list[str], bool]:
    order: list[str] = []
    bug = False

    def visit(name: str) -> bool:
        nonlocal bug
        if name in order:
            return True
        if name not in tree.entries:
            return False
        order.append(name)
        for line in tree.entries[name].data.decode().splitlines():
            if line.startswith("load ") and not visit(line.split()[1]):
                return False
            if line == "BUG":
                bug = True
        return True

    ok = visit("main.txt")
    return order, ok and bug


def _fails(tree: Tree) -> bool:
    return _run(tree)[1]


def _trace(tree: Tree) -> TraceResult:
    order, failed = _run(tree)
    return TraceResult("strace", frozenset(order), "ok", reproduced=failed, order=tuple(order))


def _chain_tree() -> Tree:
    """main loads lib (needed: it loads deep, which has the BUG) and ten heavy modules it does
    not need; each heavy module loads its own helpers."""
    files: dict[str, str] = {
        "main.txt": "".join(f"load heavy{i}.txt\n" for i in range(10)) + "load lib.txt\n",
        "lib.txt": "filler\nload deep.txt\nfiller\n",
        "deep.txt": "filler\nBUG\nfiller\n",
    }
    for i in range(10):
        files[f"heavy{i}.txt"] = f"load help{i}.txt\n" + "heavy filler line\n" * 40
        files[f"help{i}.txt"] = "helper filler line\n" * 60
    return text_tree(files)


def _ordered(
    tree: Tree, batched: bool = False
) -> tuple[TraceOrder, dict[str, object], PredicateProblem]:
    hints = SearchHints(retrace=_trace)
    instances: dict[str, object] = {
        "trace": TraceCut(_trace(tree)),
        "ordered": TraceOrder(),
        "lines": DeleteLines(),
    }
    for instance in instances.values():
        instance.hints = hints  # type: ignore[attr-defined]
    hints.update_trace(_trace(tree))
    wrap_unsettled(instances)  # type: ignore[arg-type]
    problem = (_Batched if batched else PredicateProblem)(tree, _fails)
    return instances["ordered"], instances, problem  # type: ignore[return-value]


def test_ordered_pass_shrinks_the_entry_point_first_and_cuts_what_it_no_longer_loads() -> None:
    tree = _chain_tree()
    ordered, instances, problem = _ordered(tree)
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    ordered.run(problem)
    assert set(problem.current.entries) == {"main.txt", "lib.txt", "deep.txt"}
    assert _fails(problem.current)
    worked = [path for path, *_ in ordered.log]
    assert worked[0] == "main.txt"
    # no heavy module or helper was ever searched: the re-traced cut after main.txt took them
    assert not any(p.startswith(("heavy", "help")) for p in worked)
    assert problem.current["main.txt"].data == b"load lib.txt\n"
    assert problem.current["deep.txt"].data == b"BUG\n"

    # the same lines pass over all files, largest first, then the trace cut: many more runs
    plain = PredicateProblem(tree, _fails)
    cut = TraceCut(_trace(tree))
    cut.hints = SearchHints(retrace=_trace)
    cut.run(plain)
    DeleteLines().run(plain)
    cut.run(plain)
    assert set(plain.current.entries) == set(problem.current.entries)
    assert problem.calls * 2 < plain.calls, (problem.calls, plain.calls)


def test_settled_files_are_skipped_by_the_stand_alone_content_pass() -> None:
    tree = _chain_tree()
    ordered, instances, problem = _ordered(tree)
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    ordered.run(problem)
    lines = instances["lines"]
    assert isinstance(lines, Unsettled)
    before = problem.proposed
    lines.run(problem)
    assert problem.proposed == before  # every file was settled this round
    # a file changed since (by another pass) is not settled any more
    problem._current = problem.current.replace("lib.txt", b"filler\nload deep.txt\n")
    assert not ordered.is_settled(problem.current, "lib.txt")
    lines.run(problem)
    assert problem.current["lib.txt"].data == b"load deep.txt\n"


def test_without_an_ordered_trace_the_pass_does_nothing() -> None:
    tree = _chain_tree()
    ordered = TraceOrder()
    ordered.bind({"lines": DeleteLines()})
    ordered.hints = SearchHints(trace=TraceResult("atime", frozenset(tree.entries), "ok"))
    problem = PredicateProblem(tree, _fails)
    ordered.run(problem)
    assert problem.proposed == 0 and not ordered.settled


def test_focus_protects_every_other_file() -> None:
    tree = text_tree({"a": "1\n", "b": "2\n"})
    problem = PredicateProblem(tree, lambda t: True, protected=lambda p: p == "a")
    view = focus(problem, "b")
    assert view.protected("a") and not view.protected("b")
    assert focus(problem, "a").protected("a")  # the problem's own rule still holds
    assert view.current is problem.current


class _Batched(BesideProblem):
    """A problem with two slots (``try_batch``, as the reducer offers with ``--jobs 2``): each
    candidate of a batch is decided in turn against the incumbent, the first accepted one is
    adopted and the rest are left undecided (a valid, if unfolded, answer); background work
    runs in a thread until settled."""

    def try_batch(self, phase: str, batch: Batch) -> list[bool | None]:
        outcomes: list[bool | None] = []
        for tree, description in batch.candidates:
            if True in outcomes:
                outcomes.append(None)
                continue
            outcomes.append(self.try_first(phase, [(tree, description)]) == 0)
        return outcomes


@pytest.mark.parametrize("batched", [False, True], ids=["one slot", "two slots"])
def test_a_budget_keeps_a_large_file_from_holding_up_the_chain(
    monkeypatch: Any, batched: bool
) -> None:
    import repomin.passes.ordered as ordered_module

    monkeypatch.setattr(ordered_module, "FIRST_BUDGET", 5)
    # main loads big first (40 lines, 20 needed: far more than 5 runs) and then lib
    big = "".join(f"need{i}\n" if i % 2 else f"junk{i}\n" for i in range(40))
    files = {
        "main.txt": "load big.txt\nload lib.txt\n",
        "big.txt": big,
        "lib.txt": "load heavy.txt\nload deep.txt\n",
        "heavy.txt": "x\n" * 50,
        "deep.txt": "BUG\n",
    }
    tree = text_tree(files)

    def fails(t: Tree) -> bool:
        data = t.entries.get("big.txt")
        needs = data is not None and all(
            f"need{i}\n".encode() in data.data for i in range(1, 40, 2)
        )
        return needs and _fails(t) and "big.txt" in _run(t)[0]

    ordered, instances, problem = _ordered(tree, batched)
    problem.predicate = fails
    problem.count_runs = True  # the budget counts the predicate's calls
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    ordered.run(problem)
    worked = [path for path, *_ in ordered.log]
    # big.txt was cut short, lib.txt came next in the same sweep, and its edit cut heavy.txt
    assert worked.index("lib.txt") < len(worked) - 1 - worked[::-1].index("big.txt")
    assert "heavy.txt" not in problem.current.entries
    if batched:  # the re-trace ran beside heavy.txt's deletion (next in the older order)
        assert [(runs, after) for p, runs, _, after in ordered.log if p == "heavy.txt"] == [(1, 0)]
    else:
        assert "heavy.txt" not in worked
    assert problem.current["big.txt"].data == b"".join(
        f"need{i}\n".encode() for i in range(1, 40, 2)
    )
    assert ordered.is_settled(problem.current, "big.txt")


def test_a_small_residue_goes_through_the_files_search_before_contents() -> None:
    from repomin.passes.files import DeleteFiles

    # a "build" that reads every file: the trace names all of them, main first
    files = {"main.txt": "load deep.txt\n", "deep.txt": "BUG\n"}
    files.update({f"unused{i}.txt": "x\n" * 5 for i in range(8)})
    tree = text_tree(files)
    everything = TraceResult(
        "strace", frozenset(tree.entries), "ok", order=("main.txt", *sorted(tree.entries))
    )
    ordered = TraceOrder(SearchHints(trace=everything))
    ordered.bind({"files": DeleteFiles(), "lines": DeleteLines()})
    problem = PredicateProblem(tree, _fails)
    ordered.run(problem)
    assert set(problem.current.entries) == {"main.txt", "deep.txt"}
    assert not any(path.startswith("unused") for path, *_ in ordered.log)


def test_the_view_forwards_only_what_it_names() -> None:
    # A blanket forward would let a future Problem method decide candidates past the budget.
    problem = PredicateProblem(text_tree({"a.txt": "x\n"}), lambda _t: True)
    view = focus(problem, "a.txt", budget=1)
    assert view.batch_width == 1 and view.runs == 0 and view.after(2) == []
    assert problem.accepted == []  # the problem has it; the view does not hand it on
    with pytest.raises(AttributeError):
        view.accepted  # noqa: B018


def test_with_two_slots_the_retrace_runs_beside_the_next_files_samples(
    monkeypatch: Any,
) -> None:
    tree = _chain_tree()
    ordered, instances, problem = _ordered(tree, batched=True)
    background: list[bool] = []
    at_start: dict[int, int] = {}
    between: list[int] = []  # samples decided after a re-trace started, before its cut

    def retrace(t: Tree) -> TraceResult:
        background.append(threading.current_thread() is not threading.main_thread())
        return _trace(t)

    real_retrace, real_finish = TraceCut.retrace, TraceCut.finish

    def start(self: TraceCut, p: Any, owner: str) -> None:
        at_start[self.retraces + 1] = problem.calls  # the number it takes if one is due
        real_retrace(self, p, owner)

    def finish(self: TraceCut, p: Any, result: TraceResult, number: int) -> None:
        between.append(problem.calls - at_start[number])
        real_finish(self, p, result, number)

    monkeypatch.setattr(TraceCut, "retrace", start)
    monkeypatch.setattr(TraceCut, "finish", finish)
    ordered.hints.retrace = retrace
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    ordered.run(problem)
    # every re-trace but the last file's ran beside the next file's samples; the last one is
    # left to the driver, which settles it after the next pass that draws samples
    assert len(background) >= 2 and all(background)
    assert all(n > 0 for n in between) and problem.background.waiting("ordered")
    problem.settle("ordered")
    assert not problem.background.waiting("ordered") and between[-1] == 0  # nothing beside
    assert set(problem.current.entries) == {"main.txt", "lib.txt", "deep.txt"}
    assert problem.current["main.txt"].data == b"load lib.txt\n"
    # heavy0.txt came next in the older order: deleted whole by one run, then the cut took
    # every other heavy module and helper at once
    worked = [path for path, *_ in ordered.log]
    assert [p for p in worked if p.startswith(("heavy", "help"))] == ["heavy0.txt"]


def test_a_stopped_search_waits_for_the_background_retrace_and_proposes_nothing() -> None:
    from repomin.sampling.budget import StopSearch

    tree = _chain_tree()
    ordered, instances, problem = _ordered(tree, batched=True)
    traced: list[Tree] = []

    def fails(t: Tree) -> bool:
        if traced:
            raise StopSearch("max_runs")
        return _fails(t)

    def retrace(t: Tree) -> TraceResult:
        traced.append(t)
        return _trace(t)

    ordered.hints.retrace = retrace
    problem.predicate = fails
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    with pytest.raises(StopSearch):
        ordered.run(problem)
    assert len(traced) == 1 and not problem.background.waiting("ordered")
    assert "heavy1.txt" in problem.current.entries  # no cut was proposed


class _Noted(PredicateProblem):
    """Records the events a pass notes."""

    def __init__(self, tree: Tree, predicate: Any) -> None:
        super().__init__(tree, predicate)
        self.count_runs = True
        self.notes: list[tuple[str, str, dict[str, Any]]] = []

    def note(self, phase: str, description: str, **fields: Any) -> None:
        self.notes.append((phase, description, fields))


def _read_everything(unused: int) -> tuple[Tree, TraceResult]:
    """A "test suite" that reads every file: the trace names all of them, main first; only
    main.txt and deep.txt are needed."""
    from repomin.search.deletion.paths import FLAT_LIMIT

    assert unused + 2 > FLAT_LIMIT  # a large tree: the head start's case
    files = {"main.txt": "load deep.txt\n", "deep.txt": "BUG\n"}
    files.update({f"data/d{i:03}.txt": f"datum {i}\n" for i in range(unused)})
    tree = text_tree(files)
    order = ("main.txt", "deep.txt", *sorted(p for p in tree.entries if p.startswith("data/")))
    return tree, TraceResult("strace", frozenset(tree.entries), "ok", order=order)


def test_a_large_tree_goes_through_the_files_search_first_on_a_short_leash() -> None:
    from repomin.passes.files import DeleteFiles

    tree, everything = _read_everything(120)
    ordered = TraceOrder(SearchHints(trace=everything))
    ordered.bind({"files": DeleteFiles(), "lines": DeleteLines()})
    problem = _Noted(tree, _fails)
    ordered.run(problem)
    assert set(problem.current.entries) == {"main.txt", "deep.txt"}
    # the data files went whole before any content pass saw them
    assert not any(path.startswith("data/") for path, *_ in ordered.log)
    [(phase, _, fields)] = [n for n in problem.notes if "files search first" in n[1]]
    assert phase == "ordered" and fields["files_before"] == 122 and fields["files_after"] <= 3
    assert fields["runs"] < 40  # k·log2(N/k)-like, far below one run per file


def test_the_head_start_stops_after_one_descent_without_an_acceptance() -> None:
    from repomin.passes.files import DeleteFiles

    tree, _ = _read_everything(120)
    problem = _Noted(tree, lambda t: t.file_count == tree.file_count)  # every file needed
    TraceOrder().head_start(problem, DeleteFiles())
    assert problem.current is tree
    drought = 7  # ceil(log2(122))
    assert problem.calls == drought
    [(_, text, fields)] = problem.notes
    assert fields == {"runs": drought, "files_before": 122, "files_after": 122}
    assert f"{drought} without an acceptance" in text


def test_the_head_start_is_reported_when_the_search_stops_inside_it() -> None:
    from repomin.passes.files import DeleteFiles
    from repomin.sampling.budget import StopSearch

    tree, _ = _read_everything(120)

    def stops_on_the_fourth(t: Tree) -> bool:
        if problem.calls >= 4:
            raise StopSearch("max_time")
        return False

    problem = _Noted(tree, stops_on_the_fourth)
    with pytest.raises(StopSearch):
        TraceOrder().head_start(problem, DeleteFiles())
    [(_, text, fields)] = problem.notes
    assert fields == {"runs": 4, "files_before": 122, "files_after": 122}
    assert text.endswith("(the search stopped during it)")


def test_a_file_finished_in_an_earlier_round_waits_until_the_driver_says_forget() -> None:
    tree = _chain_tree()
    ordered, instances, problem = _ordered(tree)
    instances["trace"].run(problem)  # type: ignore[attr-defined]
    ordered.run(problem)
    worked = len(ordered.log)
    ordered.run(problem)  # the next round: every file finished and unchanged
    assert len(ordered.log) == worked
    assert ordered.forget() and not ordered.settled
    ordered.run(problem)  # after forgetting: every file is worked on again
    assert len(ordered.log) == 2 * worked
    assert not ordered.forget()  # that round skipped nothing


def _uses_defined(tree: Tree) -> bool:
    """The chain fails and every ``use NAME`` line has a ``def NAME`` line in a loaded file."""
    order, failed = _run(tree)
    lines = [ln for p in order for ln in tree.entries[p].data.decode().splitlines()]
    defined = {ln.split()[1] for ln in lines if ln.startswith("def ")}
    return failed and all(ln.split()[1] in defined for ln in lines if ln.startswith("use "))


def test_a_binding_freed_by_a_later_file_goes_in_the_round_that_skips_nothing() -> None:
    """``a.txt`` (worked on first) defines X, which only ``b.txt`` uses, and ``b.txt`` does not
    need it: a (and main's ``load a.txt``) can go only after b's use is gone. The rounds after
    the first skip the finished files; the driver's round that skips nothing still deletes
    them, so the result is the same as with nothing skipped."""
    files = {
        "main.txt": "load a.txt\nload b.txt\n",
        "a.txt": "def X\nfiller\n",
        "b.txt": "use X\nfiller\nload deep.txt\n",
        "deep.txt": "BUG\n",
    }
    tree = text_tree(files)
    _, passes, _ = _ordered(tree)
    final, _ = reduce_with_reduction(passes, tree, _uses_defined)  # type: ignore[arg-type]
    assert _uses_defined(final)
    assert final["main.txt"].data == b"load b.txt\n"
    assert final["b.txt"].data == b"load deep.txt\n"
    assert "a.txt" not in final or final["a.txt"].data == b""
