"""docker/build-env.sh: the Dockerfile's CA bundle and index build arguments, in one RUN step."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docker" / "build-env.sh"
CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----"


def sourced(tmp_path: Path, **env: str) -> dict[str, str]:
    """The variables build-env.sh exports, as a RUN step after ``. build-env.sh &&`` sees them."""
    base = {
        "PATH": "/usr/bin:/bin",
        "REPOMIN_BUILD_BUNDLE": str(tmp_path / "bundle.pem"),
        "REPOMIN_BUILD_GIVEN": str(tmp_path / "ca.pem"),
    }
    done = subprocess.run(
        ["sh", "-c", '. "$0" && env', str(SCRIPT)],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def test_without_arguments_nothing_is_set(tmp_path: Path) -> None:
    seen = sourced(tmp_path, CA_CERT="", INDEX_URL="", EXTRA_INDEX_URL="")
    pip = {"PIP_CERT", "REQUESTS_CA_BUNDLE", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"}
    assert not pip & set(seen)
    assert not (tmp_path / "bundle.pem").exists()


def test_the_ca_is_added_to_a_build_only_bundle_and_the_indexes_are_set(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("FROM THE CONTEXT\n")
    seen = sourced(
        tmp_path,
        CA_CERT=CA,
        INDEX_URL="https://mirror.example/simple",
        EXTRA_INDEX_URL="https://extra.example/simple",
    )
    bundle = tmp_path / "bundle.pem"
    assert seen["PIP_CERT"] == seen["REQUESTS_CA_BUNDLE"] == str(bundle)
    text = bundle.read_text()
    assert text.endswith("FROM THE CONTEXT\n" + CA + "\n")
    assert seen["PIP_INDEX_URL"] == "https://mirror.example/simple"
    assert seen["PIP_EXTRA_INDEX_URL"] == "https://extra.example/simple"


def test_a_bundle_file_in_the_context_alone_is_enough(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("ONLY THE FILE\n")
    seen = sourced(tmp_path)
    assert Path(seen["PIP_CERT"]).read_text().endswith("ONLY THE FILE\n")
