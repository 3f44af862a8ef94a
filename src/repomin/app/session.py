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
* ``journal.jsonl`` -- accepted mutations in order (phase, description, tree digest) and
  backtracking records (``"revert": true``: the incumbent went back to that tree), so a resume
  rebuilds the accepted history and the incumbent exactly.
* ``ledger.jsonl`` -- every decided verdict keyed by tree digest (the persistent cache), as
  versioned :meth:`~repomin.sampling.verdict.Verdict.to_json` records; later records win (a revoked
  tree's rejection overrides its acceptance). A resume keeps only the verdicts taken under the
  current sampling mode (single-run verdicts are no evidence after an escalation).

Owns the on-disk layout of a session; the records' contents belong to their classes.

Appends are line-buffered and flushed per record; a torn last line (SIGKILL) is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repomin.errors import SessionError
from repomin.failure.identity import Identity
from repomin.report.io import write_json_atomic
from repomin.sampling.policy import Sampling, SamplingPolicy
from repomin.sampling.verdict import Baseline, Verdict
from repomin.tree import Entry, Tree

SESSION_FORMAT = 3


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


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text("utf-8").splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a torn final line from a killed process
    return records


class Session:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def create(cls, root: Path, config: dict[str, Any]) -> Session:
        if (root / "config.json").exists():
            raise SessionError(
                f"session directory {str(root)!r} already holds a session; pass --resume to "
                "continue it, or remove it / choose another --session"
            )
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "trees").mkdir(exist_ok=True)
        write_json_atomic(root / "config.json", {"format": SESSION_FORMAT, **config})
        return cls(root)

    @classmethod
    def open(cls, root: Path, config: dict[str, Any]) -> Session:
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
        return cls(root)

    # -- trees -------------------------------------------------------------------------------

    def save_tree(self, tree: Tree) -> str:
        manifest = []
        for path, entry in tree.entries.items():
            blob = hashlib.sha256(entry.data).hexdigest()
            target = self.root / "blobs" / blob
            if not target.exists():
                tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_bytes(entry.data)
                os.replace(tmp, target)
            manifest.append([path, entry.kind, entry.mode, entry.text, blob, entry.mtime_ns])
        write_json_atomic(self.root / "trees" / f"{tree.digest}.json", manifest)
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
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock, open(self.root / name, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()

    def save_baseline(self, stored: StoredBaseline) -> None:
        write_json_atomic(self.root / "baseline.json", stored.to_json())

    def load_baseline(self) -> StoredBaseline | None:
        path = self.root / "baseline.json"
        if not path.exists():
            return None
        return StoredBaseline.from_json(json.loads(path.read_text("utf-8")))

    def save_policy(self, policy: SamplingPolicy) -> None:
        self._append("policy.jsonl", policy.to_json())

    def current_policy(self, learnt: SamplingPolicy) -> SamplingPolicy:
        """The latest policy record (indexes taken, escalation), else the ``learnt`` one."""
        records = _read_jsonl(self.root / "policy.jsonl")
        return SamplingPolicy.from_json(records[-1]) if records else learnt

    def record_revert(self, tree: Tree) -> None:
        """Backtracking made ``tree`` (already journalled or the source) the incumbent."""
        self._append(
            "journal.jsonl",
            {"phase": "backtrack", "description": "revert", "tree": tree.digest, "revert": True},
        )

    def history(self, initial: Tree) -> list[Tree]:
        """The accepted history (source first) replayed from the journal, reverts applied."""
        digests = [initial.digest]
        for rec in self.journal():
            if rec.get("revert"):
                if rec["tree"] in digests:
                    del digests[len(digests) - digests[::-1].index(rec["tree"]) :]
            else:
                digests.append(rec["tree"])
        trees = [initial]
        for digest in digests[1:]:
            try:
                trees.append(self.load_tree(digest))
            except (OSError, ValueError):
                break  # a tree torn by a kill: the history ends before it
        return trees

    def record_verdict(self, digest: str, verdict: Verdict) -> None:
        self._append("ledger.jsonl", {"tree": digest, **verdict.to_json()})

    def verdicts(self, mode: Sampling | None = None) -> dict[str, Verdict]:
        """Decided trees (later records win); with ``mode``, only verdicts taken under it
        (after an escalation single-run verdicts are no evidence)."""
        out = {}
        for rec in _read_jsonl(self.root / "ledger.jsonl"):
            digest = rec.pop("tree")
            out[digest] = Verdict.from_json(rec)
        return {d: v for d, v in out.items() if mode is None or v.policy is mode}

    def record_mutation(self, phase: str, description: str, tree: Tree) -> None:
        self.save_tree(tree)
        self._append(
            "journal.jsonl", {"phase": phase, "description": description, "tree": tree.digest}
        )

    def journal(self) -> list[dict[str, Any]]:
        return _read_jsonl(self.root / "journal.jsonl")

    def latest_tree(self, initial: Tree) -> Tree:
        return self.history(initial)[-1]
