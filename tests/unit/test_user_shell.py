"""The payload in the user's own shell: the plan, the decision, the runs, what differs, the
validator's rules on the report's ``user_shell`` record, and the trace's outside accesses."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from repomin.analysis.trace import outside_accesses
from repomin.app import user_shell
from repomin.app.user_shell import (
    MAX_FLAKY_RUNS,
    SHELL_ALPHA,
    ShellCheck,
    check_in_user_shell,
    decide,
    differences,
    plan,
    run_once,
)
from repomin.report import user_shell_rules
from repomin.report.user_shell_rules import check_user_shell
from repomin.sampling.stats.bounds import lower_bound, runs_to_see_one
from repomin.tree import Entry, Tree


def test_a_deterministic_payload_must_reproduce_in_every_run() -> None:
    assert plan(3, 20, 20, 0.95) == (3, 3)
    assert plan(5, 1, 1, 0.95) == (5, 5)
    assert decide(3, 3, 3) == "reproduced"
    assert decide(2, 3, 3) == "not_reproduced"
    assert decide(0, 0, 0) == "not_reproduced"


def test_nothing_is_planned_without_runs_or_without_final_runs() -> None:
    assert plan(0, 20, 20, 0.95) == (0, 0)
    assert plan(3, 0, 0, 0.95) == (0, 0)
    assert plan(3, 0, 20, 0.95) == (0, 0)


@pytest.mark.parametrize(("passes", "runs"), [(12, 20), (6, 20), (19, 20), (2, 20), (50, 60)])
def test_a_flaky_payload_gets_the_runs_that_make_missing_it_unlikely(
    passes: int, runs: int
) -> None:
    planned, required = plan(3, passes, runs, 0.95)
    assert required == 1
    low = lower_bound(passes, runs, 0.95)
    # exact: the fewest runs n with (1 - L)^n <= alpha, capped, and at least the requested 3
    n = 1
    while (1 - low) ** n > SHELL_ALPHA:
        n += 1
    assert planned == max(3, min(MAX_FLAKY_RUNS, n))
    assert runs_to_see_one(passes, runs, 0.95, SHELL_ALPHA, MAX_FLAKY_RUNS) == min(
        MAX_FLAKY_RUNS, n
    )
    if planned < MAX_FLAKY_RUNS:
        assert (1 - low) ** planned <= SHELL_ALPHA


def test_the_flaky_plan_flags_a_same_rate_failure_rarely_by_monte_carlo() -> None:
    """Seeded Monte Carlo of plan + decide: a failure reproducing at its true rate p in the
    user's shell, whose final runs were drawn at the same p, is flagged at most alpha (plus the
    chance that the lower bound missed, at most 1 - confidence) of the time."""
    import random

    rng = random.Random(20261203)
    p, final_runs, trials, flagged = 0.5, 20, 4000, 0
    for _ in range(trials):
        passes = sum(rng.random() < p for _ in range(final_runs))
        if passes in (0, final_runs):
            continue
        planned, required = plan(3, passes, final_runs, 0.95)
        hits = sum(rng.random() < p for _ in range(planned))
        flagged += decide(hits, planned, required) == "not_reproduced"
    assert flagged / trials <= SHELL_ALPHA + 0.05
    assert flagged / trials < 0.01  # measured 0 in 4,000 here


def test_the_validator_restates_the_application_constants() -> None:
    assert user_shell_rules.MAX_FLAKY_RUNS == user_shell.MAX_FLAKY_RUNS
    assert user_shell_rules.SHELL_ALPHA == user_shell.SHELL_ALPHA


def test_one_run_reports_exit_code_output_and_timeouts(tmp_path: Path) -> None:
    out = run_once("echo hi; echo err >&2; exit 3", tmp_path, dict(os.environ), 10.0)
    assert (out.exit_code, out.stdout, out.stderr, out.timed_out) == (3, b"hi\n", b"err\n", False)
    slow = run_once("sleep 30", tmp_path, dict(os.environ), 0.3)
    assert slow.timed_out and slow.exit_code is not None and slow.exit_code < 0
    killed = run_once("kill -SEGV $$", tmp_path, dict(os.environ), 10.0)
    assert killed.signal == 11 and killed.exit_code == -11


def _tree() -> Tree:
    return Tree.of({"data.txt": Entry("file", b"payload\n", 0o644, True)})


def test_runs_use_the_users_environment_and_one_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # First run writes a cache under HOME and fails; later runs find it and pass: 1 of 3.
    command = (
        'cat data.txt >/dev/null && if [ -e "$HOME/.cache-file" ]; then echo fine; '
        'else : > "$HOME/.cache-file"; echo BUG >&2; exit 1; fi'
    )
    env = {**os.environ, "HOME": str(home)}
    check = check_in_user_shell(
        _tree(),
        command,
        reproduces=lambda o: b"BUG" in o.stderr,
        planned=(3, 3),
        env=env,
        timeout=10.0,
        outside=(("~/.cache-file", False),),
    )
    assert (check.status, check.runs, check.reproduced) == ("not_reproduced", 3, 1)
    assert check.outcomes == ("reproduced", *["did not reproduce (exit 0)"] * 2)
    assert check.reason == "1 of 3 runs in your shell reproduced the failure (3 needed)"
    # differences() is computed against the real HOME by default; here against the test's
    found = differences((("~/.cache-file", False),), env, home=str(home))
    assert found[0] == "~/.cache-file exists in your HOME (the samples' HOME was empty)"


def test_a_payload_that_reproduces_everywhere_passes(tmp_path: Path) -> None:
    check = check_in_user_shell(
        _tree(),
        "cat data.txt; echo BUG >&2; exit 1",
        reproduces=lambda o: b"BUG" in o.stderr,
        planned=(3, 3),
        env=dict(os.environ),
        timeout=10.0,
    )
    assert (check.status, check.reproduced, check.differences) == ("reproduced", 3, ())


def test_differences_name_paths_whose_existence_changed_and_extra_variables(
    tmp_path: Path,
) -> None:
    (tmp_path / "here").write_text("x")
    outside = (
        ("~/here", False),  # exists now, did not in the samples
        ("~/gone", True),  # found by the samples, missing now
        (str(tmp_path / "here"), True),  # the same both ways: not named
        (str(tmp_path / "new"), False),  # the same both ways: not named
        ("~", True),
    )
    env = {"PATH": "/bin", "HOME": str(tmp_path), "NODE_OPTIONS": "--x", "ZED": "1"}
    found = differences(outside, env, home=str(tmp_path))
    assert found == (
        "~/here exists in your HOME (the samples' HOME was empty)",
        "~/gone is missing in your HOME (the samples found it)",
        "your environment sets 2 variables samples do not see: NODE_OPTIONS, ZED",
    )


STRACE_LOG = b"\n".join(
    [
        b'1234 openat(AT_FDCWD</t>, "/t/main.py", O_RDONLY) = 3</t/main.py>',
        b'1234 newfstatat(AT_FDCWD</t>, "/h/.v8flags.json", 0x7ffd, 0) = -1 ENOENT',
        b'1234 openat(AT_FDCWD</t>, "/h/.v8flags.json", O_WRONLY|O_CREAT) = 4</h/.v8flags.json>',
        b'1234 openat(AT_FDCWD</t>, "/usr/lib/libc.so.6", O_RDONLY) = 3</usr/lib/libc.so.6>',
        b'1234 access("/etc/ld.so.preload", R_OK) = -1 ENOENT',
        b'1234 openat(AT_FDCWD</t>, "/root/secret", O_RDONLY) = -1 EACCES (Permission denied)',
        b'1234 openat(3</usr/lib>, "python3/site.py", O_RDONLY) = 5</usr/lib/python3/site.py>',
        b'1234 openat(AT_FDCWD</t>, "relative.txt", O_RDONLY) = 3</t/relative.txt>',
    ]
)


def test_the_trace_names_each_outside_path_once_with_what_its_first_call_found() -> None:
    own = [
        b'1234 openat(AT_FDCWD</t>, "/proc/1234/maps", O_RDONLY) = 3</proc/1234/maps>',
        b'1234 openat(AT_FDCWD</t>, "/dev/shm/s/000001-trace", O_RDONLY) = 3',
        b'1234 openat(AT_FDCWD</t>, "/tmp/sink/v8cov/c.json", O_WRONLY|O_CREAT) = 4',
    ]
    found = outside_accesses([*own, *STRACE_LOG.splitlines()], ["/t"], "/h", ["/tmp/sink"])
    # the host runner's HOME is inside the sample's own directory: still named, as ~/
    assert outside_accesses(STRACE_LOG.splitlines(), ["/t"], "/h", ["/h", "/t"]) == found
    assert found == (
        ("~/.v8flags.json", False),
        ("/usr/lib/libc.so.6", True),
        ("/etc/ld.so.preload", False),
        ("/usr/lib/python3/site.py", True),
    )


def _report(**shell: Any) -> dict[str, Any]:
    record = ShellCheck(
        "not_reproduced",
        3,
        3,
        1,
        3,
        "1 of 3 runs in your shell reproduced the failure (3 needed)",
        ("~/.x exists in your HOME (the samples' HOME was empty)",),
        ("reproduced", "did not reproduce (exit 0)", "did not reproduce (exit 0)"),
    ).to_json()
    record.update(shell)
    return {
        "execution": {"final_passes": 20, "final_runs": 20, "confidence": 0.95},
        "user_shell": record,
    }


def test_a_consistent_record_breaks_no_rule() -> None:
    assert check_user_shell(_report()) == []
    assert check_user_shell({"execution": {}}) == []  # older reports have no record
    disabled = ShellCheck("disabled", reason="--user-shell-runs 0").to_json()
    assert check_user_shell({"execution": {}, "user_shell": disabled}) == []


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"reproduced": 2}, "user_shell.counts"),
        ({"runs": 4}, "user_shell.counts"),
        ({"outcomes": ["reproduced"]}, "user_shell.counts"),
        ({"status": "reproduced"}, "user_shell.status"),
        ({"status": "disabled"}, "user_shell.status"),
        ({"required": 2}, "user_shell.plan"),
    ],
)
def test_a_tampered_record_breaks_its_rule(change: dict[str, Any], rule: str) -> None:
    report = _report(**change)
    assert [p.rule for p in check_user_shell(report)] == [rule]


def test_a_flaky_plan_with_too_few_runs_breaks_the_plan_rule() -> None:
    none = ["did not reproduce (exit 0)"] * 3
    report = _report(required=1, reproduced=0, outcomes=none)
    report["execution"]["final_passes"] = 10
    problems = check_user_shell(copy.deepcopy(report))
    assert [p.rule for p in problems] == ["user_shell.plan"]  # 3 runs where 10/20 needs more
    planned, _ = plan(3, 10, 20, 0.95)
    report["user_shell"].update(
        planned_runs=planned,
        runs=planned,
        reproduced=0,
        outcomes=["did not reproduce (exit 0)"] * planned,
    )
    assert check_user_shell(report) == []
    assert planned > 3


def test_a_flaky_check_stops_at_its_first_reproduction(tmp_path: Path) -> None:
    """One run in one directory misses (it leaves a marker), the next reproduces: of 12
    planned runs with 1 required, the check passes after 2 and makes no more."""
    command = "if [ -e marker ]; then echo BUG >&2; exit 1; fi; : > marker; exit 0"
    check = check_in_user_shell(
        _tree(),
        command,
        reproduces=lambda o: b"BUG" in o.stderr,
        planned=(12, 1),
        env=dict(os.environ),
        timeout=10.0,
    )
    assert (check.status, check.planned_runs, check.runs, check.reproduced) == (
        "reproduced",
        12,
        2,
        1,
    )
    assert check.outcomes == ("did not reproduce (exit 0)", "reproduced")


def test_a_failing_check_makes_every_planned_run(tmp_path: Path) -> None:
    check = check_in_user_shell(
        _tree(),
        "exit 0",
        reproduces=lambda o: o.exit_code == 1,
        planned=(4, 1),
        env=dict(os.environ),
        timeout=10.0,
    )
    assert (check.status, check.runs, check.reproduced) == ("not_reproduced", 4, 0)


def _flaky_record(outcomes: list[str], planned: int) -> dict[str, Any]:
    report = _report(
        required=1,
        reproduced=outcomes.count("reproduced"),
        runs=len(outcomes),
        outcomes=outcomes,
        status="reproduced",
        reason="",
        differences=[],
    )
    report["execution"]["final_passes"] = 10
    report["user_shell"]["planned_runs"] = planned
    return report


def test_the_validator_takes_a_check_stopped_at_the_run_that_passed_it() -> None:
    planned, _ = plan(3, 10, 20, 0.95)
    miss = "did not reproduce (exit 0)"
    assert check_user_shell(_flaky_record([miss, "reproduced"], planned)) == []
    assert check_user_shell(_flaky_record(["reproduced"] * planned, planned)) == []
    # stopped after a miss (not decided), or ran on past the reproduction and stopped
    for outcomes in ([miss, "reproduced", miss], ["reproduced", "reproduced"]):
        problems = check_user_shell(_flaky_record(outcomes, planned))
        assert [p.rule for p in problems] == ["user_shell.status"]
