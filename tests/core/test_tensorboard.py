"""TensorBoardWriter, checked with the tensorboard package's own readers and against 1.0.34's files."""

from __future__ import annotations

import os
import re
import socket
import struct

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.util import tensor_util

from smdebug.codec.crc import masked_crc32c
from smdebug.codec.event import decode_event
from smdebug.codec.tfrecord import iter_records, unframe
from smdebug.core.modes import ModeKeys
from smdebug.core.output.tensorboard import TensorBoardWriter, clean_tag, default_bins, histogram_buckets
from smdebug.exceptions import EventFileCorrupt, SMDebugRuntimeError, SMDebugValueError
from smdebug.storage import Store, open_store
from smdtest import FIXTURES

TB_FIXTURE = FIXTURES / "pytorch_mlp" / "tensorboard"
FIXTURE_FILES = sorted(TB_FIXTURE.glob("*/*.tfevents"))


class RecordingStore(Store):
    """An in-memory Store that records every write call."""

    url = "recording://"

    def __init__(self):
        self.objects: dict[str, bytes] = {}
        self.writes: list[str] = []

    def read(self, key):
        return self.objects[key]

    def read_ranges(self, key, ranges):
        return [self.objects[key][s : s + n] for s, n in ranges]

    def write(self, key, data):
        self.writes.append(key)
        self.objects[key] = bytes(data)

    def list(self, prefix, start_after=None):
        return sorted(k for k in self.objects if k.startswith(prefix) and (start_after is None or k > start_after))

    def exists(self, key):
        return key in self.objects

    def delete(self, key):
        self.objects.pop(key, None)


def _records(buf: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """(header, payload, footer) of every record, checked only for framing."""
    out, off = [], 0
    while off < len(buf):
        (n,) = struct.unpack_from("<Q", buf, off)
        out.append((buf[off : off + 12], buf[off + 12 : off + 12 + n], buf[off + 12 + n : off + 16 + n]))
        off += 16 + n
    assert off == len(buf)
    return out


def _accumulate(path) -> event_accumulator.EventAccumulator:
    acc = event_accumulator.EventAccumulator(str(path), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def _tb_events(path) -> list:
    return list(EventFileLoader(str(path)).Load())


# ---------------------------------------------------------------- default bins


def test_default_bins_are_tensorflows():
    b = default_bins()
    assert b is default_bins()  # cached
    assert not b.flags.writeable
    assert b.size == 1549 and b[774] == 0.0
    pos = b[775:]
    assert pos[0] == 1e-12 and pos[-1] < 1e20 and pos[-1] * 1.1 >= 1e20
    np.testing.assert_allclose(pos[1:] / pos[:-1], 1.1)
    np.testing.assert_array_equal(b[:774], -pos[::-1])
    assert np.all(np.diff(b) > 0)


def test_clean_tag():
    assert clean_tag("dense/kernel:0") == "dense/kernel_0"
    assert clean_tag("//a b.c-d") == "a_b.c-d"
    assert clean_tag("gradients/gradient/Sequential_0.weight") == "gradients/gradient/Sequential_0.weight"


# ---------------------------------------------------------------- scalars / histograms via tensorboard


def test_scalars_read_back_by_event_accumulator(tmp_path):
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0)
    values = [0.1, 2.5, np.float64(3.25), np.array([7.0]), np.int64(4)]
    for step, v in enumerate(values):
        w.write_scalar("loss", v, step, wall_time=1000.0 + step)
    w.write_scalar("scalar/lr", np.array(0.01, dtype=np.float32), 4)
    w.write_scalar("odd", float("nan"), 5)
    w.write_scalar("odd", float("inf"), 6)
    w.write_scalar("odd", 1e300, 7)  # beyond float32: inf, not an error
    w.close()
    acc = _accumulate(tmp_path / w.key)
    assert sorted(acc.Tags()["scalars"]) == ["loss", "odd", "scalar/lr"]
    loss = acc.Scalars("loss")
    assert [e.step for e in loss] == [0, 1, 2, 3, 4]
    assert [e.wall_time for e in loss] == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    np.testing.assert_array_equal([e.value for e in loss], np.float32([0.1, 2.5, 3.25, 7.0, 4.0]))
    assert acc.Scalars("scalar/lr")[0].value == np.float32(0.01)
    odd = acc.Scalars("odd")
    assert np.isnan(odd[0].value) and odd[1].value == np.inf and odd[2].value == np.inf
    assert acc.file_version == 2.0


def test_scalar_rejects_non_scalars(tmp_path):
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0)
    with pytest.raises(SMDebugValueError, match="loss"):
        w.write_scalar("loss", np.ones(3), 0)
    with pytest.raises(SMDebugValueError):
        w.write_scalar("name", "abc", 0)
    w.close()
    assert list(tmp_path.rglob("*")) == []


def test_histograms_read_back_by_event_accumulator(tmp_path):
    rng = np.random.default_rng(0)
    w = TensorBoardWriter(str(tmp_path), ModeKeys.EVAL, 10)
    data = {}
    for step in (10, 11, 12):
        v = rng.normal(size=(32, 16)).astype(np.float32) * (step - 9)
        v[0, :3] = [np.nan, np.inf, -np.inf]
        data[step] = v
        w.write_histogram("weights/fc1.weight", v, step)
    w.write_histogram("ints", np.arange(-5, 50), 12)
    w.close()
    acc = _accumulate(tmp_path / w.key)
    assert sorted(acc.Tags()["histograms"]) == ["ints", "weights/fc1.weight"]
    evs = acc.Histograms("weights/fc1.weight")
    assert [e.step for e in evs] == [10, 11, 12]
    for e in evs:
        h = e.histogram_value
        finite = data[e.step][np.isfinite(data[e.step])].astype(np.float64)
        assert h.num == finite.size == 32 * 16 - 3
        assert sum(h.bucket) == h.num
        assert h.min == finite.min() and h.max == finite.max()
        assert h.sum == pytest.approx(finite.sum()) and h.sum_squares == pytest.approx(finite @ finite)
        assert len(h.bucket) == len(h.bucket_limit)
        assert np.all(np.diff(h.bucket_limit) > 0)
        assert h.bucket[0] == 0 and h.bucket[1] > 0 and h.bucket[-1] > 0  # one empty lead bucket, none trailing
        assert h.bucket_limit[0] <= h.min <= h.bucket_limit[1] and h.max <= h.bucket_limit[-1]
        assert set(h.bucket_limit) <= set(default_bins().tolist())
    ints = acc.Histograms("ints")[0].histogram_value
    assert (ints.num, sum(ints.bucket), ints.min, ints.max) == (55, 55, -5, 49)


def test_histograms_valid_for_the_histograms_plugin(tmp_path):
    """EventFileLoader migrates HistogramProto to the plugin's [left, right, count] tensor."""
    rng = np.random.default_rng(1)
    values = rng.normal(size=1000) * 1e3
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0)
    w.write_histogram("h", values, 0)
    w.write_histogram("const", np.full(10, 3.0), 1)
    w.write_histogram("zeros", np.zeros(4), 2)
    w.close()
    events = _tb_events(tmp_path / w.key)
    assert events[0].file_version == "brain.Event:2"
    seen = {}
    for ev in events[1:]:
        (value,) = ev.summary.value
        assert value.metadata.plugin_data.plugin_name == "histograms"
        buckets = tensor_util.make_ndarray(value.tensor)
        assert buckets.ndim == 2 and buckets.shape[1] == 3
        assert np.all(buckets[:, 0] <= buckets[:, 1])  # no backwards buckets
        seen[value.tag] = buckets
    assert seen["h"][:, 2].sum() == 1000
    assert seen["h"][0, 0] == np.float32(values.min()) and seen["h"][-1, 1] == np.float32(values.max())
    assert seen["const"][:, 2].sum() == 10 and seen["zeros"][:, 2].sum() == 4


def test_histogram_bins_int_sequence_and_extremes(tmp_path):
    store = RecordingStore()
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0, store=store)
    v = np.linspace(-1, 1, 101)
    w.write_histogram("int_bins", v, 0, bins=10)
    w.write_histogram("edges", v, 0, bins=[-1.0, 0.0, 0.5, 1.0])
    w.write_histogram("huge", np.array([-1e30, -1e25, 0.0, 1e-20, 5e19, 1e25, 1e300]), 0)
    w.write_histogram("outside", v, 0, bins=[5.0, 6.0])
    w.close()
    hs = {}
    for _, payload in iter_records(store.objects[w.key]):
        for sv in decode_event(payload).values:
            hs[sv.tag] = sv.histogram
    assert sum(hs["int_bins"]["bucket"]) == 101 and len(hs["int_bins"]["bucket"]) == 11
    assert hs["int_bins"]["bucket_limit"][0] == -1.0 and hs["int_bins"]["bucket_limit"][-1] == 1.0
    assert hs["edges"]["bucket_limit"] == [-1.0, 0.0, 0.5, 1.0] and sum(hs["edges"]["bucket"]) == 101
    assert hs["huge"]["num"] == 7 and sum(hs["huge"]["bucket"]) == 7  # outside +/-1e20 still counted
    assert hs["huge"]["min"] == -1e30 and hs["huge"]["max"] == 1e300
    assert hs["outside"]["bucket"] == [0.0] and hs["outside"]["num"] == 101


def test_skipped_histograms_write_nothing(tmp_path):
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0)
    w.write_histogram("empty", np.zeros((0, 3)), 0)
    w.write_histogram("bools", np.array([True, False]), 0)
    w.write_histogram("strings", np.array(["a", "b"]), 0)
    w.write_histogram("nans", np.array([np.nan, np.inf, -np.inf]), 0)
    w.close()
    assert list(tmp_path.rglob("*")) == []


# ---------------------------------------------------------------- file name, CRCs, close


def test_file_name_pattern_and_key(tmp_path):
    for mode, name in ((ModeKeys.TRAIN, "TRAIN"), (ModeKeys.EVAL, "EVAL"), ("predict", "PREDICT")):
        w = TensorBoardWriter(str(tmp_path), mode, 42)
        assert w.key == f"{name}/000000000042_{os.getpid()}_{socket.gethostname()}.tfevents"
        assert re.fullmatch(r"(TRAIN|EVAL|PREDICT|GLOBAL)/\d{12}_\d+_.+\.tfevents", w.key)
        w.write_scalar("x", 1.0, 42)
        w.close()
        assert (tmp_path / w.key).is_file()
        assert w.name() == str(tmp_path / w.key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["EVAL", "PREDICT", "TRAIN"]


def test_every_record_carries_its_real_payload_crc(tmp_path):
    w = TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0)
    for step in range(5):
        w.write_scalar("loss", 1.0 / (step + 1), step)
        w.write_histogram("w", np.arange(step, step + 20, dtype=np.float32), step)
    w.close()
    path = tmp_path / w.key
    buf = path.read_bytes()
    recs = _records(buf)
    assert len(recs) == 11
    for header, payload, footer in recs:
        assert struct.unpack("<I", header[8:])[0] == masked_crc32c(header[:8])
        assert struct.unpack("<I", footer)[0] == masked_crc32c(payload)
    assert decode_event(recs[0][1]).file_version == "brain.Event:2"
    assert len(_tb_events(path)) == 11  # tensorboard's reader stops at the first bad CRC
    # Flip one payload byte of the third record: tensorboard's reader stops there, ours raises.
    (n0,) = struct.unpack_from("<Q", buf, 0)
    (n1,) = struct.unpack_from("<Q", buf, 16 + n0)
    third = 32 + n0 + n1
    bad = bytearray(buf)
    bad[third + 14] ^= 0xFF
    path.write_bytes(bytes(bad))
    assert len(_tb_events(path)) == 2
    with pytest.raises(EventFileCorrupt, match="payload CRC"):
        unframe(bytes(bad), third)


def test_close_is_atomic_and_idempotent(tmp_path):
    store = RecordingStore()
    w = TensorBoardWriter("unused", ModeKeys.TRAIN, 3, store=store)
    w.write_scalar("a", 1.0, 3)
    w.write_histogram("h", np.ones(4), 3)
    assert store.writes == []  # nothing visible before close
    w.close()
    assert store.writes == [w.key] and w.closed
    data = store.objects[w.key]
    w.close()
    with w:
        pass
    assert store.writes == [w.key] and store.objects[w.key] == data
    with pytest.raises(SMDebugRuntimeError, match="closed"):
        w.write_scalar("a", 2.0, 4)
    # The local store writes through a temporary file and a rename: no leftovers.
    with TensorBoardWriter(str(tmp_path), ModeKeys.GLOBAL, 0) as w2:
        w2.write_scalar("a", 1.0, 0)
        assert list(tmp_path.rglob("*.tfevents")) == []
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()] == [w2.key]


def test_empty_writer_writes_no_file(tmp_path):
    store = RecordingStore()
    TensorBoardWriter("unused", ModeKeys.TRAIN, 0, store=store).close()
    assert store.writes == []
    with TensorBoardWriter(str(tmp_path), ModeKeys.TRAIN, 0):
        pass
    assert list(tmp_path.rglob("*")) == []


def test_object_storage_url():
    pytest.importorskip("fsspec")
    url = "memory://tb-writer-test/run1/tensorboard"
    w = TensorBoardWriter(url, ModeKeys.TRAIN, 5)
    w.write_scalar("loss", 0.25, 5)
    w.close()
    payloads = [p for _, p in iter_records(open_store(url).read(w.key))]
    assert decode_event(payloads[0]).file_version == "brain.Event:2"
    assert decode_event(payloads[1]).values[0].simple_value == 0.25


# ---------------------------------------------------------------- smdebug 1.0.34's files


def _fixture_events(path) -> list:
    buf = path.read_bytes()
    for _header, payload, footer in _records(buf):
        assert struct.unpack("<I", footer)[0] == masked_crc32c(payload)
    return [decode_event(p) for _, p in iter_records(buf, str(path))]


def test_fixture_files_decode():
    assert len(FIXTURE_FILES) == 9
    for path in FIXTURE_FILES:
        assert re.fullmatch(r"\d{12}_\d+_.+\.tfevents", path.name) and path.parent.name in ("TRAIN", "EVAL")
        events = _fixture_events(path)
        assert len(_tb_events(path)) == len(events)  # tensorboard reads every record
        step = int(path.name[:12])
        for ev in events:
            assert ev.file_version is None  # 1.0.34 writes no file_version record
            assert ev.step == step  # the global step, in EVAL files too
            (sv,) = ev.values
            assert (sv.simple_value is None) != (sv.histogram is None)
            if sv.histogram is not None:
                h = sv.histogram
                assert sum(h["bucket"]) == h["num"] and h["bucket"][0] == 0


def _fixture_tensors(step: int) -> dict[str, np.ndarray]:
    out = {}
    for path in (FIXTURES / "pytorch_mlp" / "events" / f"{step:012d}").glob("*.tfevents"):
        for _, payload in iter_records(path.read_bytes()):
            for sv in decode_event(payload).values:
                out[sv.tag] = sv.tensor
    return out


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name[:12]}")
def test_writer_reproduces_fixture(path, tmp_path):
    """Rewriting a 1.0.34 TensorBoard file from the tensors it was made of gives the same
    events: same tags in the same order, same steps, same kinds, identical histogram buckets."""
    theirs = _fixture_events(path)
    step = int(path.name[:12])
    tensors = _fixture_tensors(step)
    w = TensorBoardWriter(str(tmp_path), ModeKeys[path.parent.name], step)
    for ev in theirs:
        (sv,) = ev.values
        if sv.histogram is not None:
            w.write_histogram(sv.tag, tensors[sv.tag.split("/", 1)[1]], ev.step)
        else:
            w.write_scalar(sv.tag, sv.simple_value, ev.step)
    w.close()
    ours = _fixture_events(tmp_path / w.key)
    assert ours[0].file_version == "brain.Event:2" and not ours[0].values
    assert len(ours) == len(theirs) + 1
    for a, b in zip(ours[1:], theirs):
        (x,), (y,) = a.values, b.values
        assert (a.step, x.tag, x.simple_value) == (b.step, y.tag, y.simple_value)
        assert (x.histogram is None) == (y.histogram is None)
        if x.histogram is not None:
            assert x.histogram["bucket_limit"] == y.histogram["bucket_limit"]
            assert x.histogram["bucket"] == y.histogram["bucket"]
            for k in ("min", "max", "num"):
                assert x.histogram[k] == y.histogram[k]
            for k in ("sum", "sum_squares"):  # 1.0.34 omits a zero sum (proto3 default)
                assert x.histogram[k] == pytest.approx(y.histogram.get(k, 0.0), rel=1e-12, abs=1e-12)


def test_histogram_buckets_match_full_edge_numpy():
    """The sub-range shortcut gives exactly numpy.histogram over all default edges + trimming."""
    rng = np.random.default_rng(2)
    for v in (rng.normal(size=500), rng.exponential(size=50) * 1e-9, np.array([0.0]), np.array([-3.0, 1e19])):
        counts, edges = np.histogram(v, bins=default_bins())
        nz = np.flatnonzero(counts)
        limits, buckets = histogram_buckets(v)
        np.testing.assert_array_equal(limits, edges[nz[0] : nz[-1] + 2])
        np.testing.assert_array_equal(buckets, np.concatenate(([0], counts[nz[0] : nz[-1] + 1])))


def test_a_hooks_files_one_per_mode_rewritten_then_rolled(tmp_path):
    """TensorBoardFiles: a mode's steps go to one file, written every flush_s seconds (and on flush),
    replaced by a new file after roll_s seconds or roll_records records; TensorBoard reads them all."""
    from smdebug.core.output.tensorboard import TensorBoardFiles

    now = [0.0]
    files = TensorBoardFiles(
        str(tmp_path), open_store(str(tmp_path)), flush_s=5, roll_s=60, roll_records=1000, clock=lambda: now[0]
    )
    train = tmp_path / "TRAIN"
    for step in range(10):  # 10 steps in 9 s: one file, written once the first 5 s passed
        files.writer(ModeKeys.TRAIN, step).write_scalar("loss", float(step), step)
        files.step_written(ModeKeys.TRAIN)
        now[0] += 1.0
    (first,) = list(train.iterdir())
    assert first.name.startswith("000000000000_")
    assert [e.value for e in _accumulate(first).Scalars("loss")] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    files.flush()
    assert len(_accumulate(first).Scalars("loss")) == 10
    now[0] += 60.0  # old enough: the next step closes it, the one after opens a new file
    for step in (10, 11):
        files.writer(ModeKeys.TRAIN, step).write_scalar("loss", float(step), step)
        files.step_written(ModeKeys.TRAIN)
    files.close()
    names = sorted(p.name for p in train.iterdir())
    assert len(names) == 2 and names[1].startswith("000000000011_")
    steps = sorted(e.step for f in train.iterdir() for e in _accumulate(f).Scalars("loss"))
    assert steps == list(range(12))
