"""A local key that names a FIFO, a device or a folder is refused by every read of LocalStore (never
waited on, never read without end), with an error naming the path."""

from __future__ import annotations

import os

import pytest

from smdebug.exceptions import NotAFile, StorageError
from smdebug.storage import open_store

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/zero")


def _reads(store, key):
    return [
        lambda: store.read(key),
        lambda: store.read_ranges(key, [(0, 10)]),
        lambda: store.read_stamped(key),
        lambda: store.read_into(key, lambda n: memoryview(bytearray(n))),
    ]


@posix_only
@pytest.mark.parametrize("make", ["fifo", "dev_zero", "folder"])
def test_every_read_refuses_what_is_not_a_regular_file(tmp_path, make):
    path = tmp_path / "index" / "x"
    path.parent.mkdir()
    if make == "fifo":
        os.mkfifo(path)
    elif make == "dev_zero":
        os.symlink("/dev/zero", path)
    else:
        path.mkdir()
    store = open_store(str(tmp_path))
    for read in _reads(store, "index/x"):
        with pytest.raises(StorageError) as info:  # NotAFile; a folder may fail at open on some systems
            read()
        assert str(path) in str(info.value)
        if make != "folder":
            assert isinstance(info.value, NotAFile) and "not a regular file" in str(info.value)


def test_a_regular_file_still_reads(tmp_path):
    (tmp_path / "a").write_bytes(b"0123456789")
    store = open_store(str(tmp_path))
    assert store.read("a") == b"0123456789"
    assert store.read_ranges("a", [(2, 3), (8, 10)]) == [b"234", b"89"]
