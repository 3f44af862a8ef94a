"""The ``carve`` pass and the failing call it reads: the innermost in-tree Node frame, the
capture preload's record (real Node runs through the host runner where Node is installed),
the call written into the entry, and the pass under a predicate."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from repomin.analysis.failingcall import (
    Call,
    Frame,
    Undefined,
    Unwritten,
    calls_of,
    capture_calls,
    innermost_frame,
    js_call,
)
from repomin.passes.carve import CarveCall
from repomin.passes.trace import TraceCut
from repomin.runners.host import HostRunner
from repomin.tree import Tree, materialise
from tests.unit._pass_harness import PredicateProblem, text_tree

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")

WEBPACK_STACK = """\
node:internal/crypto/hash:79
  this[kHandle] = new _Hash(algorithm, xofLen, algorithmId, getHashCache());
                  ^

Error: error:0308010C:digital envelope routines::unsupported
    at new Hash (node:internal/crypto/hash:79:19)
    at Object.createHash (node:crypto:139:10)
    at module.exports (/tmp/s1/w/node_modules/webpack/lib/util/createHash.js:135:53)
    at NormalModule._initBuildHash (/tmp/s1/w/node_modules/webpack/lib/NormalModule.js:417:16)
    at /tmp/s1/w/node_modules/webpack/lib/NormalModule.js:452:10
"""

TREE = {
    "build.js": "const webpack = require('webpack');\n" * 10,
    "node_modules/webpack/lib/util/createHash.js": "module.exports = a => h(a);\n",
    "node_modules/webpack/lib/NormalModule.js": "x\n",
}


def test_the_innermost_frame_is_the_first_in_the_tree() -> None:
    tree = text_tree(TREE)
    assert innermost_frame(WEBPACK_STACK, "/tmp/s1/w", tree) == Frame(
        "node_modules/webpack/lib/util/createHash.js",
        135,
        53,
        ("node_modules/webpack/lib/util/createHash.js", "node_modules/webpack/lib/NormalModule.js"),
    )
    bare = "Error: x\n    at /tmp/s1/w/node_modules/webpack/lib/NormalModule.js:452:10\n"
    assert innermost_frame(bare, "/tmp/s1/w", tree) == Frame(
        "node_modules/webpack/lib/NormalModule.js",
        452,
        10,
        ("node_modules/webpack/lib/NormalModule.js",),
    )
    # a module's top-level code is the load shortcut's case; Python has no Node frames
    top = (
        "Error: x\n    at Object.<anonymous> (/tmp/s1/w/build.js:1:1)\n"
        "    at f (/tmp/s1/w/build.js:2:2)\n"
    )
    assert innermost_frame(top, "/tmp/s1/w", tree) is None
    assert innermost_frame('  File "/tmp/s1/w/build.js", line 1, in f\n', "/tmp/s1/w", tree) is None


def test_the_call_is_written_relative_to_the_entry_with_its_values() -> None:
    hashed = Call("node_modules/webpack/lib/util/createHash.js", "module.exports", ("md4",))
    assert js_call("build.js", hashed) == (
        b'require("./node_modules/webpack/lib/util/createHash.js")("md4");\n'
    )
    natives = Call("node_modules/natives/index.js", "exports.require", ("fs", ["stream"]))
    assert js_call("node_modules/gulp/bin/gulp.js", natives) == (
        b'require("../../natives/index.js").require("fs", ["stream"]);\n'
    )
    odd = Call("lib/m.js", 'exports["two words"]', (Undefined(), 1.5, None, Undefined()))
    assert js_call("main.js", odd) == b'require("./lib/m.js")["two words"](undefined, 1.5, null);\n'
    assert js_call("main.js", Call("lib/m.js", "prototype.x", ())) is None
    unwritten = Call("lib/m.js", "module.exports", ("src", Unwritten(), 2, Unwritten()))
    assert js_call("main.js", unwritten) == b'require("./lib/m.js")("src", undefined, 2);\n'
    assert not unwritten.complete and odd.complete


def test_only_exported_frames_with_values_are_calls() -> None:
    tree = text_tree(TREE)
    record = {
        "root": "/tmp/s9/w",
        "frames": [
            {"path": "/tmp/s9/w/build.js", "unsupported": "module top level"},
            {"path": "/tmp/s9/w/build.js", "export": None, "values": []},
            {"path": "/tmp/s9/w/build.js", "export": "exports.f", "values": [{"unsupported": "x"}]},
            {"path": "/tmp/s9/w/build.js", "export": "exports.g", "values": None},
            {"path": "/tmp/s9/w/outside.js", "export": "module.exports", "values": []},
            {
                "path": "/tmp/s9/w/node_modules/webpack/lib/util/createHash.js",
                "export": "module.exports",
                "values": ["md4", {"undefined": True}, {"json": '{"a": [1, null]}'}],
            },
        ],
    }
    assert calls_of(record, "/elsewhere", tree) == [
        Call("build.js", "exports.f", (Unwritten(),)),
        Call(
            "node_modules/webpack/lib/util/createHash.js",
            "module.exports",
            ("md4", Undefined(), {"a": [1, None]}),
        ),
    ]
    assert calls_of({"error": "boom"}, "/tmp", tree) == []


def _node_fails(candidate: Tree, command: Sequence[str], needle: bytes) -> bool:
    with tempfile.TemporaryDirectory() as root:
        materialise(candidate, Path(root))
        run = subprocess.run(list(command), cwd=root, capture_output=True, timeout=30)
    return needle in run.stderr


def _failed_and_captured(tree: Tree) -> tuple[Frame, list[Call]]:
    """``node app.js`` run on ``tree`` by hand, its innermost frame, and the capture run's
    calls (through the host runner)."""
    with tempfile.TemporaryDirectory() as root:
        materialise(tree, Path(root))
        failed = subprocess.run(["node", "app.js"], cwd=root, capture_output=True, text=True)
        frame = innermost_frame(failed.stderr, root, tree)
    assert frame is not None, failed.stderr
    runner = HostRunner()
    try:
        return frame, capture_calls(runner, tree, "node app.js", {}, 30, frame)
    finally:
        runner.close()


LIB = (
    "function check(name, opts) {\n"
    "  if (opts.level > 2) { throw new Error('bad level for ' + name); }\n"
    "}\n"
    "exports.configure = function (name, opts) {\n"
    "  check(name, opts);\n"
    "};\n"
)
APP = (
    "const lib = require('./lib/config.js');\n"
    "const fs = require('fs');\n"
    "const levels = [1, 2, 3];\n"
    "try { JSON.parse('{'); } catch (e) {}\n"  # a caught throw elsewhere must not confuse it
    "for (const level of levels) {\n"
    "  setTimeout(() => lib.configure('svc-' + level, { level, tags: ['a'] }), 1);\n"
    "}\n"
)


@needs_node
def test_a_real_capture_records_the_exported_caller_with_its_plain_values() -> None:
    tree = text_tree({"app.js": APP, "lib/config.js": LIB})
    frame, calls = _failed_and_captured(tree)
    assert frame == Frame("lib/config.js", 2, 31, ("lib/config.js", "app.js"))
    # check() is not exported; configure is, called with the values of the failing call
    assert calls == [
        Call("lib/config.js", "exports.configure", ("svc-3", {"level": 3, "tags": ["a"]}))
    ]
    carved = tree.replace("app.js", js_call("app.js", calls[0]) or b"")
    assert _node_fails(carved, ["node", "app.js"], b"bad level for svc-3")


@needs_node
def test_no_capture_without_the_throw_or_off_the_host() -> None:
    tree = text_tree({"app.js": "console.log(1)\n", "lib/config.js": LIB})
    runner = HostRunner()
    try:
        assert (
            capture_calls(runner, tree, "node app.js", {}, 30, Frame("lib/config.js", 2, 31)) == []
        )
    finally:
        runner.close()


def test_the_first_reproducing_call_replaces_the_entry_and_the_cuts_follow() -> None:
    tree = text_tree(
        {
            "build.js": "require('./cli.js').main(process.argv);\n" * 5,
            "cli.js": "exports.main = function () { require('./hash.js')('md4'); };\n",
            "hash.js": "module.exports = function (a) { throw new Error(a); };\n",
        }
    )
    captured: list[Frame] = []

    def capture(t: Tree, frame: Frame) -> list[Call]:
        captured.append(frame)
        return [
            Call("cli.js", "exports.main", (Unwritten(),)),  # tried after the complete ones
            Call("hash.js", "module.exports", ("sha1",)),  # the wrong value: rejected
            Call("hash.js", "module.exports", ("md4",)),
            Call("cli.js", "exports.main", ()),
        ]

    def fails(t: Tree) -> bool:
        build = t["build.js"].data if "build.js" in t else b""
        return "hash.js" in t and (b"md4" in build or b"main" in build)

    output = (
        "Error: md4\n    at module.exports (/w/hash.js:1:40)\n    at exports.main (/w/cli.js:1:3)\n"
    )
    carve = CarveCall("node build.js", [(output, "/w")], capture)
    trace = TraceCut()
    carve.cuts = [trace]
    problem = PredicateProblem(tree, fails)
    carve.run(problem)
    assert captured == [Frame("hash.js", 1, 40, ("hash.js", "cli.js"))]
    assert problem.current["build.js"].data == b'require("./hash.js")("md4");\n'
    assert [d for _, d in problem.accepted] == ["call module.exports of hash.js from build.js"]
    carve.run(problem)  # once per reduction
    assert len(captured) == 1


def test_nothing_is_captured_without_a_node_frame_or_a_javascript_entry() -> None:
    calls: list[Frame] = []

    def capture(t: Tree, frame: Frame) -> list[Call]:
        calls.append(frame)
        return []

    tree = text_tree(TREE)
    problem = PredicateProblem(tree, lambda t: True)
    CarveCall("node build.js", [("TypeError: x\n", "/w")], capture).run(problem)
    CarveCall("python build.py", [(WEBPACK_STACK, "/tmp/s1/w")], capture).run(problem)
    CarveCall("node build.js", [(WEBPACK_STACK, "/tmp/s1/w")], None).run(problem)
    assert calls == []
    assert problem.current is tree


@needs_node
def test_an_error_made_by_a_helper_is_captured_where_it_is_thrown() -> None:
    # Node prints an error's stack where it was made (errors.js), not where it is thrown
    # (lexer.js); the capture matches the throw by the error's own stack text.
    files = {
        "errors.js": "module.exports = function (msg) { return new Error(msg); };\n",
        "lexer.js": (
            "const makeError = require('./errors.js');\n"
            "function fail(src) { const err = makeError('unclosed ( in ' + src); throw err; }\n"
            "module.exports = function lex(src, options) {\n"
            "  try { JSON.parse(src); } catch (e) {}\n"
            "  if (src.includes('(')) { fail(src); }\n"
            "};\n"
        ),
        "app.js": (
            "const lex = require('./lexer.js');\n"
            "const pages = { home: 'ok', about: 'p(class' };\n"
            "for (const name of Object.keys(pages)) { lex(pages[name], { name, plugins: [] }); }\n"
        ),
    }
    frame, calls = _failed_and_captured(text_tree(files))
    assert frame.path == "errors.js"
    assert calls == [
        Call("lexer.js", "module.exports", ("p(class", {"name": "about", "plugins": []}))
    ]
