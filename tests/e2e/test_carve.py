"""End-to-end: a Node failure raised at run time, reached through a configuration and a
plugin loader that no deletion can shortcut (``require('./steps/' + name)(options[name])``);
the ``carve`` pass captures the failing call and the entry makes it directly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e._reduce import reduce_ok, write_tree

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed here")

STEP = "module.exports = function (options) {{ return {{ step: {n}, options }}; }};\n"
FILES = {
    "build.js": (
        "const config = require('./config.json');\n"
        "const compiler = require('./lib/compiler.js');\n"
        "compiler.run(config, (err) => { if (err) { throw err; } });\n"
    ),
    "config.json": json.dumps(
        {
            "steps": ["lint", "bundle", "hash", "minify"],
            "options": {"lint": {"strict": True}, "hash": "md4", "bundle": ["a.js"]},
        }
    ),
    "lib/compiler.js": (
        "exports.run = function (config, done) {\n"
        "  setImmediate(() => {\n"
        "    try {\n"
        "      for (const name of config.steps) {\n"
        "        require('./steps/' + name + '.js')(config.options[name]);\n"
        "      }\n"
        "      done(null);\n"
        "    } catch (err) { done(err); }\n"
        "  });\n"
        "};\n"
    ),
    "lib/steps/hash.js": (
        "const weak = ['md4', 'md5'];\n"
        "module.exports = function (algorithm) {\n"
        "  if (weak.includes(algorithm)) {\n"
        "    throw new Error('refusing weak hash ' + algorithm);\n"
        "  }\n"
        "  return algorithm;\n"
        "};\n"
    ),
    **{
        f"lib/steps/{name}.js": STEP.format(n=n) * 8
        for n, name in enumerate(["lint", "bundle", "minify"])
    },
}


def test_the_entry_makes_the_failing_call_directly(tmp_path: Path) -> None:
    src, out = write_tree(tmp_path / "repo", FILES), tmp_path / "out"
    report = reduce_ok(src, out, "node build.js", "refusing weak hash md4")
    carve = [e for e in report["events"] if e["phase"] == "carve"]
    assert [(e["decision"], e["description"]) for e in carve] == [
        ("info", "capture at lib/steps/hash.js:4: 1 call(s)"),
        ("accepted", "call module.exports of lib/steps/hash.js from build.js"),
    ]
    kept = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert kept == ["build.js", "lib/steps/hash.js"]
    assert b'"md4"' in (out / "build.js").read_bytes()
