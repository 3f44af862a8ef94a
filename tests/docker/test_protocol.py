"""The Docker runner's pure parts: output framing, bounded capture, settings, tar building.

These need no engine and are deliberately not marked ``docker``: they run everywhere.
"""

from __future__ import annotations

import io
import tarfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repomin.errors import UsageError
from repomin.runners.base import truncate
from repomin.runners.docker import DEFAULT_USER, parse_limits
from repomin.runners.docker_script import (
    Capture,
    Header,
    Trailer,
    assemble,
    increased,
    split_header,
    split_trailer,
)
from repomin.runners.docker_transport import tar_bytes
from repomin.tree import Entry, Tree

NONCE = "0123456789abcdef"


def test_header_and_trailer_are_split_off() -> None:
    data = f"{NONCE} begin 3 0\nsome error\n\n{NONCE} end 139 4 1 0 0\n".encode()
    header, rest = split_header(data, NONCE)
    assert header == Header(oom_kills=3, pids_max_events=0)
    trailer, body = split_trailer(rest, NONCE)
    assert trailer == Trailer(
        exit_code=139, oom_kills=4, pids_max_events=1, reaped=True, clean=True
    )
    assert body == b"some error\n"


def test_unknown_counters_and_failed_cleanup_are_reported() -> None:
    trailer, body = split_trailer(f"\n{NONCE} end 0 - - 1 1\n".encode(), NONCE)
    assert trailer == Trailer(0, None, None, reaped=False, clean=False)
    assert body == b""
    assert not increased(None, 5) and not increased(5, None) and increased(1, 2)
    assert not increased(2, 2)


def test_setup_failures_are_recognised() -> None:
    trailer, _ = split_trailer(f"\n{NONCE} setup-failed tar:1:-\n".encode(), NONCE)
    assert trailer is not None and trailer.setup_error == "tar:1:-"


@pytest.mark.parametrize(
    "data",
    [
        b"no trailer at all\n",
        f"\n{NONCE} end 0 0 0 0 0\nprinted after it\n".encode(),  # not at the very end
        f"\n{'f' * 16} end 0 0 0 0 0\n".encode(),  # another nonce
        f"\n{NONCE} end 0 0 0\n".encode(),  # malformed
        f"\n{NONCE} end 0 0 0 0 0".encode(),  # no final newline
    ],
)
def test_anything_but_a_final_trailer_is_left_alone(data: bytes) -> None:
    trailer, body = split_trailer(data, NONCE)
    assert trailer is None
    assert body == data


def test_a_header_is_only_accepted_at_the_start() -> None:
    data = f"x\n{NONCE} begin 0 0\n".encode()
    assert split_header(data, NONCE) == (None, data)


@given(st.lists(st.binary(max_size=700), max_size=40))
def test_capture_keeps_what_truncate_would(chunks: list[bytes]) -> None:
    capture = Capture(limit=1000, slack=64)
    for chunk in chunks:
        capture.add(chunk)
    assert assemble(*capture.parts(), limit=1000) == truncate(b"".join(chunks), 1000)


def test_capture_keeps_the_trailer_of_a_huge_stream() -> None:
    capture = Capture(limit=1000, slack=64)
    capture.add(f"{NONCE} begin 0 0\n".encode())
    for _ in range(500):
        capture.add(b"y\n" * 50)
    capture.add(f"\n{NONCE} end 1 0 0 0 0\n".encode())
    head, tail = capture.parts()
    assert tail is not None
    header, head = split_header(head, NONCE)
    trailer, tail = split_trailer(tail, NONCE)
    assert header is not None and trailer is not None and trailer.exit_code == 1
    value = assemble(head, tail, limit=1000)
    assert value.startswith(b"y\ny\n") and value.endswith(b"y\n")
    assert len(value) <= 1000 + 64


def test_default_limits_run_as_nobody_without_network() -> None:
    limits = parse_limits(network="none", memory=None, cpus=None, pids_limit=None, user=None)
    assert limits.user == DEFAULT_USER
    assert limits.keepalive_user != limits.user
    assert parse_limits(
        network="bridge", memory="1g", cpus=0.5, pids_limit=100, user="1000"
    ).user == ("1000:1000")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"network": "host"},
        {"memory": "1k"},
        {"memory": "x"},
        {"cpus": 0.0},
        {"pids_limit": 1},
        {"user": "0:0"},
        {"user": "root"},
        {"user": "1000:staff"},
    ],
)
def test_bad_limits_are_usage_errors(kwargs: dict[str, object]) -> None:
    settings: dict[str, object] = {
        "network": "none",
        "memory": None,
        "cpus": None,
        "pids_limit": None,
        "user": None,
    }
    settings.update(kwargs)
    with pytest.raises(UsageError):
        parse_limits(**settings)  # type: ignore[arg-type]


def test_tar_holds_the_tree_with_modes_links_and_empty_dirs() -> None:
    tree = Tree.of(
        {
            "a/b/c.txt": Entry("file", b"c", 0o640),
            "run": Entry("file", b"#!/bin/sh\n", 0o755),
            "ln": Entry("symlink", b"a/b/c.txt"),
            "empty": Entry("dir"),
            "n" * 120 + "/long": Entry("file", b"long"),
        }
    )
    for under in ("", "work"):
        with tarfile.open(fileobj=io.BytesIO(tar_bytes(tree, 1000, 1001, under=under))) as tar:
            members = {m.name: m for m in tar.getmembers()}
            prefix = f"{under}/" if under else ""
            assert members[f"{prefix}a/b/c.txt"].mode == 0o640
            assert members[f"{prefix}run"].mode == 0o755
            assert members[f"{prefix}ln"].issym()
            assert members[f"{prefix}ln"].linkname == "a/b/c.txt"
            assert members[f"{prefix}empty"].isdir()
            assert members[f"{prefix}{'n' * 120}/long"].size == 4
            assert {m.uid for m in members.values()} == {1000}
            names = list(members)
            assert names.index(f"{prefix}a") < names.index(f"{prefix}a/b/c.txt")
            if under:
                assert members[under].isdir() and members[under].uid == 1000
