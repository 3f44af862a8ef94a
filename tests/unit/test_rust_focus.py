"""rustc's first error, alone: its locations read from real rustc output, the candidate that
keeps only the failing item with its module chain, and the ``refs`` pass proposing it once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from repomin.analysis.refs import RefGraph
from repomin.analysis.refs.rustfocus import first_error_locations, focus_tree
from repomin.passes.refs import RefsCut
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

LIB = (
    "//! The crate.\n"
    "#![deny(warnings)]\n\n"
    "pub mod net;\n"
    "pub mod util;\n\n"
    "pub use crate::net::Client;\n\n"
    "pub fn api() -> u32 {\n    util::helper() + net::port()\n}\n\n"
    "mod sealed {\n    pub trait Sealed {}\n}\n"
)
NET = "pub struct Client;\n\npub fn port() -> u32 {\n    crate::util::helper()\n}\n"
UTIL = "pub fn helper() -> u32 {\n    1\n}\n"
CRATE = {
    "Cargo.toml": '[package]\nname = "tiny"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": LIB,
    "src/net/mod.rs": NET,
    "src/util.rs": UTIL,
}

RUSTC_OUTPUT = """\
   Compiling tiny v0.1.0 (/work/tiny)
warning: unused import: `std::fmt`
 --> src/util.rs:1:5
  |
error: trait `Sealed` is never used
  --> src/lib.rs:14:15
   |
14 |     pub trait Sealed {}
   |               ^^^^^^
   |
note: the lint level is defined here
  --> src/lib.rs:2:9
   |
2  | #![deny(warnings)]
   |         ^^^^^^^^
error[E0425]: cannot find value `x` in this scope
 --> src/net/mod.rs:4:5
error: could not compile `tiny` (lib) due to 2 previous errors
"""


def graph_of(tree: Tree) -> RefGraph:
    return RefGraph(tree, command="cargo build --offline")


def test_the_first_errors_locations_in_order() -> None:
    assert first_error_locations(RUSTC_OUTPUT) == [("src/lib.rs", 14, 15), ("src/lib.rs", 2, 9)]
    assert first_error_locations("warning: x\n --> src/a.rs:1:1\n") == []
    assert first_error_locations("error: could not compile `x`\n --> src/a.rs:1:1\n") == []
    colored = "\x1b[1m\x1b[91merror\x1b[0m: boom\n  \x1b[94m-->\x1b[0m src/a.rs:3:1\n"
    assert first_error_locations(colored) == [("src/a.rs", 3, 1)]


def test_the_failing_item_alone_with_its_module_chain() -> None:
    tree = text_tree(CRATE)
    found = focus_tree(graph_of(tree), [(RUSTC_OUTPUT, "/work/tiny")], lambda p: False, graph_of)
    assert found is not None
    candidate, description = found
    assert "src/lib.rs:2" in description or "src/lib.rs:14" in description
    assert sorted(candidate.entries) == ["Cargo.toml", "src/lib.rs"]
    lib = candidate["src/lib.rs"].data.decode()
    assert lib.startswith("//! The crate.\n#![deny(warnings)]\n")
    assert "mod sealed {\n    pub trait Sealed {}\n}" in lib
    assert "mod net" not in lib and "pub use" not in lib and "fn api" not in lib


def test_an_error_below_the_root_keeps_the_mod_lines_down_to_it() -> None:
    output = "error: unused variable: `unused`\n --> src/net/mod.rs:3:9\n"
    tree = text_tree({**CRATE, "src/net/mod.rs": NET.replace("{\n", "{\n    let unused = 1;\n", 1)})
    found = focus_tree(graph_of(tree), [(output, "/w")], lambda p: False, graph_of)
    assert found is not None
    candidate, _ = found
    assert sorted(candidate.entries) == ["Cargo.toml", "src/lib.rs", "src/net/mod.rs"]
    lib = candidate["src/lib.rs"].data.decode()
    assert "pub mod net;" in lib and "mod util" not in lib and "fn api" not in lib
    net = candidate["src/net/mod.rs"].data.decode()
    assert "let unused = 1" in net and "struct Client" not in net


def test_nothing_is_proposed_outside_the_crate_or_when_protected() -> None:
    tree = text_tree(CRATE)
    elsewhere = "error: boom\n --> /usr/lib/rustlib/src/core.rs:1:1\n"
    assert focus_tree(graph_of(tree), [(elsewhere, "/w")], lambda p: False, graph_of) is None
    assert focus_tree(graph_of(tree), [("no rustc here", "/w")], lambda p: False, graph_of) is None
    protected = focus_tree(
        graph_of(tree), [(RUSTC_OUTPUT, "/w")], lambda p: p == "src/lib.rs", graph_of
    )
    assert protected is None


def test_the_refs_pass_proposes_it_once_before_the_mod_cuts() -> None:
    tree = text_tree(CRATE)
    problem = PredicateProblem(tree, lambda t: "Sealed" in t["src/lib.rs"].data.decode())
    cut = RefsCut("cargo build --offline", failures=[(RUSTC_OUTPUT, "/w")])
    cut.run(problem)
    assert sorted(problem.current.entries) == ["Cargo.toml", "src/lib.rs"]
    first = problem.calls
    cut.run(problem)
    assert problem.calls == first  # once per reduction


@pytest.mark.skipif(shutil.which("rustc") is None, reason="rustc is not installed")
def test_real_rustc_output_names_the_item_and_the_candidate_still_fails_so(tmp_path: Path) -> None:
    src = tmp_path / "lib.rs"
    src.write_text(LIB.replace("pub mod net;\npub mod util;\n\npub use crate::net::Client;\n", "")
                   .replace("    util::helper() + net::port()\n", "    1\n"))  # fmt: skip
    run = subprocess.run(
        ["rustc", "--crate-type", "lib", "--edition", "2021", "lib.rs", "-o", "/dev/null"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode != 0
    locations = first_error_locations(run.stderr)
    assert locations and locations[0][0] == "lib.rs", run.stderr
    tree = text_tree({"lib.rs": src.read_text()})
    g = RefGraph(tree, command="rustc --crate-type lib lib.rs")
    found = focus_tree(g, [(run.stderr, str(tmp_path))], lambda p: False, lambda t: RefGraph(t))
    assert found is not None
    kept = found[0]["lib.rs"].data.decode()
    assert "fn api" not in kept and "trait Sealed" in kept
    src.write_text(kept)
    again = subprocess.run(
        ["rustc", "--crate-type", "lib", "--edition", "2021", "lib.rs", "-o", "/dev/null"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "trait `Sealed` is never used" in again.stderr
