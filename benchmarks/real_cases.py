"""Real benchmark cases, built at run time from the package registries this machine reaches.

Each case is a real third-party tree fetched with the ordinary client (``npm install``,
``pip download``, ``apt-get source``), cached under ``CACHE/real`` (outside the repository),
plus a small driver that triggers a failure deep inside it. When a registry cannot be
reached the case raises :class:`~cases.CaseUnavailable` and ``run.py`` skips it with that
message. Versions are pinned (npm: top-level versions and ``--before`` for the transitive
ones), so every run reduces the same tree.

* ``npm-pug-express``: an express site whose start-up compiles pug templates; one template
  is broken, and the error is thrown by ``pug-lexer`` through ``pug-error`` (app -> pug ->
  pug-lexer -> pug-error), with the whole ``node_modules`` (~2,300 files) in the tree.
* ``sdist-urllib3-1.10.4``: the urllib3 1.10.4 sdist; its own ``test/test_response.py`` fails
  on Python 3.11 with an ``ImportError`` four modules deep (``urllib3`` -> ``connectionpool``
  -> ``response`` -> ``_collections``: ``from collections import Mapping``).
* ``c-cjson-1.7.15``: Debian's cJSON 1.7.15 source, built with its ``Makefile``; a driver
  linked against ``libcjson.a`` passes a missing optional string to ``cJSON_SetValuestring``,
  which dereferences it (SIGSEGV inside the library, exit 139 through the shell).
* ``java-commons-codec-1.15``: Debian's commons-codec 1.15 source; ``javac`` compiles every
  file under ``src/main/java`` plus a driver whose ``URLCodec.decode`` call fails three calls
  deep (``DecoderException`` from ``Utils.digit16``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from cases import PYTHON, Case, CaseUnavailable, fetch_sdist
from interesting import Contract

#: Transitive npm dependencies resolve as of this date (``npm install --before``).
NPM_BEFORE = "2025-05-01"
NPM_PACKAGES = ("pug@3.0.3", "express@4.21.2")
URLLIB3 = ("urllib3", "1.10.4")
CJSON = ("cjson", "1.7.15-1+deb12u4")
CODEC = ("libcommons-codec-java", "1.15-1")


def _run(
    argv: list[str],
    what: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600.0,
) -> None:
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CaseUnavailable(f"{what} failed: {exc}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CaseUnavailable(f"{what} failed (exit {proc.returncode}): {tail[0]}")


def _extract(archive: Path, root: Path) -> None:
    """Unpack ``archive`` into ``root`` without its single top-level directory."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        tops = {m.name.split("/", 1)[0] for m in members}
        strip = len(tops) == 1 and all("/" in m.name for m in members)
        for member in members:
            rel = member.name.split("/", 1)[1] if strip else member.name
            if rel.startswith(("/", "..")) or "/../" in rel:
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            if member.mode & 0o111:
                target.chmod(0o755)


# -- Debian source packages ------------------------------------------------------------------


def _apt_env(cache: Path) -> dict[str, str]:
    """A private apt configuration with ``deb-src`` twins of the system's sources.

    Nothing outside ``cache`` changes: the source lists, the package lists and the lock-free
    state live under ``cache/apt``. The archive addresses come from the system configuration.
    """
    base = cache / "apt"
    parts = base / "sources.list.d"
    parts.mkdir(parents=True, exist_ok=True)
    (base / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (base / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    system = Path("/etc/apt")
    for src in sorted((system / "sources.list.d").glob("*.sources")):
        text = re.sub(r"(?m)^Types:.*$", "Types: deb-src", src.read_text("utf-8"))
        (parts / src.name).write_text(text, "utf-8")
    lines: list[str] = []
    for src in [system / "sources.list", *sorted((system / "sources.list.d").glob("*.list"))]:
        if src.is_file():
            lines += [
                "deb-src " + ln.split(None, 1)[1]
                for ln in src.read_text("utf-8").splitlines()
                if ln.startswith("deb ")
            ]
    (parts / "system-src.list").write_text("\n".join(lines) + "\n", "utf-8")
    conf = base / "apt.conf"
    conf.write_text(
        f'Dir::Etc::SourceList "/dev/null";\nDir::Etc::SourceParts "{parts}";\n'
        f'Dir::State::Lists "{base / "lists"}";\nDir::Cache "{base / "cache"}";\n'
        'Debug::NoLocking "true";\n',
        "utf-8",
    )
    return {**os.environ, "APT_CONFIG": str(conf)}


def debian_orig(package: str, version: str, cache: Path) -> Path:
    """The upstream (``.orig``) tarball of a Debian source package, downloaded once."""
    target = cache / "debian" / f"{package}_{version}"
    found = sorted(target.glob("*.orig.tar.*"))
    if found:
        return found[0]
    if shutil.which("apt-get") is None:
        raise CaseUnavailable("apt-get is not installed")
    env = _apt_env(cache)
    lists = cache / "apt" / "lists"
    if not any(lists.glob("*Sources*")):
        _run(["apt-get", "update", "-q"], "apt-get update (source lists)", env=env)
    target.mkdir(parents=True, exist_ok=True)
    _run(
        ["apt-get", "source", "--download-only", "-q", f"{package}={version}"],
        f"apt-get source {package}={version}",
        cwd=target,
        env=env,
    )
    found = sorted(target.glob("*.orig.tar.*"))
    if not found:
        raise CaseUnavailable(f"apt-get source {package}={version} gave no .orig tarball")
    return found[0]


# -- npm ---------------------------------------------------------------------------------------


def npm_tree(cache: Path) -> Path:
    """A project directory with ``node_modules`` for :data:`NPM_PACKAGES`, installed once."""
    key = re.sub(r"[^\w.@-]+", "_", "+".join(NPM_PACKAGES) + "-" + NPM_BEFORE)
    project = cache / "npm" / key
    if (project / ".complete").is_file():
        return project
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise CaseUnavailable("node and npm are needed")
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "package.json").write_text(
        '{\n  "name": "bench-site",\n  "version": "1.0.0",\n  "private": true,\n'
        '  "main": "app.js"\n}\n',
        "utf-8",
    )
    _run(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--package-lock=false",
            f"--before={NPM_BEFORE}",
            "--cache",
            str(cache / "npm-cache"),
            *NPM_PACKAGES,
        ],
        f"npm install {' '.join(NPM_PACKAGES)}",
        cwd=project,
    )
    (project / ".complete").write_text("ok\n", "utf-8")
    return project


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


def build_npm(root: Path, cache: Path) -> None:
    project = npm_tree(cache)
    shutil.copytree(project / "node_modules", root / "node_modules", symlinks=True)
    shutil.copy2(project / "package.json", root / "package.json")
    (root / "app.js").write_text(APP_JS, "utf-8")


# -- the other builders ------------------------------------------------------------------------


def build_urllib3(root: Path, cache: Path) -> None:
    _extract(fetch_sdist(*URLLIB3, cache), root)


DRIVE_C = """\
/* Renames the profile of a settings document with cJSON's setter. */
#include <stdio.h>
#include "cJSON.h"

static const char settings[] =
    "{\\"profile\\": {\\"name\\": \\"default\\", \\"theme\\": \\"dark\\"}}";

int main(void)
{
    cJSON *root = cJSON_Parse(settings);
    cJSON *profile = cJSON_GetObjectItemCaseSensitive(root, "profile");
    cJSON *name = cJSON_GetObjectItemCaseSensitive(profile, "name");
    /* the new name comes from an optional field this document does not have */
    const char *wanted =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(profile, "display_name"));
    char *out;
    printf("renaming profile %s\\n", cJSON_GetStringValue(name));
    fflush(stdout);
    cJSON_SetValuestring(name, wanted);
    out = cJSON_Print(root);
    puts(out);
    cJSON_free(out);
    cJSON_Delete(root);
    return 0;
}
"""


def build_cjson(root: Path, cache: Path) -> None:
    _extract(debian_orig(*CJSON, cache), root)
    (root / "drive.c").write_text(DRIVE_C, "utf-8")


DRIVER_JAVA = """\
import org.apache.commons.codec.net.URLCodec;

/** Decodes a query string taken from a log line. */
public class Driver {
    public static void main(String[] args) throws Exception {
        String logged = "q=caf%zz&lang=fr";
        System.out.println(new URLCodec().decode(logged));
    }
}
"""


def build_codec(root: Path, cache: Path) -> None:
    _extract(debian_orig(*CODEC, cache), root)
    (root / "Driver.java").write_text(DRIVER_JAVA, "utf-8")


# -- the cases ---------------------------------------------------------------------------------


def real_cases(cache: Path) -> list[Case]:
    real = cache / "real"
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
        ),
        Case(
            name=f"sdist-{URLLIB3[0]}-{URLLIB3[1]}",
            description=(
                f"{URLLIB3[0]} {URLLIB3[1]} sdist (pip download at run time); its own "
                "test/test_response.py fails on Python 3.11 with an ImportError 4 modules deep"
            ),
            contract=Contract(
                command=f"PYTHONPATH=. {shlex.quote(PYTHON)} test/test_response.py",
                match=r"ImportError: cannot import name 'Mapping' from 'collections'",
                timeout=30.0,
            ),
            build=lambda root: build_urllib3(root, real),
            cap_quick=60.0,
            cap_full=240.0,
        ),
        Case(
            name="c-cjson-1.7.15",
            description=(
                "Debian's cJSON 1.7.15 source (apt-get source at run time) built with make; "
                "a driver crashes inside cJSON_SetValuestring (SIGSEGV)"
            ),
            contract=Contract(
                command="make -s all && gcc -o drive drive.c libcjson.a -lm && ./drive",
                match=r"renaming profile default",
                exit_code=139,
                timeout=60.0,
            ),
            build=lambda root: build_cjson(root, real),
            cap_quick=120.0,
            cap_full=420.0,
        ),
        Case(
            name="java-commons-codec-1.15",
            description=(
                "Debian's commons-codec 1.15 source (apt-get source at run time); javac over "
                "all of src/main/java plus a driver failing 3 calls deep in URLCodec"
            ),
            contract=Contract(
                command=(
                    'c=$(mktemp -d) && javac -nowarn -encoding UTF-8 -d "$c" '
                    "$(find src/main/java -name '*.java') Driver.java && "
                    'java -cp "$c" Driver'
                ),
                match=r"DecoderException: Invalid URL encoding: not a valid digit",
                timeout=60.0,
            ),
            build=lambda root: build_codec(root, real),
            cap_quick=120.0,
            cap_full=480.0,
            ideal_files=14,
        ),
    ]


def _main() -> int:
    """Build every case into a temporary directory and check the unreduced tree reproduces."""
    import argparse

    from interesting import run_once

    parser = argparse.ArgumentParser(description=_main.__doc__)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "repomin-bench")
    parser.add_argument("--cases", default=None, help="comma-separated names")
    args = parser.parse_args()
    wanted = set(args.cases.split(",")) if args.cases else None
    status = 0
    for case in real_cases(args.cache):
        if wanted and case.name not in wanted:
            continue
        with tempfile.TemporaryDirectory(prefix="real-case-") as tmp:
            root = Path(tmp) / "src"
            root.mkdir()
            try:
                case.build(root)
            except CaseUnavailable as exc:
                print(f"{case.name}: skipped: {exc}")
                continue
            files = sum(1 for p in root.rglob("*") if p.is_file() and not p.is_symlink())
            ok = run_once(case.contract, root)
            status |= 0 if ok else 1
            print(f"{case.name}: {files} files; unreduced tree reproduces: {ok}")
    return status


if __name__ == "__main__":
    raise SystemExit(_main())
