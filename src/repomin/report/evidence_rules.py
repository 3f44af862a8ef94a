"""Rules on the report's statistical evidence: the event log (holdout: :mod:`.holdout_rules`).

Owns :func:`check_events`. Every statistic is recomputed from the recorded counts ("derived,
never assigned"): an event's Clopper--Pearson bounds and its spent family alpha with the
functions the oracle used. Pure functions over a report that already matches the shipped JSON
Schema.
"""

from __future__ import annotations

from typing import Any

from repomin.report.rules import ABS_TOL, Problem, close, first_break
from repomin.sampling import stats

_EVENT_FAMILY = ("candidate_family_index", "candidate_family_confidence", "candidate_family_alpha")


def check_events(report: dict[str, Any]) -> list[Problem]:
    events: list[dict[str, Any]] = report["events"]
    problems: list[Problem] = []
    indexes = [e["index"] for e in events]
    if indexes != list(range(1, len(events) + 1)):
        problems.append(
            Problem(
                "events.index",
                f"event indexes are not 1..{len(events)} in order "
                f"(first break at position {first_break(indexes)})",
            )
        )
    spending = report["execution"].get("family_spending")
    for event in events:
        problems += _check_event(event, spending)
    return problems


def _check_event(event: dict[str, Any], spending: str | None) -> list[Problem]:
    where = f"event {event['index']}"
    problems, counts = _event_counts(event, where)
    problems += _event_bounds(event, where, counts)
    problems += _event_family(event, where, spending)
    return problems


def _event_counts(
    event: dict[str, Any], where: str
) -> tuple[list[Problem], tuple[int, int] | None]:
    """Problems with oracle_passes/runs/rate, and the counts when they are usable."""
    passes, runs, rate = (
        event.get("oracle_passes"),
        event.get("oracle_runs"),
        event.get("oracle_rate"),
    )
    problems: list[Problem] = []
    counts: tuple[int, int] | None = None
    if (passes is None) != (runs is None):
        problems.append(
            Problem("events.oracle_counts", f"{where}: oracle_passes and oracle_runs go together")
        )
    elif passes is not None and runs is not None:
        if passes > runs:
            problems.append(
                Problem(
                    "events.oracle_counts", f"{where}: oracle_passes {passes} > oracle_runs {runs}"
                )
            )
        elif runs > 0:
            counts = (passes, runs)
    if rate is None:
        return problems, counts
    if counts is None:
        if not problems:
            problems.append(
                Problem("events.oracle_rate", f"{where}: oracle_rate without oracle runs")
            )
    elif not close(rate, counts[0] / counts[1]):
        problems.append(
            Problem(
                "events.oracle_rate",
                f"{where}: oracle_rate {rate} != oracle_passes / oracle_runs "
                f"= {counts[0]}/{counts[1]}",
            )
        )
    return problems, counts


def _event_bounds(
    event: dict[str, Any], where: str, counts: tuple[int, int] | None
) -> list[Problem]:
    lower, upper, conf = (
        event.get("lower_bound"),
        event.get("upper_bound"),
        event.get("bound_confidence"),
    )
    problems: list[Problem] = []
    if lower is not None and upper is not None and lower > upper:
        problems.append(Problem("events.bounds", f"{where}: lower_bound {lower} > upper {upper}"))
    if counts is None:
        return problems
    passes, runs = counts
    rate = passes / runs
    if (lower is not None and lower > rate + ABS_TOL) or (
        upper is not None and upper < rate - ABS_TOL
    ):
        problems.append(
            Problem("events.bounds", f"{where}: the bounds do not contain {passes}/{runs}")
        )
    if conf is None:
        return problems
    for field, value, fn in (
        ("lower_bound", lower, stats.lower_bound),
        ("upper_bound", upper, stats.upper_bound),
    ):
        exact = fn(passes, runs, conf)
        if value is not None and not close(value, exact):
            problems.append(
                Problem(
                    "events.bounds",
                    f"{where}: {field} {value} != exact {exact!r} for {passes}/{runs} at "
                    f"confidence {conf}",
                )
            )
    return problems


def _event_family(event: dict[str, Any], where: str, spending: str | None) -> list[Problem]:
    family = [k for k in _EVENT_FAMILY if k in event]
    if not family:
        return []
    if len(family) != len(_EVENT_FAMILY):
        missing = [k for k in _EVENT_FAMILY if k not in event]
        return [
            Problem(
                "events.family",
                f"{where}: candidate family fields are all-or-none; {', '.join(missing)} missing",
            )
        ]
    if spending is None:
        return []
    index = event["candidate_family_index"]
    conf, alpha = event["candidate_family_confidence"], event["candidate_family_alpha"]
    spent = stats.spend_alpha(1.0 - conf, index, spending)
    if close(alpha, spent):
        return []
    return [
        Problem(
            "events.family",
            f"{where}: candidate_family_alpha {alpha} != {spending} spending {spent!r} at index "
            f"{index}, confidence {conf}",
        )
    ]
