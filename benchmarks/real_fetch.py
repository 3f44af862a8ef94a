"""Fetching and unpacking the real cases' trees from the package registries this machine reaches.

Everything is fetched with the ordinary clients (``pip download``, ``npm install``, ``apt-get
source``) and cached under the cache directory given (outside the repository), so a second run
reads the cache only. A client that fails raises :class:`~cases.CaseUnavailable`, and the
runners skip the case with that message. :func:`expert_tree` writes a case's hand-made minimum
(files copied from the unreduced tree or written as given) for the checks in ``real_cases``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cases import CaseUnavailable


def run_client(
    argv: list[str],
    what: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600.0,
) -> None:
    """Run a registry client; any failure becomes :class:`CaseUnavailable` naming ``what``."""
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CaseUnavailable(f"{what} failed: {exc}") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CaseUnavailable(f"{what} failed (exit {proc.returncode}): {tail[0]}")


def _safe(rel: str) -> bool:
    return not (rel.startswith(("/", "..")) or "/../" in rel or rel == "")


def extract(archive: Path, root: Path) -> None:
    """Unpack a ``.tar.*`` or ``.zip`` archive into ``root`` without its single top directory."""
    if archive.name.endswith(".zip"):
        _extract_zip(archive, root)
        return
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        tops = {m.name.split("/", 1)[0] for m in members}
        strip = len(tops) == 1 and all("/" in m.name for m in members)
        for member in members:
            rel = member.name.split("/", 1)[1] if strip else member.name
            if not _safe(rel):
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            if member.mode & 0o111:
                target.chmod(0o755)


def _extract_zip(archive: Path, root: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        tops = {i.filename.split("/", 1)[0] for i in infos}
        strip = len(tops) == 1 and all("/" in i.filename for i in infos)
        for info in infos:
            rel = info.filename.split("/", 1)[1] if strip else info.filename
            if not _safe(rel):
                continue
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            if (info.external_attr >> 16) & 0o111:
                target.chmod(0o755)


# -- Debian source packages ------------------------------------------------------------------


def apt_env(cache: Path) -> dict[str, str]:
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
    env = apt_env(cache)
    lists = cache / "apt" / "lists"
    if not any(lists.glob("*Sources*")):
        run_client(["apt-get", "update", "-q"], "apt-get update (source lists)", env=env)
    target.mkdir(parents=True, exist_ok=True)
    run_client(
        ["apt-get", "source", "--download-only", "-q", f"{package}={version}"],
        f"apt-get source {package}={version}",
        cwd=target,
        env=env,
    )
    found = sorted(target.glob("*.orig.tar.*"))
    if not found:
        raise CaseUnavailable(f"apt-get source {package}={version} gave no .orig tarball")
    return found[0]


def extract_debian(archive: Path, root: Path) -> None:
    """:func:`extract` for a Debian tarball (whose name may hold an epoch's ``:``)."""
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / archive.name.replace(":", "_")
        os.symlink(archive, plain)
        extract(plain, root)


# -- npm ---------------------------------------------------------------------------------------


def npm_project(cache: Path, packages: tuple[str, ...], before: str | None, manifest: str) -> Path:
    """A project directory with ``node_modules`` for ``packages``, installed once.

    ``before`` pins the transitive versions (``npm install --before``). The key of the cache
    directory is the same as the one the first real npm case always used.
    """
    key = "+".join(packages) + (f"-{before}" if before else "")
    project = cache / "npm" / re.sub(r"[^\w.@-]+", "_", key)
    if (project / ".complete").is_file():
        return project
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise CaseUnavailable("node and npm are needed")
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "package.json").write_text(manifest, "utf-8")
    run_client(
        [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--package-lock=false",
            *([f"--before={before}"] if before else []),
            "--cache",
            str(cache / "npm-cache"),
            *packages,
        ],
        f"npm install {' '.join(packages)}",
        cwd=project,
    )
    (project / ".complete").write_text("ok\n", "utf-8")
    return project


# -- the hand-made minimum -----------------------------------------------------------------------

#: A hand-made minimum: relative path -> text to write, or None to copy the unreduced file.
Expert = Mapping[str, str | None]


def expert_tree(source: Path, expert: Expert, dest: Path) -> None:
    """Write the hand-made minimum ``expert`` of the unreduced tree ``source`` into ``dest``."""
    for rel, text in expert.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            shutil.copy2(source / rel, target)
        else:
            target.write_text(text, "utf-8")


def expert_builder(expert: Expert) -> Callable[[Path, Path], None]:
    """A ``Case.expert`` callable for the mapping ``expert``."""
    return lambda source, dest: expert_tree(source, expert, dest)


#: Hand-made minima kept as data: ``minima/<case>/`` holds ``keep.txt`` (files copied whole,
#: one relative path a line), ``edits.json`` (path -> ``[old, new]`` pairs applied in order to
#: the unreduced file, each ``new`` a deletion from its ``old``) and ``tree/`` (files written
#: as they are there).
MINIMA = Path(__file__).resolve().parent / "minima"


def expert_from_dir(name: str) -> Callable[[Path, Path], None]:
    """A ``Case.expert`` callable for the hand-made minimum kept in ``minima/<name>``."""

    def build(source: Path, dest: Path) -> None:
        base = MINIMA / name
        keep = base / "keep.txt"
        if keep.is_file():
            for rel in keep.read_text("utf-8").splitlines():
                if rel.strip():
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source / rel, dest / rel)
        edits = base / "edits.json"
        if edits.is_file():
            import json

            for rel, pairs in json.loads(edits.read_text("utf-8")).items():
                text = (source / rel).read_text("utf-8")
                for old, new in pairs:
                    if old not in text:
                        raise ValueError(f"{name}: {rel}: edit does not apply: {old[:60]!r}")
                    text = text.replace(old, new, 1)
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                (dest / rel).write_text(text, "utf-8")
        tree = base / "tree"
        if tree.is_dir():
            for path in sorted(tree.rglob("*")):
                if path.is_file():
                    target = dest / path.relative_to(tree)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target)

    return build


def listed_expert(name: str, files: int, size: int, note: str) -> dict[str, Any]:
    """The ``Case`` fields of a hand-made minimum kept in ``minima/<name>``."""
    return {
        "expert": expert_from_dir(name),
        "expert_files": files,
        "expert_bytes": size,
        "expert_note": note,
    }
