"""The JavaScript search of ``brackets``: statements and members, then bodies, top-down."""

from __future__ import annotations

from repomin.passes.blocks import DeleteBlocks
from repomin.passes.brackets import DeleteBrackets
from repomin.passes.jslex import lex
from repomin.passes.jsunits import bodies, statements, unwrapping
from repomin.tree import Tree
from tests.unit._pass_harness import PredicateProblem, text_tree

SRC = """'use strict';
var dep = require('dep');
function helper(a) {
  return a + 1;
}
var Lexer = function () {};
Lexer.prototype = {
  error: function (msg) {
    throw new Error(msg);
  },
  tag: function () {
    if (this.x) { return /[}]/; }
    return 0;
  },
  attrs: function () {
    var n = helper(2);
    this.error('NEEDED');
  },
};
if (a) {
  b();
} else {
  c();
}
try { d(); } catch (e) { f(); } finally { g(); }
do { h(); } while (i);
(function () { wrapped(); })();
module.exports = Lexer;
"""


def units_of(src: str) -> list[str]:
    data = src.encode()
    lexed = lex(data)
    assert lexed is not None
    units = statements(data, lexed, 0, len(data), None)
    return [data[u.start : u.end].decode().strip() for u in units]


def test_statements_keep_continued_statements_together() -> None:
    units = units_of(SRC)
    assert "if (a) {\n  b();\n} else {\n  c();\n}" in units
    assert "try { d(); } catch (e) { f(); } finally { g(); }" in units
    assert "do { h(); } while (i);" in units
    assert len(units) == 10


def test_bodies_look_through_parentheses() -> None:
    data = SRC.encode()
    lexed = lex(data)
    assert lexed is not None
    start = data.index(b"(function")
    end = data.index(b"module.exports")
    found = [data[o : lexed.pairs[o] + 1] for o in bodies(data, lexed, start, end)]
    assert found == [b"{ wrapped(); }"]


def needs(t: Tree) -> bool:
    data = t["m.js"].data
    return (
        lex(data) is not None
        and b"this.error('NEEDED');" in data
        and b"throw new Error(msg);" in data
        and b"error: function" in data
    )


def test_the_search_is_1_minimal_over_statements_members_and_bodies() -> None:
    tree = text_tree({"m.js": SRC})
    problem = PredicateProblem(tree, needs)
    DeleteBrackets().run(problem)
    data = problem.current["m.js"].data
    assert needs(problem.current)
    for gone in (b"tag:", b"helper(2)", b"require", b"wrapped", b"try", b"module.exports"):
        assert gone not in data
    # every unit left is needed: deleting any remaining statement or member alone fails
    lexed = lex(data)
    assert lexed is not None
    for o, c in [(-1, len(data)), *lexed.pairs.items()]:
        if o >= 0 and data[o] not in b"{[":
            continue
        for u in statements(data, lexed, o + 1, c, None if o < 0 else data[o]):
            assert not needs(problem.current.replace("m.js", data[: u.start] + data[u.end :]))
    assert problem.calls < 60, problem.calls


def test_an_emptied_body_keeps_a_called_method() -> None:
    src = (
        "var o = {\n"
        "  a: function () { heavy(); heavier(); },\n"
        "  b: function () { return 'KEEP'; },\n"
        "};\n"
        "o.a(); o.b();\n"
    )

    def calls_work(t: Tree) -> bool:  # a method that is called must stay defined
        data = t["m.js"].data
        return b"'KEEP'" in data and (b"o.a()" not in data or b"a: function" in data)

    problem = PredicateProblem(text_tree({"m.js": src}), calls_work)
    DeleteBrackets().run(problem)
    data = problem.current["m.js"].data
    assert b"heavy" not in data
    assert b"'KEEP'" in data


def test_blocks_leave_javascript_that_lexes_to_brackets() -> None:
    tree = text_tree({"m.js": SRC, "broken.js": "f(\n  {\n    x\n  }\n"})
    problem = PredicateProblem(tree, lambda t: True)
    DeleteBlocks().run(problem)
    assert problem.current["m.js"].data == SRC.encode()
    assert problem.current["broken.js"].data != tree["broken.js"].data


def unwrapped(src: str) -> list[tuple[str, str] | None]:
    """Per statement: (the text the unwrap edit replaces, its replacement), or None."""
    data = src.encode()
    lexed = lex(data)
    assert lexed is not None
    out: list[tuple[str, str] | None] = []
    for unit in statements(data, lexed, 0, len(data), None):
        edit = unwrapping(data, lexed, unit)
        out.append(
            None if edit is None else (data[edit.start : edit.end].decode(), edit.text.decode())
        )
    return out


def test_unwrapping_takes_the_first_block_of_a_wrapping_statement() -> None:
    assert unwrapped(
        "// lead\nif (a) { x() } else { y() }\n"
        "do { z() } while (0);\n"
        "{ w() }\n"
        "try {} catch (e) { r() }\n"
        "if (b) q();\n"
        "foo({ a: 1 });\n"
        "iffy({ k: 1 });\n"
    ) == [
        ("if (a) { x() } else { y() }", " x() "),  # the leading comment stays
        ("do { z() } while (0);", " z() "),
        ("{ w() }\n", " w() "),
        None,  # its first block is empty: deleting it is the same edit
        None,  # no block
        None,  # a call whose argument is an object
        None,  # not a keyword
    ]


def test_unwrapping_finds_the_statement_a_semicolon_free_element_ends_with() -> None:
    # Without semicolons, the statements before a block share its element.
    src = "a = 1\nif (b) c()\ntry {\n  d()\n} finally {}\n"
    assert unwrapped(src) == [("try {\n  d()\n} finally {}", "\n  d()\n")]
    assert unwrapped("x = 1\n{ a: 1 }\n") == [None]  # a block only where a statement starts


def test_the_search_unwraps_guards_around_the_failing_code() -> None:
    src = (
        "var ok = probe();\n"
        "try {\n"
        "  if (ok) {\n"
        "    setup();\n"
        "    fail();\n"
        "  }\n"
        "} finally {\n"
        "  cleanup();\n"
        "}\n"
    )

    def fails(t: Tree) -> bool:
        return lex(t["m.js"].data) is not None and b"fail();" in t["m.js"].data

    problem = PredicateProblem(text_tree({"m.js": src}), fails)
    DeleteBrackets().run(problem)
    assert problem.current["m.js"].data.split() == [b"fail();"]
