"""Real Rust case: a crate from Debian's packaged Rust crates, built offline by ``cargo``.

* ``rust-http-0.2.7``: the ``http`` crate 0.2.7 as Debian ships it (``librust-http-dev``, 44
  files, 494 kB), with its dependencies (``bytes``, ``fnv``, ``itoa``) from the same archive as
  a directory source, built with ``cargo build --offline``. Its ``#![deny(warnings)]`` turns the
  warnings of this machine's newer rustc into errors (a dead trait, ``drop`` of a ``Copy``
  value, implicit autorefs of raw pointers, ``mem::uninitialized``): exit 101, the first error
  ``trait Sealed is never used`` in ``src/lib.rs``.

The packages are downloaded with ``apt-get download`` into the cache and unpacked with
``dpkg-deb -x``: nothing is installed. The case's tree holds the crate (its dev-dependencies
removed: they are not packaged offline) and a ``.cargo/config.toml`` that replaces crates.io
with the unpacked directory; ``cargo`` writes ``Cargo.lock`` once when the case is built.
``cargo`` here may come from rustup under ``HOME``, which every sample replaces with a scratch
directory: the command names rustup's and cargo's homes (``RUSTUP_HOME``, ``CARGO_HOME``, as
this environment or rustup's defaults give them), so the samples, the by-hand check and your
shell find the same toolchain.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from cases import Case, CaseUnavailable
from interesting import Contract
from real_fetch import expert_builder, run_client

#: Debian package, version: the crate and what it needs to build.
HTTP_PACKAGES = (
    ("librust-http-dev", "0.2.7-1"),
    ("librust-bytes-dev", "1.2.1-1"),
    ("librust-fnv-dev", "1.0.7-1"),
    ("librust-itoa-dev", "1.0.1-2"),
)
HTTP_CRATE = "http-0.2.7"


def _registry(cache: Path) -> Path:
    """The unpacked ``/usr/share/cargo/registry`` of :data:`HTTP_PACKAGES`, made once."""
    base = cache / "rust-registry"
    registry = base / "root" / "usr" / "share" / "cargo" / "registry"
    if (registry / HTTP_CRATE / "Cargo.toml").is_file():
        return registry
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise CaseUnavailable(f"{tool} is not installed")
    debs = base / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    for package, version in HTTP_PACKAGES:
        if not list(debs.glob(f"{package}_*.deb")):
            run_client(
                ["apt-get", "download", "-q", f"{package}={version}"],
                f"apt-get download {package}={version}",
                cwd=debs,
            )
    for deb in sorted(debs.glob("*.deb")):
        run_client(["dpkg-deb", "-x", str(deb), str(base / "root")], f"dpkg-deb -x {deb.name}")
    if not (registry / HTTP_CRATE / "Cargo.toml").is_file():
        raise CaseUnavailable(f"the unpacked packages hold no {HTTP_CRATE}")
    return registry


def _without_dev_dependencies(manifest: str) -> str:
    """``Cargo.toml`` without its ``[dev-dependencies…]`` tables (not packaged offline)."""
    return re.sub(r"(?ms)^\[dev-dependencies[^\n]*\n.*?(?=^\[|\Z)", "", manifest)


def build_http(root: Path, cache: Path) -> None:
    if shutil.which("cargo") is None:
        raise CaseUnavailable("cargo is not installed")
    registry = _registry(cache)
    shutil.copytree(registry / HTTP_CRATE, root, dirs_exist_ok=True)
    manifest = root / "Cargo.toml"
    manifest.write_text(_without_dev_dependencies(manifest.read_text("utf-8")), "utf-8")
    (root / ".cargo").mkdir(exist_ok=True)
    (root / ".cargo" / "config.toml").write_text(
        f'[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "{registry}"\n',
        "utf-8",
    )
    # Cargo.lock, once; the build fails (that is the case), the lock stays.
    subprocess.run(
        ["cargo", "generate-lockfile", "--offline"],
        cwd=root, capture_output=True, timeout=600, check=False,
    )  # fmt: skip
    shutil.rmtree(root / "target", ignore_errors=True)
    if not (root / "Cargo.lock").is_file():
        raise CaseUnavailable("cargo generate-lockfile --offline wrote no Cargo.lock")


HTTP_EXPERT: dict[str, Any] = {
    "expert": expert_builder(
        {
            "Cargo.toml": '[package]\nname = "http"\nversion = "0.2.7"\nedition = "2018"\n',
            "src/lib.rs": "#![deny(warnings)]\nmod sealed {\n    pub trait Sealed {}\n}\n",
        }
    ),
    "expert_files": 2,
    "expert_bytes": 117,
    "expert_note": (
        "Cargo.toml cut to [package] name/version/edition (no dependencies) and src/lib.rs to "
        "the crate's deny attribute and the dead trait; not files kept whole (kept whole, every "
        "module lib.rs declares stays: 23 files)"
    ),
}


def cargo_command(args: str) -> str:
    """``cargo ARGS`` with rustup's and cargo's homes named (see the module docstring)."""
    home = Path.home()
    rustup = os.environ.get("RUSTUP_HOME", str(home / ".rustup"))
    cargo = os.environ.get("CARGO_HOME", str(home / ".cargo"))
    return f"RUSTUP_HOME={shlex.quote(rustup)} CARGO_HOME={shlex.quote(cargo)} cargo {args}"


def rust_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="rust-http-0.2.7",
            description=(
                "Debian's http 0.2.7 crate (44 files) built offline by cargo; its "
                "#![deny(warnings)] makes this rustc's new warnings errors (exit 101)"
            ),
            contract=Contract(
                command=cargo_command("build --offline"),
                match=r"never used",
                exit_code=101,
                timeout=300.0,
            ),
            build=lambda root: build_http(root, real),
            cap_full=900.0,
            kind="rust",
            **HTTP_EXPERT,
        )
    ]
