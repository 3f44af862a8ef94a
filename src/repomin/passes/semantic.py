"""The opt-in ``semantic`` pass: a model's proposals, each decided by the oracle.

Per round: once per distinct tree, one "which files can be dropped?" question (all proposed
paths dropped in one candidate); then, per text file up to the configured size (largest first)
and once per distinct content, one "give a smaller version" question. A proposal that is not
smaller, does not parse (syntax guard) or is rejected changes nothing. Without a client (no
``--semantic-endpoint``) the pass does nothing.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

from repomin.analysis.semantic import SemanticClient
from repomin.passes.textedit import propose, syntax_guard, text_files
from repomin.search.problem import Problem


class SemanticReduce:
    name: ClassVar[str] = "semantic"

    def __init__(self, client: SemanticClient | None = None, context: str = "") -> None:
        self.client = client
        self.context = context
        self._asked: set[str] = set()

    def _first_time(self, key: str) -> bool:
        if key in self._asked:
            return False
        self._asked.add(key)
        return True

    def run(self, problem: Problem) -> None:
        client = self.client
        if client is None:
            return
        tree = problem.current
        if self._first_time("tree:" + tree.digest):
            listing = [
                (p, e.size)
                for p, e in tree.entries.items()
                if e.kind != "dir" and not problem.protected(p)
            ]
            drop = client.files_to_drop(listing, self.context) if len(listing) > 1 else None
            if drop:
                candidate = tree.without(drop)
                head = ", ".join(drop[:3]) + (f" and {len(drop) - 3} more" if len(drop) > 3 else "")
                problem.try_first(self.name, [(candidate, f"model: drop {head}")])
        limit = client.config.max_file_bytes
        for path in text_files(problem, lambda _p, data: len(data) <= limit):
            entry = problem.current.entries.get(path)
            if entry is None:
                continue
            digest = hashlib.sha256(entry.data).hexdigest()
            if not self._first_time(f"file:{path}:{digest}"):
                continue
            proposal = client.smaller_file(path, entry.data, self.context)
            if proposal is None:
                continue
            guard = syntax_guard(path, entry.data)
            candidate = propose(problem, path, proposal, guard)
            saved = len(entry.data) - len(proposal)
            problem.try_first(self.name, [(candidate, f"model: {path} {saved} B smaller")])
