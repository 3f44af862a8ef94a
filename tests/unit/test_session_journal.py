"""The session's record files on a real filesystem: what a crash leaves behind is read back
without losing the records after it, records reach the disk (fsync) before they are acted on,
and a failed payload gate stays pending until its revert is journalled."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from repomin.app.session import Session
from repomin.sampling import stats
from repomin.sampling.policy import Sampling, SamplingConfig, SamplingPolicy
from repomin.sampling.verdict import Verdict
from repomin.tree import Entry, Tree


def _tree(*names: str) -> Tree:
    return Tree.of({n: Entry("file", f"{n}\n".encode(), text=True) for n in names})


def _policy() -> SamplingPolicy:
    return SamplingPolicy.learn(SamplingConfig(), 20, 20, stats.lower_bound(20, 20, 0.95))


def _verdict(accepted: bool) -> Verdict:
    return Verdict(accepted, int(accepted), 1, Sampling.SINGLE, 0.95, "single-run")


CONFIG = {"command": "x"}


def test_a_garbled_line_is_skipped_and_later_records_are_still_read(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", CONFIG)
    source, a, b, c = _tree("x", "y", "z"), _tree("x", "y"), _tree("x"), _tree("y")
    session.record_mutation("files", "d", a)
    session.record_verdict(a.digest, _verdict(True))
    journal, ledger = tmp_path / "s" / "journal.jsonl", tmp_path / "s" / "ledger.jsonl"
    # damage in the middle of each file (a crash that left garbage, a bad edit)
    with journal.open("ab") as fh:
        fh.write(b'{"phase": "files", "desc\n\x00\x00\x00\xff\n')
    with ledger.open("ab") as fh:
        fh.write(b'{"tree": "torn\n[1, 2]\n')
    session.record_mutation("files", "d", b)
    session.record_revert(a)
    session.record_mutation("files", "d", c)
    session.record_verdict(c.digest, _verdict(False))

    resumed = Session.open(tmp_path / "s", CONFIG)
    assert [t.digest for t in resumed.history(source)] == [source.digest, a.digest, c.digest]
    verdicts = resumed.verdicts()
    assert verdicts[a.digest].accepted and not verdicts[c.digest].accepted
    notes = resumed.take_notes()
    assert any("journal.jsonl" in n and "skipped 2" in n for n in notes), notes
    assert any("ledger.jsonl" in n and "skipped 2" in n for n in notes), notes
    assert resumed.take_notes() == []  # said once


def test_a_torn_last_record_is_cut_on_resume_and_new_records_follow(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", CONFIG)
    source, a, b = _tree("x", "y", "z"), _tree("x", "y"), _tree("x")
    session.record_mutation("files", "d", a)
    policy = _policy()
    for _ in range(2):
        _, policy = policy.take_index()
        session.save_policy(policy)
    journal, policies = tmp_path / "s" / "journal.jsonl", tmp_path / "s" / "policy.jsonl"
    with journal.open("ab") as fh:
        fh.write(b'{"phase":"files","description":"d","tree":"ab')  # killed mid-write
    with policies.open("ab") as fh:
        fh.write(b'{"family_index": 9')

    resumed = Session.open(tmp_path / "s", CONFIG)
    assert resumed.current_policy(_policy()) == policy
    # the first record after the resume is a line of its own, not glued to the torn one
    resumed.record_mutation("files", "d", b)
    assert [t.digest for t in resumed.history(source)] == [source.digest, a.digest, b.digest]
    assert journal.read_bytes().endswith(b"}\n") and policies.read_bytes().endswith(b"}\n")
    notes = resumed.take_notes()
    assert any("journal.jsonl" in n and "dropped its last record" in n for n in notes), notes
    assert any("policy.jsonl" in n for n in notes), notes
    assert resumed.take_notes() == []


def test_a_failed_gate_is_pending_until_its_revert(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", CONFIG)
    source, a, b, c = _tree("x", "y", "z"), _tree("x", "y"), _tree("x"), _tree("y")
    session.record_mutation("files", "d", a)
    session.record_mutation("lines", "d", b)
    assert not session.pending_backtrack()
    session.record_gate_failure(b)
    assert session.pending_backtrack()
    # the record changes nothing in the history: the incumbent is still the failed tree
    assert [t.digest for t in session.history(source)] == [source.digest, a.digest, b.digest]
    assert Session.open(tmp_path / "s", CONFIG).pending_backtrack()  # it survives a restart
    session.record_revert(a)
    assert not session.pending_backtrack()
    assert [t.digest for t in session.history(source)] == [source.digest, a.digest]
    session.record_mutation("files", "d", c)
    session.record_gate_failure(c)
    session.record_mutation("files", "d", b)  # (a record after it: the backtrack was done)
    assert not session.pending_backtrack()


def test_a_tree_that_cannot_be_read_back_is_left_out_with_a_note(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s", CONFIG)
    source, a, b = _tree("x", "y", "z"), _tree("x", "y"), _tree("y")
    session.record_mutation("files", "d", a)
    session.record_mutation("files", "d", b)
    (tmp_path / "s" / "trees" / f"{a.digest}.json").write_text("[]")  # damaged manifest
    assert [t.digest for t in session.history(source)] == [source.digest, b.digest]
    assert any("could not be read back" in n for n in session.take_notes())


def test_a_new_session_directory_is_private(tmp_path: Path) -> None:
    Session.create(tmp_path / "s", CONFIG)
    assert (tmp_path / "s").stat().st_mode & 0o777 == 0o700
    assert json.loads((tmp_path / "s" / "config.json").read_text())["command"] == "x"


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from repomin.app.session import Session
    from repomin.sampling.verdict import Verdict
    from repomin.sampling.policy import Sampling
    from repomin.tree import Entry, Tree
    s = Session.create(Path(sys.argv[1]), {"command": "x"})
    for i in range(3):
        t = Tree.of({f"f{i}": Entry("file", b"x", text=True)})
        s.record_mutation("files", "d", t)
        s.record_verdict(t.digest, Verdict(True, 1, 1, Sampling.SINGLE, 0.95, "single-run"))
    """
)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_every_record_is_fsynced_before_the_next_is_written(tmp_path: Path) -> None:
    """Observed with strace on the real process: each write to a record file is followed by
    an fsync of the same descriptor before anything else is written to a record file."""
    log = tmp_path / "strace.log"
    argv = ["strace", "-f", "-qq", "-o", str(log), "-e", "trace=openat,write,fsync,close"]
    argv += [sys.executable, "-c", _WRITER, str(tmp_path / "s")]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    fds: dict[str, str] = {}
    pending: set[str] = set()
    writes = 0
    for line in log.read_text().splitlines():
        if m := re.search(r'openat\(.*"([^"]*\.jsonl)".* = (\d+)$', line):
            fds[m.group(2)] = m.group(1)
        elif m := re.search(r"write\((\d+),", line):
            if m.group(1) in fds:
                assert not pending, f"written before the previous record was synced: {line}"
                pending.add(m.group(1))
                writes += 1
        elif m := re.search(r"fsync\((\d+)\)", line):
            pending.discard(m.group(1))
        elif m := re.search(r"close\((\d+)\)", line):
            assert m.group(1) not in pending, f"closed without fsync: {line}"
            fds.pop(m.group(1), None)
    assert writes == 6 and not pending
