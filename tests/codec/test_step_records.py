"""encode_step_records: a step's records filled into a cached layout are byte for byte what
encoding each record on its own gives, step after step."""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest

from smdebug.codec import event
from smdebug.codec.event import encode_step_records, encode_tensor_record_chunks, mode_metadata
from smdebug.core.modes import ModeKeys
from smdebug.core.writer import FileWriter
from smdebug.trials import create_trial


def _bytes(chunks) -> bytes:
    return b"".join(bytes(memoryview(c).cast("B")) for c in chunks)


def _one_by_one(tags, arrays, step, md, wall_times) -> tuple[bytes, list[int]]:
    parts = [_bytes(encode_tensor_record_chunks(t, a, step, md, w)) for t, a, w in zip(tags, arrays, wall_times)]
    return b"".join(parts), [len(p) for p in parts]


def _arrays(rng, step):
    big = rng.standard_normal((64, 40)).astype(np.float32)  # over the 4 KiB "large" threshold
    return [
        np.asarray(rng.standard_normal(), dtype=np.float32).reshape(()),
        big,
        big[:, ::2],  # not contiguous
        np.asarray([step, -step], dtype=np.int64),
        np.asarray([True, False]),
        rng.standard_normal(3).astype(ml_dtypes.bfloat16),
        np.zeros((0, 4), dtype=np.float64),
        np.asarray(rng.standard_normal(), dtype=np.float64).reshape(()),
        np.asfortranarray(rng.standard_normal((3, 5)).astype(np.float32)),  # small, Fortran order
        big[:3, ::3],  # small, not contiguous
    ]


TAGS = ["loss", "w", "w_strided", "ints", "bools", "bf16", "empty", "gradient/x_mean", "small_f", "small_strided"]


# steps and mode steps whose varint / decimal lengths change between calls
@pytest.mark.parametrize("steps", [[0, 1, 2], [126, 127, 128, 129, 16383, 16384], [9, 10, 99, 100]])
def test_filled_layout_equals_one_by_one_encoding(steps):
    rng = np.random.default_rng(0)
    for step in steps:
        for mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            arrays = _arrays(rng, step)
            md = mode_metadata(mode, step * 3)
            walls = [1000.25 + step, None, 5.5, None, None, 7.0, None, 8.0, None, 9.0]
            enc = encode_step_records(TAGS, arrays, step, md, walls)
            assert enc is not None
            chunks, lengths = enc
            # the None wall times were all filled with one time.time() (read it from record 1)
            got = _bytes(chunks)
            now = float(np.frombuffer(got[lengths[0] + 13 : lengths[0] + 21], dtype="<f8")[0])
            assert abs(now - time.time()) < 60
            ref_walls = [now if w is None else w for w in walls]
            want, want_lengths = _one_by_one(TAGS, arrays, step, md, ref_walls)
            assert lengths == want_lengths
            assert got == want


def test_small_contents_keep_c_order_whatever_the_layout():
    """Small contents are copied into the step's buffer in C order: a Fortran-order or strided
    array is not written as its memory lies."""
    f = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    strided = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]
    views = [np.arange(4, dtype=np.float32)[j, ...] for j in range(4)]  # 0-d views of one array
    md = mode_metadata(ModeKeys.TRAIN, 1)
    for arrays in ([f, strided], views, [views[0], f, views[1]]):
        tags = [f"t{i}" for i in range(len(arrays))]
        got = _bytes(encode_step_records(tags, arrays, 1, md, [2.0] * len(arrays))[0])
        assert got == _one_by_one(tags, arrays, 1, md, [2.0] * len(arrays))[0]
        for a in arrays:
            assert a.tobytes() in got


def test_large_contents_are_not_copied():
    big = np.arange(10_000, dtype=np.float32)
    chunks, _ = encode_step_records(["a", "big"], [np.float32(1).reshape(()), big], 3, mode_metadata(ModeKeys.TRAIN, 3))
    assert any(isinstance(c, np.ndarray) and np.shares_memory(c, big) for c in chunks)


def test_strings_and_big_endian_take_the_one_by_one_path():
    md = mode_metadata(ModeKeys.GLOBAL, 0)
    assert encode_step_records(["s"], [np.asarray([b"ab"])], 0, md) is None
    assert encode_step_records(["b"], [np.arange(3, dtype=">f4")], 0, md) is None


def test_the_layout_cache_stays_bounded():
    md = mode_metadata(ModeKeys.GLOBAL, 0)
    for i in range(200):
        encode_step_records([f"t{i}"], [np.zeros(1)], 0, md)
    assert len(event._LAYOUTS) <= 64


def test_write_tensors_reads_back_like_write_tensor(tmp_path):
    rng = np.random.default_rng(1)
    a, b = tmp_path / "a", tmp_path / "b"
    saved = {}
    for step in range(3):
        arrays = _arrays(rng, step)
        saved[step] = arrays
        recs = list(zip(TAGS, arrays, [None] * len(TAGS)))
        with FileWriter(str(a), step=step) as fw:
            fw.write_tensors(recs, mode=ModeKeys.TRAIN, mode_step=step)
        with FileWriter(str(b), step=step) as fw:
            for name, arr, _ in recs:
                fw.write_tensor(arr, name, mode=ModeKeys.TRAIN, mode_step=step)
    for d in (a, b):
        (d / "training_job_end.ts").write_bytes(b"")
    from smdebug.core.collection_manager import CollectionManager

    for d in (a, b):
        CollectionManager().export(str(d), "worker_0_collections.json")
    ta, tb = create_trial(str(a)), create_trial(str(b))
    assert ta.tensor_names() == tb.tensor_names()
    for name in TAGS:
        if name == "empty":
            continue
        for step in range(3):
            va, vb = ta.tensor(name).value(step), tb.tensor(name).value(step)
            assert va.dtype == vb.dtype and va.shape == vb.shape
            np.testing.assert_array_equal(va, vb)
    # index entries are the same offsets and lengths (the payload CRCs differ: wall times do)
    import json

    ia = json.loads((a / "index/000000000/000000000002_worker_0.json").read_bytes())
    ib = json.loads((b / "index/000000000/000000000002_worker_0.json").read_bytes())
    for d in (ia, ib):
        assert all(isinstance(e.pop("crc32c"), int) for e in d["tensor_payload"])
    assert ia == ib
