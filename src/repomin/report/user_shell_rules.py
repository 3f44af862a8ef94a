"""Rules on the report's ``user_shell`` object: the payload's runs in the user's own shell.

Owns :func:`check_user_shell`. The counts must add up (``reproduced <= runs <= planned_runs``,
one outcome per run, as many ``reproduced`` outcomes as ``reproduced``), the status must be the
one the counts give (:func:`repomin.app.user_shell.decide`'s rule, restated here so that the
validator does not import the application; a check that passed may stop at the run that made it
pass, one that failed made every planned run), and a decided check must have planned the runs its
rule asks for from the final counts the report records: every run required for a payload whose
final runs all reproduced, else one, over at least the runs
:func:`~repomin.sampling.stats.bounds.runs_to_see_one` gives (recomputed exactly).
Pure functions over a report that already matches the shipped JSON Schema.
"""

from __future__ import annotations

from typing import Any

from repomin.report.rules import Problem, js
from repomin.sampling.stats.bounds import runs_to_see_one

#: The cap on a flaky payload's runs and its level (``app.user_shell``'s; tested equal).
MAX_FLAKY_RUNS = 60
SHELL_ALPHA = 0.001


def _counts(shell: dict[str, Any]) -> list[Problem]:
    planned, runs, hits = shell["planned_runs"], shell["runs"], shell["reproduced"]
    outcomes = shell["outcomes"]
    ok = (
        hits <= runs <= planned
        and shell["required"] <= planned
        and len(outcomes) == runs
        and sum(1 for o in outcomes if o == "reproduced") == hits
    )
    if ok:
        return []
    return [
        Problem(
            "user_shell.counts",
            f"user_shell records {hits} reproduced of {runs} runs ({planned} planned, "
            f"{shell['required']} required) with {len(outcomes)} outcomes",
        )
    ]


def _status(shell: dict[str, Any]) -> list[Problem]:
    status, planned, runs = shell["status"], shell["planned_runs"], shell["runs"]
    decided = planned > 0 and runs == planned
    if status == "reproduced":  # it stops at the run that makes it so
        ok = planned > 0 and runs > 0 and shell["reproduced"] >= shell["required"]
        last = shell["outcomes"][-1] if shell["outcomes"] else None
        early = last == "reproduced" and shell["reproduced"] == shell["required"]
        ok = ok and (decided or early)
    elif status == "not_reproduced":
        ok = decided and shell["reproduced"] < shell["required"]
    elif status == "disabled":
        ok = planned == 0 and runs == 0
    else:  # skipped: not applicable, or interrupted before every planned run
        ok = runs < planned or planned == 0
    if ok:
        return []
    return [
        Problem(
            "user_shell.status",
            f"user_shell.status is {js(status)}, but {shell['reproduced']} of {runs} runs "
            f"reproduced ({planned} planned, {shell['required']} required)",
        )
    ]


def _plan(report: dict[str, Any], shell: dict[str, Any]) -> list[Problem]:
    if shell["status"] not in ("reproduced", "not_reproduced"):
        return []
    ex = report.get("execution", {})
    passes, runs, confidence = ex.get("final_passes"), ex.get("final_runs"), ex.get("confidence")
    if not isinstance(passes, int) or not isinstance(runs, int) or not runs:
        return [Problem("user_shell.plan", "user_shell was decided without final runs recorded")]
    planned, required = shell["planned_runs"], shell["required"]
    if passes >= runs:
        ok = required == planned
    elif passes <= 0 or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        ok = False
    else:
        needed = runs_to_see_one(passes, runs, confidence, SHELL_ALPHA, MAX_FLAKY_RUNS)
        ok = required == 1 and planned >= needed
    if ok:
        return []
    return [
        Problem(
            "user_shell.plan",
            f"user_shell planned {planned} runs with {required} required, which the final "
            f"counts {passes}/{runs} do not give",
        )
    ]


def check_user_shell(report: dict[str, Any]) -> list[Problem]:
    shell = report.get("user_shell")
    if not isinstance(shell, dict):
        return []
    counted = _counts(shell)
    if counted:
        return counted
    return [*_status(shell), *_plan(report, shell)]
