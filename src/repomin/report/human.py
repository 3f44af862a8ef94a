"""The human summary of a reduction: the end of ``repomin reduce`` and ``REPOMIN.md``.

Both show the kept files with their sizes, what each pass removed (files, bytes and the oracle
runs it spent), the evidence in one sentence, and commands that work from where they say to run
them. The terminal summary prints absolute paths (the commands work from any directory);
``REPOMIN.md`` lives in ``OUTPUT.repomin/`` and may be moved together with the payload, so its
commands are relative to the directory that holds both ``OUTPUT`` and ``OUTPUT.repomin``.

Everything is derived from the report (and the payload's file list); the machine-readable,
path-free summary is :mod:`repomin.report.summary`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.failure.contract import FailureSpec
from repomin.failure.identity import Identity
from repomin.report.excerpt import fenced, printable
from repomin.report.picture import RATES_PICTURE, REDUCTION_PICTURE, is_flaky, picture_names
from repomin.sampling.stats import lower_bound, upper_bound
from repomin.tree import Tree

#: Kept files listed by name; the rest are summarised in one line.
TERMINAL_FILES = 20
MARKDOWN_FILES = 200


@dataclass(frozen=True, slots=True)
class KeptFile:
    path: str
    size: int
    symlink: bool = False


def files_of_tree(tree: Tree) -> list[KeptFile]:
    """The files and symlinks of ``tree``, largest first (ties by path)."""
    kept = [
        KeptFile(path, entry.size, entry.kind == "symlink")
        for path, entry in tree.entries.items()
        if entry.kind != "dir"
    ]
    return sorted(kept, key=lambda f: (-f.size, f.path))


def files_on_disk(root: Path) -> list[KeptFile]:
    """The files and symlinks under ``root`` (symlinks not followed), largest first."""
    kept: list[KeptFile] = []
    for directory, dirs, names in os.walk(root):
        for name in [*names, *(d for d in dirs if os.path.islink(os.path.join(directory, d)))]:
            full = os.path.join(directory, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            st = os.lstat(full)
            link = os.path.islink(full)
            kept.append(KeptFile(rel, 0 if link else st.st_size, link))
    return sorted(kept, key=lambda f: (-f.size, f.path))


def size_text(n: int) -> str:
    """``812 B``, ``4.1 kB`` (decimal units)."""
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 1000 or unit == "GB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def removals(report: Mapping[str, Any]) -> list[str]:
    """One phrase per pass that removed something or spent runs, in schedule order."""
    out: list[str] = []
    for phase in report.get("phase_statistics", {}).get("phases", []):
        files, size = phase.get("files_removed", 0), phase.get("bytes_removed", 0)
        runs = phase.get("oracle_samples", 0)
        if not (files or size or runs):
            continue
        if files:
            what = f"{_plural(files, 'file')}, {size_text(size)}"
        else:
            what = size_text(size) if size else "nothing"
        out.append(f"{phase['name']}: {what} in {_plural(runs, 'run')}")
    return out


def contract_text(report: Mapping[str, Any]) -> str:
    """The failure contract in words, e.g. ``output matching `KeyError: 'root'```."""
    spec = FailureSpec.from_json(report["failure_spec"])
    parts: list[str] = []
    mode = spec.oracle_mode
    if mode.endswith("_exception") or mode == "process_failure":
        parts.append(f"the pinned {mode.replace('_', ' ')} signature")
    if spec.match is not None:
        parts.append(f"output matching `{spec.match}`")
    if spec.exit_code is not None:
        parts.append(f"exit code {spec.exit_code}")
    return " and ".join(parts) or mode


def identity_lines(report: Mapping[str, Any]) -> list[str]:
    """The pinned identity, a line per facet (none when ``--identity off``)."""
    recorded = report.get("failure_identity")
    if not isinstance(recorded, Mapping):
        return []
    lines = [printable(line) for line in Identity.from_json(recorded).describe()]
    return lines or ["nothing recognised in the baseline's output: the contract's options decide"]


#: What each ``failure_excerpt.kind`` shows, for ``REPOMIN.md``.
EXCERPT_KIND_TEXT = {
    "pytest": "pytest's report of the first failure",
    "python_traceback": "the end of the Python traceback",
    "compiler": "the compiler's error",
    "match": "the lines `--match` matched",
    "tail": "the output's last lines",
}


def excerpt_block(report: Mapping[str, Any]) -> list[str]:
    """The failing output's identifying lines (``failure_excerpt``) as a fenced block that no
    line can close, with a sentence saying where they come from; none without them."""
    recorded = report.get("failure_excerpt")
    if not isinstance(recorded, Mapping):
        return []
    lines = recorded.get("lines")
    if not isinstance(lines, list) or not lines:
        return []
    what = EXCERPT_KIND_TEXT.get(str(recorded.get("kind")), "lines of the output")
    return [
        f"What the original tree's first reproducing run printed ({what}; `failure_excerpt` in "
        "the report; paths relative to the tree, line numbers the original's):",
        "",
        *fenced(lines),
        "",
    ]


def versions_text(report: Mapping[str, Any]) -> str | None:
    """``Python 3.11.7; pytest 9.2.0; OS Linux-6.1…`` (None when nothing was probed)."""
    versions = report.get("tool_versions")
    if not isinstance(versions, Mapping) or not versions:
        return None
    tools = [str(v) for k, v in versions.items() if k != "os"]
    if "os" in versions:
        tools.append(f"OS {versions['os']}")
    return printable("; ".join(tools))


#: What stopped the search before its fixpoint (``stop_reason``), and the option to raise.
_BUDGETS = {"max_runs": "--max-runs", "max_time": "--max-time"}

#: What each ``deadline_cuts`` entry means, for ``REPOMIN.md``.
DEADLINE_CUT_TEXT = {
    "search": "the search stopped before its fixpoint, to leave time for what follows",
    "final_test": "the final test did not run (the payload was exported untested)",
    "user_shell": "fewer runs in your shell than planned",
}


def budget_warning(ex: Mapping[str, Any]) -> str:
    """The warning of a search that a budget stopped (``budget_exhausted``): which one, and how
    to go on from there (the session is kept for ``--resume``)."""
    cuts = ex.get("deadline_cuts") or []
    if "search" in cuts:
        what, raise_it = "--deadline", "a later --deadline"
    else:
        option = _BUDGETS.get(str(ex.get("stop_reason")), "a budget (--max-runs/--max-time)")
        what, raise_it = option, f"a larger {option}" if option in _BUDGETS.values() else option
    return (
        f"{what} stopped the search before it reached its fixpoint: the payload is the "
        "smallest tree found so far, not a minimum; to go on from here, rerun the same command "
        f"with --resume --force and {raise_it} (the session is kept, unless --no-session)"
    )


def deadline_text(ex: Mapping[str, Any]) -> str | None:
    """What ``--deadline`` cut, in order (None when it cut nothing)."""
    cuts = [str(c) for c in ex.get("deadline_cuts") or []]
    if not cuts:
        return None
    return "; ".join(DEADLINE_CUT_TEXT.get(c, c) for c in cuts)


def evidence_sentence(report: Mapping[str, Any]) -> str:
    """The evidence in one sentence: baseline, final validation and its test, holdout."""
    ex = report["execution"]
    theta = ex["min_candidate_rate"]
    test = "passed" if ex["final_validation_passed"] else "failed"
    hold = report.get("holdout_certification", {})
    status = hold.get("status", "not_requested")
    if status in ("certified", "rejected"):
        holdout = (
            f"; the holdout ({hold['passes']}/{hold['completed_runs']} fresh runs, never used by "
            f"the search) {status} p >= {hold['min_rate']}"
        )
    elif status == "not_requested":
        holdout = "; no holdout was requested"
    else:
        holdout = f"; the holdout was {status}"
    final = (
        f"{ex['final_passes']}/{ex['final_runs']} fresh runs of the payload, and the exact "
        f"one-sided test of a reproduction rate above {theta:.3f} at confidence "
        f"{ex['confidence']} {test}"
        if ex["final_runs"]
        else "no final runs of the payload (nothing tests it)"
    )
    return (
        f"The failure ({contract_text(report)}) reproduced in "
        f"{ex['baseline_passes']}/{ex['baseline_runs']} runs of the original tree and in "
        f"{final}{holdout}."
    )


def final_interval(report: Mapping[str, Any]) -> tuple[float, float] | None:
    """The exact two-sided Clopper--Pearson interval of the final runs' rate at the report's
    ``confidence`` c: each end the one-sided bound at (1 + c) / 2. None without final runs."""
    ex = report["execution"]
    passes, runs = ex.get("final_passes"), ex.get("final_runs")
    if not isinstance(passes, int) or not isinstance(runs, int) or not 0 <= passes <= runs:
        return None
    if runs == 0:  # no final runs (--final-runs 0, or a deadline that left no time)
        return None
    level = (1 + float(ex["confidence"])) / 2
    return lower_bound(passes, runs, level), upper_bound(passes, runs, level)


def final_rate_text(report: Mapping[str, Any]) -> str | None:
    """The final runs' rate with its exact two-sided interval, for a flaky failure (what to
    expect when running the payload); None for a failure that never missed."""
    interval = final_interval(report)
    if interval is None or not is_flaky(report):
        return None
    ex = report["execution"]
    passes, runs = ex["final_passes"], ex["final_runs"]
    stopped = (
        "; the test stopped once its outcome was certain, so it describes the runs made"
        if ex.get("final_stopped_early")
        else ""
    )
    return (
        f"{passes}/{runs} reproduced (rate {passes / runs:.3f}); exact "
        f"two-sided Clopper–Pearson interval at confidence {ex['confidence']:g}: "
        f"[{interval[0]:.3f}, {interval[1]:.3f}]{stopped}"
    )


def slippage_text(report: Mapping[str, Any]) -> str | None:
    """The slippage warning (final or holdout rate significantly off the baseline's), or None."""
    slip = report.get("slippage") or {}
    direction = slip.get("direction")
    if direction not in ("higher", "lower"):
        return None
    which = "final" if (slip.get("final") or {}).get("direction") == direction else "holdout"
    r = slip[which]
    return (
        f"the {which} runs reproduced {r['passes']}/{r['runs']} against the baseline's "
        f"{r['baseline_passes']}/{r['baseline_runs']} (Fisher exact test, two-sided p = "
        f"{r['p_value']:.2g} <= {r['alpha']:g}): {slip['advice']}"
    )


def keep_rate_text(report: Mapping[str, Any]) -> str | None:
    keep = (report.get("slippage") or {}).get("keep_rate")
    if not keep:
        return None
    if not keep["runs_per_check"]:
        return "--keep-rate: the baseline reproduced every run, so no rate can be above it"
    return (
        f"--keep-rate: {_plural(keep['checked'], 'accepted candidate')} got "
        f"{keep['runs_per_check']} fresh runs each; {keep['rejected']} rejected for a rate "
        "significantly above the baseline's"
    )


def user_shell_text(report: Mapping[str, Any]) -> str | None:
    """What running the payload in the user's own shell showed, or None (an older report)."""
    shell = report.get("user_shell")
    if not isinstance(shell, dict):
        return None
    status, runs, hits = shell["status"], shell["runs"], shell["reproduced"]
    if status == "reproduced":
        planned = shell["planned_runs"]
        why = f" (of {planned} planned: a flaky payload needs one reproduction)"
        return (
            f"In your own shell (your HOME and environment) the payload reproduced the failure "
            f"in {hits} of {runs} runs{why if runs < planned else ''}."
        )
    if status == "not_reproduced":
        what = "; ".join(shell["differences"]) or "nothing the traced run shows"
        return (
            f"The payload does NOT reproduce in your own shell: {shell['reason']}. It reproduces "
            f"in the samples' environment (the last command below recreates it). What differs: "
            f"{what}."
        )
    if status == "disabled":
        return "The payload was not run in your own shell (--user-shell-runs 0)."
    return f"The payload was not run in your own shell: {shell['reason']}."


def user_shell_command(report: Mapping[str, Any], payload: str) -> str:
    """Run the recorded command on a fresh copy of ``payload`` in the reader's own shell."""
    return (
        f'd=$(mktemp -d) && cp -a {shlex.quote(payload)}/. "$d" '
        f'&& (cd "$d" && sh -c {shlex.quote(report["command"])})'
    )


def _file_lines(files: Sequence[KeptFile], limit: int, indent: str) -> list[str]:
    width = max((len(f.path) for f in files[:limit]), default=0)
    lines = [
        f"{indent}{f.path.ljust(width)}  {'symlink' if f.symlink else size_text(f.size)}"
        for f in files[:limit]
    ]
    rest = files[limit:]
    if rest:
        total = sum(f.size for f in rest)
        lines.append(f"{indent}... and {_plural(len(rest), 'more file')} ({size_text(total)})")
    return lines


def rerun_command(report: Mapping[str, Any], payload: str) -> str:
    """Run the recorded command by hand on a fresh copy of ``payload`` (never in it: runs may
    leave files behind, e.g. ``__pycache__``, and the payload would no longer match the report),
    with the environment a sample gets: PATH, LANG=C.UTF-8, fresh TMPDIR/TMP/TEMP, a fresh HOME
    (your own with ``execution.home: inherit``) and the ``--env`` names (values are not
    recorded: fill them in)."""
    names = report["execution"].get("environment_names", [])
    extra = "".join(f' {name}="..."' for name in names)
    home = '"$HOME"' if report["execution"].get("home") == "inherit" else '"$d/tmp"'
    return (
        f'd=$(mktemp -d) && mkdir "$d/tree" "$d/tmp" && cp -a {shlex.quote(payload)}/. "$d/tree" '
        f'&& (cd "$d/tree" && env -i PATH="$PATH" LANG=C.UTF-8 HOME={home} TMPDIR="$d/tmp" '
        f'TMP="$d/tmp" TEMP="$d/tmp"{extra} sh -c {shlex.quote(report["command"])})'
    )


def render_repomin_md(
    report: Mapping[str, Any], output_name: str, files: Sequence[KeptFile]
) -> str:
    """``REPOMIN.md`` for the payload directory ``output_name`` beside ``output_name.repomin``."""
    src, out, ex = report["source"], report["output"], report["execution"]
    payload = shlex.quote(output_name)
    sidecar = shlex.quote(f"{output_name}.repomin/report.json")
    removed = removals(report)
    pictures = picture_names(report)  # written beside this file (``picture.render_pictures``)
    size_picture = f"![Size of the tree in bytes and files over the runs]({REDUCTION_PICTURE})"
    rates_picture = f"![Reproduction rates with exact bounds]({RATES_PICTURE})"
    rate = final_rate_text(report)
    lines = [
        "# ReproMin reproducer",
        "",
        f"`{output_name}/` holds {_plural(out['files'], 'file')} ({size_text(out['bytes'])}), "
        f"reduced from {_plural(src['files'], 'file')} ({size_text(src['bytes'])}) by ReproMin "
        f"{report['repomin_version']} in {_plural(ex['oracle_samples'], 'run')}"
        f"{' (' + cost_text(ex) + ')' if cost_text(ex) else ''}.",
        "",
        *([size_picture, ""] if REDUCTION_PICTURE in pictures else []),
        *([f"**Warning:** {budget_warning(ex)}.", ""] if ex.get("budget_exhausted") else []),
        *(
            [f"**--deadline {ex.get('deadline_seconds') or 0:g} s cut:** {deadline_text(ex)}.", ""]
            if deadline_text(ex)
            else []
        ),
        evidence_sentence(report),
        "",
        *([f"The payload's final runs: {rate}.", ""] if rate is not None else []),
        *([rates_picture, ""] if RATES_PICTURE in pictures else []),
        *_identity_section(report),
        *([user_shell_text(report) or "", ""] if report.get("user_shell") else []),
        *_slippage_section(report),
        "## Kept files",
        "",
        "```text",
        *_file_lines(files, MARKDOWN_FILES, ""),
        "```",
        "",
        "## Removed, by pass",
        "",
        *([f"- {line}" for line in removed] or ["- nothing (the original tree is minimal)"]),
        "",
        "## Commands",
        "",
        f"Run these from the directory that holds `{output_name}/` and `{output_name}.repomin/` "
        "(the parent of the directory this file is in).",
        "",
        "Replay the failure on fresh copies, with the recorded backend and contract:",
        "",
        "```sh",
        f"repomin report replay {sidecar} --payload {payload}{_env_flags(report)} --yes",
        "```",
        "",
        "Check that the payload still matches this report (runs nothing):",
        "",
        "```sh",
        f"repomin report validate {sidecar} --payload {payload}",
        "```",
        "",
        "Run the command by hand on a copy, in your own shell:",
        "",
        "```sh",
        user_shell_command(report, output_name),
        "```",
        "",
        "Or in the environment a sample gets"
        + (" (fill in the `--env` values)" if ex.get("environment_names") else "")
        + (f"; the reduction used the {ex['backend']} backend" if ex["backend"] != "host" else "")
        + ":",
        "",
        "```sh",
        rerun_command(report, output_name),
        "```",
        "",
        "Keep `report.json` and this file beside the payload, not inside it.",
        "",
    ]
    return "\n".join(lines)


def _identity_section(report: Mapping[str, Any]) -> list[str]:
    lines = identity_lines(report)
    versions = versions_text(report)
    excerpt = excerpt_block(report)
    if not lines and versions is None and not excerpt:
        return []
    out = ["## The failure", "", *excerpt]
    if lines:
        out += [
            "The identity read from the original tree's runs and pinned for every run since "
            "(`failure_identity` in the report):",
            "",
            *[f"- {line}" for line in lines],
            "",
        ]
    if versions is not None:
        out += [f"Produced with: {versions} (`tool_versions`).", ""]
    return out


def _slippage_section(report: Mapping[str, Any]) -> list[str]:
    slip, keep = slippage_text(report), keep_rate_text(report)
    if slip is None and keep is None:
        return []
    lines = ["## Slippage", ""]
    if slip is not None:
        lines += [f"**Warning:** {slip}.", ""]
    if keep is not None:
        lines += [f"{keep}.", ""]
    return lines


def render_terminal(
    report: Mapping[str, Any],
    payload: Path,
    report_path: Path,
    files: Sequence[KeptFile],
) -> list[str]:
    """The lines ``repomin reduce`` prints at the end; paths absolute, commands runnable."""
    src, out, ex = report["source"], report["output"], report["execution"]
    payload_abs = payload.absolute()
    report_abs = report_path.absolute()
    lines = [
        f"repomin: {_plural(src['files'], 'file')} / {size_text(src['bytes'])} -> "
        f"{_plural(out['files'], 'file')} / {size_text(out['bytes'])} in "
        f"{_plural(ex['oracle_samples'], 'run')} "
        f"({cost_text(ex, '; ')}{report['accepted_mutations']} accepted mutations, "
        f"{report['cache_hits']} cache hits)",
        "repomin: kept:",
        *_file_lines(files, TERMINAL_FILES, "  "),
    ]
    removed = removals(report)
    if removed:
        lines.append("repomin: removed: " + "; ".join(removed))
    lines += [f"repomin: failure: {line}" for line in identity_lines(report)]
    versions = versions_text(report)
    if versions is not None:
        lines.append(f"repomin: tools: {versions}")
    lines.append(f"repomin: evidence: {evidence_sentence(report)}")
    rate = final_rate_text(report)
    if rate is not None:
        lines.append(f"repomin: final runs: {rate}")
    if ex.get("budget_exhausted"):
        lines.append(f"repomin: warning: {budget_warning(ex)}")
    keep, slip = keep_rate_text(report), slippage_text(report)
    if keep is not None:
        lines.append(f"repomin: {keep}")
    if slip is not None:
        lines.append(f"repomin: warning: slippage: {slip}")
    shell = user_shell_text(report)
    if shell is not None:
        failed = report["user_shell"]["status"] == "not_reproduced"
        lines.append(f"repomin: {'warning: ' if failed else ''}your shell: {shell}")
    lines += [
        f"repomin: payload: {payload_abs}",
        f"repomin: report:  {report_abs}",
        f"repomin: notes:   {report_abs.parent / 'REPOMIN.md'}",
        f"repomin: replay:  repomin report replay {shlex.quote(str(report_abs))} "
        f"--payload {shlex.quote(str(payload_abs))}{_env_flags(report)} --yes",
    ]
    return lines


def _env_flags(report: Mapping[str, Any]) -> str:
    """`` --env NAME`` for each recorded environment name (replay passes a value only for the
    names the caller names, from the caller's own environment) and `` --home inherit`` for a
    report whose samples saw the user's HOME (replay refuses such a report without it)."""
    execution = report.get("execution", {})
    names = execution.get("environment_names") or []
    flags = "".join(f" --env {shlex.quote(str(name))}" for name in names)
    return flags + (" --home inherit" if execution.get("home") == "inherit" else "")


def cost_text(ex: dict[str, Any], end: str = "") -> str:
    """``"12.3 s CPU of samples, 4.5 s wall"`` (``s sample wall`` when no sample's CPU time
    was measured, ``s of samples (CPU where measured, else wall)`` when some were) followed by
    ``end``; empty for reports without the fields."""
    seconds, wall = ex.get("sample_seconds"), ex.get("wall_time_seconds")
    if seconds is None or wall is None:
        return ""
    kind = {
        "cpu": "s CPU of samples",
        "mixed": "s of samples (CPU where measured, else wall)",
    }.get(str(ex.get("sample_seconds_basis")), "s sample wall")
    return f"{seconds:.1f} {kind}, {wall:.1f} s wall{end}"
