"""Real npm cases: projects with their whole ``node_modules`` (``npm install`` at run time).

* ``npm-pug-express``: an express site whose start-up compiles pug templates; one template
  is broken, and the error is thrown by ``pug-lexer`` through ``pug-error`` (app -> pug ->
  pug-lexer -> pug-error), with the whole ``node_modules`` in the tree.
* ``npm-gulp-3.9.1``: a site built with gulp 3.9.1 (its ``node_modules`` has 1,590 files). On
  Node 20 ``gulp build`` dies inside one dependency: ``vinyl-fs`` loads ``graceful-fs`` 3, which
  re-evaluates Node's own ``fs.js`` source through ``natives``, and that source needs Node's
  internal ``primordials`` (``ReferenceError: primordials is not defined``).
* ``npm-webpack-4.46.0``: a project bundled by webpack 4.46.0 through its Node API (372
  packages, 3,646 files in ``node_modules``). Node 20's OpenSSL 3 has no MD4, and webpack 4
  hashes every module with it: ``NormalModule`` -> ``util/createHash`` -> ``crypto.createHash``
  throws ``error:0308010C:digital envelope routines::unsupported``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from cases import Case
from interesting import Contract
from real_fetch import listed_expert, npm_project

#: Transitive npm dependencies resolve as of this date (``npm install --before``).
NPM_BEFORE = "2025-05-01"
NPM_PACKAGES = ("pug@3.0.3", "express@4.21.2")
GULP_PACKAGES = ("gulp@3.9.1",)
#: The registry this machine reaches dates its versions by when it took them in, so gulp 3's
#: old tree is pinned by the date of that intake rather than by its publication dates.
GULP_BEFORE = "2026-11-01"
WEBPACK_PACKAGES = ("webpack@4.46.0",)

MANIFEST = (
    '{\n  "name": "bench-site",\n  "version": "1.0.0",\n  "private": true,\n  "main": "app.js"\n}\n'
)

APP_JS = """\
'use strict';
// A small site: express serves pages compiled from pug templates at start-up.
const path = require('path');
const express = require('express');
const pug = require('pug');

const templates = {
  home: 'doctype html\\nhtml\\n  head\\n    title= title\\n  body\\n    h1= title\\n',
  about: 'extends layout\\nblock content\\n  p(class="about" About us\\n',
};

function compileAll(sources) {
  const compiled = {};
  for (const [name, source] of Object.entries(sources)) {
    compiled[name] = pug.compile(source, { filename: path.join('views', name + '.pug') });
  }
  return compiled;
}

const app = express();
const views = compileAll(templates);
app.get('/', (req, res) => res.send(views.home({ title: 'Home' })));
app.get('/about', (req, res) => res.send(views.about({})));
module.exports = app;
"""


def npm_tree(cache: Path) -> Path:
    """The pug + express project directory (installed once)."""
    return npm_project(cache, NPM_PACKAGES, NPM_BEFORE, MANIFEST)


def build_npm(root: Path, cache: Path) -> None:
    project = npm_tree(cache)
    shutil.copytree(project / "node_modules", root / "node_modules", symlinks=True)
    shutil.copy2(project / "package.json", root / "package.json")
    (root / "app.js").write_text(APP_JS, "utf-8")


GULPFILE_JS = """\
'use strict';
// Build: copy the static pages into dist/.
const gulp = require('gulp');

gulp.task('build', function () {
  return gulp.src('pages/*.html').pipe(gulp.dest('dist'));
});
"""

GULP_MANIFEST = (
    '{\n  "name": "bench-pages",\n  "version": "1.0.0",\n  "private": true,\n'
    '  "scripts": {\n    "build": "gulp build"\n  }\n}\n'
)


def build_gulp(root: Path, cache: Path) -> None:
    project = npm_project(cache, GULP_PACKAGES, GULP_BEFORE, GULP_MANIFEST)
    shutil.copytree(project / "node_modules", root / "node_modules", symlinks=True)
    shutil.copy2(project / "package.json", root / "package.json")
    (root / "gulpfile.js").write_text(GULPFILE_JS, "utf-8")
    (root / "pages").mkdir()
    (root / "pages" / "index.html").write_text("<h1>Pages</h1>\n", "utf-8")


BUILD_JS = """\
'use strict';
// Bundle src/ into dist/ with the project's webpack configuration.
const path = require('path');
const webpack = require('webpack');

webpack({
  mode: 'production',
  entry: './src/index.js',
  output: { path: path.resolve(__dirname, 'dist'), filename: 'bundle.js' },
}, (err, stats) => {
  if (err) {
    throw err;
  }
  console.log(stats.toString({ colors: false }));
});
"""

WEBPACK_MANIFEST = (
    '{\n  "name": "bench-bundle",\n  "version": "1.0.0",\n  "private": true,\n'
    '  "scripts": {\n    "build": "node build.js"\n  }\n}\n'
)


def build_webpack(root: Path, cache: Path) -> None:
    project = npm_project(cache, WEBPACK_PACKAGES, GULP_BEFORE, WEBPACK_MANIFEST)
    shutil.copytree(project / "node_modules", root / "node_modules", symlinks=True)
    shutil.copy2(project / "package.json", root / "package.json")
    (root / "build.js").write_text(BUILD_JS, "utf-8")
    (root / "src").mkdir()
    (root / "src" / "index.js").write_text(
        "module.exports = function add(a, b) {\n  return a + b;\n};\n", "utf-8"
    )


def npm_cases(real: Path) -> list[Case]:
    return [
        Case(
            name="npm-pug-express",
            description=(
                f"express + pug with node_modules ({', '.join(NPM_PACKAGES)}, npm install at "
                "run time); a broken template fails inside pug-lexer, 3 requires deep"
            ),
            contract=Contract(
                command="node app.js",
                match=r"The end of the string reached with no closing bracket \) found",
                timeout=30.0,
            ),
            build=lambda root: build_npm(root, real),
            cap_quick=120.0,
            cap_full=540.0,
            repomin_args=("--no-default-ignores",),
            kind="npm",
            **PUG_EXPERT,
        ),
        Case(
            name="npm-gulp-3.9.1",
            description=(
                "gulp 3.9.1 with its node_modules (1,590 files, npm install at run time); "
                "gulp build dies inside natives (graceful-fs 3 on Node 20)"
            ),
            contract=Contract(
                command="node node_modules/gulp/bin/gulp.js build",
                match=r"ReferenceError: primordials is not defined\s+at fs\.js",
                timeout=30.0,
            ),
            build=lambda root: build_gulp(root, real),
            cap_full=300.0,
            repomin_args=("--no-default-ignores",),
            kind="npm",
            **GULP_EXPERT,
        ),
        Case(
            name="npm-webpack-4.46.0",
            description=(
                "webpack 4.46.0 with its node_modules (3,646 files, npm install at run time); "
                "bundling fails in util/createHash: Node 20's OpenSSL has no MD4"
            ),
            contract=Contract(
                command="node build.js",
                match=(
                    r"error:0308010C:digital envelope routines::unsupported[\s\S]*"
                    r"webpack/lib/util/createHash\.js"
                ),
                timeout=60.0,
            ),
            build=lambda root: build_webpack(root, real),
            cap_full=300.0,
            repomin_args=("--no-default-ignores",),
            kind="npm",
            **WEBPACK_EXPERT,
        ),
    ]


# -- the hand-made minima ------------------------------------------------------------------------

PUG_EXPERT = listed_expert(
    "npm-pug-express",
    7,
    55627,
    "app.js cut to compiling the broken template; pug's package.json (main) and lib/index.js "
    "cut to `lex(str, options)`; pug-lexer, pug-error (+ its package.json main) and "
    "character-parser whole but for the requires of is-expression and is-regex (and the regex "
    "branch of character-parser's matches) that this path never uses",
)
GULP_EXPERT = listed_expert(
    "npm-gulp-3.9.1",
    2,
    202,
    "gulp's bin/gulp.js cut to `require('natives').require('fs')` and natives/index.js to "
    "what re-evaluates Node's fs.js source under its own name (`vm.runInThisContext(natives[id], "
    "{ filename: id + '.js' })`): the CLI, liftoff, the gulpfile, vinyl-fs and graceful-fs only "
    "lead there (until 2026-12-03 this was an upper bound of 296 files kept whole)",
)
WEBPACK_EXPERT = listed_expert(
    "npm-webpack-4.46.0",
    2,
    116,
    "build.js rewritten to `require('webpack/lib/util/createHash')('md4')` (what NormalModule "
    "does with webpack 4's default output.hashFunction) and util/createHash.js cut to its "
    "crypto.createHash call; not reachable by deletions, since the failure is raised at run "
    "time deep in the compiler (until 2026-12-03 this was an upper bound of 979 files: the "
    "files a bundling run opens, kept whole)",
)
