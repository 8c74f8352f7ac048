"""Storage backends behind one interface; the backend is chosen from the URL here and only here."""

from __future__ import annotations

from smdebug.storage.base import Store

__all__ = ["Store", "open_store", "is_remote"]

_REMOTE_SCHEMES = ("s3://", "gs://", "gcs://", "memory://", "az://", "abfs://")


def is_remote(url: str) -> bool:
    return isinstance(url, str) and url.strip().startswith(_REMOTE_SCHEMES)


def open_store(url) -> Store:
    """A Store for a local folder or a URL (``s3://bucket/prefix`` and other fsspec URLs)."""
    url = str(url).strip() if not hasattr(url, "__fspath__") else url.__fspath__()
    if is_remote(url):
        from smdebug.storage.remote import open_remote

        return open_remote(url)
    if "://" in url and not url.startswith("file://"):
        from smdebug.exceptions import SMDebugValueError

        raise SMDebugValueError(f"unsupported storage URL {url!r}: use a local path or s3://bucket/prefix")
    from smdebug.storage.local import LocalStore

    return LocalStore(url[len("file://") :] if url.startswith("file://") else url)
