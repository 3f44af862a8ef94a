"""JavaScript/TypeScript references: specifiers, package.json entry points, node_modules."""

from __future__ import annotations

import json

from repomin.analysis.refs import RefGraph
from tests.unit._pass_harness import text_tree


def graph(files: dict[str, str], command: str = "node app.js") -> RefGraph:
    return RefGraph(text_tree(files), command=command)


def manifest(**fields: object) -> str:
    return json.dumps(fields)


def test_require_import_dynamic_and_index_resolution() -> None:
    files = {
        "app.js": "const a = require('./lib/a');\nimport b from './lib/b.js';\n"
        "import './side';\nexport * from './re';\nconst c = await import('./lazy');",
        "lib/a/index.js": "",
        "lib/b.ts": "",
        "side.mjs": "",
        "re.js": "",
        "lazy.cjs": "",
        "dead.js": "",
    }
    g = graph(files)
    assert g.unreachable() == ["dead.js"]


def test_node_modules_lookup_up_the_chain_and_manifests() -> None:
    files = {
        "app.js": "require('dep'); require('@s/scoped/sub');",
        "package.json": manifest(name="app", main="app.js"),
        "node_modules/dep/package.json": manifest(main="lib/main.js"),
        "node_modules/dep/lib/main.js": "require('inner'); require('./util')",
        "node_modules/dep/lib/util.js": "",
        "node_modules/dep/lib/unused.js": "",
        "node_modules/inner/package.json": manifest(
            exports={".": {"require": "./cjs.js", "import": "./esm.mjs"}}
        ),
        "node_modules/inner/cjs.js": "",
        "node_modules/inner/esm.mjs": "",
        "node_modules/inner/other.js": "",
        "node_modules/@s/scoped/package.json": manifest(),
        "node_modules/@s/scoped/sub.js": "",
        "node_modules/@s/scoped/index.js": "",
        "node_modules/unused/index.js": "",
        "node_modules/unused/package.json": manifest(main="index.js"),
    }
    g = graph(files)
    assert g.unreachable() == [
        "node_modules/@s/scoped/index.js",
        "node_modules/dep/lib/unused.js",
        "node_modules/inner/other.js",
        "node_modules/unused/index.js",
    ]
    # A nested node_modules shadows the outer one (Node's lookup takes the nearest).
    files["node_modules/dep/node_modules/inner/index.js"] = ""
    g = graph(files)
    assert "node_modules/dep/node_modules/inner/index.js" in g.edges("node_modules/dep/lib/main.js")
    assert "node_modules/inner/cjs.js" in g.unreachable()


def test_computed_require_keeps_its_own_package() -> None:
    files = {
        "app.js": "require('dep')",
        "node_modules/dep/index.js": "module.exports = (n) => require('./plugins/' + n)",
        "node_modules/dep/plugins/x.js": "",
        "node_modules/other/index.js": "",
    }
    assert graph(files).unreachable() == ["node_modules/other/index.js"]


def test_cycles_and_missing_specifiers() -> None:
    files = {
        "app.js": "require('./a'); require('./missing'); require('absent-pkg');",
        "a.js": "require('./b')",
        "b.js": "require('./a')",
        "c.js": "require('./d')",
        "d.js": "require('./c')",
    }
    assert graph(files).unreachable() == ["c.js", "d.js"]


def test_test_runner_roots_and_package_scripts() -> None:
    files = {
        "package.json": manifest(scripts={"start": "node bin/run.js"}),
        "bin/run.js": "",
        "test/one.test.js": "require('../src/x')",
        "src/x.js": "",
        "src/y.js": "",
    }
    assert graph(files, "npm test").unreachable() == ["src/y.js"]
