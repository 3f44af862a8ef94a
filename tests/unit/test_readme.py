"""README and docs/usage.md say what the code does: defaults, quick start, environment,
completion. The quick start and completion live in README; the option tables, the environment
and the tools in docs/usage.md."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from repomin.app.selection import DEFAULT_IGNORED_NAMES
from repomin.cli.main import cli
from repomin.passes import DEFAULT_SCHEDULE
from repomin.runners.host import IMPLICIT_ENVIRONMENT

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
USAGE = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
_TICKED = re.compile(r"`([^`]+)`")


def section(title: str, doc: str = README) -> str:
    start = doc.index(f"\n## {title}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start : end if end != -1 else None]


def table_after(text: str, marker: str) -> dict[frozenset[str], tuple[str, str]]:
    """Rows of the first Markdown table after ``marker``: {option names: (default, meaning)}."""
    rest = text[text.index(marker) :]
    lines = rest.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Option |"))
    rows: dict[frozenset[str], tuple[str, str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        names = frozenset(_TICKED.findall(cells[0]))
        assert names, line
        assert names not in rows, f"duplicate row {line}"
        rows[names] = (cells[1], cells[2])
    return rows


def readme_default(cell: str) -> str:
    ticked = _TICKED.fullmatch(cell)
    return ticked.group(1) if ticked else cell


#: The smallest valid argument lists: what each option is when not given is then ctx.params.
MINIMAL_ARGS = {
    "reduce": ["src", "-o", "out", "--command", "true"],
    "replay": ["report.json", "--payload", "out"],
}


def parsed_defaults(command: click.Command) -> dict[str, object]:
    assert command.name is not None
    ctx = command.make_context(command.name, list(MINIMAL_ARGS[command.name]))
    return dict(ctx.params)


def code_default(param: click.Option, parsed: dict[str, object]) -> str:
    """The value the command receives when the option is not given, in README's words."""
    if param.required:
        return "required"
    assert param.name is not None
    default = parsed[param.name]
    if param.is_flag:
        assert default is False, param.opts
        return "off"
    if param.multiple:
        assert default == (), param.opts
        return "none"
    if default is None:
        return "—"
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def options_of(command: click.Command) -> list[click.Option]:
    return [
        p
        for p in command.params
        if isinstance(p, click.Option) and not set(p.opts) & {"--help", "--version"}
    ]


def check_table(command: click.Command, rows: dict[frozenset[str], tuple[str, str]]) -> None:
    seen: set[frozenset[str]] = set()
    parsed = parsed_defaults(command)
    for param in options_of(command):
        names = frozenset(param.opts)
        assert names in rows, f"README has no defaults row for {'/'.join(param.opts)}"
        stated = readme_default(rows[names][0])
        code = code_default(param, parsed)
        assert stated == code, f"{'/'.join(param.opts)}: README says {stated!r}, the code {code!r}"
        seen.add(names)
    assert set(rows) == seen, f"README rows for options that do not exist: {set(rows) - seen}"


def test_reduce_defaults_match_the_parser() -> None:
    reduce_cmd = cli.commands["reduce"]
    rows = table_after(section("Defaults", USAGE), "Every default of `repomin reduce`")
    check_table(reduce_cmd, rows)
    assert f"`{','.join(DEFAULT_SCHEDULE)}`" == rows[frozenset({"--passes"})][1]
    listed = _TICKED.findall(rows[frozenset({"--no-default-ignores"})][1])
    assert tuple(listed) == DEFAULT_IGNORED_NAMES


def test_replay_defaults_match_the_parser() -> None:
    report = cli.get_command(click.Context(cli), "report")  # loaded on first use
    assert isinstance(report, click.Group)
    rows = table_after(section("Defaults", USAGE), "Defaults of `repomin report replay`")
    check_table(report.commands["replay"], rows)


def test_a_wrong_default_is_caught() -> None:
    reduce_cmd = cli.commands["reduce"]
    rows = table_after(section("Defaults", USAGE), "Every default of `repomin reduce`")
    rows[frozenset({"--timeout"})] = ("`61`", "")
    with pytest.raises(AssertionError, match="--timeout: README says '61'"):
        check_table(reduce_cmd, rows)


def sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", text, re.S)


def test_quick_start_is_two_fresh_machine_commands_in_sync_with_ci() -> None:
    blocks = sh_blocks(section("Quick start (fresh machine, Python ≥ 3.11)"))
    install, tests = blocks[0], blocks[1]
    assert "\n" not in install and "\n" not in tests
    assert install.startswith(
        "python3 -m venv .venv && . .venv/bin/activate && pip install . && repomin reduce "
        "examples/calculator "
    )
    assert "--backend" not in install  # the host runner
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == tests


def test_environment_names_are_documented() -> None:
    usage = section("Environment", USAGE)
    for name in IMPLICIT_ENVIRONMENT:
        assert f"`{name}" in usage, name
    assert "`--env NAME=VALUE`" in usage


def test_completion_command_works() -> None:
    assert '"$(_REPOMIN_COMPLETE=bash_source repomin)"' in README
    env = {**os.environ, "_REPOMIN_COMPLETE": "bash_source", "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", "from repomin.cli.main import main; main()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "_repomin_completion" in done.stdout, done.stderr


def test_docker_setup_scripts_named_in_readme_exist() -> None:
    tools = section("Tools used when present", USAGE)
    for script in (".ci/docker-setup.sh", "docker/build-test-images.sh"):
        assert f"bash {script} --python" in tools
        assert (ROOT / script).is_file()
