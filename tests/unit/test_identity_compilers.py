"""The compiler facet on real gcc, clang, rustc and tsc runs in tmp_path: errors only, each as
tool, code (flag, error code, lint or message head) and file; numbered source lines are echoed."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.echo import counted_text, echoed_lines
from repomin.failure.identity import infer_identity, observe
from tests.unit._tool_runs import Runs, facet, need, run, write

MATCH = "invoice total mismatch"

C_SOURCES = {
    "src/unused.c": """\
        #include <stdio.h>

        int main(void) {
            int invoice_total = 125;
            printf("invoice total mismatch\\n");
            return 0;
        }
        """,
    "src/undeclared.c": """\
        #include <stdio.h>

        int main(void) {
            printf("%d invoice total mismatch\\n", totl);
            return 0;
        }
        """,
    "src/arity.c": """\
        static int add(int a, int b) { return a + b; }

        int main(void) {
            return add(1);
        }
        """,
    "src/warn.c": """\
        int main(void) {
            int unused_thing = 1;
            return 0;
        }
        """,
    "src/warn_and_error.c": """\
        int main(void) {
            int unused_thing = 1;
            return missing;
        }
        """,
}


@pytest.fixture(scope="session")
def gcc(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    exe = need("gcc")
    root = write(tmp_path_factory.mktemp("gcc"), C_SOURCES)

    commands = {
        "werror": ("-Wall", "-Werror=unused-variable", "src/unused.c"),
        "undeclared": ("src/undeclared.c",),
        "arity": ("src/arity.c",),
        "warn": ("-Wall", "src/warn.c"),
        "warn_and_error": ("-Wall", "src/warn_and_error.c"),
        "all_werror": ("-Wall", "-Werror", "src/warn.c"),
    }
    return Runs(lambda name: run(root, exe, "-c", "-o", "/dev/null", *commands[name]))


def test_gcc_werror_flag_is_the_code(gcc: Runs) -> None:
    outcome = gcc["werror"]
    assert outcome.exit_code == 1
    assert "[-Werror=unused-variable]" in outcome.output
    assert observe(outcome) == {
        "compiler": [{"tool": "gcc", "code": "-Werror=unused-variable", "file": "src/unused.c"}]
    }


def test_gcc_all_warnings_as_errors(gcc: Runs) -> None:
    assert facet(gcc["all_werror"], "compiler") == [
        {"tool": "gcc", "code": "-Werror=unused-variable", "file": "src/warn.c"}
    ]


def test_gcc_plain_error_code_is_the_message_head(gcc: Runs) -> None:
    outcome = gcc["arity"]
    assert "error: too few arguments to function 'add'" in outcome.output
    assert facet(outcome, "compiler") == [
        {"tool": "gcc", "code": "too few arguments to function", "file": "src/arity.c"}
    ]


def test_gcc_undeclared_identifier(gcc: Runs) -> None:
    """gcc's message starts with the quoted name, so it has no head before a quote: the code
    is the message's start (name included)."""
    outcome = gcc["undeclared"]
    assert "error: 'totl' undeclared (first use in this function)" in outcome.output
    [value] = facet(outcome, "compiler")
    assert value == {
        "tool": "gcc",
        "code": "'totl' undeclared (first use in this function)",
        "file": "src/undeclared.c",
    }


def test_gcc_warnings_alone_give_no_facet(gcc: Runs) -> None:
    outcome = gcc["warn"]
    assert outcome.exit_code == 0
    assert "warning: unused variable 'unused_thing' [-Wunused-variable]" in outcome.output
    assert observe(outcome) == {}


def test_gcc_warning_next_to_an_error_is_not_a_candidate(gcc: Runs) -> None:
    outcome = gcc["warn_and_error"]
    assert "warning: unused variable" in outcome.output
    [value] = facet(outcome, "compiler")
    assert value["code"].endswith("undeclared (first use in this function)")


def test_gcc_identity_tells_errors_apart(gcc: Runs) -> None:
    identity = infer_identity([gcc["werror"]])
    assert identity.matches(gcc["werror"])
    # The same flag in another file is another failure.
    assert not identity.matches(gcc["all_werror"])
    assert not identity.matches(gcc["undeclared"])
    assert infer_identity([gcc["undeclared"]]).matches(gcc["undeclared"])


def test_gcc_numbered_source_lines_are_echoed(gcc: Runs) -> None:
    outcome = gcc["undeclared"]
    lines = outcome.output.split("\n")
    numbered = [i for i, line in enumerate(lines) if line.lstrip().startswith("4 |")]
    assert numbered, outcome.output
    echoed = echoed_lines(lines)
    assert set(numbered) <= echoed
    header = next(i for i, line in enumerate(lines) if ": error: " in line)
    assert header not in echoed
    assert MATCH in outcome.output and MATCH not in counted_text(outcome.output)


def test_clang_undeclared_identifier(tmp_path: Path) -> None:
    clang = need("clang")
    root = write(tmp_path, C_SOURCES)
    outcome = run(root, clang, "-c", "-o", "/dev/null", "src/undeclared.c")
    assert facet(outcome, "compiler") == [
        {"tool": "gcc", "code": "use of undeclared identifier", "file": "src/undeclared.c"}
    ]
    assert MATCH not in counted_text(outcome.output)


# --- rustc ------------------------------------------------------------------------------------

RUST_SOURCES = {
    "src/e0425.rs": """\
        fn main() {
            let expected = 126;
            println!("invoice total mismatch {}", totl + expected);
        }
        """,
    "src/lint.rs": """\
        #![deny(warnings)]

        fn main() {
            let invoice_total = 125;
            println!("invoice total mismatch");
        }
        """,
    "src/warn.rs": """\
        fn main() {
            let invoice_total = 125;
        }
        """,
}


@pytest.fixture(scope="session")
def rustc(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    exe = need("rustc")
    root = write(tmp_path_factory.mktemp("rustc"), RUST_SOURCES)
    return Runs(
        lambda name: run(root, exe, "--edition", "2021", "--out-dir", "out", f"src/{name}.rs")
    )


def test_rustc_error_code(rustc: Runs) -> None:
    outcome = rustc["e0425"]
    assert "error[E0425]: cannot find value `totl` in this scope" in outcome.output
    # "error: aborting due to 1 previous error" is a summary, not a diagnostic.
    assert observe(outcome) == {
        "compiler": [{"tool": "rustc", "code": "E0425", "file": "src/e0425.rs"}]
    }


def test_rustc_denied_lint(rustc: Runs) -> None:
    outcome = rustc["lint"]
    assert "implied by `#[deny(warnings)]`" in outcome.output
    assert facet(outcome, "compiler") == [
        {"tool": "rustc", "code": "unused_variables", "file": "src/lint.rs"}
    ]
    assert not infer_identity([outcome]).matches(rustc["e0425"])


def test_rustc_warning_alone_gives_no_facet(rustc: Runs) -> None:
    outcome = rustc["warn"]
    assert outcome.exit_code == 0 and "warning: unused variable" in outcome.output
    assert observe(outcome) == {}


def test_rustc_numbered_source_lines_are_echoed(rustc: Runs) -> None:
    outcome = rustc["e0425"]
    assert MATCH in outcome.output
    counted = counted_text(outcome.output)
    assert MATCH not in counted
    assert "error[E0425]" in counted and "--> src/e0425.rs:3:" in counted


# --- TypeScript -------------------------------------------------------------------------------


def test_tsc_error_code(tmp_path: Path) -> None:
    tsc = need("tsc")
    root = write(
        tmp_path,
        {"src/total.ts": 'const total: number = "invoice total mismatch";\nexport { total };\n'},
    )
    outcome = run(root, tsc, "--noEmit", "--pretty", "false", "src/total.ts")
    assert outcome.exit_code != 0
    assert facet(outcome, "compiler") == [{"tool": "tsc", "code": "TS2322", "file": "src/total.ts"}]
