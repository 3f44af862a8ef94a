"""The ``--cluster`` flags are declared once: ``reduce`` and ``replay`` offer the same options
with the same help, and ``replay`` hands them to its function as keyword arguments."""

from __future__ import annotations

from typing import Any

import click
from click.testing import CliRunner

from repomin.cli.cluster_flags import cluster_options
from repomin.cli.main import cli

NAMES = ["cluster", "cluster_tls_ca", "cluster_tls_cert", "cluster_tls_key", "allow_mixed_workers"]


def _cluster_params(command: click.Command) -> dict[str, tuple[tuple[str, ...], str | None]]:
    return {
        p.name: (tuple(p.opts), getattr(p, "help", None))
        for p in command.params
        if p.name is not None and p.name in NAMES
    }


def test_reduce_and_replay_offer_the_same_cluster_flags() -> None:
    assert isinstance(cli, click.Group)
    ctx = click.Context(cli)
    reduce, report = cli.get_command(ctx, "reduce"), cli.get_command(ctx, "report")
    assert reduce is not None and isinstance(report, click.Group)
    replay = report.commands["replay"]
    flags = _cluster_params(reduce)
    assert sorted(flags) == sorted(NAMES)
    assert all(help_text for _, help_text in flags.values())
    assert _cluster_params(replay) == flags


def test_cluster_options_pass_the_flags_as_keyword_arguments(tmp_path: Any) -> None:
    seen: dict[str, Any] = {}

    @click.command()
    @cluster_options
    def probe(**kw: Any) -> None:
        seen.update(kw)

    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    result = CliRunner().invoke(
        probe, ["--cluster", "tls://h:1", "--cluster-tls-ca", str(ca), "--allow-mixed-workers"]
    )
    assert result.exit_code == 0, result.output
    assert seen == {
        "cluster": "tls://h:1",
        "cluster_tls_ca": ca,
        "cluster_tls_cert": None,
        "cluster_tls_key": None,
        "allow_mixed_workers": True,
    }
