"""The one byte-level storage interface every backend implements."""

from __future__ import annotations

import builtins  # the class's method `list` hides the type in its body
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["Store"]


class Store(ABC):
    """Objects addressed by '/'-separated keys relative to a root (a folder or a bucket prefix).

    Backends translate their own errors into :class:`smdebug.exceptions.StorageError` /
    :class:`~smdebug.exceptions.ObjectNotFound`, naming the object.
    """

    url: str
    # a request costs a round trip (object storage): readers fetch larger windows and cache them
    remote: bool = False

    @abstractmethod
    def read(self, key: str) -> bytes:
        """The whole object."""

    @abstractmethod
    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """``[start, start + length)`` slices of one object, in the order asked.

        A slice past the end comes back short; the caller decides whether that is an error.
        """

    def read_many(self, keys: Sequence[str]) -> list[bytes | Exception]:
        """Several whole objects; a failure is returned in place of that object's bytes."""
        out: list[bytes | Exception] = []
        for k in keys:
            try:
                out.append(self.read(k))
            except Exception as exc:  # noqa: BLE001 - handed back to the caller per key
                out.append(exc)
        return out

    def read_ranges_many(
        self, requests: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> list[list[bytes] | Exception]:
        """:meth:`read_ranges` over several objects (backends may run them concurrently)."""
        out: list[list[bytes] | Exception] = []
        for key, ranges in requests:
            try:
                out.append(self.read_ranges(key, ranges))
            except Exception as exc:  # noqa: BLE001
                out.append(exc)
        return out

    @abstractmethod
    def write(self, key: str, data: bytes) -> None:
        """Write a whole object; readers never see a partial one."""

    def write_chunks(self, key: str, chunks: Sequence[Buffer]) -> None:
        """Write an object given as contiguous bytes-like pieces (bytes, memoryviews, numpy
        arrays: a tensor's own memory); backends may avoid joining them. Here they are joined
        into one bytes object: one copy of each piece."""
        self.write(key, b"".join(chunks))

    @abstractmethod
    def list(self, prefix: str, start_after: str | None = None) -> list[str]:
        """Keys under ``prefix`` (recursively), sorted, only those greater than ``start_after``."""

    def list_folders(self, prefix: str) -> builtins.list[str]:
        """Names of the folders directly under ``prefix`` (a folder, ending in '/'), sorted."""
        cut = len(prefix)
        return sorted({k[cut:].split("/", 1)[0] for k in self.list(prefix) if "/" in k[cut:]})

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def delete(self, key: str) -> None: ...

    def describe(self, key: str) -> str:
        """How to name an object in a message: the full path or URL."""
        return f"{self.url.rstrip('/')}/{key}"
