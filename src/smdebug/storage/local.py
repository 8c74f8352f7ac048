"""The local-folder backend: plain files, writes through ``<name>.<unique>.tmp`` and a rename."""

from __future__ import annotations

import builtins  # the class's method `list` hides the type in its body
import contextlib
import itertools
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from smdebug.exceptions import NotAFile, ObjectNotFound, StorageError
from smdebug.storage.base import Store

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["LocalStore"]

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
_SMALL = 1 << 16  # chunks under this size are joined before writing
# bytes per write call: larger writes let the kernel back the file with large folios, whose
# allocation (compaction) cost 3-6x the CPU of the copy itself here (Linux 6.18, ext4: one 16 MB
# write 29 ms of CPU, the same bytes in 1 MiB writes 4.5 ms; bench/bench_writer.py --big)
MAX_WRITE = 1 << 20
_TMP_SEQ = itertools.count()  # with the pid: a temp name no other writer (process or thread) uses


def _bytes_view(c: Buffer) -> memoryview:
    v = memoryview(c)
    return v if v.format == "B" and v.ndim == 1 else v.cast("B")


def _write_all(fd: int, chunks: Iterable[Buffer]) -> None:
    """Write every chunk (bytes-like, possibly numpy views), in the order given, as they come:
    runs of small ones joined, large ones straight from their memory, at most MAX_WRITE bytes
    a system call (measured faster than a single writev of them all: 4 ms against 7 ms for a
    5 MB step file here)."""
    run: list[memoryview] = []  # small chunks waiting to be joined
    run_bytes = 0
    for c in chunks:
        v = _bytes_view(c)
        n = v.nbytes
        if n < _SMALL:
            if n:
                run.append(v)
                run_bytes += n
                if run_bytes >= MAX_WRITE:
                    _write_fully(fd, b"".join(run))
                    run, run_bytes = [], 0
            continue
        if run:
            _write_fully(fd, b"".join(run) if len(run) > 1 else run[0])
            run, run_bytes = [], 0
        _write_fully(fd, v)
    if run:
        _write_fully(fd, b"".join(run) if len(run) > 1 else run[0])


def _write_fully(fd: int, data: Buffer) -> None:
    v = _bytes_view(data)
    while v.nbytes:
        v = v[os.write(fd, v[:MAX_WRITE]) :]


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)


@contextlib.contextmanager
def _reading(path: str) -> Iterator[tuple[int, os.stat_result]]:
    """A regular file opened for reading: its descriptor and its ``fstat``; a missing file raises
    ObjectNotFound, anything but a regular file NotAFile (opened without blocking, so that a FIFO
    planted at the key is refused, not waited on), any other failure StorageError naming the file."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        raise ObjectNotFound(f"{path} does not exist") from None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotAFile(f"{path} is not a regular file ({stat.filemode(st.st_mode)})")
        yield fd, st
    except NotAFile:
        raise
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    finally:
        os.close(fd)


class LocalStore(Store):
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(os.path.expanduser(root))
        self.url = self.root
        self._folders: set[str] = set()  # folders known to exist

    def _path(self, key: str) -> str:
        if ".." in key.split("/"):
            raise StorageError(f"key {key!r} points outside {self.root}")
        return f"{self.root}/{key.strip('/')}" if key else self.root

    def describe(self, key: str) -> str:
        return self._path(key)

    def read(self, key: str) -> bytes:
        return self.read_stamped(key)[0]

    def read_stamped(self, key: str) -> tuple[bytes, tuple[int, int]]:
        """The file's bytes and its ``(st_size, st_mtime_ns)`` from before they were read (a
        file that changes later has another stamp: readers that cache what they parsed compare
        stamps to know when to read it again)."""
        with _reading(self._path(key)) as (fd, st):
            data = os.read(fd, st.st_size + 1)  # one byte more than fstat said: a file that grew says so
            if len(data) <= st.st_size:  # the whole file, in one system call
                return data, (st.st_size, st.st_mtime_ns)
            chunks = [data]
            while chunks[-1]:
                chunks.append(os.read(fd, 1 << 20))
            return b"".join(chunks), (st.st_size, st.st_mtime_ns)

    def read_into(self, key: str, reserve: Callable[[int], memoryview]) -> tuple[int, tuple[int, int]]:
        """The file's bytes read straight into memory of the caller's, with no copy of them:
        ``reserve(n)`` gives a writable view of ``n`` bytes (called again, with a larger ``n``,
        after the file grew while it was read; the caller's memory must then be free to move).
        Returns their length and the file's ``(st_size, st_mtime_ns)`` from before they were
        read, as :meth:`read_stamped`."""
        with _reading(self._path(key)) as (fd, st):
            view = reserve(st.st_size + 1)  # one byte more than fstat said: a file that grew says so
            n = os.readv(fd, [view])
            if n == len(view):  # it grew: the rest, then all of it again into a larger view
                chunks = [view.tobytes()]
                view.release()
                while chunks[-1]:
                    chunks.append(os.read(fd, 1 << 20))
                data = b"".join(chunks)
                n = len(data)
                with reserve(n) as view:
                    view[:] = data
            return n, (st.st_size, st.st_mtime_ns)

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        out: list[bytes] = [b""] * len(ranges)
        with _reading(self._path(key)) as (fd, st):
            size = st.st_size
            for i in sorted(range(len(ranges)), key=lambda j: ranges[j][0]):
                start, length = ranges[i]
                # never more than the file holds: os.pread allocates the length asked for
                out[i] = os.pread(fd, max(min(length, size - start), 0), start) if start < size else b""
        return out

    def write(self, key: str, data: bytes) -> None:
        self.write_chunks(key, (data,))

    def write_chunks(self, key: str, chunks: Sequence[Buffer]) -> None:
        path = self._path(key)
        # unique: the hook and `smdebug consolidate` (another process) may write the same key at once
        tmp = f"{path}.{os.getpid():x}-{next(_TMP_SEQ):x}.tmp"
        folder = os.path.dirname(path)
        try:
            if folder not in self._folders:
                os.makedirs(folder, exist_ok=True)
                if len(self._folders) > 4096:
                    self._folders.clear()
                self._folders.add(folder)
            try:
                fd = os.open(tmp, _WRITE_FLAGS, 0o666)
            except FileNotFoundError:  # the folder was removed since: make it again
                os.makedirs(folder, exist_ok=True)
                fd = os.open(tmp, _WRITE_FLAGS, 0o666)
            try:
                _write_all(fd, chunks)
            except BaseException:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp)  # a full disk keeps no partial file
                raise
            os.close(fd)
            os.replace(tmp, path)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc}") from exc

    def list(self, prefix: str, start_after: str | None = None) -> list[str]:
        base = prefix.rstrip("/")
        top = self._path(base) if base else self.root
        out: builtins.list[str] = []
        if os.path.isdir(top):
            self._walk(top, base, start_after, out)
        elif os.path.isfile(top) and (start_after is None or base > start_after):
            out.append(base)
        return out

    def _walk(self, folder: str, key: str, start_after: str | None, out: builtins.list[str]) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
            names = [e.name for e in entries if not e.is_dir()]
            folders = [e.name + "/" for e in entries if e.is_dir()] if len(names) < len(entries) else []
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot list {folder}: {exc}") from exc
        prefix = f"{key}/" if key else ""
        if not folders:  # files only (the common leaf folder): no Python statement per name
            names.sort()
            out.extend(
                [prefix + n for n in names]
                if start_after is None
                else [c for n in names if (c := prefix + n) > start_after]
            )
            return
        # sorted as keys sort: a folder's name is followed by '/', which sorts after '-' and '.'
        # (a file's name holds no '/': a name that ends with one is a folder's)
        names.extend(folders)
        names.sort()
        for name in names:
            child = prefix + name.rstrip("/")
            if name[-1] == "/":
                # every key below `child` starts with `child/`: skip the folder when all of
                # them sort at or before start_after
                if start_after is not None and child + "/" < start_after and not start_after.startswith(child + "/"):
                    continue
                self._walk(os.path.join(folder, name[:-1]), child, start_after, out)
            elif start_after is None or child > start_after:
                out.append(child)

    def list_folders(self, prefix: str) -> builtins.list[str]:
        try:
            return sorted(e.name for e in os.scandir(self._path(prefix.rstrip("/"))) if e.is_dir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {self._path(prefix)}: {exc}") from exc

    def exists(self, key: str) -> bool:
        return os.path.exists(self._path(key))

    def delete(self, key: str) -> None:
        try:
            os.remove(self._path(key))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot delete {self._path(key)}: {exc}") from exc
