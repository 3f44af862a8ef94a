"""The failure's identity, inferred from the baseline and pinned for the whole reduction.

``--match`` says which text the failure prints; it cannot say that the failure is still the
*same*: a reduction that deletes an assertion can leave its message in the source a traceback
echoes, or make a neighbouring line fail with another exception whose text happens to match.
So by default (``--identity auto``) ReproMin reads what every reproducing baseline run reports
-- the facets of :mod:`repomin.failure.facets`: Python/pytest/unittest exception, Java root
cause, Node error, compiler error code, signal, sanitizer report -- and pins, per facet, the
values that *every* reproducing baseline run shows. From then on a sample reproduces only when,
for each pinned facet, it shows at least one pinned value (a test run that fails three tests
pins all three; a sample keeps the failure when one of them still fails the same way).

A facet that only some reproducing runs show, or on which they disagree, is not pinned; the
reason is kept in :attr:`Identity.notes` and shown. Inference reads the baseline's outputs and
runs nothing. The identity is recorded in the report (``failure_identity``) and replay checks
the recorded one; it is never relearnt from later output.

Owns :class:`Identity`, :func:`infer_identity` and the comparison of two values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from repomin.failure.facets import FACETS, Candidate
from repomin.failure.normalise import Normaliser
from repomin.runners.base import Outcome

#: ``--identity`` values: infer and pin (the default), or pin nothing beyond the spec.
IDENTITY_MODES = ("auto", "off")

#: At most this many values are pinned per facet (a suite failing hundreds of tests).
VALUE_LIMIT = 64


def same_test(pinned: str, observed: str) -> bool:
    """Two test ids name the same test: equal, or pytest node ids whose test parts are equal
    and whose paths agree from the end (pytest writes node ids relative to its rootdir, which
    moves when a reduction deletes the configuration file that anchored it)."""
    if pinned == observed:
        return True
    if "::" not in pinned or "::" not in observed:
        return False
    left_path, left_rest = pinned.split("::", 1)
    right_path, right_rest = observed.split("::", 1)
    if left_rest != right_rest:
        return False
    short, long = sorted((left_path, right_path), key=len)
    return long.endswith("/" + short)


def same_value(pinned: Mapping[str, str], observed: Mapping[str, str]) -> bool:
    """One pinned facet value and one observed value describe the same failure."""
    if pinned.keys() != observed.keys():
        return False
    for key, value in pinned.items():
        if key == "test":
            if not same_test(value, observed[key]):
                return False
        elif value != observed[key]:
            return False
    return True


def observe(outcome: Outcome, names: Iterable[str] = FACETS) -> dict[str, list[Candidate]]:
    """Every facet value this outcome shows, for the named facets."""
    norm = Normaliser.for_outcome(outcome)
    found: dict[str, list[Candidate]] = {}
    for name in names:
        values = _unique(FACETS[name](outcome, norm))
        if values:
            found[name] = values
    return found


def _unique(values: list[Candidate]) -> list[Candidate]:
    seen: set[tuple[tuple[str, str], ...]] = set()
    kept: list[Candidate] = []
    for value in values:
        key = tuple(sorted(value.items()))
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


@dataclass(frozen=True)
class Identity:
    """The pinned facets (name -> the values a sample may show) and why others were not."""

    facets: Mapping[str, tuple[Candidate, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def matches(self, outcome: Outcome) -> bool:
        """Does this outcome show, for every pinned facet, at least one pinned value?"""
        if not self.facets:
            return True
        observed = observe(outcome, self.facets)
        for name, pinned in self.facets.items():
            seen = observed.get(name, [])
            if not any(same_value(p, o) for p in pinned for o in seen):
                return False
        return True

    def mismatch(self, outcome: Outcome) -> str | None:
        """Which pinned facet this outcome misses, and what it showed instead (``None``: none)."""
        observed = observe(outcome, self.facets)
        for name, pinned in self.facets.items():
            seen = observed.get(name, [])
            if not any(same_value(p, o) for p in pinned for o in seen):
                shown = describe_value(name, seen[0]) if seen else "nothing of that kind"
                return f"identity {name} {describe_value(name, pinned[0])} not shown ({shown})"
        return None

    def describe(self) -> list[str]:
        """One line per pinned facet, then one per note."""
        lines = []
        for name, values in self.facets.items():
            more = f" (or one of {len(values) - 1} more)" if len(values) > 1 else ""
            lines.append(f"{name}: {describe_value(name, values[0])}{more}")
        return lines + list(self.notes)

    def to_json(self) -> dict[str, Any]:
        return {
            "facets": {name: [dict(v) for v in values] for name, values in self.facets.items()},
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Identity:
        """The recorded identity; facets this build does not know are refused by the caller."""
        raw = data.get("facets") or {}
        facets = {
            str(name): tuple({str(k): str(v) for k, v in value.items()} for value in values)
            for name, values in raw.items()
        }
        return cls(facets, tuple(str(note) for note in data.get("notes") or ()))


def describe_value(name: str, value: Mapping[str, str]) -> str:
    """A value as a person reads it (``AssertionError: … in tests/test_a.py``)."""
    if name in ("python", "java"):
        text = value.get("exception_class", "")
    elif name == "node":
        text = value.get("error_class", "")
    elif name == "compiler":
        text = f"{value.get('tool', '')} error {value.get('code', '')}"
    else:
        return " ".join(v for v in value.values() if v)
    message = value.get("message", "")
    if message:
        text += f": {message[:80]}{'…' if len(message) > 80 else ''}"
    where = value.get("file") or value.get("frame_class")
    if where:
        text += f" in {where}"
    if value.get("test"):
        text += f" ({value.get('runner')} {value['test']})"
    return text


def infer_identity(outcomes: list[Outcome]) -> Identity:
    """Pin, per facet, the values every one of these (reproducing) outcomes shows."""
    if not outcomes:
        return Identity()
    seen = [observe(outcome) for outcome in outcomes]
    facets: dict[str, tuple[Candidate, ...]] = {}
    notes: list[str] = []
    for name in FACETS:
        showing = [found[name] for found in seen if name in found]
        if not showing:
            continue
        if len(showing) < len(seen):
            notes.append(
                f"{name} not pinned: only {len(showing)} of {len(seen)} reproducing baseline "
                "runs show it"
            )
            continue
        common = [v for v in showing[0] if all(any(same_value(v, o) for o in s) for s in showing)]
        if not common:
            first, other = showing[0][0], next(s[0] for s in showing[1:])
            notes.append(
                f"{name} not pinned: baseline runs disagree ({describe_value(name, first)} vs "
                f"{describe_value(name, other)})"
            )
            continue
        facets[name] = tuple(common[:VALUE_LIMIT])
    return Identity(facets, tuple(notes))
