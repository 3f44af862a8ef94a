"""Before the search: does the command fail the same way in the user's own shell?

A command can fail in a sample for a reason that lies in the samples' environment -- a fresh
empty ``HOME`` without the packages of ``pip install --user`` (``No module named pytest``), a
variable the user's shell sets -- and still satisfy a loose contract: ``--exit-code 1``, or a
``--match`` on a word both failures print. The reduction would then keep *that* failure, and
only the your-shell check at the very end would notice that the payload does not fail in the
user's shell, after all the work. So, after a baseline that reproduced and before any search,
ReproMin runs the command once in the user's own shell on a fresh copy of the source tree
(:func:`repomin.app.user_shell.run_in_user_shell`) and compares (:func:`compare`):

* ``different`` -- the run satisfies the contract (as far as it can be judged without the
  identity), but it is not the failure the samples show: the samples' pinned identity is not
  in its output, or its own identity (inferred from its output alone, as the baseline's is) is
  in no reproducing baseline run. The reduction stops with exit 2 before it starts, naming both
  failures, what differs and the fix.
* ``not_reproduced`` -- the run does not satisfy the contract although every baseline run did:
  the samples' environment is needed for the failure (or the user's shell hides it). Said in
  a notice; the your-shell check at the end decides.
* ``same`` -- nothing to say; also when the run does not reproduce a flaky failure (one run
  says little about a failure that shows in some runs only), and when it timed out or was
  stopped (under ``--deadline`` it may not take the time the stages after the search need).

Only with the default ``--identity auto`` (``off`` asks for the contract's text alone), on the
host runner without a cluster (the samples had the user's environment's machine), and unless
``--user-shell-runs 0`` says the user's environment is not safe to run in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from repomin.app.diagnose import escape, output_tail, status_text
from repomin.failure.contract import FailureContract
from repomin.failure.identity import infer_identity
from repomin.runners.base import Outcome


@dataclass(frozen=True)
class Comparison:
    """What one run in the user's shell says about the samples' failure (module doc)."""

    kind: str  # "same", "different" or "not_reproduced"
    text: str = ""


def _shown(contract: FailureContract, outcomes: Sequence[Outcome]) -> str:
    """The samples' failure as a person reads it: the pinned identity, else the first
    reproducing run's status and last output line."""
    identity = contract.identity
    if identity is not None and identity.facets:
        return escape(identity.describe()[0])
    return next((_status(o) for o in outcomes), "no failure it recognises")


def _status(outcome: Outcome) -> str:
    """How a run ended and its last output line (escaped)."""
    tail = output_tail(outcome, 1)
    return status_text(outcome) + (f", last output line {tail[0]!r}" if tail else ", no output")


def compare(
    contract: FailureContract, baseline: Sequence[Outcome], user: Outcome, deterministic: bool
) -> Comparison:
    """Compare one run in the user's shell with the baseline's runs (module doc).
    ``contract``: the learnt contract (signature and identity pinned from ``baseline``);
    ``deterministic``: every baseline run reproduced."""
    reproducing = [o for o in baseline if contract.reproduces(o)]
    if user.timed_out or user.infrastructure_error is not None:
        return Comparison("same")  # no conclusion
    if not (contract.base_matches(user) and contract.signature_matches(user)):
        if not deterministic:
            return Comparison("same")
        return Comparison(
            "not_reproduced",
            "one run of the command in your own shell, on a fresh copy of the tree, did not "
            f"reproduce the failure ({_status(user)}) although every "
            "baseline run did: the failure may need the samples' environment; the your-shell "
            "check after the search decides",
        )
    samples = _shown(contract, reproducing)
    if contract.identity is not None and not contract.identity.matches(user):
        why = contract.identity.mismatch(user) or "its identity differs"
        return Comparison(
            "different",
            "the command fails differently in your own shell than in the samples: the "
            f"samples show {samples}, your shell does not ({escape(why)})",
        )
    own = infer_identity([user])
    if own.facets and not any(own.matches(o) for o in reproducing):
        return Comparison(
            "different",
            "the command fails differently in your own shell than in the samples: your shell "
            f"shows {escape(own.describe()[0])}, which no baseline run shows (they show "
            f"{samples})",
        )
    return Comparison("same")
