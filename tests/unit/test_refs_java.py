"""Java references: imports (single, wildcard, static), FQNs, same-package names, nesting."""

from __future__ import annotations

from repomin.analysis.refs import RefGraph
from tests.unit._pass_harness import text_tree

SRC = "src/main/java/org/ex"


def graph(files: dict[str, str], command: str = "") -> RefGraph:
    return RefGraph(text_tree(files), command=command)


def test_imports_wildcards_static_fqn_and_same_package() -> None:
    files = {
        "Main.java": "import org.ex.a.A;\nimport org.ex.b.*;\nimport static org.ex.c.C.f;\n"
        "class Main { B b; Object d = new org.ex.d.D(); }",
        f"{SRC}/a/A.java": "package org.ex.a;\npublic class A { Same s; }",
        f"{SRC}/a/Same.java": "package org.ex.a;\nclass Same {}",
        f"{SRC}/b/B.java": "package org.ex.b;\npublic class B {}",
        f"{SRC}/b/Unused.java": "package org.ex.b;\npublic class Unused {}",
        f"{SRC}/c/C.java": "package org.ex.c;\npublic class C { static void f() {} }",
        f"{SRC}/d/D.java": "package org.ex.d;\npublic class D {}",
        f"{SRC}/e/E.java": "package org.ex.e;\npublic class E { org.ex.a.A a; }",
    }
    g = graph(files, "javac -d out Main.java && java -cp out Main")
    assert g.edges("Main.java") == {
        f"{SRC}/a/A.java",
        f"{SRC}/b/B.java",
        f"{SRC}/c/C.java",
        f"{SRC}/d/D.java",
    }
    assert f"{SRC}/a/Same.java" in g.edges(f"{SRC}/a/A.java")
    assert g.unreachable() == [f"{SRC}/b/Unused.java", f"{SRC}/e/E.java"]


def test_nested_classes_reach_the_outer_file() -> None:
    files = {
        "Main.java": "import p.Outer.Inner;\nclass Main { p.Other.Deep.Deeper x; Inner i; }",
        "src/p/Outer.java": "package p; public class Outer { public static class Inner {} }",
        "src/p/Other.java": "package p; class Other { static class Deep { class Deeper {} } }",
    }
    g = graph(files, "java Main.java")
    assert g.edges("Main.java") == {"src/p/Outer.java", "src/p/Other.java"}
    assert g.unreachable() == []


def test_comments_do_not_count_but_strings_do() -> None:
    files = {
        "Main.java": "/** {@link q.Doc} */ class Main { // q.Line\n"
        ' Object o = Class.forName("q.Reflected"); }',
        "q/Doc.java": "package q; class Doc {}",
        "q/Line.java": "package q; class Line {}",
        "q/Reflected.java": "package q; class Reflected {}",
    }
    g = graph(files, "java Main.java")
    assert g.unreachable() == ["q/Doc.java", "q/Line.java"]


def test_computed_class_names_add_no_edge_but_are_noted() -> None:
    files = {
        "Main.java": 'class Main { Object o = Class.forName(System.getenv("X")); }',
        "q/Any.java": "package q; class Any {}",
        "q/Named.java": "package q; class Named {}",
        "app.properties": "plugin=q.Named\n",  # a name the loader may be given: read
    }
    g = graph(files, "java Main.java")
    assert g.unreachable() == ["q/Any.java"]
    assert g.java.dynamic_loaders == {"Main.java"}


def test_words_of_strings_name_no_type_and_declare_none() -> None:
    files = {
        "Main.java": 'class Main { String s = "The end, class org"; Helper h; }',
        "Helper.java": "class Helper {}",
        "q/The.java": "package q; class The {}",
        "HelperTest.java": 'class HelperTest { String x = "expected=class org.q"; }',
        "org.java": "class Unrelated {}",
    }
    g = graph(files, "java Main.java")
    assert g.edges("Main.java") == {"Helper.java"}
    assert sorted(g.unreachable()) == ["HelperTest.java", "org.java", "q/The.java"]


def test_cycles_missing_files_and_package_info() -> None:
    files = {
        "Main.java": "import r.A; class Main { A a; r.Missing m; }",
        "r/A.java": "package r; class A { B b; }",
        "r/B.java": "package r; class B { A a; }",
        "r/package-info.java": "package r;",
        "s/Lonely.java": "package s; class Lonely { Lonely self; }",
    }
    g = graph(files, "java Main.java")
    assert g.unreachable() == ["s/Lonely.java"]
    assert g.distances()["r/B.java"] == 2.0


def test_roots_from_command_class_names_and_build_files() -> None:
    files = {
        "src/app/Main.java": "package app; class Main {}",
        "src/app/Cli.java": "package app; class Cli {}",
        "pom.xml": "<mainClass>app.Cli</mainClass>",
        "src/app/Dead.java": "package app; class Dead {}",
    }
    g = graph(files, "java -cp out app.Main")
    assert "src/app/Main.java" in g.roots and "pom.xml" in g.roots
    assert g.unreachable() == ["src/app/Dead.java"]


def test_maven_roots_the_tests() -> None:
    files = {
        "pom.xml": "<project/>",
        "src/test/java/x/FooTest.java": "package x; class FooTest { Foo f; }",
        "src/main/java/x/Foo.java": "package x; class Foo {}",
        "src/main/java/x/Bar.java": "package x; class Bar {}",
    }
    assert graph(files, "mvn -q test").unreachable() == ["src/main/java/x/Bar.java"]


def test_a_single_type_import_shadows_a_same_package_type() -> None:
    files = {
        "Main.java": "package p; import java.util.Objects; class Main { Objects o; Local l; }",
        "src/p/Local.java": "package p; class Local {}",
        "test/p/Objects.java": "package p; class Objects {}",  # a test helper, same package
    }
    g = graph(files, "java Main.java")
    assert g.edges("Main.java") == {"src/p/Local.java"}
    assert g.unreachable() == ["test/p/Objects.java"]
