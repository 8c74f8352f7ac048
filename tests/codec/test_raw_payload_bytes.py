"""A tensor's bytes go to the store from the array's own memory: the event file the writer makes
that way is byte for byte the file an encoder that copies each tensor with ``tobytes`` makes (the
reference below, written from the format alone), for every dtype and layout, through both of
FileWriter's paths, to a folder and to S3; and a large contiguous tensor reaches the store
without a copy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from smdebug.codec.crc import EVENTS_FOOTER, masked_crc32c_bytes
from smdebug.codec.event import mode_metadata
from smdebug.codec.tensor import dtype_code
from smdebug.codec.wire import LEN, VARINT, double, key, ld, varint
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import event_key
from smdebug.core.output.writer import FileWriter
from smdebug.storage import open_store
from smdebug.storage.local import LocalStore

STEP, MODE, MODE_STEP = 130, ModeKeys.TRAIN, 7


def _tensors() -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    big = rng.standard_normal((80, 60)).astype(np.float32)  # over the writer's 4 KiB "large" size
    out = [
        (f"t/{np.dtype(dt).name}", (rng.standard_normal((3, 5)) * 50).astype(dt))
        for dt in (
            "float16",
            "float32",
            "float64",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "complex64",
            "complex128",
            ml_dtypes.bfloat16,
        )
    ]
    return out + [
        ("bool", rng.standard_normal(7) > 0),
        ("zero_d", np.asarray(2.5, dtype=np.float32).reshape(())),
        ("zero_d_int", np.asarray(-3, dtype=np.int64).reshape(())),
        ("empty", np.zeros((0, 3), dtype=np.float64)),
        ("big", big),
        ("big_strided", big[:, ::2]),
        ("big_fortran", np.asfortranarray(big)),
        ("big_bf16", big.astype(ml_dtypes.bfloat16)),
        ("big_bool", big > 0),
        ("small_strided", big[:4, ::7]),
        ("big_endian", np.arange(12, dtype=">f4").reshape(3, 4)),
        ("big_endian_strided", np.arange(2000, dtype=">i8").reshape(40, 50)[:, ::3]),
    ]


def _reference_record(tag: str, arr: np.ndarray, wall_time: float) -> bytes:
    """One record as the format describes it, the content copied with ``tobytes`` (C order,
    little-endian)."""
    content = arr.astype(arr.dtype.newbyteorder("<")).tobytes(order="C")
    shape = b"".join(ld(2, key(1, VARINT) + varint(d) if d else b"") for d in arr.shape)
    proto = key(1, VARINT) + varint(dtype_code(arr.dtype)) + ld(2, shape) + ld(4, content)
    value = ld(1, tag.encode()) + ld(8, proto) + ld(9, mode_metadata(MODE, MODE_STEP))
    payload = (
        double(1, wall_time) + key(2, VARINT) + varint(STEP) + key(5, LEN) + varint(len(ld(1, value))) + ld(1, value)
    )
    length = len(payload).to_bytes(8, "little")
    return length + masked_crc32c_bytes(length) + payload + EVENTS_FOOTER


def _reference_file(tensors) -> bytes:
    return b"".join(_reference_record(tag, arr, 1000.0 + i) for i, (tag, arr) in enumerate(tensors))


def _write(store, tensors, batched: bool) -> bytes:
    fw = FileWriter(store.url, step=STEP, store=store)
    if batched:  # the hook's path: one layout for the step
        fw.write_tensors(
            [(tag, arr, 1000.0 + i) for i, (tag, arr) in enumerate(tensors)], mode=MODE, mode_step=MODE_STEP
        )
    else:
        for i, (tag, arr) in enumerate(tensors):
            fw.write_tensor(arr, tag, mode=MODE, mode_step=MODE_STEP, timestamp=1000.0 + i)
    fw.close()
    return store.read(event_key(STEP, "worker_0"))


@pytest.mark.parametrize("batched", [True, False], ids=["write_tensors", "write_tensor"])
def test_event_file_bytes_equal_the_copying_encoders(tmp_path, batched):
    tensors = _tensors()
    want = _reference_file(tensors)
    assert _write(LocalStore(str(tmp_path / "a")), tensors, batched) == want
    # the same again: the cached templates and layouts give the same bytes
    assert _write(LocalStore(str(tmp_path / "b")), tensors, batched) == want


@pytest.mark.parametrize("batched", [True, False], ids=["write_tensors", "write_tensor"])
def test_event_file_bytes_on_s3_equal_the_copying_encoders(proxy, bucket, batched):
    tensors = _tensors()
    store = open_store(f"s3://{bucket}/raw-{int(batched)}")
    assert _write(store, tensors, batched) == _reference_file(tensors)


class _Recording(LocalStore):
    def write_chunks(self, key, chunks):
        if key.startswith("events/"):
            self.chunks = list(chunks)
        super().write_chunks(key, chunks)


def test_large_contiguous_tensors_reach_the_store_uncopied(tmp_path):
    store = _Recording(str(tmp_path))
    big = np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32)
    strided = big[:, ::2]
    _write(store, [("loss", np.float32(0.5).reshape(())), ("big", big), ("strided", strided)], batched=True)
    assert any(isinstance(c, np.ndarray) and np.shares_memory(c, big) for c in store.chunks)
    assert sum(memoryview(c).nbytes for c in store.chunks) == len(store.read(event_key(STEP, "worker_0")))
