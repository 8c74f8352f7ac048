"""Storage backends behind one interface; the backend is chosen from the URL here and only here."""

from __future__ import annotations

import os

from smdebug.storage.base import Store

__all__ = ["Store", "open_store", "is_remote"]

_REMOTE_SCHEMES = ("s3://", "gs://", "gcs://", "memory://", "az://", "abfs://")


def is_remote(url: str) -> bool:
    return isinstance(url, str) and url.strip().startswith(_REMOTE_SCHEMES)


def _open_remote(url: str) -> Store:
    """:class:`~smdebug.storage.s3.S3Store` for s3://, an fsspec-backed store for other URLs."""
    from smdebug.exceptions import MissingDependency

    try:
        import fsspec  # noqa: F401
    except ImportError:
        raise MissingDependency("fsspec", "s3", f"to use {url}") from None
    if url.partition("://")[0].lower() == "s3":
        try:
            from smdebug.storage.s3 import S3Store
        except ImportError as exc:
            if (exc.name or "").startswith("smdebug"):
                raise
            raise MissingDependency((exc.name or "s3fs").split(".")[0], "s3", f"to use {url}") from None
        return S3Store(url)
    from smdebug.storage.remote import FsspecStore

    return FsspecStore(url)


def open_store(url: str | os.PathLike[str]) -> Store:
    """A Store for a local folder or a URL (``s3://bucket/prefix`` and other fsspec URLs)."""
    url = str(url).strip() if not hasattr(url, "__fspath__") else url.__fspath__()
    if is_remote(url):
        return _open_remote(url)
    if "://" in url and not url.startswith("file://"):
        from smdebug.exceptions import SMDebugValueError

        raise SMDebugValueError(f"unsupported storage URL {url!r}: use a local path or s3://bucket/prefix")
    from smdebug.storage.local import LocalStore

    return LocalStore(url[len("file://") :] if url.startswith("file://") else url)
