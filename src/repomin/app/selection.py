"""Selection: read SRC into an in-memory :class:`~repomin.tree.Tree` under the ignore rules.

Rules, in order: default ignored names (version-control and tool caches), ``--ignore NAME``
(a base name or glob), ``--ignore-path PATH`` (relative to SRC), and ``.gitignore`` files at any
depth (via ``pathspec``, deeper files override shallower ones, unless ``--no-gitignore``). Files
are classified as text or binary here; binary files are only ever kept or removed whole.
Symlinks are kept as links; a link that points outside SRC is an error unless ignored. Each
file's and symlink's modification time is recorded in nanoseconds (``Entry.mtime_ns``) so that
samples and the payload see the tree as the user's shell does. SRC is only read, never written.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pathspec

from repomin.errors import SelectionError, UsageError
from repomin.tree import Entry, Tree

DEFAULT_IGNORED_NAMES: tuple[str, ...] = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    ".eggs",
    ".DS_Store",
)

_TEXT_PROBE = 8192


@dataclass(frozen=True, slots=True)
class SelectionOptions:
    ignored_names: tuple[str, ...] = DEFAULT_IGNORED_NAMES
    ignored_paths: tuple[str, ...] = ()
    use_gitignore: bool = True
    keep_paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Selection:
    """The selected tree plus what the report records under ``execution``."""

    tree: Tree
    options: SelectionOptions
    gitignore_files: tuple[str, ...]
    skipped_entries: int

    @property
    def text_files(self) -> int:
        return sum(1 for e in self.tree.entries.values() if e.kind == "file" and e.text)

    def is_kept(self, path: str) -> bool:
        return is_kept(path, self.options.keep_paths)


def is_kept(path: str, keep_paths: Sequence[str]) -> bool:
    return any(
        path == k or path.startswith(k + "/") or k.startswith(path + "/") for k in keep_paths
    )


def is_text(data: bytes) -> bool:
    """Text means: no NUL byte in the first 8 KiB and valid UTF-8 throughout."""
    if b"\0" in data[:_TEXT_PROBE]:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def normalise_relative(path: str, *, option: str) -> str:
    """A user-given relative path as the tree spells it (POSIX, no ``./``, no trailing ``/``)."""
    p = Path(path)
    if p.is_absolute():
        raise UsageError(f"{option} {path!r} must be relative to SRC; drop the leading '/'")
    parts = [part for part in p.parts if part not in ("", ".")]
    if any(part == ".." for part in parts) or not parts:
        raise UsageError(f"{option} {path!r} must name a path inside SRC")
    return "/".join(parts)


class _GitIgnore:
    """The stack of ``.gitignore`` specs that apply inside one directory."""

    def __init__(self, layers: tuple[tuple[str, pathspec.PathSpec[Any]], ...] = ()) -> None:
        self.layers = layers

    def child(self, directory: str, spec: pathspec.PathSpec[Any] | None) -> _GitIgnore:
        return _GitIgnore((*self.layers, (directory, spec))) if spec is not None else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec in self.layers:
            rel = path[len(base) + 1 :] if base else path
            candidate = rel + "/" if is_dir else rel
            result = spec.check_file(candidate)
            if result.include is not None:
                verdict = bool(result.include)
        return verdict


def select(src: Path, options: SelectionOptions) -> Selection:
    """Read ``src`` into a tree. Raises :class:`SelectionError` with a one-line fix."""
    if not src.exists():
        raise UsageError(f"SRC {str(src)!r} does not exist; pass the repository directory")
    if not src.is_dir():
        raise UsageError(f"SRC {str(src)!r} is not a directory; pass the repository directory")
    root = src.resolve()
    walker = _Walker(options, set(options.ignored_paths))
    walker.walk(root, "", _GitIgnore())
    tree = Tree.of(walker.entries)
    for keep in options.keep_paths:
        if keep not in tree and not tree.under(keep):
            raise UsageError(
                f"--keep {keep!r} is not in the selected tree (missing or ignored); fix the path "
                "relative to SRC"
            )
    return Selection(tree, options, tuple(walker.gitignores), walker.skipped)


def read_payload(payload: Path) -> Tree:
    """The payload as an in-memory tree: every entry, no ignore rules, no ``.gitignore``."""
    options = SelectionOptions(
        ignored_names=(), ignored_paths=(), use_gitignore=False, keep_paths=()
    )
    return select(payload, options).tree


@dataclass(slots=True)
class _Walker:
    """One walk over SRC: the entries it selects, the ``.gitignore`` files it read, the
    number of entries it skipped."""

    options: SelectionOptions
    ignored_paths: set[str]
    entries: dict[str, Entry] = field(default_factory=dict)
    gitignores: list[str] = field(default_factory=list)
    skipped: int = 0

    def name_ignored(self, name: str) -> bool:
        return any(
            name == pat or fnmatch.fnmatchcase(name, pat) for pat in self.options.ignored_names
        )

    def walk(self, directory: Path, rel_dir: str, rules: _GitIgnore) -> bool:
        """Select ``directory``'s children; whether any of them was selected."""
        try:
            children = sorted(os.scandir(directory), key=lambda d: d.name)
        except OSError as exc:
            raise SelectionError(
                f"cannot read directory {rel_dir or '.'!r}: {exc.strerror}; make it readable "
                "or exclude it with --ignore-path"
            ) from None
        if self.options.use_gitignore:
            rules = self.gitignore_rules(directory, rel_dir, rules)
        any_child = False
        for child in children:
            any_child = self.add(child, rel_dir, rules) or any_child
        return any_child

    def gitignore_rules(self, directory: Path, rel_dir: str, rules: _GitIgnore) -> _GitIgnore:
        """``rules`` with ``directory``'s own ``.gitignore`` (if any) on top."""
        gi = directory / ".gitignore"
        if gi.is_file() and not gi.is_symlink():
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError as exc:
                raise SelectionError(
                    f"cannot read {_join(rel_dir, '.gitignore')!r}: {exc.strerror}; make it "
                    "readable or pass --no-gitignore"
                ) from None
            self.gitignores.append(_join(rel_dir, ".gitignore"))
            rules = rules.child(rel_dir, pathspec.GitIgnoreSpec.from_lines(lines))
        return rules

    def add(self, child: os.DirEntry[str], rel_dir: str, rules: _GitIgnore) -> bool:
        """Select one child of ``rel_dir`` (a directory with its subtree); False if ignored."""
        rel = _join(rel_dir, child.name)
        if self.name_ignored(child.name) or rel in self.ignored_paths:
            self.skipped += 1
            return False
        try:
            st = child.stat(follow_symlinks=False)
        except OSError as exc:
            raise SelectionError(
                f"cannot stat {rel!r}: {exc.strerror}; exclude it with --ignore-path {rel}"
            ) from None
        is_dir = stat.S_ISDIR(st.st_mode)
        if rules.layers and rules.ignored(rel, is_dir):
            self.skipped += 1
            return False
        if stat.S_ISLNK(st.st_mode):
            self.entries[rel] = _symlink_entry(Path(child.path), rel, st.st_mtime_ns)
        elif is_dir:
            if not self.walk(Path(child.path), rel, rules):
                self.entries[rel] = Entry("dir", b"", stat.S_IMODE(st.st_mode))
        elif stat.S_ISREG(st.st_mode):
            self.entries[rel] = _file_entry(Path(child.path), rel, st)
        else:
            raise SelectionError(
                f"{rel!r} is a device, FIFO or socket, which ReproMin does not copy; exclude "
                f"it with --ignore-path {rel}"
            )
        return True


def _file_entry(path: Path, rel: str, st: os.stat_result) -> Entry:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SelectionError(
            f"cannot read {rel!r}: {exc.strerror}; make it readable or exclude it "
            f"with --ignore-path {rel}"
        ) from None
    return Entry("file", data, stat.S_IMODE(st.st_mode), is_text(data), st.st_mtime_ns)


def _join(base: str, name: str) -> str:
    return f"{base}/{name}" if base else name


def _symlink_entry(link: Path, rel: str, mtime_ns: int) -> Entry:
    target = os.readlink(link)
    if os.path.isabs(target):
        raise SelectionError(
            f"symlink {rel!r} has an absolute target {target!r}, which breaks in any copy of the "
            f"tree; make it relative, or exclude it with --ignore-path {rel}"
        )
    lexical = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if lexical == ".." or lexical.startswith("../"):
        raise SelectionError(
            f"symlink {rel!r} points outside SRC (to {target!r}); point it inside the tree, or "
            f"exclude it with --ignore-path {rel}"
        )
    return Entry("symlink", os.fsencode(target), 0o777, False, mtime_ns)
