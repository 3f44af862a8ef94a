"""Rust references: crate roots from ``Cargo.toml`` per command, ``mod`` declarations in both
layouts, ``#[path]``, ``include!``-family macros, comments and literals that declare nothing,
workspaces, hostile input; and the ``refs`` pass's Rust candidates (the unreachable files in one
cut, a ``mod`` line with the files only it reaches)."""

from __future__ import annotations

from repomin.analysis.refs import RefGraph
from repomin.analysis.refs.cargo import command_kinds
from repomin.analysis.refs.rustcuts import rust_cuts
from repomin.analysis.refs.rustitems import dead_spans, without_spans, words
from repomin.analysis.refs.rustsrc import lex, scan, without_module
from repomin.passes.refs import RefsCut
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

MANIFEST = '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n'


def graph(files: dict[str, str | bytes], command: str = "cargo build --offline") -> RefGraph:
    return RefGraph(text_tree(files), command=command)


def rust_reachable(g: RefGraph) -> list[str]:
    return sorted(p for p in g.reachable if g.language(p) == "rust")


def test_mod_rs_and_2018_layouts() -> None:
    files = {
        "Cargo.toml": MANIFEST,
        "src/lib.rs": "pub mod a;\nmod b;\n",
        "src/a.rs": "mod inner;\n",  # 2018: a.rs's children live in a/
        "src/a/inner.rs": "",
        "src/b/mod.rs": "mod deep;\n",  # mod.rs: its children live beside it
        "src/b/deep.rs": "",
        "src/inner.rs": "",  # not a's child: a is not a mod.rs file
        "src/b/mod/deep.rs": "",
        "src/dead.rs": "",
    }
    g = graph(files)
    assert g.edges("src/lib.rs") == {"src/a.rs", "src/b/mod.rs"}
    assert g.edges("src/a.rs") == {"src/a/inner.rs"}
    assert g.edges("src/b/mod.rs") == {"src/b/deep.rs"}
    assert g.unreachable() == ["src/b/mod/deep.rs", "src/dead.rs", "src/inner.rs"]


def test_path_attributes_outside_and_inside_inline_modules() -> None:
    files = {
        "Cargo.toml": MANIFEST,
        "src/lib.rs": (
            '#[path = "platform/unix_impl.rs"]\nmod sys;\n'
            'mod outer {\n    #[path = "x.rs"]\n    mod inner;\n    mod plain;\n}\n'
            '#[cfg_attr(windows, path = "win.rs")]\nmod os;\n'
        ),
        "src/platform/unix_impl.rs": "mod helper;\n",  # a #[path] file is read like mod.rs
        "src/platform/helper.rs": "",
        "src/outer/x.rs": "",
        "src/outer/plain.rs": "",
        "src/win.rs": "",
        "src/os.rs": "",
        "src/x.rs": "",
    }
    g = graph(files)
    assert g.edges("src/lib.rs") == {
        "src/platform/unix_impl.rs",
        "src/outer/x.rs",
        "src/outer/plain.rs",
        "src/win.rs",
        "src/os.rs",
    }
    assert "src/platform/helper.rs" in g.edges("src/platform/unix_impl.rs")
    assert g.unreachable() == ["src/x.rs"]


def test_include_macros_and_literal_paths() -> None:
    files = {
        "Cargo.toml": MANIFEST,
        "src/lib.rs": (
            'const T: &str = include_str!("../data/table.txt");\n'
            'include!("generated.rs");\n'
            'include!(concat!(env!("CARGO_MANIFEST_DIR"), "/gen/more.rs"));\n'
            'include!(concat!(env!("OUT_DIR"), "/bindings.rs"));\n'
        ),
        "src/generated.rs": "",
        "gen/more.rs": "",
        "data/table.txt": "x",
        "build.rs": 'fn main() { cc::Build::new().file("csrc/glue.c").compile("g"); }\n',
        "csrc/glue.c": "int glue(void) { return 0; }\n",
        "csrc/unused.c": "",
    }
    g = graph(files)
    assert g.edges("src/lib.rs") == {"src/generated.rs", "gen/more.rs", "data/table.txt"}
    assert "csrc/glue.c" in g.edges("build.rs")
    assert g.unreachable() == ["csrc/unused.c"]


def test_comments_and_literals_declare_no_module() -> None:
    text = (
        "// mod line_comment;\n"
        "/* mod block; /* nested */ mod still_comment; */\n"
        'const S: &str = "mod in_string;";\n'
        'const R: &str = r#"mod in_raw; "quoted" "#;\n'
        "const C: char = '{';\n"
        "fn f<'a>(x: &'a str) -> &'a str { x }\n"
        "#[cfg(test)]\nmod tests;\n"
        "pub(crate) mod r#real;\n"
    )
    assert [d.name for d in scan(text).mods] == ["tests", "real"]
    files = {
        "Cargo.toml": MANIFEST,
        "src/lib.rs": text,
        "src/tests.rs": "",  # a cfg-gated module is still an edge
        "src/real.rs": "",
        **{f"src/{n}.rs": "" for n in ("line_comment", "block", "still_comment", "in_string")},
        "src/in_raw.rs": "",
    }
    assert graph(files).unreachable() == [
        "src/block.rs",
        "src/in_raw.rs",
        "src/in_string.rs",
        "src/line_comment.rs",
        "src/still_comment.rs",
    ]


def test_lex_keeps_offsets_and_literal_values() -> None:
    text = 'let a = b"x\\"y"; /* c\nd */ let z = \'\\n\'; let s = "p\\\\q";\n'
    lexed = lex(text)
    assert len(lexed.code) == len(text)
    assert lexed.code.count("\n") == text.count("\n")
    assert sorted(lexed.values.values()) == ["p\\q", 'x"y']


def test_command_decides_which_targets_are_roots() -> None:
    files = {
        "Cargo.toml": MANIFEST + '\n[[bench]]\nname = "speed"\npath = "benches/speed.rs"\n',
        "src/main.rs": "fn main() {}\n",
        "src/bin/tool.rs": "fn main() {}\n",
        "src/bin/multi/main.rs": "mod part;\nfn main() {}\n",
        "src/bin/multi/part.rs": "",
        "build.rs": "fn main() {}\n",
        "tests/it.rs": "mod common;\n",
        "tests/common/mod.rs": "",
        "examples/demo.rs": "fn main() {}\n",
        "benches/speed.rs": "",
    }
    built = rust_reachable(graph(files, "cargo build --offline"))
    assert built == [
        "build.rs",
        "src/bin/multi/main.rs",
        "src/bin/multi/part.rs",
        "src/bin/tool.rs",
        "src/main.rs",
    ]
    tested = set(rust_reachable(graph(files, "cargo test -q"))) - set(built)
    assert tested == {"tests/it.rs", "tests/common/mod.rs", "examples/demo.rs"}
    for everything in ("cargo build --all-targets", "cargo bench", "make check", "./ci.sh"):
        assert graph(files, everything).unreachable() == [], everything


def test_command_kinds() -> None:
    assert command_kinds("cd x && cargo +nightly --offline check -q") == {"lib", "bin", "build"}
    assert "example" in command_kinds("cargo run --example=demo")
    assert "test" in command_kinds("cargo build; cargo test")
    assert command_kinds("cargo nextest run") == command_kinds("python build.py")
    assert command_kinds("cargo 'unterminated") == command_kinds("sh -c x")


def test_workspace_members_and_path_dependencies() -> None:
    files = {
        "Cargo.toml": '[workspace]\nmembers = ["crates/*"]\n',
        "crates/app/Cargo.toml": MANIFEST + '\n[dependencies]\nutil = { path = "../../util" }\n',
        "crates/app/src/main.rs": "fn main() {}\n",
        "util/Cargo.toml": MANIFEST,
        "util/src/lib.rs": "",
        "util/src/old.rs": "",
    }
    g = graph(files)
    assert g.edges("Cargo.toml") == {"crates/app/Cargo.toml"}
    assert g.edges("crates/app/Cargo.toml") == {"crates/app/src/main.rs", "util/Cargo.toml"}
    assert g.unreachable() == ["util/src/old.rs"]


def test_a_path_leaving_the_tree_is_never_followed() -> None:
    files = {
        "Cargo.toml": MANIFEST + '\n[lib]\npath = "../../outside/lib.rs"\n',
        "src/lib.rs": "",
        "src/main.rs": (
            '#[path = "../../etc/passwd"]\nmod a;\n#[path = "/etc/passwd"]\nmod b;\n'
            'const X: &str = include_str!("../../../etc/shadow");\nfn main() {}\n'
        ),
    }
    g = graph(files)
    assert g.edges("src/main.rs") == set()
    assert all(not p.startswith(("/", "..")) for p in g.reachable)
    assert g.unreachable() == ["src/lib.rs"]  # the [lib] path replaced src/lib.rs


def test_orphan_rust_files_with_main_are_roots() -> None:
    files = {"tool.rs": "mod util;\nfn main() {}\n", "util.rs": "", "stray.rs": ""}
    assert graph(files, "rustc tool.rs && ./tool").unreachable() == ["stray.rs"]
    assert graph(files, "sh build.sh").unreachable() == ["stray.rs"]


def test_hostile_sources_and_manifests_do_not_crash() -> None:
    huge = 'fn f() { let s = "{"; }\n' * 8_000 + "mod tail;\n"
    files: dict[str, str | bytes] = {
        "Cargo.toml": MANIFEST,
        "src/lib.rs": b"\xff\xfe mod latin; \x80\nmod huge;\nmod open;\n",
        "src/latin.rs": "",
        "src/huge.rs": huge,
        "src/huge/tail.rs": "",
        "src/open.rs": '/* never closed mod hidden;\nconst S: &str = "also open',
        "src/open/hidden.rs": "",
        "src/lib2.rs": "/*" * 100_000,  # unreachable; scanned for #[path] and include!
        "other/Cargo.toml": "[package\nname = ",  # not TOML: read for mentions only
        "other/src/lib.rs": "",
        "odd/Cargo.toml": '[package]\nname = "o"\n[lib]\npath = 5\n[[bin]]\nname = 3\n',
        "odd/src/lib.rs": "",
    }
    g = graph(files)
    assert g.unreachable() == ["other/src/lib.rs", "src/lib2.rs", "src/open/hidden.rs"]
    assert "src/huge/tail.rs" in g.reachable


def test_without_module_takes_attributes_docs_and_same_file_uses() -> None:
    text = (
        "#![deny(warnings)]\n"
        "mod keep;\n"
        '/// Docs.\n#[cfg(feature = "x")]\npub mod uri;\n'
        "pub use crate::uri::Uri;\n"
        "#[doc(no_inline)]\npub use crate::uri::{Authority, Port};\n"
        "use crate::{keep::K, uri::Scheme};\n"
        "fn f() {}\n"
    )
    decl = next(d for d in scan(text).mods if d.name == "uri")
    assert without_module(text, decl, crate_root=True) == (
        "#![deny(warnings)]\nmod keep;\nuse crate::{keep::K, uri::Scheme};\nfn f() {}\n"
    )
    assert "pub use crate::uri::Uri;" in without_module(text, decl, crate_root=False)


# -- the pass ----------------------------------------------------------------------------------

CRATE = {
    "Cargo.toml": MANIFEST,
    "src/lib.rs": "#![deny(warnings)]\npub mod header;\npub mod uri;\npub use crate::uri::Uri;\n",
    "src/header/mod.rs": "mod name;\n// BUG here\n",
    "src/header/name.rs": "",
    "src/uri/mod.rs": "mod authority;\nmod port;\npub struct Uri;\n",
    "src/uri/authority.rs": "",
    "src/uri/port.rs": "",
    "tests/api.rs": "",
    "benches/speed.rs": "",
    "examples/demo.rs": "",
}


def _fails(tree: Tree) -> bool:
    """``cargo build`` fails the same way while the header module with its BUG is compiled."""
    lib = tree.entries.get("src/lib.rs")
    return lib is not None and b"mod header;" in lib.data and "src/header/mod.rs" in tree


def test_the_pass_deletes_the_unreachable_rust_files_in_one_candidate() -> None:
    problem = PredicateProblem(text_tree(CRATE), lambda t: True)
    RefsCut("cargo build --offline").run(problem)
    first = problem.accepted[0][1]
    assert "delete 3 files the reference graph cannot reach: rust 3" in first
    for gone in ("tests/api.rs", "benches/speed.rs", "examples/demo.rs"):
        assert gone not in problem.current


def test_the_pass_cuts_a_mod_line_with_its_directory_and_uses() -> None:
    problem = PredicateProblem(text_tree(CRATE), _fails)
    RefsCut("cargo build --offline").run(problem)
    assert sorted(problem.current.entries) == [
        "Cargo.toml",
        "src/header/mod.rs",
        "src/lib.rs",
    ]
    assert problem.current.entries["src/lib.rs"].data == b"#![deny(warnings)]\npub mod header;\n"
    descriptions = [d for _, d in problem.accepted]
    assert any(
        "`mod uri;` in src/lib.rs and the 3 files only it reached" in d for d in descriptions
    )
    calls = problem.calls
    RefsCut("cargo build --offline").run(problem)  # a new pass object: nothing left to cut
    assert problem.calls - calls == 1  # `mod header;` is proposed once more and rejected


def test_a_rejected_mod_cut_is_proposed_again_only_after_its_files_changed() -> None:
    modules = [p for p in CRATE if p.startswith("src/") and p != "src/lib.rs"]
    problem = PredicateProblem(text_tree(CRATE), lambda t: all(p in t for p in modules))
    cut = RefsCut("cargo build --offline")
    cut.run(problem)
    assert problem.calls == 1 + 5  # the unreachable cut, then the five `mod` lines
    cut.run(problem)
    assert problem.calls == 6  # nothing changed: nothing proposed again
    edited = CRATE["src/lib.rs"] + "// edited\n"
    problem._current = problem.current.replace("src/lib.rs", edited.encode())
    cut.run(problem)
    assert problem.calls == 6 + 2  # `mod header;` and `mod uri;` of the edited file


def test_a_module_something_else_names_is_not_proposed() -> None:
    port = "pub fn p() -> crate::header::HeaderName {\n    crate::header::HeaderName\n}\n"
    files = {
        **CRATE,
        "src/lib.rs": CRATE["src/lib.rs"] + "pub fn make() -> Uri { Uri }\n",
        "src/header/mod.rs": "mod name;\npub use self::name::HeaderName;\n",
        "src/header/name.rs": "pub struct HeaderName;\n",
        "src/uri/port.rs": port,
    }
    g = graph(files)
    cuts = rust_cuts(g, "mod", lambda _: False, lambda t: RefGraph(t, command=g.command))
    # `Uri` is still named by `make`, `header` by port.rs, `name` by header's `pub use`
    # (`use self::name::…` goes with the cut, `HeaderName` stays named by port.rs)
    assert sorted(c.key[2] for c in cuts) == ["authority", "port"]
    assert (
        cuts[0].description == "delete `mod port;` in src/uri/mod.rs and the 1 file only it reached"
    )


# -- items nothing names -----------------------------------------------------------------------

ITEMS = """\
#![deny(warnings)]
use std::fmt;

/// Used by `main`.
pub struct Used(u8);

impl Used {
    pub fn new() -> Self { Used(0) }
    pub fn never_called(&self) -> u8 { self.0 }
    const UNUSED_CONST: u8 = 3;
}

impl fmt::Debug for Used {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "Used") }
}

struct Orphan { x: u32 }

impl Orphan {
    fn get(&self) -> u32 { self.x }
}

impl fmt::Display for Orphan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { write!(f, "{}", self.x) }
}

// Mentioned only here: DeadFn, and in a string:
const MESSAGE: &str = "dead_fn is never called";
const LIMIT: u8 = 3;
fn limit() -> String { format!("{LIMIT}") }
fn default_x() -> u8 { 0 }
#[derive(Default)]
struct Config { #[serde(default = "default_x")] x: u8 }

fn dead_fn() -> u32 { 1 }

#[no_mangle]
pub extern "C" fn exported() {}

macro_rules! unused_macro { () => {}; }

#[cfg(test)]
mod tests {
    #[test]
    fn t() { super::main(); }
}

fn main() {
    let u = Used::new();
    let _c = Config::default();
    println!("{:?} {} {}", u, MESSAGE, limit());
}
"""


def _cut(text: str, tests_built: bool = False) -> str:
    return without_spans(text, dead_spans(text, words(text), tests_built))


def test_items_nothing_names_go_with_their_impls() -> None:
    out = _cut(ITEMS)
    for gone in ("never_called", "UNUSED_CONST", "Orphan", "fn dead_fn", "unused_macro", "tests"):
        assert gone not in out, gone
    for kept in (
        "pub struct Used",
        "pub fn new",
        "impl fmt::Debug for Used",
        "fn fmt(&self",
        "const MESSAGE",
        "const LIMIT",
        "fn default_x",
        "exported",
        "fn main",
        "use std::fmt;",
        "#![deny(warnings)]",
    ):
        assert kept in out, kept
    assert "/// Used by `main`." in out and "Mentioned only here" in out
    assert "mod tests" in _cut(ITEMS, tests_built=True)


def test_items_the_pass_cuts_in_one_candidate_per_file() -> None:
    files = {"Cargo.toml": MANIFEST, "src/main.rs": ITEMS}
    problem = PredicateProblem(
        text_tree(files), lambda t: b"fn main" in t.entries["src/main.rs"].data
    )
    RefsCut("cargo build").run(problem)
    assert problem.calls == 1
    assert problem.accepted[0][1] == "delete 8 item(s) of src/main.rs nothing else names"
    assert problem.current.entries["src/main.rs"].data.decode() == _cut(ITEMS)
