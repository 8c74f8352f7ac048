"""TFRecord framing: u64 length | masked CRC32C(length) | payload | footer."""

from __future__ import annotations

import struct

import pytest

from smdebug.codec.crc import EVENTS_FOOTER, crc32c, masked_crc32c, masked_crc32c_bytes
from smdebug.codec.tfrecord import RECORD_OVERHEAD, frame, iter_records, unframe
from smdebug.exceptions import EventFileCorrupt

WHERE = "trial/events/000000000007/000000000007_worker_3.tfevents"


def _mask(crc: int) -> int:
    """TFRecord's masking, written out independently of the code under test."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_crc32c_known_vector():
    # the standard CRC-32C (Castagnoli) check value
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_masked_crc_known_vector():
    assert masked_crc32c(b"123456789") == _mask(0xE3069283)
    assert masked_crc32c_bytes(b"123456789") == struct.pack("<I", _mask(0xE3069283))
    # masking really changes the value
    assert masked_crc32c(b"123456789") != 0xE3069283


def test_events_footer_constant():
    assert EVENTS_FOOTER == bytes.fromhex("b3c02d06")
    assert EVENTS_FOOTER == masked_crc32c_bytes(b"0x12345678")
    assert EVENTS_FOOTER == struct.pack("<I", _mask(crc32c(b"0x12345678")))


@pytest.mark.parametrize("payload", [b"", b"x", b"hello world", bytes(range(256)) * 5])
def test_frame_layout_and_round_trip(payload):
    rec = frame(payload)
    assert len(rec) == len(payload) + RECORD_OVERHEAD == len(payload) + 16
    header = struct.pack("<Q", len(payload))
    assert rec[:8] == header
    assert rec[8:12] == struct.pack("<I", _mask(crc32c(header)))
    assert rec[12:-4] == payload
    assert rec[-4:] == EVENTS_FOOTER
    out, nxt = unframe(rec)
    assert out == payload
    assert isinstance(out, bytes)
    assert nxt == len(rec)


def test_unframe_at_offset_and_memoryview():
    a, b = frame(b"first"), frame(b"second record")
    buf = b"JUNK" + a + b
    p, nxt = unframe(buf, 4)
    assert p == b"first" and nxt == 4 + len(a)
    p, nxt = unframe(memoryview(buf), nxt)
    assert p == b"second record" and nxt == len(buf)


def test_record_with_real_payload_crc_decodes():
    payload = b"tensorboard event payload"
    rec = frame(payload, payload_crc=True)
    assert rec[-4:] == struct.pack("<I", _mask(crc32c(payload)))
    assert rec[-4:] != EVENTS_FOOTER
    assert unframe(rec) == (payload, len(rec))


def test_real_payload_crc_detects_payload_corruption():
    rec = bytearray(frame(b"tensorboard event payload", payload_crc=True))
    rec[14] ^= 0x01
    with pytest.raises(EventFileCorrupt, match="CRC") as ei:
        unframe(bytes(rec), where=WHERE)
    assert WHERE in str(ei.value)


@pytest.mark.parametrize("pos", range(12))
def test_bad_length_crc(pos):
    rec = bytearray(frame(b"some payload bytes"))
    rec[pos] ^= 0x10  # corrupts either the length or its CRC
    with pytest.raises(EventFileCorrupt) as ei:
        unframe(bytes(rec), where=WHERE)
    assert WHERE in str(ei.value)
    if pos >= 8:
        assert "length CRC" in str(ei.value)


@pytest.mark.parametrize("payload_crc", [False, True])
@pytest.mark.parametrize("pos", [-4, -3, -2, -1])
def test_bad_footer(payload_crc, pos):
    rec = bytearray(frame(b"some payload bytes", payload_crc=payload_crc))
    rec[pos] ^= 0x80
    with pytest.raises(EventFileCorrupt) as ei:
        unframe(bytes(rec), where=WHERE)
    assert WHERE in str(ei.value)


def test_bad_footer_error_names_offset():
    good = frame(b"a")
    bad = bytearray(frame(b"b"))
    bad[-1] ^= 0xFF
    buf = good + bytes(bad)
    with pytest.raises(EventFileCorrupt) as ei:
        list(iter_records(buf, where=WHERE))
    assert WHERE in str(ei.value)
    assert str(len(good)) in str(ei.value)


@pytest.mark.parametrize("payload_crc", [False, True])
def test_truncation_at_every_byte(payload_crc):
    rec = frame(b"0123456789abcdef-payload", payload_crc=payload_crc)
    for cut in range(len(rec)):
        with pytest.raises(EventFileCorrupt) as ei:
            unframe(rec[:cut], where=WHERE)
        assert WHERE in str(ei.value), cut
        # a truncated last record also fails iteration over the whole file
        if cut:
            with pytest.raises(EventFileCorrupt) as ei:
                list(iter_records(frame(b"ok") + rec[:cut], where=WHERE))
            assert WHERE in str(ei.value), cut


def test_truncation_inside_a_file_at_offset():
    a = frame(b"first")
    buf = a + frame(b"second")[:-1]
    with pytest.raises(EventFileCorrupt) as ei:
        unframe(buf, len(a), where=WHERE)
    assert WHERE in str(ei.value)
    assert str(len(a)) in str(ei.value)


def test_huge_declared_length_is_corrupt_not_memory_error():
    header = struct.pack("<Q", (1 << 64) - 1)
    rec = header + masked_crc32c_bytes(header) + b"abc" + EVENTS_FOOTER
    with pytest.raises(EventFileCorrupt) as ei:
        unframe(rec, where=WHERE)
    assert WHERE in str(ei.value)


def test_iter_records_over_concatenated_records():
    payloads = [b"", b"a", b"bb" * 100, bytes(range(256)), b"last"]
    buf = b"".join(frame(p, payload_crc=(i % 2 == 1)) for i, p in enumerate(payloads))
    got = list(iter_records(buf, where=WHERE))
    assert [p for _, p in got] == payloads
    offsets = [o for o, _ in got]
    expected, off = [], 0
    for p in payloads:
        expected.append(off)
        off += len(p) + RECORD_OVERHEAD
    assert offsets == expected
    # each offset addresses its record on its own
    for o, p in got:
        assert unframe(buf, o)[0] == p


def test_iter_records_empty_file():
    assert list(iter_records(b"")) == []


def test_iter_records_trailing_garbage():
    buf = frame(b"a") + frame(b"b") + b"\x00\x01\x02"
    it = iter_records(buf, where=WHERE)
    assert next(it) == (0, b"a")
    assert next(it)[1] == b"b"
    with pytest.raises(EventFileCorrupt) as ei:
        next(it)
    assert WHERE in str(ei.value)
