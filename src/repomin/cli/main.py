"""``repomin`` command line: parse into typed options, build collaborators, execute.

Owns the ``repomin`` group, the ``reduce`` command and what it prints; the flags are the typed
record :class:`~repomin.cli.options.ReduceArgs`, the ``report`` group comes from
:mod:`repomin.cli.report_cmds`. Only the CLI prints. Every
:class:`~repomin.errors.ReproMinError` becomes one line on stderr and its exit code (2 for bad
input or an invalid report); no traceback reaches the user.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from repomin import __version__
from repomin.cli.common import errors_to_exit
from repomin.cli.options import ReduceArgs, to_options
from repomin.cli.typed import typed_command

# Kept for callers of the former private name.
_errors_to_exit = errors_to_exit


class _Group(click.Group):
    """The ``repomin`` group; ``report`` is imported on first use, so that ``reduce`` starts
    its live display before the statistics modules (scipy, seconds on a busy machine) load."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "report"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "report" and "report" not in self.commands:
            from repomin.cli.report_cmds import report_group

            self.add_command(report_group)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="repomin")
def cli() -> None:
    """Shrink a repository to the smallest tree in which a failure still reproduces."""


@cli.command("reduce")
@typed_command(ReduceArgs)
@errors_to_exit
def reduce_cmd(args: ReduceArgs) -> None:
    """Reduce SRC to the smallest tree in which COMMAND still fails the same way."""
    from repomin.app.progress import make_progress

    progress = make_progress(quiet=args.quiet, verbose=args.verbose)
    progress.start()  # the clock runs while the rest of ReproMin is imported
    try:
        from repomin.app.reduce import execute

        # Everything imported so far lives until exit: out of the collector's way (its full
        # collections would walk every object of click, numpy and the pipeline again and again).
        gc.freeze()
        options = to_options(args)
        result = execute(options, progress)
    finally:
        progress.stop()
    if not args.quiet:
        _summary(result.report, options.output, result.report_path, result.exit_code)
    sys.exit(result.exit_code)


def _summary(rep: dict[str, Any], output: Path, report_path: Path, exit_code: int) -> None:
    """The human summary (``repomin.report.human``), then the holdout and any warning."""
    from repomin.report.human import files_on_disk, render_terminal

    for line in render_terminal(rep, output, report_path, files_on_disk(output)):
        click.echo(line)
    ex = rep["execution"]
    hold = rep["holdout_certification"]
    if hold["status"] != "not_requested":
        click.echo(
            f"repomin: holdout {hold['status']}: {hold['passes']}/{hold['planned_runs']} runs "
            f"reproduced (p0={hold['min_rate']}, lower bound "
            f"{hold.get('lower_bound', float('nan')):.3f})"
        )
    elif ex["baseline_passes"] < ex["baseline_runs"]:
        _suggest_holdout(ex)
    cuts = ex.get("deadline_cuts") or []
    if cuts:
        click.echo(
            f"repomin: --deadline {ex['deadline_seconds']:g} s: cut "
            + "; ".join(_DEADLINE_CUTS.get(cut, cut) for cut in cuts)
        )
    if exit_code == 130:
        click.echo("repomin: interrupted; the best tree so far was exported", err=True)
    elif "final_test" in cuts:
        click.echo(
            "repomin: warning: --deadline left no time for the final test: the payload is "
            "untested; give the reduction more time (or rerun the final test with repomin report "
            "replay)",
            err=True,
        )
    elif exit_code != 0 and not ex["final_validation_passed"]:
        click.echo(
            f"repomin: warning: final validation reproduced only {ex['final_passes']}/"
            f"{ex['final_runs']} runs; the payload may not reproduce reliably",
            err=True,
        )


#: What each of ``execution.deadline_cuts`` means, for the summary.
_DEADLINE_CUTS = {
    "search": "the search (stopped before its fixpoint, to leave time for what follows)",
    "final_test": "the final test (no time left for it: the payload was exported WITHOUT a "
    "final test)",
    "user_shell": "the runs in your shell (fewer than planned, or stopped)",
}


def _suggest_holdout(ex: dict[str, Any]) -> None:
    from repomin.sampling.stats import suggest_holdout_runs

    rate = ex["baseline_passes"] / ex["baseline_runs"]
    p0 = ex["min_candidate_rate"]
    try:
        n = suggest_holdout_runs(rate, p0, 0.05)
    except ValueError:
        return
    click.echo(
        f"repomin: to certify the payload at rate {p0:.3f}, rerun with "
        f"--holdout-runs {n} --holdout-min-rate {p0:.3f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; ``main([...])`` is callable from tests."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="repomin")
    finally:
        if argv is None:
            # The process ends here (click exits): its last garbage collection would walk
            # every object of distributed and scipy for nothing -- 0.3-0.8 s of exit measured
            # on a busy 2-core machine, a fixed cost of every reduction. Outputs are written
            # and closed; atexit handlers still run.
            gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    main()
