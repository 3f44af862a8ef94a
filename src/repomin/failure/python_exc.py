"""The Python exception signature: the last exception the output reports, normalised.

Owns :class:`PythonExceptionMode` (``--python-exception``). The output is read by
:mod:`repomin.failure.python_parse`, which understands every format CPython and pytest print.

The *last* reported exception is the signature; the exceptions chained before it go into
``chain``. Identity = class + normalised first message line + chain + exception-group members +
the innermost :data:`FRAMES_COMPARED` frames (file relative to the tree, function name; line
numbers never, because reduction moves lines).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from repomin.failure.normalise import FRAME_LIMIT, Normaliser, frames_suffix_match
from repomin.failure.python_parse import last_exception, parse_exceptions
from repomin.runners.base import Outcome

KIND = "python_exception"

#: How many innermost frames of the pinned signature must reappear in an observed one.
FRAMES_COMPARED = 3


class PythonExceptionMode:
    """``--python-exception``: see the module docstring for what is compared."""

    flag: str = "python_exception"
    report_field: str = "python_exception_signature"

    def extract(self, outcome: Outcome) -> dict[str, Any] | None:
        if outcome.timed_out or outcome.resource_exhausted or outcome.infrastructure_error:
            return None
        picked = last_exception(parse_exceptions(outcome.output))
        if picked is None:
            return None
        final, chain = picked[0], picked[1]
        norm = Normaliser.for_outcome(outcome)
        return {
            "kind": KIND,
            "exception_class": _class_name(final.exception_class),
            "message": norm.message(final.message),
            "frames": [
                {"file": norm.path(frame.file), "function": frame.function}
                for frame in final.frames[-FRAME_LIMIT:]
            ],
            "chain": [
                {
                    "exception_class": _class_name(item.exception_class),
                    "message": norm.message(item.message),
                    "link": successor.link or "context",
                }
                for item, successor in pairwise(chain)
            ],
            "group": sorted(
                (
                    {"exception_class": _class_name(cls), "message": norm.message(message)}
                    for cls, message in final.group
                ),
                key=lambda member: (member["exception_class"], member["message"]),
            ),
        }

    def matches(self, pinned: dict[str, Any], observed: dict[str, Any]) -> bool:
        if pinned.get("kind", KIND) != KIND or observed.get("kind", KIND) != KIND:
            return False
        if pinned.get("exception_class") != observed.get("exception_class"):
            return False
        if pinned.get("message") != observed.get("message"):
            return False
        if _entries(pinned.get("chain")) != _entries(observed.get("chain")):
            return False
        if sorted(_entries(pinned.get("group"))) != sorted(_entries(observed.get("group"))):
            return False
        return frames_suffix_match(
            _frames(pinned.get("frames")),
            _frames(observed.get("frames")),
            FRAMES_COMPARED,
            innermost_last=True,
        )


def _class_name(name: str) -> str:
    return name.removeprefix("builtins.")


def _entries(value: Any) -> list[tuple[str, str, str]]:
    if not isinstance(value, list):
        return []
    return [
        (str(e.get("exception_class")), str(e.get("message")), str(e.get("link", "")))
        for e in value
        if isinstance(e, dict)
    ]


def _frames(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list):
        return []
    return [
        {"file": str(f.get("file")), "function": str(f.get("function"))}
        for f in value
        if isinstance(f, dict)
    ]
