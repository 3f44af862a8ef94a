"""Several flaky candidates in flight on one budget of sample slots.

Under a flaky (sequential) policy a candidate is decided by an exact sequential test on its own
stream of samples, and the test keeps only as many samples in flight as every outcome path uses
(``SequentialDesign.surely_needed``). With ``--jobs N`` the running candidate therefore often
leaves slots idle. :func:`first_accepted_lanes` fills them with samples of the *next*
candidates of the same proposal sequence, all against the same incumbent:

* a :class:`SlotPool` runs at most ``jobs`` samples at once in total; every candidate draws its
  samples through its own :class:`Lane`, and lanes are served in proposal order: a later lane
  gets a slot only when every earlier lane has all the samples it asked for in flight (no
  preemption: a sample, once started, runs to its end);
* a further candidate is started only when a slot is idle (free, and no lane asks for it);
* the winner is the first accepted candidate *in proposal order*, decided exactly as one at a
  time: a later verdict is used only once every earlier candidate is rejected; candidates
  still running when an earlier one is accepted are cancelled between samples (``superseded``).

A lane hands its samples to the candidate's test in the order they were *submitted* (sequence
numbers 0, 1, ...), never in finishing order, so every test sees a fixed sequence of its own
fresh samples (ARCHITECTURE.md, "Deciding"; docs/statistics.md §3b).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar, cast

from repomin.sampling.budget import Cancelled
from repomin.sampling.parallel import Judged, Race, supersede_rest

T = TypeVar("T")
C = TypeVar("C")


class SlotPool:
    """``jobs`` sample slots shared by lanes, earlier lanes first (see the module doc)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self.cond = threading.Condition()
        self._lanes: list[Lane[object]] = []  # open lanes, in proposal order
        self._running = 0
        #: Most samples in flight at once (tests and the benchmark read it).
        self.peak = 0
        self._orphans: list[BaseException] = []
        self._executor = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="repomin-l")

    def lane(self) -> Lane[T]:
        """A new lane, after every open one. It claims one slot at once (so the race does not
        start another candidate before this one asked for its samples)."""
        with self.cond:
            lane: Lane[T] = Lane(self)
            self._lanes.append(cast("Lane[object]", lane))
            return lane

    def idle(self) -> bool:
        """A free slot that no open lane asks for (call under ``cond``)."""
        return self._running < self.jobs and not any(lane.deficit() for lane in self._lanes)

    def dispatch(self) -> None:
        """Give free slots to the lanes that ask, in order (call under ``cond``)."""
        for lane in self._lanes:
            while self._running < self.jobs and lane.deficit() and lane.bound():
                self._running += 1
                self.peak = max(self.peak, self._running)
                lane.submit(self._executor)
            if self._running >= self.jobs:
                break
        self.cond.notify_all()

    def finished(self) -> None:
        """A sample ended: free its slot."""
        with self.cond:
            self._running -= 1
            self.dispatch()

    def orphan(self, future: Future[T]) -> None:
        """A sample nobody will read ended: what it raised is not lost (see ``close``)."""
        error = None if future.cancelled() else future.exception()
        if error is not None and not isinstance(error, Cancelled):
            with self.cond:
                self._orphans.append(error)

    def remove(self, lane: Lane[T]) -> None:
        with self.cond:
            self._lanes = [other for other in self._lanes if other is not lane]
            self.dispatch()

    def close(self, check: bool = True) -> None:
        """Wait for every sample still running; re-raise what an unread sample raised."""
        self._executor.shutdown(wait=True)
        if check and self._orphans:
            raise self._orphans[0]


class Lane(Generic[T]):
    """One candidate's samples through a :class:`SlotPool` (a ``parallel.Samples``)."""

    def __init__(self, pool: SlotPool) -> None:
        self._pool = pool
        self._fn: Callable[[int], T] | None = None
        self._pending: deque[Future[T]] = deque()
        self._want = 1
        self._busy = False  # the candidate is reading its latest result
        self._seq = 0
        self.closed = False

    def __enter__(self) -> Lane[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, fn: Callable[[int], T]) -> Lane[T]:
        """Bind the sample function (``fn(seq)``); nothing runs before the first ``next``."""
        with self._pool.cond:
            self._fn = fn
        return self

    def bound(self) -> bool:
        return self._fn is not None

    def deficit(self) -> int:
        """Samples this lane asks for beyond those submitted (call under the pool's lock)."""
        if self.closed:
            return 0
        return max(0, self._want - len(self._pending) - int(self._busy))

    def submit(self, executor: ThreadPoolExecutor) -> None:
        fn, seq = cast("Callable[[int], T]", self._fn), self._seq
        self._seq += 1

        def run() -> T:
            try:
                return fn(seq)
            finally:
                self._pool.finished()

        self._pending.append(executor.submit(run))

    def next(self, ahead: int | None = None) -> T:
        """The next result in submission order, with up to ``ahead`` (default: every slot)
        samples of this lane submitted for it; waits for a slot when none is free."""
        pool = self._pool
        with pool.cond:
            self._busy = False
            self._want = min(pool.jobs, max(1, ahead or pool.jobs))
            pool.dispatch()
            while not self._pending:
                pool.cond.wait()
            future = self._pending.popleft()
            self._busy = True
        return future.result()

    def close(self) -> None:
        """No more samples for this lane; those running finish (their results are dropped)."""
        with self._pool.cond:
            if self.closed:
                return
            self.closed = True
            unread = list(self._pending)
        for future in unread:
            future.add_done_callback(self._pool.orphan)
        self._pool.remove(self)


def evaluate_all_lanes(
    candidates: Sequence[C],
    evaluate: Callable[[C, threading.Event, Lane[bool]], T],
    jobs: int,
) -> list[T]:
    """``parallel.evaluate_all`` for candidates decided on many samples each: every candidate
    at once, each through its own lane of one :class:`SlotPool` of ``jobs`` slots (earlier
    candidates first), none cancelled by another's verdict; order preserved. An exception
    (budget, interrupt) cancels the rest and propagates."""
    if not candidates:
        return []
    pool = SlotPool(jobs)
    cancel = threading.Event()
    lanes: list[Lane[bool]] = [pool.lane() for _ in candidates]  # in proposal order

    def one(i: int) -> T:
        try:
            return evaluate(candidates[i], cancel, lanes[i])
        finally:
            lanes[i].close()

    runners = ThreadPoolExecutor(max_workers=len(candidates), thread_name_prefix="repomin-r")
    futures = [runners.submit(one, i) for i in range(len(candidates))]
    failed = True
    try:
        results = [f.result() for f in futures]
        failed = False
        return results
    finally:
        if failed:  # the others stop at their next sample (their lanes stay open until then)
            cancel.set()
            for future in futures:
                with contextlib.suppress(BaseException):
                    future.result()
        runners.shutdown(wait=True)
        pool.close(check=not failed)


def first_accepted_lanes(
    candidates: Iterable[C],
    evaluate: Callable[[C, threading.Event, Lane[bool]], T],
    accepted: Callable[[T], bool],
    jobs: int,
    key: Callable[[C], str] = lambda c: str(id(c)),
    pool: SlotPool | None = None,
) -> Race[C, T]:
    """``parallel.first_accepted`` for candidates decided on many samples each: up to ``jobs``
    candidates in flight, sharing ``jobs`` sample slots (see the module doc). A candidate
    whose ``key`` (tree digest) equals one in flight waits for it (then it is a cache hit, as
    one at a time). Statuses and exceptions as in ``first_accepted``."""
    race = _LaneRace(iter(candidates), evaluate, accepted, key, pool or SlotPool(jobs))
    failed = True
    try:
        outcome = race.run()
        failed = False
        return outcome
    finally:
        race.finish(failed)


class _LaneRace(Generic[C, T]):
    """The state of one :func:`first_accepted_lanes` call."""

    def __init__(
        self,
        it: Iterator[C],
        evaluate: Callable[[C, threading.Event, Lane[bool]], T],
        accepted: Callable[[T], bool],
        key: Callable[[C], str],
        pool: SlotPool,
    ) -> None:
        self.it, self.evaluate, self.accepted, self.key = it, evaluate, accepted, key
        self.pool = pool
        self.runners = ThreadPoolExecutor(max_workers=pool.jobs, thread_name_prefix="repomin-r")
        self.inflight: dict[int, tuple[C, Future[T], threading.Event]] = {}
        self.done: dict[int, tuple[C, T | None, BaseException | None]] = {}
        self.results: list[Judged[C, T]] = []
        self.held: C | None = None  # pulled, not started yet (an equal one is in flight)
        self.exhausted = False
        self.index = 0  # candidates started
        self.decided = 0  # every index below this is decided (rejected)

    def run(self) -> Race[C, T]:
        while True:
            start = self._wait()
            while self.decided in self.done:
                cand, maybe, exc = self.done.pop(self.decided)
                if exc is not None:
                    raise exc
                res = cast(T, maybe)
                if self.accepted(res):
                    self.results.append(Judged(self.decided, cand, res, "accepted"))
                    supersede_rest(self.inflight, self.done, self.results)
                    return Race(self.decided, cand, res, self.results)
                self.results.append(Judged(self.decided, cand, res, "rejected"))
                self.decided += 1
            if self.exhausted and self.held is None and self.decided == self.index:
                return Race(None, None, None, self.results)
            if start:
                self._start()

    def _wait(self) -> bool:
        """Wait for a verdict to decide or an idle slot to fill; whether to start one."""
        pool = self.pool
        with pool.cond:
            while True:
                for i in [i for i, (_, f, _) in self.inflight.items() if f.done()]:
                    cand, fut, _ = self.inflight.pop(i)
                    exc = fut.exception()
                    self.done[i] = (cand, None if exc else fut.result(), exc)
                busy = {self.key(c) for c, _, _ in self.inflight.values()}
                more = self.held is not None or not self.exhausted
                free = self.held is None or self.key(self.held) not in busy
                start = more and free and len(self.inflight) < pool.jobs and pool.idle()
                if start or self.decided in self.done:
                    return start
                if not more and not self.inflight:
                    return False
                pool.cond.wait()

    def _start(self) -> None:
        """Start the held candidate or the next one (pulled outside the lock: proposing may
        take time); an equal one in flight makes it wait."""
        if self.held is None:
            try:
                self.held = next(self.it)
            except StopIteration:
                self.exhausted = True
                return
        cand = self.held
        if self.key(cand) in {self.key(c) for c, _, _ in self.inflight.values()}:
            return
        lane: Lane[bool] = self.pool.lane()
        cancel = threading.Event()
        future = self.runners.submit(self._evaluate, cand, cancel, lane)
        self.inflight[self.index] = (cand, future, cancel)
        future.add_done_callback(self._notify)
        self.index, self.held = self.index + 1, None

    def _evaluate(self, cand: C, cancel: threading.Event, lane: Lane[bool]) -> T:
        try:
            return self.evaluate(cand, cancel, lane)
        finally:
            lane.close()

    def _notify(self, _: object) -> None:
        with self.pool.cond:
            self.pool.cond.notify_all()

    def finish(self, failed: bool) -> None:
        """Cancel what is still in flight (after an exception), wait for every candidate and
        sample; an exception no candidate read is raised (unless one is on its way)."""
        for _, _, ev in self.inflight.values():
            ev.set()
        for _, fut, _ in self.inflight.values():
            with contextlib.suppress(BaseException):  # the one on its way is raised
                fut.result()
        self.runners.shutdown(wait=True)
        self.pool.close(check=not failed)
