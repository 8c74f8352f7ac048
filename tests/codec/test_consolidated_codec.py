"""The consolidated index codec: round trips (hypothesis), and every truncation or flipped byte
is an IndexReaderException naming the object, never another error or a silently wrong answer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smdebug.codec.consolidated import (
    EVENT_NONE,
    EVENT_STANDARD,
    FileIndex,
    decode_entries,
    decode_head,
    decode_heads,
    encode_consolidated,
    encode_heads,
    head_size,
    object_tag,
)
from smdebug.exceptions import IndexReaderException

TAGS = ["w", "b", "smdebug/reductions/max/w", "loss", "δ"]


@st.composite
def file_indexes(draw):
    steps = draw(st.lists(st.integers(0, 999), min_size=0, max_size=12, unique=True))
    out = []
    for s in steps:
        tags = tuple(draw(st.lists(st.sampled_from(TAGS), max_size=4)))
        lengths = [draw(st.integers(16, 2**33)) for _ in tags]
        gaps = [draw(st.integers(0, 3)) for _ in tags]
        starts, pos = [], 0
        for g, n in zip(gaps, lengths):
            starts.append(pos + g)
            pos += g + n
        crcs = None if draw(st.booleans()) else [draw(st.integers(0, 2**32 - 1)) for _ in tags]
        event = draw(st.sampled_from([EVENT_STANDARD, EVENT_NONE, "events/x/custom.tfevents"])) if tags else EVENT_NONE
        shapes = tuple((n, n + "_orig", (2, 3)) for n in draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True)))
        out.append(
            FileIndex(
                s, draw(st.integers(1, 4)), draw(st.integers(0, 10**12)), event, tags, starts, lengths, crcs, shapes
            )
        )
    return out


@settings(max_examples=150, deadline=None)
@given(file_indexes())
def test_round_trip(files):
    obj = encode_consolidated("worker_3", 7, files)
    head = decode_head(obj, "obj")
    assert (head.worker, head.bucket) == ("worker_3", 7)
    ent = decode_entries(head, obj[head.entries_offset :], "obj")
    by_step = sorted(files, key=lambda f: f.step)
    assert head.steps.tolist() == [f.step for f in by_step]
    assert head.modes.tolist() == [f.mode for f in by_step]
    assert head.mode_steps.tolist() == [f.mode_step for f in by_step]
    for i, f in enumerate(by_step):
        layout = head.layouts[head.layout_ids[i]]
        assert layout.tags == f.tags and layout.shapes == f.shapes
        ev = int(head.event_ids[i])
        assert (head.event_names[ev] if ev >= 0 else ev) == f.event
        a, b = ent.offsets[i], ent.offsets[i + 1]
        assert ent.starts[a:b].tolist() == f.starts and ent.lengths[a:b].tolist() == f.lengths
        assert ent.crcs[a:b].tolist() == (f.crcs if f.crcs is not None else [-1] * len(f.tags))
    prefix = obj[: head_size(obj, "obj")]
    assert decode_heads(encode_heads([prefix, prefix]), "h") == [prefix, prefix]
    assert object_tag(obj) == object_tag(prefix)


def _sample():
    files = [FileIndex(s, 1, s, EVENT_STANDARD, ("w", "b"), [0, 40], [40, 30], [s, s + 1], ()) for s in range(20)]
    return encode_consolidated("worker_0", 0, files)


def test_every_truncation_and_flipped_byte_is_an_index_error_naming_the_object():
    obj = _sample()
    want = decode_head(obj, "x")
    want_e = decode_entries(want, obj[want.entries_offset :], "x")
    for cut in range(len(obj)):
        with pytest.raises(IndexReaderException, match="obj.cidx"):
            h = decode_head(obj[:cut], "obj.cidx")
            decode_entries(h, obj[h.entries_offset : cut], "obj.cidx")  # reached only with the head whole
    for i in range(len(obj)):
        bad = bytearray(obj)
        bad[i] ^= 0x01
        try:
            h = decode_head(bytes(bad), "obj.cidx")
            e = decode_entries(h, bytes(bad)[h.entries_offset :], "obj.cidx")
        except IndexReaderException as exc:
            assert "obj.cidx" in str(exc)
            continue
        # a flip the checks cannot see would have to leave the answers unchanged
        assert h.steps.tolist() == want.steps.tolist() and np.array_equal(e.starts, want_e.starts), i
