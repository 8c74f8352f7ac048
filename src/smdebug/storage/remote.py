"""fsspec-backed storage: s3:// (through s3fs, see storage/s3.py), gs://, memory://...

Imported only when such a URL is opened, so ``import smdebug`` pulls in no cloud SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from smdebug.exceptions import ObjectNotFound, StorageError
from smdebug.storage.base import Store

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem
    from typing_extensions import Buffer

__all__ = ["FsspecStore", "join_key"]


def join_key(root: str, key: str) -> str:
    """``root/key`` for a key of the store; a key with '..' in it is refused."""
    key = key.strip("/")
    if ".." in key.split("/"):
        raise StorageError(f"key {key!r} points outside {root}")
    if not root:
        return key
    return f"{root}/{key}" if key else root


class FsspecStore(Store):
    remote = True

    """Any fsspec filesystem, through its generic (batched where fsspec offers it) calls."""

    def __init__(self, url: str, fs: AbstractFileSystem | None = None) -> None:
        self.url = url.rstrip("/")
        protocol, _, rest = self.url.partition("://")
        self.protocol = protocol
        self.root = rest.strip("/")
        if fs is None:
            import fsspec

            try:
                fs = fsspec.filesystem(protocol, use_listings_cache=False)
            except (ImportError, ValueError) as exc:  # fsspec's message names the package to install
                raise StorageError(f"cannot open {url}: {exc}") from exc
        self.fs = fs
        self._fsroot = fs._strip_protocol(self.url).rstrip("/")  # the root as the filesystem spells it

    # ----------------------------------------------------------------- helpers
    def _p(self, key: str) -> str:
        return join_key(self._fsroot, key)

    def describe(self, key: str) -> str:
        return f"{self.protocol}://{join_key(self.root, key)}"

    def _wrap(self, key: str, exc: BaseException, verb: str = "access") -> StorageError:
        """Our error for a backend error: ObjectNotFound for a missing object or bucket."""
        if isinstance(exc, StorageError):
            return exc
        err: StorageError
        if isinstance(exc, FileNotFoundError):
            err = ObjectNotFound(f"{self.describe(key)} does not exist")
        else:
            err = StorageError(f"cannot {verb} {self.describe(key)}: {type(exc).__name__}: {exc}")
        err.__cause__ = exc
        return err

    # ------------------------------------------------------------------ reads
    def read(self, key: str) -> bytes:
        try:
            return bytes(self.fs.cat_file(self._p(key)))
        except Exception as exc:  # noqa: BLE001 - translated at the boundary
            raise self._wrap(key, exc, "read") from exc

    def read_many(self, keys: Sequence[str]) -> list[bytes | Exception]:
        if not keys:
            return []
        paths = [self._p(k) for k in keys]
        try:
            got = self.fs.cat(paths, on_error="return")
        except Exception:  # noqa: BLE001 - e.g. a path that cannot be expanded: one at a time
            return super().read_many(keys)
        if not isinstance(got, dict):  # a single path comes back unwrapped
            got = {paths[0]: got}
        out: list[bytes | Exception] = []
        for k, p in zip(keys, paths):
            v = got.get(p, FileNotFoundError(p))
            out.append(self._wrap(k, v, "read") if isinstance(v, BaseException) else bytes(v))
        return out

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        p = self._p(key)
        try:
            return [bytes(self.fs.cat_file(p, start=s, end=s + n)) if n > 0 else b"" for s, n in ranges]
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc, "read") from exc

    def read_ranges_many(
        self, requests: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> list[list[bytes] | Exception]:
        paths, starts, ends, owner = [], [], [], []
        for i, (key, ranges) in enumerate(requests):
            p = self._p(key)
            for s, n in ranges:
                paths.append(p)
                starts.append(int(s))
                ends.append(int(s) + max(int(n), 0))
                owner.append(i)
        out: list[list[bytes] | Exception] = [[] for _ in requests]
        if not paths:
            return out
        try:
            got = self.fs.cat_ranges(paths, starts, ends, on_error="return")
        except Exception:  # noqa: BLE001 - one object at a time
            return super().read_ranges_many(requests)
        for i, v in zip(owner, got):
            slot = out[i]
            if isinstance(slot, Exception):
                continue
            if isinstance(v, BaseException):
                out[i] = self._wrap(requests[i][0], v, "read")
            else:
                slot.append(bytes(v))
        return out

    # ----------------------------------------------------------------- writes
    def write(self, key: str, data: bytes) -> None:
        try:
            self.fs.pipe_file(self._p(key), bytes(data))
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc, "write") from exc

    def write_chunks(self, key: str, chunks: Sequence[Buffer]) -> None:
        self.write(key, b"".join(chunks))

    def delete(self, key: str) -> None:
        try:
            self._remove(key)
        except FileNotFoundError:
            pass
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc, "delete") from exc

    def _remove(self, key: str) -> None:
        """Remove the object ``key``; FileNotFoundError where there is none."""
        self.fs.rm_file(self._p(key))

    # -------------------------------------------------------------- listings
    def list(self, prefix: str, start_after: str | None = None) -> list[str]:
        base = prefix.strip("/")
        try:
            found = self.fs.find(self._p(base))
        except FileNotFoundError:
            return []
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(prefix, exc, "list") from exc
        top = self._fsroot + "/" if self._fsroot else ""
        keys = sorted(p[len(top) :] for p in map(self.fs._strip_protocol, found) if p.startswith(top))
        under = base + "/"
        return [
            k
            for k in keys
            if (not base or k == base or k.startswith(under)) and (start_after is None or k > start_after)
        ]

    def exists(self, key: str) -> bool:
        try:
            return bool(self.fs.exists(self._p(key)))
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(key, exc, "check") from exc
