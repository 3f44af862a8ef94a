"""``repomin report compare``: validate reports, print the comparison (joins the ``report``
group in ``report_cmds``).

Exit codes: 0 the comparison was written; 2 bad usage (fewer than 2 or more than 32 reports,
bad labels) or any invalid report (one ``report N (PATH): rule: message`` line on stderr, and no
comparison). Nothing is executed, no payload is read and the network is never touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from repomin.cli.common import errors_to_exit
from repomin.errors import ReportError
from repomin.report.compare import build_comparison, check_count, check_labels
from repomin.report.io import write_text_atomic
from repomin.report.validate import validate_file


def _report_file(path: Path) -> Path:
    """Accept ``OUTPUT.repomin/`` for ``OUTPUT.repomin/report.json``."""
    if path.is_dir() and (path / "report.json").is_file():
        return path / "report.json"
    return path


def load_validated(paths: list[Path]) -> list[dict[str, Any]]:
    """Each report parsed and validated (no payload); the first invalid one raises."""
    reports: list[dict[str, Any]] = []
    for index, given in enumerate(paths, start=1):
        path = _report_file(given)
        data, result = validate_file(path)
        if not result.valid:
            extra = len(result.problems) - 1
            more = f" (and {extra} more problem{'s' if extra > 1 else ''})" if extra else ""
            raise ReportError(
                f"report {index} ({path}) is invalid: {result.lines()[0]}{more}; "
                f"see `repomin report validate {path}`"
            )
        reports.append(data)
    return reports


@click.command("compare")
@click.argument("reports", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME",
    help="Display label per report, in order (default run1..runN).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the comparison JSON here (atomically) instead of stdout.",
)
@errors_to_exit
def compare_cmd(reports: tuple[Path, ...], labels: tuple[str, ...], output: Path | None) -> None:
    """Compare 2 to 32 validated REPORTs, in the order given (descriptive only)."""
    check_count(len(reports))
    names = check_labels(list(labels), len(reports))
    document = build_comparison(load_validated(list(reports)), names)
    text = json.dumps(document, indent=2, allow_nan=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomic(output, text)
