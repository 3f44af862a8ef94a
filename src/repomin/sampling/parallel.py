"""Parallel samples and speculative candidate evaluation: the thread pools of sample slots.

Not all concurrency lives here: ``sampling/lanes.py`` shares the slots among several flaky
candidates, ``search/`` runs work and final runs beside the search, and ``app/`` starts the
runner and the traced run beside the baseline (ARCHITECTURE.md, "The map", Invariants).

``first_accepted`` evaluates candidates in proposal order with up to ``jobs`` in flight and
returns the *first accepted in proposal order* (not the first to finish), so that for a
deterministic command ``--jobs N`` yields the same payload as ``--jobs 1``. Later candidates
still running when an earlier one is accepted are cancelled between samples; their evidence so
far stays counted (``superseded``), and completed verdicts stay in the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, Protocol, TypeVar, cast

T = TypeVar("T")
C = TypeVar("C")
T_co = TypeVar("T_co", covariant=True)
C_contra = TypeVar("C_contra", contravariant=True)


class Judged(NamedTuple, Generic[C, T]):
    """One candidate of a race or a folding round, once it is over for it."""

    #: Its place in proposal order.
    order: int
    candidate: C
    #: Its verdict, or None when it never finished (cancelled between samples).
    result: T | None
    #: ``accepted``, ``rejected`` or ``superseded`` (after an earlier acceptance, or past the
    #: end of a folding round).
    status: str


class Samples(Protocol[T_co]):
    """One candidate's samples, handed out in submission order (:class:`SampleStream`, or a
    ``lanes.Lane`` sharing slots with other candidates)."""

    def next(self, ahead: int | None = None) -> T_co: ...


def map_samples(fn: Callable[[int], T], n: int, jobs: int) -> list[T]:
    """``[fn(0), ..., fn(n-1)]`` with up to ``jobs`` running at once (order preserved)."""
    if jobs <= 1 or n <= 1:
        return [fn(i) for i in range(n)]
    with ThreadPoolExecutor(max_workers=min(jobs, n), thread_name_prefix="repomin-s") as pool:
        futures = [pool.submit(fn, i) for i in range(n)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def evaluate_all(
    candidates: Sequence[C], evaluate: Callable[[C, threading.Event], T], jobs: int
) -> list[T]:
    """``[evaluate(c) for c in candidates]`` with up to ``jobs`` in flight (order preserved):
    a batch whose candidates are all useful, so none is cancelled by another's verdict.
    An exception (budget, interrupt) cancels the rest and propagates."""
    if jobs <= 1 or len(candidates) <= 1:
        return [evaluate(c, threading.Event()) for c in candidates]
    cancel = threading.Event()
    width = min(jobs, len(candidates))
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="repomin-b")
    futures = [pool.submit(evaluate, c, cancel) for c in candidates]
    try:
        return [f.result() for f in futures]
    except BaseException:
        cancel.set()
        for f in futures:
            f.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def in_background(fn: Callable[[], T]) -> Future[T]:
    """``fn()`` in a thread of its own, beside the search's samples (a traced run that a
    deterministic search with several slots does not wait for: ``passes.ordered``)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repomin-bg")
    try:
        return pool.submit(fn)
    finally:
        pool.shutdown(wait=False)  # the thread ends with ``fn``


@dataclass(slots=True)
class Race(Generic[C, T]):
    """Outcome of a speculative round."""

    winner: int | None
    winner_candidate: C | None
    winner_result: T | None
    results: list[Judged[C, T]]


def first_accepted(
    candidates: Iterable[C],
    evaluate: Callable[[C, threading.Event], T],
    accepted: Callable[[T], bool],
    jobs: int,
) -> Race[C, T]:
    """Evaluate lazily produced candidates; stop at the first accepted one in order.

    ``status`` per evaluated candidate is ``"rejected"``, ``"accepted"`` (the winner),
    ``"superseded"`` (finished or cancelled after an earlier acceptance). Exceptions from
    ``evaluate`` (budget, interrupt) cancel everything in flight and propagate.
    """
    it: Iterator[C] = iter(candidates)
    results: list[Judged[C, T]] = []
    if jobs <= 1:
        for i, cand in enumerate(it):
            res = evaluate(cand, threading.Event())
            if accepted(res):
                results.append(Judged(i, cand, res, "accepted"))
                return Race(i, cand, res, results)
            results.append(Judged(i, cand, res, "rejected"))
        return Race(None, None, None, results)

    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="repomin-c")
    inflight: dict[int, tuple[C, Future[T], threading.Event]] = {}
    done: dict[int, tuple[C, T | None, BaseException | None]] = {}
    next_index = 0
    exhausted = False
    decided = 0  # every index below this is decided (rejected)
    try:
        while True:
            while not exhausted and len(inflight) < jobs:
                try:
                    cand = next(it)
                except StopIteration:
                    exhausted = True
                    break
                ev = threading.Event()
                inflight[next_index] = (cand, pool.submit(evaluate, cand, ev), ev)
                next_index += 1
            if not inflight:
                return Race(None, None, None, results)
            wait([f for _, f, _ in inflight.values()], return_when=FIRST_COMPLETED)
            for idx in list(inflight):
                cand, fut, _ = inflight[idx]
                if fut.done():
                    del inflight[idx]
                    exc = fut.exception()
                    done[idx] = (cand, None if exc else fut.result(), exc)
            while decided in done:
                cand, maybe, exc = done.pop(decided)
                if exc is not None:
                    raise exc
                res = cast(T, maybe)
                if accepted(res):
                    results.append(Judged(decided, cand, res, "accepted"))
                    supersede_rest(inflight, done, results)
                    return Race(decided, cand, res, results)
                results.append(Judged(decided, cand, res, "rejected"))
                decided += 1
    except BaseException:
        for _, fut, ev in inflight.values():
            ev.set()
            fut.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def supersede_rest(
    inflight: dict[int, tuple[C, Future[T], threading.Event]],
    done: dict[int, tuple[C, T | None, BaseException | None]],
    results: list[Judged[C, T]],
) -> None:
    """The winner is decided: cancel every later candidate between samples; each one is
    ``superseded`` (a verdict it completed stays in the cache). Shared by the deterministic
    race here and the flaky lanes (``repomin.sampling.lanes``)."""
    for _, _, ev in inflight.values():
        ev.set()
    for idx, (cand, fut, _) in sorted(inflight.items()):
        try:
            res: T | None = fut.result()
        except BaseException:
            res = None
        results.append(Judged(idx, cand, res, "superseded"))
    inflight.clear()
    for idx, (cand, res, _) in sorted(done.items()):
        results.append(Judged(idx, cand, res, "superseded"))
    done.clear()


class SampleStream(Generic[T]):
    """Results of calls ``fn(0)``, ``fn(1)``, ... (the sample's sequence number), up to
    ``width`` in flight, in submission order.

    Used for several samples of one candidate: the consumer decides after each result (in
    order, so a sequential test sees a fixed sequence) and closes the stream once decided; at
    most ``width - 1`` samples run past the decision. Their results are discarded (they are
    independent of the decision, so the test stays exact) but still counted as oracle runs.
    """

    def __init__(self, fn: Callable[[int], T], width: int) -> None:
        self._fn = fn
        self._seq = 0
        self._width = max(1, width)
        self._pool = (
            ThreadPoolExecutor(max_workers=self._width, thread_name_prefix="repomin-s")
            if self._width > 1
            else None
        )
        self._pending: list[Future[T]] = []

    def __enter__(self) -> SampleStream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def next(self, ahead: int | None = None) -> T:
        """The next result; at most ``ahead`` (default ``width``) samples in flight for it."""
        if self._pool is None:
            self._seq += 1
            return self._fn(self._seq - 1)
        while len(self._pending) < min(self._width, max(1, ahead or self._width)):
            self._pending.append(self._pool.submit(self._fn, self._seq))
            self._seq += 1
        return self._pending.pop(0).result()

    def close(self) -> None:
        if self._pool is not None:
            for fut in self._pending:
                fut.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pending.clear()


# -- folding several accepted candidates (deterministic commands) ------------------------------

P = TypeVar("P")


class Folded(NamedTuple, Generic[C, P, T]):
    """An accepted candidate folded into a round's result."""

    #: Its place in proposal order.
    order: int
    candidate: C
    #: What ran: the candidate as the caller prepared it (rebased onto the round's merge).
    prepared: P
    result: T


@dataclass(slots=True)
class Fold(Generic[C, P, T]):
    """Outcome of a folding round: every folded (accepted) candidate, in proposal order, and
    every candidate of the round, in proposal order."""

    accepted: list[Folded[C, P, T]]
    results: list[Judged[C, T]]


class FoldSteps(Protocol[C_contra, P, T]):
    """What :func:`fold_accepted` asks of its caller for one round."""

    def prepare(self, candidate: C_contra) -> P | None:
        """What to evaluate (the candidate rebased onto everything folded so far), or None
        when it cannot be merged, which ends the round. Called at dispatch, in proposal
        order, in the calling thread."""
        ...

    def evaluate(self, prepared: P, cancel: threading.Event) -> T:
        """The verdict (in a slot's thread; ``cancel``: stop between samples)."""
        ...

    def accepted(self, result: T) -> bool: ...

    def fold(self, prepared: P) -> bool:
        """Fold an accepted candidate in (in proposal order); False on a conflict, which
        ends the round."""
        ...

    def spare(self) -> Callable[[], object] | None:
        """Work for a slot left idle once the candidates are exhausted (speculative work
        whose results the caller finds later in its cache), or None."""
        ...


def fold_accepted(
    candidates: Iterable[C], steps: FoldSteps[C, P, T], jobs: int, max_accepted: int
) -> Fold[C, P, T]:
    """Evaluate candidates with ``jobs`` in flight and fold *every* accepted one into the
    round's result instead of stopping at the first.

    Each candidate is prepared when it is dispatched and, once accepted and decided in
    proposal order, folded in (:class:`FoldSteps`); the round ends at ``max_accepted`` folded
    candidates, at a candidate that cannot be prepared and at a conflict. The set folded
    therefore depends only on the verdicts, never on completion order. Candidates past the end
    are ``superseded`` (cancelled between samples, or never started). Exceptions cancel
    everything and propagate. Once the candidates are exhausted, slots left idle by the last
    ones run the steps' spare work; its results are not part of the round.
    """
    width = max(1, jobs)
    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="repomin-f")
    state = _FoldRound(iter(candidates), steps, width, max_accepted, pool)
    try:
        while True:
            state.dispatch()
            state.run_spares()
            if state.decided not in state.done:
                if not state.inflight:
                    break
                wait([f for _, _, f, _ in state.inflight.values()], return_when=FIRST_COMPLETED)
            state.collect()
            state.decide()
            if state.end is not None and state.decided >= state.end:
                state.supersede_rest()
                break
        for f in state.spares:
            f.result()
        return Fold(state.kept, sorted(state.results, key=lambda r: r.order))
    except BaseException:
        for _, _, fut, ev in state.inflight.values():
            ev.set()
            fut.cancel()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass(slots=True)
class _FoldRound(Generic[C, P, T]):
    """The state of one :func:`fold_accepted` round and its steps (all in the calling thread)."""

    it: Iterator[C]
    steps: FoldSteps[C, P, T]
    width: int
    max_accepted: int
    pool: ThreadPoolExecutor
    results: list[Judged[C, T]] = field(default_factory=list)
    spares: list[Future[object]] = field(default_factory=list)
    kept: list[Folded[C, P, T]] = field(default_factory=list)
    inflight: dict[int, tuple[C, P, Future[T], threading.Event]] = field(default_factory=dict)
    done: dict[int, tuple[C, P, T | None, BaseException | None]] = field(default_factory=dict)
    next_index: int = 0
    pulling: bool = True
    end: int | None = None  # first index outside the round
    decided: int = 0

    def dispatch(self) -> None:
        """Prepare and submit the next candidates, in proposal order, up to ``width`` in
        flight; a candidate that cannot be prepared ends the round."""
        while self.pulling and len(self.inflight) < self.width:
            try:
                cand = next(self.it)
            except StopIteration:
                self.pulling = False
                break
            prepared = self.steps.prepare(cand)
            if prepared is None:
                self.results.append(Judged(self.next_index, cand, None, "superseded"))
                self.end, self.pulling = self.next_index, False
                break
            ev = threading.Event()
            fut = self.pool.submit(self.steps.evaluate, prepared, ev)
            self.inflight[self.next_index] = (cand, prepared, fut, ev)
            self.next_index += 1

    def run_spares(self) -> None:
        """Candidates exhausted: give the slots left idle the caller's ``spare`` work."""
        self.spares = [f for f in self.spares if not f.done()]
        while not self.pulling and self.end is None and self.inflight:
            if len(self.inflight) + len(self.spares) >= self.width:
                break
            work = self.steps.spare()
            if work is None:
                break
            self.spares.append(self.pool.submit(work))

    def collect(self) -> None:
        """Move every finished evaluation from ``inflight`` to ``done``."""
        for idx in list(self.inflight):
            cand, prepared, fut, _ = self.inflight[idx]
            if fut.done():
                del self.inflight[idx]
                exc = fut.exception()
                self.done[idx] = (cand, prepared, None if exc else fut.result(), exc)

    def decide(self) -> None:
        """Decide the finished candidates in proposal order: reject, or fold an accepted one
        (the round ends at ``max_accepted`` or at a conflict)."""
        while self.decided in self.done and (self.end is None or self.decided < self.end):
            cand, prepared, maybe, exc = self.done.pop(self.decided)
            if exc is not None:
                raise exc
            res = cast(T, maybe)
            if not self.steps.accepted(res):
                self.results.append(Judged(self.decided, cand, res, "rejected"))
            elif self.steps.fold(prepared):
                self.kept.append(Folded(self.decided, cand, prepared, res))
                self.results.append(Judged(self.decided, cand, res, "accepted"))
                if len(self.kept) >= self.max_accepted:
                    self.end = self.decided + 1
            else:
                self.results.append(Judged(self.decided, cand, res, "superseded"))
                self.end = self.decided
                return
            self.decided += 1

    def supersede_rest(self) -> None:
        """The round is over: cancel the candidates past its end between samples; each one
        (running or finished) is ``superseded``."""
        self.pulling = False
        for _, _, _, ev in self.inflight.values():
            ev.set()
        for idx, (cand, _, fut, _) in sorted(self.inflight.items()):
            try:
                late: T | None = fut.result()
            except BaseException:
                late = None
            self.results.append(Judged(idx, cand, late, "superseded"))
        for idx, (cand, _, late, _) in sorted(self.done.items()):
            self.results.append(Judged(idx, cand, late, "superseded"))
        self.inflight.clear()
