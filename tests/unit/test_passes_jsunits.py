"""The JavaScript search of ``brackets``: statements and members, then bodies, top-down."""

from __future__ import annotations

from repomin.passes.blocks import DeleteBlocks
from repomin.passes.brackets import DeleteBrackets
from repomin.passes.jslex import lex
from repomin.passes.jsunits import bodies, statements
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
