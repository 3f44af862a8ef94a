"""The java facet (root cause of an uncaught exception) and javac's compiler facet, on a program
compiled and run in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from repomin.failure.echo import counted_text
from repomin.failure.identity import infer_identity, observe
from repomin.runners.base import Outcome
from tests.unit._tool_runs import facet, need, run, write

pytestmark = pytest.mark.java

SOURCES = {
    "src/shop/Parser.java": """\
        package shop;

        public class Parser {
            static final class Line {
                static int quantity(String field) {
                    return Integer.parseInt(field.trim());
                }
            }

            public static int parse(String text) {
                return Line.quantity(text.split(",")[1]);
            }
        }
        """,
    "src/shop/Main.java": """\
        package shop;

        public class Main {
            static int load(String text) {
                try {
                    return Parser.parse(text);
                } catch (NumberFormatException e) {
                    throw new IllegalStateException("bad order line: " + text, e);
                }
            }

            public static void main(String[] args) {
                System.out.println(load(args[0]));
            }
        }
        """,
    "bad/Broken.java": """\
        public class Broken {
            public static void main(String[] args) {
                int expected = 126;
                System.out.println(totl + "invoice total mismatch" + expected);
            }
        }
        """,
    "lint/Raw.java": """\
        import java.util.ArrayList;
        import java.util.List;

        public class Raw {
            public static void main(String[] args) {
                List items = new ArrayList();
                items.add("x");
                System.out.println(items);
            }
        }
        """,
}


class Java:
    """The project compiled once; ``main(arg)`` runs shop.Main."""

    def __init__(self, root: Path, javac: str, java: str) -> None:
        self.root, self.javac, self.java = root, javac, java

    def main(self, arg: str) -> Outcome:
        return run(self.root, self.java, "-cp", "classes", "shop.Main", arg)

    def compile(self, *args: str) -> Outcome:
        return run(self.root, self.javac, "-d", "out", *args)


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Java:
    javac, java = need("javac"), need("java")
    root = write(tmp_path_factory.mktemp("java"), SOURCES)
    built = run(root, javac, "-d", "classes", "src/shop/Main.java", "src/shop/Parser.java")
    assert built.exit_code == 0, built.output
    return Java(root, javac, java)


@pytest.fixture(scope="session")
def crash(project: Java) -> Outcome:
    return project.main("apple, x1")


def test_root_cause_of_a_caused_by_chain(crash: Outcome) -> None:
    assert 'Exception in thread "main" java.lang.IllegalStateException' in crash.output
    assert "Caused by: java.lang.NumberFormatException" in crash.output
    assert observe(crash) == {
        "java": [
            {
                "exception_class": "java.lang.NumberFormatException",
                "message": 'For input string: "x1"',
                # The innermost frames are java.lang's; the first one outside the JDK is the
                # nested class shop.Parser$Line, read as its top-level class.
                "frame_class": "shop.Parser",
            }
        ]
    }


def test_wrapper_message_is_not_part_of_the_identity(project: Java, crash: Outcome) -> None:
    other_wrapper = project.main("pear, x1")
    assert "bad order line: pear, x1" in other_wrapper.output
    assert infer_identity([crash]).matches(other_wrapper)


def test_another_root_cause_message_does_not_match(project: Java, crash: Outcome) -> None:
    other = project.main("apple, y2")
    identity = infer_identity([crash])
    assert not identity.matches(other)
    assert identity.mismatch(other) == (
        'identity java java.lang.NumberFormatException: For input string: "x1" in shop.Parser '
        'not shown (java.lang.NumberFormatException: For input string: "y2" in shop.Parser)'
    )


def test_another_root_cause_class_does_not_match(project: Java, crash: Outcome) -> None:
    no_comma = project.main("apple")  # ArrayIndexOutOfBoundsException, not wrapped
    [value] = facet(no_comma, "java")
    assert value["exception_class"] == "java.lang.ArrayIndexOutOfBoundsException"
    assert value["frame_class"] == "shop.Parser"
    assert not infer_identity([crash]).matches(no_comma)


def test_javac_error_code_is_the_message_head(project: Java) -> None:
    outcome = project.compile("bad/Broken.java")
    assert outcome.exit_code == 1
    assert "bad/Broken.java:4: error: cannot find symbol" in outcome.output
    assert observe(outcome) == {
        "compiler": [{"tool": "javac", "code": "cannot find symbol", "file": "bad/Broken.java"}]
    }


def test_javac_raw_diagnostics_key(project: Java) -> None:
    outcome = project.compile("-XDrawDiagnostics", "bad/Broken.java")
    assert "compiler.err.cant.resolve.location" in outcome.output
    [value] = facet(outcome, "compiler")
    assert value["tool"] == "javac"
    assert value["code"] == "compiler.err.cant.resolve.location"
    # javac's raw format prints the file's base name only.
    assert value["file"].endswith("Broken.java")


def test_javac_echoed_source_above_the_caret_is_not_counted(project: Java) -> None:
    outcome = project.compile("bad/Broken.java")
    assert "invoice total mismatch" in outcome.output
    counted = counted_text(outcome.output)
    assert "invoice total mismatch" not in counted
    assert "bad/Broken.java:4: error: cannot find symbol" in counted
    assert "symbol:   variable totl" in counted


def test_javac_warnings_alone_give_no_compiler_facet(project: Java) -> None:
    outcome = project.compile("-Xlint:all", "lint/Raw.java")
    assert outcome.exit_code == 0
    assert "warning: [rawtypes]" in outcome.output
    assert observe(outcome) == {}


def test_javac_werror_lint_is_a_compiler_facet(project: Java) -> None:
    outcome = project.compile("-Xlint:all", "-Werror", "lint/Raw.java")
    assert outcome.exit_code == 1
    assert "error: warnings found and -Werror specified" in outcome.output
    assert facet(outcome, "compiler") != []
