"""The local-folder Store: atomic writes, ranged reads, sorted listing with start_after."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smdebug.exceptions import ObjectNotFound, SMDebugValueError, StorageError
from smdebug.storage import Store, is_remote, open_store
from smdebug.storage.local import LocalStore

INDEX_KEYS = [
    "index/000000000/000000000000_worker_0.json",
    "index/000000000/000000000500_worker_0.json",
    "index/000000000/000000000999_worker_0.json",
    "index/000000000/000000000999_worker_1.json",
    "index/000000001/000000001000_worker_0.json",
    "index/000000001/000000001500_worker_0.json",
    "index/000000012/000000012000_worker_0.json",
    "index/000000012/000000012001_worker_0.json",
]
OTHER_KEYS = [
    "collections/000000000/worker_0_collections.json",
    "events/000000000000/000000000000_worker_0.tfevents",
    "events/000000001000/000000001000_worker_0.tfevents",
    "training_job_end.ts",
]


@pytest.fixture
def store(tmp_path) -> LocalStore:
    s = open_store(str(tmp_path / "trial"))
    assert isinstance(s, LocalStore)
    return s


@pytest.fixture
def filled(store) -> LocalStore:
    for k in INDEX_KEYS + OTHER_KEYS:
        store.write(k, k.encode())
    return store


def _all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------ open_store


def test_open_store_local(tmp_path):
    s = open_store(str(tmp_path))
    assert isinstance(s, LocalStore) and isinstance(s, Store)
    assert s.root == str(tmp_path)


def test_open_store_pathlike_and_file_url(tmp_path):
    assert isinstance(open_store(tmp_path), LocalStore)
    assert open_store(tmp_path).root == str(tmp_path)
    s = open_store(f"file://{tmp_path}/x")
    assert isinstance(s, LocalStore)
    assert s.root == str(tmp_path / "x")


def test_open_store_relative_path_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = open_store("rel/trial")
    assert s.root == str(tmp_path / "rel" / "trial")


@pytest.mark.parametrize("url", ["ftp://x", "http://host/trial", "hdfs://nn/path"])
def test_unsupported_scheme(url):
    with pytest.raises(SMDebugValueError) as ei:
        open_store(url)
    assert url in str(ei.value)
    assert isinstance(ei.value, ValueError)


def test_is_remote():
    assert is_remote("s3://bucket/prefix")
    assert not is_remote("/tmp/x")
    assert not is_remote("file:///tmp/x")


# ------------------------------------------------------------------------------------- writing


def test_write_creates_parents_and_leaves_no_tmp(store):
    key = "events/000000000003/000000000003_worker_0.tfevents"
    store.write(key, b"payload")
    root = Path(store.root)
    assert (root / key).read_bytes() == b"payload"
    assert _all_files(root) == [key]
    assert not list(root.rglob("*.tmp"))


def test_write_overwrites(store):
    store.write("a/b", b"first version, long")
    store.write("a/b", b"second")
    assert store.read("a/b") == b"second"
    assert _all_files(Path(store.root)) == ["a/b"]


def test_write_is_atomic_through_tmp_and_rename(store, monkeypatch):
    key = "index/000000000/000000000001_worker_0.json"
    final = os.path.join(store.root, key)
    data = b"x" * 100_000
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        src, dst = os.fspath(src), os.fspath(dst)
        # at rename time the whole content is in the temporary file and the final name is absent
        seen.append((src, dst, Path(src).read_bytes() == data, os.path.exists(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    store.write(key, data)
    ((tmp, dst, full, existed),) = seen
    assert (dst, full, existed) == (final, True, False)
    assert tmp.startswith(final + ".") and tmp.endswith(".tmp")
    assert store.read(key) == data


def test_two_writers_of_one_key_at_once_use_their_own_temp_files(store, monkeypatch):
    """The hook and `smdebug consolidate` (two stores, two processes) may write the same key at the
    same moment: each writes its own temp file, both writes succeed, the last rename wins whole."""
    from smdebug.storage import local

    key = "_smdebug/index/heads/000000/worker_0.cidh"
    other = local.LocalStore(store.root)
    real = local._write_all
    state = {"nested": False}

    def interleaved(fd, chunks):
        if not state["nested"]:  # the first writer is half way: the second writes the same key
            state["nested"] = True
            other.write(key, b"second writer")
        real(fd, chunks)

    monkeypatch.setattr(local, "_write_all", interleaved)
    store.write(key, b"first writer")
    assert store.read(key) == b"first writer"
    assert _all_files(Path(store.root)) == [key]


def test_write_failure_is_storage_error(store):
    store.write("file", b"x")
    with pytest.raises(StorageError) as ei:
        store.write("file/child", b"y")  # a file where a folder is needed
    assert "file/child" in str(ei.value)


def test_write_chunks_survives_partial_writes(store, monkeypatch):
    """os.write may write less than asked: the rest of the chunks still lands, in order."""
    import numpy as np

    from smdebug.storage import local

    chunks = [b"head-", np.arange(1000, dtype="<f4").view(np.uint8), b"", b"tail"] * 300
    expected = b"".join(bytes(c) for c in chunks)
    real = os.write

    def short_write(fd, buf):
        return real(fd, memoryview(buf)[:7])  # never more than 7 bytes at once

    monkeypatch.setattr(local.os, "write", short_write)
    store.write_chunks("events/x", chunks)
    assert store.read("events/x") == expected


def test_write_chunks_writes_at_most_max_write_bytes_a_call(store, monkeypatch):
    """A large chunk (a big tensor's bytes) goes to the file in calls of at most MAX_WRITE bytes
    (larger ones cost the kernel several times the CPU: local.py), straight from its memory; runs
    of small chunks are joined; the file holds every byte in order."""
    import numpy as np

    from smdebug.storage import local

    big = np.arange(local.MAX_WRITE * 7 // 2 // 4, dtype="<f4")  # 3.5 MiB
    chunks = [b"head", big.view(np.uint8), b"mid", b"dle", big[:100], np.float32(2.5), b"tail"]
    expected = b"".join(bytes(memoryview(c).cast("B")) for c in chunks)
    calls = []
    real = os.write

    def spy(fd, buf):
        calls.append(memoryview(buf).nbytes)
        return real(fd, buf)

    monkeypatch.setattr(local.os, "write", spy)
    store.write_chunks("events/big", iter(chunks))  # any iterable, consumed once
    assert store.read("events/big") == expected
    assert max(calls) == local.MAX_WRITE
    assert calls == [
        4,
        local.MAX_WRITE,
        local.MAX_WRITE,
        local.MAX_WRITE,
        local.MAX_WRITE // 2,
        len(expected) - 4 - big.nbytes,
    ]


def test_write_after_the_folder_was_removed(store):
    import shutil

    store.write("events/000000000001/a", b"1")
    shutil.rmtree(os.path.join(store.root, "events"))
    store.write("events/000000000001/b", b"2")  # the store remembered the folder: made again
    assert store.read("events/000000000001/b") == b"2"


# ------------------------------------------------------------------------------------- reading


def test_read_whole(store):
    store.write("k", bytes(range(256)) * 1000)
    assert store.read("k") == bytes(range(256)) * 1000
    store.write("empty", b"")
    assert store.read("empty") == b""


def test_read_ranges_order_and_short_reads(store):
    data = bytes(range(100))
    store.write("f", data)
    ranges = [(50, 10), (0, 5), (95, 10), (200, 4), (10, 0), (0, 100), (99, 1)]
    got = store.read_ranges("f", ranges)
    assert got == [data[50:60], data[0:5], data[95:100], b"", b"", data, data[99:100]]


def test_read_ranges_empty_list(store):
    store.write("f", b"abc")
    assert store.read_ranges("f", []) == []


def test_read_ranges_many(store):
    store.write("a", b"0123456789")
    store.write("b", b"abcdefghij")
    out = store.read_ranges_many([("b", [(2, 3)]), ("missing", [(0, 1)]), ("a", [(8, 5), (0, 1)])])
    assert out[0] == [b"cde"]
    assert isinstance(out[1], ObjectNotFound)
    assert out[2] == [b"89", b"0"]


def test_read_many_exceptions_in_place(store):
    store.write("a", b"A")
    store.write("c", b"C")
    out = store.read_many(["a", "b", "c", "../x"])
    assert out[0] == b"A"
    assert isinstance(out[1], ObjectNotFound)
    assert os.path.join(store.root, "b") in str(out[1])
    assert out[2] == b"C"
    assert isinstance(out[3], StorageError)


def test_read_missing(store):
    path = os.path.join(store.root, "events/nope.tfevents")
    with pytest.raises(ObjectNotFound) as ei:
        store.read("events/nope.tfevents")
    assert path in str(ei.value)
    assert isinstance(ei.value, FileNotFoundError)
    assert isinstance(ei.value, StorageError)
    with pytest.raises(FileNotFoundError):
        store.read_ranges("events/nope.tfevents", [(0, 1)])


def test_read_missing_root(tmp_path):
    s = open_store(str(tmp_path / "does-not-exist"))
    with pytest.raises(ObjectNotFound):
        s.read("x")
    assert s.list("") == []
    assert s.list("index", start_after="index/a") == []
    assert not s.exists("x")


def test_read_a_folder_is_storage_error(store):
    store.write("d/f", b"x")
    with pytest.raises(StorageError) as ei:
        store.read("d")
    assert os.path.join(store.root, "d") in str(ei.value)


@pytest.mark.parametrize("key", ["..", "../x", "a/../../x", "a/..", "../" + "trial/x"])
def test_dotdot_keys_rejected(store, key):
    for call in (
        lambda: store.read(key),
        lambda: store.read_ranges(key, [(0, 1)]),
        lambda: store.write(key, b"x"),
        lambda: store.exists(key),
        lambda: store.delete(key),
        lambda: store.list(key),
    ):
        with pytest.raises(StorageError):
            call()
    assert not (Path(store.root).parent / "x").exists()


def test_describe_names_full_path(store):
    assert store.describe("index/a.json") == os.path.join(store.root, "index/a.json")


# ------------------------------------------------------------------------------------- listing


def test_list_sorted_recursive_relative(filled):
    assert filled.list("") == sorted(INDEX_KEYS + OTHER_KEYS)
    assert filled.list("index") == INDEX_KEYS
    assert filled.list("index/") == INDEX_KEYS
    assert filled.list("index/000000001") == INDEX_KEYS[4:6]
    assert filled.list("events") == [k for k in OTHER_KEYS if k.startswith("events/")]
    assert filled.list("nothing-here") == []


def test_list_keys_use_forward_slashes(filled):
    for k in filled.list(""):
        assert "\\" not in k and not k.startswith("/")
        assert filled.read(k) == k.encode()


def test_list_single_file_prefix(filled):
    assert filled.list("training_job_end.ts") == ["training_job_end.ts"]


def test_list_sorted_when_names_sort_before_slash(store):
    """Keys sort as strings: 'a-b' and 'a.b' come before 'a/x' ('-' and '.' < '/')."""
    keys = ["a/x", "a-b", "a.b", "a0", "ab/c", "a/y/z"]
    for k in keys:
        store.write(k, b"")
    assert store.list("") == sorted(keys)


def test_list_folders_holding_files_and_folders(store):
    """A folder's files and folders come in key order ('x-y/' < 'x.y' < 'x/' < 'x0'), at every level,
    and so do the keys after start_after."""
    keys = ["m/x-y/1", "m/x.y", "m/x/2", "m/x/2.b/c", "m/x0", "m/y", "m/z/3", "n", "n0/4", "n-/5"]
    for k in keys:
        store.write(k, b"")
    assert store.list("") == sorted(keys)
    assert store.list("m") == sorted(k for k in keys if k.startswith("m/"))
    for k in sorted(keys) + ["m/x", "m/x/", "m/x.", "m/", "a", "z"]:
        assert store.list("", start_after=k) == [x for x in sorted(keys) if x > k], k


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_list_follows_links_to_folders(store):
    store.write("a/real/x", b"")
    store.write("a/z", b"")
    os.symlink(Path(store.root, "a", "real"), Path(store.root, "a", "link"))
    assert store.list("a") == ["a/link/x", "a/real/x", "a/z"]


@pytest.mark.parametrize(
    "start_after",
    [
        None,
        "",
        "index/",
        "index/000000000",
        "index/000000000/",
        "index/000000000/000000000500_worker_0.json",
        "index/000000000/000000000999_worker_0.json",
        "index/000000000/000000000999_worker_1.json",
        "index/000000000/zzz",
        "index/000000001",
        "index/000000001/000000001000_worker_0.json",
        "index/000000001/000000001000_worker_0.jso",
        "index/000000002",
        "index/000000011/000000011999_worker_0.json",
        "index/000000012/000000012000_worker_0.json",
        "index/000000012/000000012001_worker_0.json",
        "index/zzz",
        "a",
        "z",
    ],
)
def test_list_start_after(filled, start_after):
    expected = [k for k in INDEX_KEYS if start_after is None or k > start_after]
    assert filled.list("index", start_after=start_after) == expected


def test_list_start_after_every_key(filled):
    all_keys = sorted(INDEX_KEYS + OTHER_KEYS)
    for i, k in enumerate(all_keys):
        assert filled.list("", start_after=k) == all_keys[i + 1 :], k
        assert filled.list("index", start_after=k) == [x for x in INDEX_KEYS if x > k], k


def test_list_start_after_prunes_folders(filled, monkeypatch):
    """Folders whose keys all sort before start_after are not even opened."""
    opened = []
    real_scandir = os.scandir

    def spy(path):
        opened.append(Path(path).relative_to(filled.root).as_posix())
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    got = filled.list("index", start_after="index/000000001/000000001000_worker_0.json")
    assert got == INDEX_KEYS[5:]
    assert "index/000000000" not in opened
    assert "index/000000001" in opened
    assert "index/000000012" in opened


def test_list_ignores_nothing_but_reports_tmp(store):
    """The store lists every file; skipping *.tmp is the reader's job (names don't match)."""
    store.write("index/000000000/000000000000_worker_0.json", b"{}")
    Path(store.root, "index/000000000/000000000001_worker_0.json.tmp").write_bytes(b"partial")
    assert store.list("index") == [
        "index/000000000/000000000000_worker_0.json",
        "index/000000000/000000000001_worker_0.json.tmp",
    ]


# ------------------------------------------------------------------------------ exists / delete


def test_exists_and_delete(store):
    assert not store.exists("a/b.json")
    store.write("a/b.json", b"1")
    assert store.exists("a/b.json")
    assert store.exists("a")  # a folder exists too
    store.delete("a/b.json")
    assert not store.exists("a/b.json")
    with pytest.raises(ObjectNotFound):
        store.read("a/b.json")
    store.delete("a/b.json")  # deleting a missing key is not an error
    assert store.list("a") == []


def test_read_stamped_gives_the_bytes_and_the_stamp_from_before_the_read(store, tmp_path):
    store.write("a/b.json", b"x" * 100)
    data, stamp = store.read_stamped("a/b.json")
    st = os.stat(store.describe("a/b.json"))
    assert data == b"x" * 100 and stamp == (100, st.st_mtime_ns)
    store.write("a/b.json", b"y" * 150)  # another file now: another stamp
    data, later = store.read_stamped("a/b.json")
    assert data == b"y" * 150 and later[0] == 150 and later != stamp
    with pytest.raises(ObjectNotFound):
        store.read_stamped("a/missing.json")
