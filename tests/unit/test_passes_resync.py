"""After a folded acceptance (``--jobs``), the line and block searches map the new content onto
their units (other candidates of the same search deleted more units) instead of stopping."""

from __future__ import annotations

from repomin.passes.blocks import Block, _still_there, blocks_in
from repomin.passes.lines import still_there
from repomin.passes.textedit import line_starts


def test_lines_mask_when_more_kept_lines_were_deleted() -> None:
    kept = [b"a\n", b"b\n", b"a\n", b"c\n"]
    assert still_there(kept, b"a\nb\na\nc\n") == [True] * 4
    assert still_there(kept, b"a\nc\n") is not None
    assert still_there(kept, b"b\nc\n") == [False, True, False, True]
    assert still_there(kept, b"") == [False] * 4
    assert still_there(kept, b"a\nd\n") is None  # an edit, not a deletion of kept lines
    assert still_there(kept, b"c\na\n") is None  # reordered


def test_blocks_mask_when_more_kept_blocks_were_deleted() -> None:
    data = b"top\nf1:\n  x\ng:\n  y\nmid\nh:\n  z\nend\n"
    lines = data.splitlines(keepends=True)
    starts = line_starts(data)
    units = [b for b in blocks_in(lines, 0, len(lines)) if b.has_body]
    assert units == [Block(1, 3), Block(3, 5), Block(6, 8)]
    kept = [units[0], units[2]]  # the search deleted g: itself
    assert _still_there(data, starts, units, kept, b"top\nf1:\n  x\nmid\nh:\n  z\nend\n") == [
        True,
        True,
    ]
    # a folded candidate of the same search deleted h: as well
    assert _still_there(data, starts, units, kept, b"top\nf1:\n  x\nmid\nend\n") == [True, False]
    # an edit inside a kept block is not a deletion of units: the search starts again
    assert _still_there(data, starts, units, kept, b"top\nf1:\n  q\nmid\nend\n") is None
    # a deleted line between units likewise
    assert _still_there(data, starts, units, kept, b"f1:\n  x\nmid\nend\n") is None
