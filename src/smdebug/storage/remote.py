"""fsspec-backed storage (s3:// through s3fs, gs://, memory://...). Imported only for such URLs."""

from __future__ import annotations

from collections.abc import Sequence

from smdebug.exceptions import MissingDependency, ObjectNotFound, StorageError
from smdebug.storage.base import Store

__all__ = ["FsspecStore"]


class FsspecStore(Store):
    def __init__(self, url: str):
        try:
            import fsspec
        except ImportError:
            raise MissingDependency("fsspec/s3fs", "s3", f"to use {url}") from None
        self.url = url.rstrip("/")
        protocol, _, rest = self.url.partition("://")
        try:
            self.fs = fsspec.filesystem(protocol)
        except ImportError as exc:
            raise MissingDependency(str(exc.name or protocol), "s3", f"to use {url}") from None
        self.root = rest

    def _p(self, key: str) -> str:
        return f"{self.root}/{key}" if key else self.root

    def _wrap(self, key: str, exc: Exception) -> Exception:
        if isinstance(exc, FileNotFoundError):
            return ObjectNotFound(f"{self.describe(key)} does not exist")
        return StorageError(f"{self.describe(key)}: {type(exc).__name__}: {exc}")

    def read(self, key: str) -> bytes:
        try:
            return self.fs.cat_file(self._p(key))
        except Exception as exc:  # noqa: BLE001 - translated at the boundary
            raise self._wrap(key, exc) from exc

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        try:
            return [self.fs.cat_file(self._p(key), start=s, end=s + n) for s, n in ranges]
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc) from exc

    def write(self, key: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(self._p(key), data)
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc) from exc

    def list(self, prefix: str, start_after: str | None = None) -> list[str]:
        base = self._p(prefix.rstrip("/"))
        try:
            found = self.fs.find(base)
        except FileNotFoundError:
            return []
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(prefix, exc) from exc
        cut = len(self.root) + 1
        keys = sorted(p[cut:] for p in found)
        return [k for k in keys if start_after is None or k > start_after]

    def exists(self, key: str) -> bool:
        try:
            return bool(self.fs.exists(self._p(key)))
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc) from exc

    def delete(self, key: str) -> None:
        try:
            self.fs.rm_file(self._p(key))
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc) from exc
