"""A real crate reduced by real ``cargo build --offline``: the ``refs`` pass reads Rust's own
module graph.

The crate fails one way (``#![deny(warnings)]`` and an unused variable in ``src/broken.rs``); a
``net/`` directory of modules, a ``util`` module, a ``legacy/`` directory no ``mod`` declares,
and the tests, benches and examples ``cargo build`` never compiles are unrelated. Only ``refs``
runs (no trace, whose cut of the files the build never opened would leave it nothing): it
deletes the files no crate root reaches in one candidate, then keeps rustc's failing item alone
with its module chain (``mod net;`` with ``src/net/`` and its ``pub use`` go, ``mod broken;``
stays). The ``mod`` cuts on their own are tested in ``tests/unit/test_refs_rust.py``. Before
the Rust graph a ``.rs`` file was of unknown kind, never cut: the payload was the whole crate.

cargo lives under the user's HOME (rustup): the reduction runs with ``--home inherit``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e._reduce import reduce_ok, write_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("cargo") is None, reason="cargo is not on PATH: no Rust build to reduce"
    ),
]

CRATE = {
    "Cargo.toml": '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "#![deny(warnings)]\n\npub mod broken;\npub mod net;\npub mod util;\n\n"
        "pub use crate::net::Client;\n"
    ),
    "src/broken.rs": "pub fn compute() -> u32 {\n    let unused = 1;\n    2\n}\n",
    "src/util.rs": "pub fn helper() -> u32 {\n    1\n}\n",
    "src/net/mod.rs": "mod http;\nmod tcp;\n\npub struct Client;\n\npub use http::get;\n",
    "src/net/http.rs": "pub fn get() -> u32 {\n    super::tcp::connect()\n}\n",
    "src/net/tcp.rs": "pub fn connect() -> u32 {\n    7\n}\n",
    "src/legacy/old.rs": "pub fn old() -> u32 {\n    0\n}\n",
    "src/legacy/older.rs": "pub fn older() -> u32 {\n    0\n}\n",
    "tests/api.rs": "#[test]\nfn api() {\n    assert_eq!(tiny::util::helper(), 1);\n}\n",
    "benches/speed.rs": "fn main() {}\n",
    "examples/demo.rs": 'fn main() {\n    println!("{}", tiny::util::helper());\n}\n',
}


def _payload(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _refs_events(report: dict[str, Any], decision: str) -> list[str]:
    return [
        str(e.get("description", ""))
        for e in report["events"]
        if e.get("phase") == "refs" and e.get("decision") == decision
    ]


def test_refs_cuts_unreachable_rust_files_and_whole_modules(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "crate", CRATE)
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, "cargo build --offline --quiet", "unused variable",
        "--passes", "refs", "--no-trace", "--home", "inherit", "--jobs", "1",
        final_runs=2,
    )  # fmt: skip
    payload = _payload(out)
    assert payload == ["Cargo.toml", "src/broken.rs", "src/lib.rs"], json.dumps(
        report["events"], indent=1
    )
    assert (out / "src/lib.rs").read_text() == "#![deny(warnings)]\n\npub mod broken;\n"
    accepted = _refs_events(report, "accepted")
    assert any("delete 5 files the reference graph cannot reach: rust 5" in d for d in accepted)
    # rustc's first error (the unused variable in src/broken.rs) alone with its module chain:
    # `mod net;`, `mod util;` and the `pub use` go in that one candidate
    assert any(
        "keep only the item of rustc's first error (src/broken.rs:" in d for d in accepted
    ), accepted


#: Every module is named by other code (no `mod` cut can go alone); rustc's first error is a
#: dead trait in `src/lib.rs` under `#![deny(warnings)]`.
TANGLED = {
    "Cargo.toml": '[package]\nname = "tangled"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": (
        "#![deny(warnings)]\n\npub mod net;\npub mod util;\n\npub use crate::net::Client;\n\n"
        "pub fn api() -> u32 {\n    util::helper() + net::port()\n}\n\n"
        "mod sealed {\n    pub trait Sealed {}\n}\n"
    ),
    "src/net/mod.rs": (
        "pub struct Client;\n\npub fn port() -> u32 {\n    crate::util::helper()\n}\n"
    ),
    "src/util.rs": "pub fn helper() -> u32 {\n    1\n}\n",
}


def test_the_failing_item_alone_is_the_first_rust_cut(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "crate", TANGLED)
    out = tmp_path / "out"
    report = reduce_ok(
        src, out, "cargo build --offline --quiet", "never used",
        "--passes", "refs", "--no-trace", "--home", "inherit", "--jobs", "1",
        final_runs=2,
    )  # fmt: skip
    assert _payload(out) == ["Cargo.toml", "src/lib.rs"], json.dumps(report["events"], indent=1)
    lib = (out / "src/lib.rs").read_text()
    assert lib.startswith("#![deny(warnings)]") and "trait Sealed" in lib
    assert "mod net" not in lib and "fn api" not in lib
    accepted = _refs_events(report, "accepted")
    assert any("keep only the item of rustc's first error (src/lib.rs:" in d for d in accepted)
    facets = json.dumps(report["failure_identity"])
    assert "dead_code" in facets
