"""``--deadline SECONDS``: one wall-clock bound on the whole ``repomin reduce`` -- baseline,
search, final test, the runs in your own shell, export -- on real ``repomin reduce`` processes.

* A search that alone would take minutes stops early enough for the final test and the runs in
  your shell: the process ends within the deadline plus a small grace, the final test ran, and
  the report says the deadline cut the search (``execution.deadline_seconds``,
  ``execution.deadline_cuts``).
* A deadline too short for the final test: the final test does not run (it is never cut to
  fewer runs than it plans), the best tree is exported untested, the report and the summary say
  so, exit 1.
* Runs in your shell that take longer than the samples said: they are stopped at the deadline
  and the report says how many ran.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from repomin.report.validate import validate_file
from tests.conftest import reduce_argv

#: What a deadline may be overrun by: the interpreter's exit and the clock's granularity.
GRACE = 3.0


def _big_tree(root: Path) -> Path:
    """300 files in 17 directories; every 7th file (43) carries a NEEDED line among four others.
    The command reads them all (the traced run cuts nothing) and fails while all 43 lines are
    there: at 0.3 s a run, its search takes well over 90 s at ``--jobs 2``."""
    rng = random.Random(3)
    for i in range(300):
        lines = [f"line {j} of file {i}\n" for j in range(4)]
        if i % 7 == 0:
            lines.insert(rng.randrange(5), "NEEDED\n")
        path = root / f"d{i % 17}" / f"f{i}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines))
    return root


BIG_COMMAND = (
    'sleep 0.3; [ "$(cat d*/*.txt | grep -c NEEDED)" -ge 43 ] && { echo BUG; exit 1; }; exit 0'
)


def _timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, Any]:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    return time.monotonic() - started, done


def _report(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "out.repomin" / "report.json"
    data, result = validate_file(path, payload=tmp_path / "out")
    assert not result.problems, result.problems
    assert isinstance(data, dict)
    return data


def test_a_long_search_ends_within_the_deadline_with_a_final_test(tmp_path: Path) -> None:
    src = _big_tree(tmp_path / "repo")
    argv = reduce_argv(
        src, tmp_path / "out", BIG_COMMAND, "BUG", "--jobs", "2", "--baseline-runs", "4",
        "--no-session", "--deadline", "20",
    )  # fmt: skip
    took, done = _timed(argv)
    assert done.returncode == 0, done.stderr
    assert took <= 20 + GRACE, (took, done.stderr)
    ex = _report(tmp_path)["execution"]
    assert ex["deadline_seconds"] == 20
    assert ex["deadline_cuts"][0] == "search", ex["deadline_cuts"]
    assert ex["stop_reason"] == "max_time" and ex["budget_exhausted"] is True
    assert ex["final_runs"] == 10 and ex["final_validation_passed"] is True
    assert ex["wall_time_seconds"] < 20
    shell = _report(tmp_path)["user_shell"]
    if "user_shell" in ex["deadline_cuts"]:  # the final test took longer than estimated
        assert shell["reason"].startswith("--deadline: ") and shell["runs"] < 3, shell
    else:
        assert ex["deadline_cuts"] == ["search"], ex["deadline_cuts"]
        assert (shell["status"], shell["runs"]) == ("reproduced", 3), shell
    assert "deadline: the search stops" in done.stderr
    assert "--deadline 20 s: cut the search" in done.stdout
    # the warning names the option that stopped it and how to go on
    assert "warning: --deadline stopped the search before it reached its fixpoint" in done.stdout
    assert "--resume --force and a later --deadline" in done.stdout
    notes = (tmp_path / "out.repomin" / "REPOMIN.md").read_text("utf-8")
    assert "**--deadline 20 s cut:** the search stopped before its fixpoint" in notes
    assert "**Warning:** --deadline stopped the search" in notes


def test_a_deadline_too_short_for_the_final_test_exports_untested_and_says_so(
    tmp_path: Path,
) -> None:
    src = _big_tree(tmp_path / "repo")
    command = BIG_COMMAND.replace("sleep 0.3", "sleep 1")
    argv = reduce_argv(
        src, tmp_path / "out", command, "BUG", "--jobs", "1", "--baseline-runs", "2",
        "--final-runs", "10", "--no-session", "--deadline", "8",
    )  # fmt: skip
    took, done = _timed(argv)
    assert done.returncode == 1, done.stderr
    assert took <= 8 + GRACE, (took, done.stderr)
    report = _report(tmp_path)
    ex = report["execution"]
    assert ex["deadline_cuts"] == ["search", "final_test"], ex["deadline_cuts"]
    assert ex["final_runs"] == 0 and ex["final_validation_passed"] is False
    assert report["user_shell"]["status"] == "skipped"
    assert "--deadline" in report["user_shell"]["reason"]
    assert (tmp_path / "out").is_dir()  # the best tree so far, exported
    assert "no time for the final test" in done.stderr
    assert "exported WITHOUT a final test" in done.stdout


def test_runs_in_your_shell_are_stopped_at_the_deadline(tmp_path: Path) -> None:
    """The samples are fast, so the estimate leaves room for three quick runs in your shell;
    there (the user's environment has ``SLOW_IN_MY_SHELL``) each run takes 4 s."""
    src = tmp_path / "repo"
    src.mkdir()
    (src / "keep.txt").write_text("NEEDED\n")
    (src / "junk.txt").write_text("junk\n")
    command = (
        'if [ -n "$SLOW_IN_MY_SHELL" ]; then sleep 4; fi; '
        "grep -q NEEDED keep.txt && { echo BUG; exit 1; }; exit 0"
    )
    argv = reduce_argv(
        src, tmp_path / "out", command, "BUG", "--jobs", "1", "--baseline-runs", "3",
        "--final-runs", "3", "--no-session", "--deadline", "10",
    )  # fmt: skip
    took, done = _timed(argv, env={**os.environ, "SLOW_IN_MY_SHELL": "1"})
    assert took <= 10 + GRACE, (took, done.stderr)
    assert done.returncode == 0, done.stderr
    report = _report(tmp_path)
    shell = report["user_shell"]
    # a deterministic payload is decided on the runs made before the deadline (each must
    # reproduce); none made (a slow machine): skipped
    assert shell["runs"] < 3 and shell["reason"].startswith("--deadline: "), shell
    if shell["runs"]:
        assert shell["status"] == "reproduced" and shell["planned_runs"] == shell["runs"], shell
    else:
        assert shell["status"] == "skipped" and shell["planned_runs"] > 0, shell
    assert report["execution"]["deadline_cuts"] == ["user_shell"]
    assert report["execution"]["final_validation_passed"] is True


# -- the option and the estimate ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-5"])
def test_a_deadline_that_is_not_positive_is_bad_input(tmp_path: Path, value: str) -> None:
    src = tmp_path / "repo"
    src.mkdir()
    (src / "a.txt").write_text("a\n")
    argv = reduce_argv(src, tmp_path / "out", "cat a.txt", "BUG", "--deadline", value)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--deadline" in lines[0] and "positive" in lines[0], lines


def test_max_time_help_says_what_comes_after_it() -> None:
    argv = [*reduce_argv(Path("."), Path("out"), "true", "x")[:4], "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    text = " ".join(done.stdout.split())
    assert "--deadline SECONDS" in text
    after = text[text.index("--max-time") :][:300]
    assert "final test" in after and "--deadline" in after, after


def test_the_time_kept_after_the_search_covers_the_runs_at_this_many_jobs() -> None:
    from repomin.sampling.budget import AFTER_RUNS_SECONDS, after_search_seconds

    # 10 final runs at 2 jobs = 5 rounds, 3 runs in your shell one at a time, 4 holdout runs at
    # 2 jobs = 2 rounds, one round for the samples running when the search stops: 11 runs of
    # 0.5 s, with a fifth more, and the fixed cost of export, report and exit (3 s)
    kept = after_search_seconds(0.5, jobs=2, final_runs=10, shell_runs=3, holdout_runs=4)
    assert kept == pytest.approx(11 * 0.5 * 1.2 + AFTER_RUNS_SECONDS)
    no_runs = after_search_seconds(0.0, jobs=4, final_runs=10, shell_runs=0, holdout_runs=0)
    assert no_runs == AFTER_RUNS_SECONDS == 3.0


def test_the_deadline_counts_from_its_start_and_stops_the_search_at_the_reserve() -> None:
    from repomin.sampling.budget import Budget, Deadline

    deadline = Deadline(10.0, started=time.monotonic() - 4.0)
    assert 5.9 < deadline.left() <= 6.0
    deadline.keep_after_search(lambda: 5.0)
    assert not deadline.search_over()
    deadline.keep_after_search(lambda: 6.5)
    assert deadline.search_over()
    assert Budget(deadline=deadline).deadline is deadline
    deadline.cut("search")
    deadline.cut("search")
    assert deadline.cuts == ("search",)
