"""Placement of samples on Dask workers (``cluster/placement.py``): pure bookkeeping."""

from __future__ import annotations

from repomin.cluster.placement import Placement


def test_the_least_busy_worker_gets_the_sample_then_the_cheapest() -> None:
    p = Placement(["a", "b", "c"])
    cost = {"a": 5.0, "b": 1.0, "c": 9.0}.__getitem__
    assert p.acquire(cost, set()) == "b"  # all idle: cheapest
    assert p.acquire(cost, set()) == "a"  # b busy: cheapest of the idle
    assert p.acquire(cost, set()) == "c"
    assert p.acquire(cost, set()) == "b"  # all busy once: cheapest again
    p.release("a")
    assert p.acquire(cost, set()) == "a"  # the only one with one sample in flight


def test_equal_costs_take_turns_and_excluded_workers_get_nothing() -> None:
    p = Placement(["a", "b", "c"])
    flat = lambda w: 0.0  # noqa: E731
    seen = []
    for _ in range(6):
        w = p.acquire(flat, set())
        assert w is not None
        seen.append(w)
        p.release(w)
    assert set(seen) == {"a", "b", "c"}
    assert p.acquire(flat, {"a", "b", "c"}) is None
    assert p.acquire(flat, {"a", "b"}) == "c"


def test_the_worker_list_follows_the_scheduler() -> None:
    p = Placement(["a", "b"])
    assert p.acquire(lambda w: 0.0 if w == "a" else 1.0, set()) == "a"
    p.update(["a", "c"])  # b left, c joined idle
    assert p.workers == ["a", "c"]
    assert p.acquire(lambda w: 0.0, set()) == "c"  # a still has one in flight
    p.update([])  # an empty answer never empties the list
    assert p.workers == ["a", "c"]
    p.release("b")  # a worker that left: ignored
    p.release("a")
    p.release("a")  # never below zero
    assert p.acquire(lambda w: 0.0 if w == "a" else 1.0, set()) == "a"


def test_the_shipping_cost_counts_the_delta_and_the_missing_blobs() -> None:
    from repomin.cluster.placement import shipping_cost

    def rec(d: str) -> tuple[str, int, int | None, str]:
        return ("file", 0o644, None, d)

    old = {"a": rec("1"), "b": rec("2"), "c": rec("3")}
    target = {"a": rec("1"), "b": rec("2"), "d": rec("4")}
    cost = shipping_cost(
        target,
        {"1", "2", "4"},
        {"old": (old, {"w1"})},  # type: ignore[arg-type]
        {"w1": {"1", "2", "3"}, "w2": {"1"}},
    )
    assert cost("w1") == 2 + 1  # delta: c removed, d added; blob 4 missing
    assert cost("w2") == 3 + 2  # no anchor: the full manifest; blobs 2 and 4 missing
    assert cost("w3") == 3 + 3
