"""Persistent sessions: resume an interrupted reduction without rerunning decided trees.

A session directory (default ``OUTPUT.repomin-session`` beside OUTPUT, or ``--session DIR``)
holds:

* ``config.json`` -- the configuration fingerprint (source digest, command, failure spec,
  environment digest, sampling configuration, backend, jobs, ``reduction_strategy``). Resuming
  with anything different is refused.
* ``baseline.json`` -- the baseline counts, the pinned signature and the learnt
  :class:`~repomin.sampling.policy.SamplingPolicy` record (θ, mode, failure budget, screen, ...),
  so that
  a resumed search uses the same decisions' parameters and does not rerun the baseline.
* ``policy.jsonl`` -- the policy record appended (flushed) before every change is used:
  family index and payload-gate index taken, single -> exact escalation; the last complete
  line is the current policy. A resumed
  reduction continues the same α-spending sequence, so it spends α exactly as an uninterrupted
  one would (an index taken by a killed test is burnt, never reused).
* ``blobs/`` + ``trees/`` -- content-addressed file contents and tree manifests.
* ``journal.jsonl`` -- accepted mutations in order (phase, description, tree digest),
  backtracking records (``"revert": true``: the incumbent went back to that tree) and failed
  payload gates (``"backtrack": true``: the search must backtrack from that tree, written
  before it does), so a resume rebuilds the accepted history and the incumbent exactly, and
  backtracks first when a failed gate has no revert after it yet.
* ``ledger.jsonl`` -- every decided verdict keyed by tree digest (the persistent cache), as
  versioned :meth:`~repomin.sampling.verdict.Verdict.to_json` records; later records win (a revoked
  tree's rejection overrides its acceptance). A resume keeps only the verdicts taken under the
  current sampling mode (single-run verdicts are no evidence after an escalation).

Owns the on-disk layout of a session; the records' contents belong to their classes.

Durability: every record is appended with one ``write`` and fsynced before the call returns
(and so before the decision it records is acted on); a tree's blobs and manifest are fsynced
before the journal names it. Reading: a line that is not a JSON object (a
record garbled by a crash or by hand) is skipped and the records after it are still read; a
resume first cuts an unterminated last line (a record whose write never completed) so that
new records start on a line of their own. Both are reported through :meth:`Session.take_notes`.

The session directory itself is never reached through a symlink and must be the user's: a
link or another user's directory there is refused (exit 2) before anything is written; a new
one is created private (0700).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.errors import SessionError
from repomin.failure.identity import Identity
from repomin.report.io import check_own_dir, json_bytes, open_own_dir, write_atomic_at
from repomin.sampling.policy import Sampling, SamplingPolicy
from repomin.sampling.verdict import Baseline, Verdict
from repomin.tree import Entry, Tree

SESSION_FORMAT = 3
#: How a refused session directory is fixed (the end of its one-line error).
SESSION_FIX = "remove it or choose another --session"
#: The append-only record files, each one JSON object per line.
RECORD_FILES = ("journal.jsonl", "policy.jsonl", "ledger.jsonl")


@dataclass(frozen=True, slots=True)
class StoredBaseline:
    """``baseline.json``: what a resumed session needs to decide exactly as this one did."""

    baseline: Baseline
    policy: SamplingPolicy
    signature: dict[str, Any] | None
    identity: Identity | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.baseline.to_json(),
            "signature": self.signature,
            "identity": None if self.identity is None else self.identity.to_json(),
            "policy": self.policy.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StoredBaseline:
        identity = data.get("identity")
        return cls(
            Baseline.from_json(data),
            SamplingPolicy.from_json(data["policy"]),
            data["signature"],
            None if identity is None else Identity.from_json(identity),
        )


def default_session_dir(output: Path) -> Path:
    return output.absolute().with_name(output.name + ".repomin-session")


def _read_jsonl(path: Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """The JSON objects of ``path``, one per line; a line that is not one is skipped (with a
    note naming the file and its line numbers) and the lines after it are still read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            bad.append(number)
    if bad and notes is not None:
        where = ", ".join(str(n) for n in bad[:5]) + (", ..." if len(bad) > 5 else "")
        notes.append(
            f"session {path.name}: skipped {len(bad)} unreadable record(s) (line {where}); "
            "the records after them are used"
        )
    return records


def _cut_torn_tail(path: Path) -> str | None:
    """Cut an unterminated last line of ``path`` (a record whose write never completed: it
    was never acted on), so that the next record starts on a line of its own. A note, or
    None when the file ends cleanly."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return None
        keep = size
        while keep > 0:
            start = max(0, keep - 65536)
            chunk = os.pread(fd, keep - start, start)
            at = chunk.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            keep = start
        os.ftruncate(fd, keep)
        os.fsync(fd)
    finally:
        os.close(fd)
    return (
        f"session {path.name}: dropped its last record, cut short when the previous run "
        f"stopped ({size - keep} bytes)"
    )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Session:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._notes: list[str] = []
        self._created: set[str] = set()  # record files whose directory entry is synced

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def create(cls, root: Path, config: dict[str, Any]) -> Session:
        check_own_dir(root, SESSION_FIX)  # a link or another user's directory: refused
        if (root / "config.json").exists():
            raise SessionError(
                f"session directory {str(root)!r} already holds a session; pass --resume to "
                "continue it, or remove it / choose another --session"
            )
        root.parent.mkdir(parents=True, exist_ok=True)
        fd = open_own_dir(root, SESSION_FIX, mode=0o700)
        try:
            for sub in ("blobs", "trees"):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(sub, 0o700, dir_fd=fd)
            write_atomic_at(fd, "config.json", json_bytes({"format": SESSION_FORMAT, **config}))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cls(root)

    @classmethod
    def open(cls, root: Path, config: dict[str, Any]) -> Session:
        check_own_dir(root, SESSION_FIX)
        path = root / "config.json"
        if not path.exists():
            raise SessionError(
                f"--resume: no session in {str(root)!r}; start without --resume (or pass the "
                "--session directory of the interrupted run)"
            )
        stored = json.loads(path.read_text("utf-8"))
        if stored.pop("format", None) != SESSION_FORMAT:
            raise SessionError(
                f"--resume: session {str(root)!r} was written by another ReproMin version; "
                "start a new session (remove it or choose another --session)"
            )
        diff = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
        if diff:
            raise SessionError(
                f"--resume: the configuration differs from the session's ({', '.join(diff)}); "
                "rerun with the original options or start a new session"
            )
        session = cls(root)
        for name in RECORD_FILES:
            if note := _cut_torn_tail(root / name):
                session._notes.append(note)
        return session

    def take_notes(self) -> list[str]:
        """What reading the session repaired or skipped since the last call (for the user)."""
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    # -- trees -------------------------------------------------------------------------------

    def save_tree(self, tree: Tree) -> str:
        """Store ``tree`` (new blobs, then its manifest), synced before a record names it."""
        manifest = []
        blobs = os.open(self.root / "blobs", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            wrote = False
            for path, entry in tree.entries.items():
                blob = hashlib.sha256(entry.data).hexdigest()
                if not (self.root / "blobs" / blob).exists():
                    write_atomic_at(blobs, blob, entry.data)
                    wrote = True
                manifest.append([path, entry.kind, entry.mode, entry.text, blob, entry.mtime_ns])
            if wrote:
                os.fsync(blobs)
        finally:
            os.close(blobs)
        trees = os.open(self.root / "trees", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            write_atomic_at(trees, f"{tree.digest}.json", json_bytes(manifest))
            os.fsync(trees)
        finally:
            os.close(trees)
        return tree.digest

    def load_tree(self, digest: str) -> Tree:
        manifest = json.loads((self.root / "trees" / f"{digest}.json").read_text("utf-8"))
        entries = {  # the sixth field (mtime in ns) is absent in sessions before it existed
            row[0]: Entry(
                row[1], (self.root / "blobs" / row[4]).read_bytes(), row[2], row[3], *row[5:6]
            )
            for row in manifest
        }
        tree = Tree.of(entries)
        if tree.digest != digest:
            raise SessionError(f"session tree {digest[:12]} is corrupt; start a new session")
        return tree

    # -- records -----------------------------------------------------------------------------

    def _append(self, name: str, record: dict[str, Any]) -> None:
        """One record, one line, one ``write``; fsynced (with the directory entry of a new
        file) before returning, so a record always precedes what it records."""
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        with self._lock:
            fd = os.open(self.root / name, flags, 0o600)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            if name not in self._created:
                _fsync_dir(self.root)
                self._created.add(name)

    def _read(self, name: str) -> list[dict[str, Any]]:
        notes: list[str] = []
        records = _read_jsonl(self.root / name, notes)
        with self._lock:
            self._notes += [n for n in notes if n not in self._notes]
        return records

    def save_baseline(self, stored: StoredBaseline) -> None:
        fd = open_own_dir(self.root, SESSION_FIX)
        try:
            write_atomic_at(fd, "baseline.json", json_bytes(stored.to_json()))
            os.fsync(fd)
        finally:
            os.close(fd)

    def load_baseline(self) -> StoredBaseline | None:
        path = self.root / "baseline.json"
        if not path.exists():
            return None
        return StoredBaseline.from_json(json.loads(path.read_text("utf-8")))

    def save_policy(self, policy: SamplingPolicy) -> None:
        self._append("policy.jsonl", policy.to_json())

    def current_policy(self, learnt: SamplingPolicy) -> SamplingPolicy:
        """The latest policy record (indexes taken, escalation), else the ``learnt`` one."""
        records = self._read("policy.jsonl")
        return SamplingPolicy.from_json(records[-1]) if records else learnt

    def record_revert(self, tree: Tree) -> None:
        """Backtracking made ``tree`` (already journalled or the source) the incumbent."""
        self._append(
            "journal.jsonl",
            {"phase": "backtrack", "description": "revert", "tree": tree.digest, "revert": True},
        )

    def record_gate_failure(self, tree: Tree) -> None:
        """The payload gate failed on ``tree`` and the search is about to backtrack from it (or
        to test it a second time): recorded (and synced) first, so that a resume backtracks
        (:meth:`pending_backtrack`) instead of searching on from the tree that failed."""
        self._append(
            "journal.jsonl",
            {"phase": "gate", "description": "failed", "tree": tree.digest, "backtrack": True},
        )

    def pending_backtrack(self) -> bool:
        """Whether the journal ends with a failed gate: nothing (no revert, no mutation)
        happened after it, so the backtracking it called for has not been done yet."""
        records = [r for r in self.journal() if isinstance(r.get("tree"), str)]
        return bool(records) and bool(records[-1].get("backtrack"))

    def history(self, initial: Tree) -> list[Tree]:
        """The accepted history (source first) replayed from the journal, reverts applied
        (failed gates change nothing here). A tree that cannot be read back (lost or damaged
        by a crash) is left out, with a note."""
        digests = [initial.digest]
        for rec in self.journal():
            tree = rec.get("tree")
            if not isinstance(tree, str) or rec.get("backtrack"):
                continue
            if rec.get("revert"):
                if tree in digests:
                    del digests[len(digests) - digests[::-1].index(tree) :]
            else:
                digests.append(tree)
        trees = [initial]
        lost = 0
        for digest in digests[1:]:
            try:
                trees.append(self.load_tree(digest))
            except (OSError, ValueError, SessionError):
                lost += 1
        if lost:
            with self._lock:
                self._notes.append(
                    f"session: {lost} accepted tree(s) could not be read back and were left "
                    "out of the history"
                )
        return trees

    def record_verdict(self, digest: str, verdict: Verdict) -> None:
        self._append("ledger.jsonl", {"tree": digest, **verdict.to_json()})

    def verdicts(self, mode: Sampling | None = None) -> dict[str, Verdict]:
        """Decided trees (later records win); with ``mode``, only verdicts taken under it
        (after an escalation single-run verdicts are no evidence)."""
        out = {}
        for rec in self._read("ledger.jsonl"):
            digest = rec.pop("tree", None)
            if not isinstance(digest, str):
                continue
            try:
                out[digest] = Verdict.from_json(rec)
            except (KeyError, TypeError, ValueError):
                continue  # not a verdict record (garbled): the tree is decided again
        return {d: v for d, v in out.items() if mode is None or v.policy is mode}

    def record_mutation(self, phase: str, description: str, tree: Tree) -> None:
        self.save_tree(tree)
        self._append(
            "journal.jsonl", {"phase": phase, "description": description, "tree": tree.digest}
        )

    def journal(self) -> list[dict[str, Any]]:
        return self._read("journal.jsonl")

    def latest_tree(self, initial: Tree) -> Tree:
        return self.history(initial)[-1]
