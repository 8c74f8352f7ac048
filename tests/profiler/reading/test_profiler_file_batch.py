"""smdebug.profiler.reading.file_batch and LocalStore.read_into: framework files are read straight
into one buffer that batches reuse; a file that grows while it is read is read whole; a file the
bulk path does not take keeps its bytes; a buffer with a live view is never written over."""

from __future__ import annotations

import weakref

import numpy as np

from smdebug.profiler.reading.file_batch import PAD, FileBatch
from smdebug.profiler.reading.trace_bulk import parse_trace_batch
from smdebug.profiler.recording.timeline import TimelineWriter, now_us
from smdebug.storage.local import LocalStore

EVENT = b'{"name": "Net", "pid": 3, "ph": "X", "ts": %d, "dur": 5, "args": {"step_num": "%d"}}'


def _file(steps, tail=b"\n") -> bytes:
    return b"[\n" + b",\n".join(EVENT % (10 * s, s) for s in steps) + b"\n]" + tail


def _local(tmp_path, datas) -> tuple[LocalStore, list[str]]:
    keys = []
    for i, d in enumerate(datas):
        (tmp_path / f"f{i}.json").write_bytes(d)
        keys.append(f"f{i}.json")
    return LocalStore(str(tmp_path)), keys


def test_files_are_joined_without_their_trailing_whitespace(tmp_path):
    datas = [_file([1, 2]), _file([3], b" \r\n\t\n"), _file([4, 5, 6], b"")]
    store, keys = _local(tmp_path, datas)
    batch = FileBatch(capacity=100)  # smaller than the files: the buffer grows
    for key in keys:
        assert batch.add(lambda reserve, k=key: store.read_into(k, reserve)[0]) == len(datas[keys.index(key)])
    batch.finish()
    assert [batch.data(k) for k in range(3)] == [d.rstrip() for d in datas]
    joined = b"\n".join(d.rstrip() for d in datas) + b"\n"
    assert batch.size == len(joined) and batch.buf[: batch.size] == joined
    assert batch.buf[batch.size : batch.size + PAD] == bytes(PAD)
    assert batch.read == sum(len(d) for d in datas)


def test_read_into_gives_the_stamp_and_a_file_that_grew_whole(tmp_path):
    store, (key,) = _local(tmp_path, [b"0123456789"])
    calls = []

    def reserve(n):
        calls.append(n)
        if len(calls) == 1:  # the file grows after fstat, before it is read
            with open(tmp_path / key, "ab") as f:
                f.write(b"abcdef" * 1000)
        return memoryview(buf)[:n]

    buf = bytearray(1 << 16)
    n, stamp = store.read_into(key, reserve)
    assert stamp[0] == 10 and calls[0] == 11
    assert n == 6010 and bytes(buf[:n]) == (tmp_path / key).read_bytes()


def test_a_file_not_for_the_bulk_path_keeps_its_bytes_and_the_general_reader_reads_it():
    odd = b'[\n{"name": "a\\u0041", "pid": 3, "ph": "X", "ts": 1, "dur": 2}\n]'  # a backslash
    datas = [_file([1]), odd, b"", _file([2, 3])]
    batch = FileBatch.of(datas)
    assert batch.ends[1] == 0 and batch.data(1) == odd
    assert batch.ends[2] == 0 and batch.data(2) == b""
    got = parse_trace_batch(batch, ["algo-1"] * 4, ["pythontimeline.json"] * 4)
    assert got[1] is None and got[2] is None  # left to the general reader
    assert got[0].step.tolist() == [1] and got[3].step.tolist() == [2, 3]
    assert got[3].start_us.tolist() == [20, 30]


def test_the_buffer_is_reused_unless_a_view_of_it_is_alive():
    batch = FileBatch.of([_file([1, 2])])
    first = weakref.ref(batch.buf)  # (a plain reference counts as a view: the check is by reference count)
    batch.clear()
    assert batch.buf is first()  # nothing holds a view: reused
    batch.add(lambda reserve: _fill(reserve, _file([7])))
    view = np.frombuffer(batch.buf, dtype=np.uint8, count=batch.size)
    before = view.tobytes()
    batch.clear()
    assert batch.buf is not first()  # a view is alive: a new buffer, the view's bytes untouched
    batch.add(lambda reserve: _fill(reserve, _file([8, 9])))
    assert view.tobytes() == before


def _fill(reserve, data: bytes) -> int:
    with reserve(len(data)) as v:
        v[:] = data
    return len(data)


def test_batches_of_written_files_read_alike_through_the_buffer(tmp_path):
    # our writer's files, read as a list of bytes and from disk through read_into: the same events
    folder = tmp_path / "w"
    writer = TimelineWriter(str(folder), node_id="algo-1", max_bytes=1000)  # several files
    for s in range(40):
        start = now_us() + 1000 * s
        writer.complete("Step:ModeKeys.TRAIN", "Step", start, start + 500, args={"step_num": str(s)})
    writer.close()
    paths = sorted(folder.rglob("*.json"))
    assert len(paths) >= 2
    datas = [p.read_bytes() for p in paths]
    from_list = parse_trace_batch(datas, ["algo-1"] * len(datas), ["pythontimeline.json"] * len(datas))
    store = LocalStore(str(folder))
    batch = FileBatch(capacity=64)
    for key in [str(p.relative_to(folder)) for p in paths]:
        batch.add(lambda reserve, k=key: store.read_into(k, reserve)[0])
    from_disk = parse_trace_batch(batch, ["algo-1"] * len(datas), ["pythontimeline.json"] * len(datas))
    assert all(e is not None for e in from_list + from_disk)  # all read by the bulk path
    assert [e.step.tolist() for e in from_list] == [e.step.tolist() for e in from_disk]
    assert sum(len(e) for e in from_disk) == 40
