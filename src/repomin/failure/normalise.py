"""Normalising the volatile parts of failure text so that signatures compare across samples.

Every sample runs in a fresh work directory, so absolute paths, temporary names, object
addresses and ids differ from run to run although the failure is the same. This module owns the
rules that turn such text into stable placeholders; the signature modes only call
:meth:`Normaliser.path` and :meth:`Normaliser.message`. The rules are applied in a fixed order
and are pure functions of the text and the sample's work directories.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from repomin.runners.base import Outcome

#: Normalised messages are cut to this many characters (after normalisation).
MESSAGE_LIMIT = 500

#: At most this many innermost frames are recorded per exception.
FRAME_LIMIT = 30

_PATH_CHAR = r"[^/\s'\"`,:;()\[\]{}<>]"
_TEMP_ROOT = r"(?<![\w.>-])(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)"
_POSIX_TEMP_DIRS = re.compile(rf"{_TEMP_ROOT}(?:/{_PATH_CHAR}+)*/(?={_PATH_CHAR})")
_WINDOWS_TEMP_DIRS = re.compile(
    r"[A-Za-z]:\\Users\\[^\\\s'\"]+\\AppData\\Local\\Temp\\(?:[^\\\s'\"]+\\)*"
)
_TEMP_NAME = re.compile(r"(?<![\w])tmp[a-z0-9_]{8}(?![\w])")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HEX_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
_JAVA_HASH = re.compile(r"(?<=[\w$])@[0-9a-f]{4,8}\b")
_LONG_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{16,}\b")
_LONG_DIGITS = re.compile(r"\d{5,}")
_SPACE = re.compile(r"\s+")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

_SITE_PACKAGES = re.compile(r"^.*/(?:site|dist)-packages/")
_STDLIB = re.compile(r"^(?:.*/lib/python\d+(?:\.\d+)?t?/|[A-Za-z]:/(?:.*/)?Lib/)")
_TEMP_PATH_DIRS = re.compile(r"^(?:/private)?/(?:tmp|var/tmp|var/folders|dev/shm)/(?:.*/)?")


@dataclass(frozen=True, slots=True)
class Normaliser:
    """The normalisation rules bound to one sample's work directories.

    ``workdirs`` holds every spelling of the directory where the tree was materialised (as
    given, its resolved form, and an in-container path if the runner reported one), longest
    first so that a nested spelling never leaves a fragment behind.
    """

    workdirs: tuple[str, ...] = ()

    @classmethod
    def for_outcome(cls, outcome: Outcome) -> Normaliser:
        candidates: list[str] = []
        raw = [outcome.workdir]
        container = outcome.extra.get("container_workdir")
        if isinstance(container, str):
            raw.append(container)
        for path in raw:
            if not path:
                continue
            candidates.append(path)
            resolved = os.path.realpath(path)
            if resolved != path:
                candidates.append(resolved)
        cleaned = {p.rstrip("/\\") for p in candidates if p.rstrip("/\\")}
        return cls(tuple(sorted(cleaned, key=lambda p: (-len(p), p))))

    def path(self, raw: str) -> str:
        """A frame's file, relative to the tree root when it lies inside the tree.

        Paths outside the tree are reduced to a stable suffix: ``<site-packages>/pkg/mod.py``,
        ``<stdlib>/json/decoder.py``, ``<tmp>/name.py``. Pseudo-files such as ``<string>`` or
        ``<frozen importlib._bootstrap>`` are kept as printed.
        """
        path = raw.strip().replace("\\", "/")
        for workdir in self.workdirs:
            root = workdir.replace("\\", "/")
            if path == root:
                return "."
            index = path.find(root + "/")
            if index >= 0:
                return _strip_dot(path[index + len(root) + 1 :])
        if path.startswith("<"):
            return path
        for pattern, placeholder in (
            (_SITE_PACKAGES, "<site-packages>/"),
            (_STDLIB, "<stdlib>/"),
            (_TEMP_PATH_DIRS, "<tmp>/"),
        ):
            replaced, count = pattern.subn(placeholder, path, count=1)
            if count:
                return replaced
        return _strip_dot(path)

    def message(self, raw: str) -> str:
        """An exception message with volatile parts replaced by placeholders.

        In order: the work directory becomes ``<workdir>``; the directories of temporary paths
        become ``<tmp>/`` (the base name is kept); ``tmpXXXXXXXX`` names become ``<tmpname>``;
        UUIDs ``<uuid>``; ``0x`` addresses of six or more hex digits ``0x<hex>``; Java identity
        hashes (``Object@6b95977``) ``@<hash>``; hex runs of 16 or more ``<hex>``; digit runs of
        five or more ``<n>``. Whitespace runs collapse to one space; the result is cut to
        :data:`MESSAGE_LIMIT` characters.
        """
        text = raw
        for workdir in self.workdirs:
            for spelling in {workdir, workdir.replace("\\", "/"), workdir.replace("/", "\\")}:
                text = text.replace(spelling, "<workdir>")
        text = _POSIX_TEMP_DIRS.sub("<tmp>/", text)
        text = _WINDOWS_TEMP_DIRS.sub("<tmp>\\\\", text)
        text = _TEMP_NAME.sub("<tmpname>", text)
        text = _UUID.sub("<uuid>", text)
        text = _HEX_ADDRESS.sub("0x<hex>", text)
        text = _JAVA_HASH.sub("@<hash>", text)
        text = _LONG_HEX.sub("<hex>", text)
        text = _LONG_DIGITS.sub("<n>", text)
        text = _SPACE.sub(" ", text).strip()
        return text[:MESSAGE_LIMIT]


def strip_ansi(text: str) -> str:
    """Output without terminal colour and cursor escapes (``--color=yes``, Maven's colours)."""
    return _ANSI.sub("", text)


def _strip_dot(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def frames_suffix_match(
    pinned: list[dict[str, str]],
    observed: list[dict[str, str]],
    count: int,
    *,
    innermost_last: bool,
) -> bool:
    """Do the ``count`` innermost frames of ``pinned`` equal those of ``observed``?

    When ``pinned`` holds fewer than ``count`` frames, all of them are compared. ``observed``
    may hold more outer frames than ``pinned`` (reduction removes callers; a harness may add
    some), never fewer innermost ones.
    """
    k = min(count, len(pinned))
    if len(observed) < k:
        return False
    if k == 0:
        return True
    if innermost_last:
        return pinned[-k:] == observed[-k:]
    return pinned[:k] == observed[:k]
