"""s3:// through s3fs + aiobotocore, calling the S3 client directly where s3fs would add requests.

Request budget: ``list`` one ListObjectsV2 per 1000 keys (StartAfter), ``exists`` one HEAD,
``read``/``read_many`` one GET per object, ``read_ranges(_many)`` one ranged GET per range, all
of one call concurrent; ``write`` one PUT (multipart only above 100 MB).

Configuration comes from the standard AWS chain (environment, ~/.aws, instance role); the
endpoint from ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``. Timeouts: 5 s to connect, 60 s
per read. Retries are botocore's (standard mode, 6 attempts) with a backoff that is short for
5xx and connection errors and long for throttling, and only 3 attempts when no connection can be
made at all, so an unreachable endpoint fails within seconds.
"""

from __future__ import annotations

import asyncio
import builtins  # the class's method `list` hides the type in its body
import os
import random
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

import botocore.exceptions as bce
import fsspec.asyn
import s3fs

from smdebug.exceptions import ObjectNotFound, SMDebugValueError, StorageError
from smdebug.storage.remote import FsspecStore, join_key

__all__ = ["S3Store", "endpoint_from_env"]

_T = TypeVar("_T")

CONNECT_TIMEOUT = 5
READ_TIMEOUT = 60
MAX_ATTEMPTS = 6
CONNECT_ATTEMPTS = 3  # when no connection could be made at all
MAX_CONCURRENCY = 32  # requests in flight per call (and connections per filesystem)
BODY_ATTEMPTS = 3  # a GET whose body breaks off is asked again

_THROTTLING = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "ProvisionedThroughputExceededException",
        "EC2ThrottledException",
    }
)
_TRANSIENT_CODES = frozenset(
    {"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete", "InternalError", "ServiceUnavailable"}
)
_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})
_CONNECT_ERRORS = (bce.EndpointConnectionError, bce.ConnectTimeoutError, bce.ProxyConnectionError)


def endpoint_from_env() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def retry_delay(
    attempts: int,
    response: tuple[Any, dict | None] | None = None,
    caught_exception: BaseException | None = None,
    **_: object,
) -> float | None:
    """botocore ``needs-retry`` handler: seconds to wait before the next attempt, or None.

    ``attempts`` is the number made so far. Throttling backs off ``rand * min(2**(n-1), 20)`` s
    (botocore's standard backoff); 5xx, timeouts and dropped connections ``rand * 0.1 * 2**(n-1)``.
    """
    if caught_exception is not None:
        if isinstance(caught_exception, _CONNECT_ERRORS):
            limit, scale = CONNECT_ATTEMPTS, 0.1
        elif isinstance(caught_exception, (bce.ConnectionError, bce.HTTPClientError)):
            limit, scale = MAX_ATTEMPTS, 0.1
        else:
            return None
    elif response is not None:
        http, parsed = response
        code = (parsed or {}).get("Error", {}).get("Code")
        status = getattr(http, "status_code", 200)
        if code in _THROTTLING or status == 429:
            limit, scale = MAX_ATTEMPTS, 1.0
        elif status in _TRANSIENT_STATUS or code in _TRANSIENT_CODES:
            limit, scale = MAX_ATTEMPTS, 0.1
        else:
            return None
    else:
        return None
    if attempts >= limit:
        return None
    return random.random() * min(scale * 2 ** (attempts - 1), 20.0)


class _S3FileSystem(s3fs.S3FileSystem):
    """s3fs with our retry policy installed on every client it creates."""

    async def set_session(self, refresh: bool = False, kwargs: dict = {}) -> Any:  # noqa: B006 - s3fs's signature
        client = await super().set_session(refresh=refresh, kwargs=kwargs)
        if not getattr(client, "_smdebug_retries", False):
            event = f"needs-retry.{client.meta.service_model.service_id.hyphenize()}"
            client.meta.events.unregister(event, unique_id="retry-config-s3")
            client.meta.events.register(event, retry_delay, unique_id="smdebug-retry-s3")
            client._smdebug_retries = True
        return client


_FILESYSTEMS: dict[tuple, _S3FileSystem] = {}
_LOCK = threading.Lock()


def _filesystem(endpoint: str | None) -> _S3FileSystem:
    """One filesystem (client, connection pool) per process, endpoint and credentials source."""
    ident = (os.getpid(), endpoint, os.environ.get("AWS_PROFILE"), os.environ.get("AWS_ACCESS_KEY_ID"))
    with _LOCK:
        fs = _FILESYSTEMS.get(ident)
        if fs is None:
            fs = _S3FileSystem(
                client_kwargs={"endpoint_url": endpoint} if endpoint else {},
                config_kwargs={
                    "connect_timeout": CONNECT_TIMEOUT,
                    "read_timeout": READ_TIMEOUT,
                    "retries": {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
                    "max_pool_connections": MAX_CONCURRENCY,
                },
                use_listings_cache=False,
                skip_instance_cache=True,
                max_concurrency=8,
            )
            fs.retries = 1  # botocore retries; s3fs's own loop would multiply the attempts
            _FILESYSTEMS[ident] = fs
        return fs


def _error_code(exc: BaseException | None) -> str | None:
    while exc is not None:
        response = getattr(exc, "response", None)
        if isinstance(response, dict):
            return response.get("Error", {}).get("Code")
        exc = exc.__cause__
    return None


class S3Store(FsspecStore):
    """Objects under ``s3://bucket/prefix``."""

    def __init__(self, url: str):
        self.endpoint = endpoint_from_env()
        super().__init__(url, fs=_filesystem(self.endpoint))
        self.protocol = "s3"
        self.bucket, _, self.prefix = self.root.partition("/")
        if not self.bucket:
            raise SMDebugValueError(f"{url!r} names no bucket: use s3://bucket/prefix")

    def _k(self, key: str) -> str:
        return join_key(self.prefix, key)

    def _wrap(self, key: str, exc: BaseException, verb: str = "access") -> StorageError:
        err = super()._wrap(key, exc, verb)
        if err is exc:
            return err
        if _error_code(exc) == "NoSuchBucket":
            err = ObjectNotFound(
                f"cannot {verb} {self.describe(key)}: the bucket {self.bucket!r} does not exist "
                "(check its name, and the endpoint or region)"
            )
        elif isinstance(exc, (PermissionError, bce.NoCredentialsError, bce.PartialCredentialsError)):
            err = StorageError(f"{err} (check the AWS credentials: environment, ~/.aws or instance role)")
        elif isinstance(exc, _CONNECT_ERRORS):
            err = StorageError(f"{err} (endpoint {self.endpoint or 'from the AWS configuration'} is unreachable)")
        err.__cause__ = exc
        return err

    def _run(self, func: Callable[..., Coroutine[Any, Any, _T]], *args: Any, **kwargs: Any) -> _T:
        return fsspec.asyn.sync(self.fs.loop, func, *args, **kwargs)

    def _do(self, key: str, verb: str, func: Callable[..., Coroutine[Any, Any, _T]], *args: Any, **kwargs: Any) -> _T:
        try:
            return self._run(func, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - translated at the boundary
            raise self._wrap(key, exc, verb) from exc

    async def _call(self, method: str, **kwargs: Any) -> Any:
        return await self.fs._call_s3(method, Bucket=self.bucket, **kwargs)

    async def _get(self, key: str, rng: tuple[int, int] | None = None) -> bytes:
        kw = {"Key": self._k(key)}
        if rng is not None:
            start, length = int(rng[0]), int(rng[1])
            if length <= 0:
                return b""
            kw["Range"] = f"bytes={start}-{start + length - 1}"
        for attempt in range(BODY_ATTEMPTS):
            try:
                resp = await self._call("get_object", **kw)
            except OSError as exc:
                if rng is not None and _error_code(exc) == "InvalidRange":
                    return b""  # the range starts at or past the end
                raise
            try:
                return await resp["Body"].read()
            except s3fs.core.S3_RETRYABLE_ERRORS:
                if attempt + 1 == BODY_ATTEMPTS:
                    raise
            finally:
                resp["Body"].close()
        raise AssertionError("unreachable")

    @staticmethod
    async def _gather(coros: Iterable[Awaitable[_T]]) -> builtins.list[_T | BaseException]:
        sem = asyncio.Semaphore(MAX_CONCURRENCY)

        async def one(coro: Awaitable[_T]) -> _T:
            async with sem:
                return await coro

        return await asyncio.gather(*(one(c) for c in coros), return_exceptions=True)

    # ------------------------------------------------------------------ reads
    def read(self, key: str) -> bytes:
        return self._do(key, "read", self._get, key)

    def read_many(self, keys: Sequence[str]) -> list[bytes | Exception]:
        if not keys:
            return []

        async def run() -> list[bytes | BaseException]:
            return await self._gather(self._get(k) for k in keys)

        try:
            got = self._run(run)
        except Exception as exc:  # noqa: BLE001
            return [self._wrap(k, exc, "read") for k in keys]
        return [self._wrap(k, v, "read") if isinstance(v, BaseException) else v for k, v in zip(keys, got)]

    def read_ranges(self, key: str, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        res = self.read_ranges_many([(key, ranges)])[0]
        if isinstance(res, Exception):
            raise res
        return res

    def read_ranges_many(
        self, requests: Sequence[tuple[str, Sequence[tuple[int, int]]]]
    ) -> list[list[bytes] | Exception]:
        flat = [(i, key, r) for i, (key, ranges) in enumerate(requests) for r in ranges]

        async def run() -> list[bytes | BaseException]:
            return await self._gather(self._get(key, r) for _, key, r in flat)

        try:
            got = self._run(run) if flat else []
        except Exception as exc:  # noqa: BLE001
            return [self._wrap(k, exc, "read") for k, _ in requests]
        out: list[list[bytes] | Exception] = [[] for _ in requests]
        for (i, key, _), v in zip(flat, got):
            slot = out[i]
            if isinstance(slot, Exception):
                continue
            if isinstance(v, BaseException):
                out[i] = self._wrap(key, v, "read")
            else:
                slot.append(v)
        return out

    # ----------------------------------------------------------------- writes
    def write(self, key: str, data: bytes) -> None:
        data = data if isinstance(data, (bytes, bytearray)) else bytes(data)
        self._do(key, "write", self.fs._pipe_file, f"{self.bucket}/{self._k(key)}", data)

    def _remove(self, key: str) -> None:  # FsspecStore.delete's
        self._run(self._call, "delete_object", Key=self._k(key))

    # -------------------------------------------------------------- listings
    def list(self, prefix: str, start_after: str | None = None) -> list[str]:
        base = prefix.strip("/")
        folder = not base or prefix.endswith("/")
        s3_prefix = self._k(base) + "/" if base else (self.prefix + "/" if self.prefix else "")
        if not folder:
            s3_prefix = s3_prefix[:-1]  # 'a/b' lists the object a/b and a/b/...
        cut = len(self.prefix) + 1 if self.prefix else 0

        async def run() -> list[str]:
            keys: list[str] = []
            kw = {"Prefix": s3_prefix}
            if start_after is not None:
                kw["StartAfter"] = f"{self.prefix}/{start_after}" if self.prefix else start_after
            while True:
                page = await self._call("list_objects_v2", **kw)
                keys.extend(o["Key"][cut:] for o in page.get("Contents", ()))
                if not page.get("IsTruncated") or not page.get("NextContinuationToken"):
                    return keys
                kw["ContinuationToken"] = page["NextContinuationToken"]

        try:
            keys = self._run(run)
        except FileNotFoundError as exc:
            if _error_code(exc) == "NoSuchBucket":  # not an empty prefix: say so
                raise self._wrap(base, exc, "list") from exc
            return []
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(base, exc, "list") from exc
        keys.sort()
        if not folder:
            keys = [k for k in keys if k == base or k.startswith(base + "/")]
        if start_after is not None:
            keys = [k for k in keys if k > start_after]
        return keys

    def list_folders(self, prefix: str) -> builtins.list[str]:
        """One ListObjectsV2 with Delimiter '/' per 1000 folders."""
        base = prefix.strip("/")
        s3_prefix = self._k(base) + "/" if base else (self.prefix + "/" if self.prefix else "")

        async def run() -> list[str]:
            names: list[str] = []
            kw = {"Prefix": s3_prefix, "Delimiter": "/"}
            while True:
                page = await self._call("list_objects_v2", **kw)
                names.extend(p["Prefix"][len(s3_prefix) :].rstrip("/") for p in page.get("CommonPrefixes", ()))
                if not page.get("IsTruncated") or not page.get("NextContinuationToken"):
                    return names
                kw["ContinuationToken"] = page["NextContinuationToken"]

        try:
            return sorted(self._run(run))
        except FileNotFoundError:
            return []
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(base, exc, "list") from exc

    def exists(self, key: str) -> bool:
        if not key.strip("/"):  # the root itself: one LIST of one key
            root = self.prefix + "/" if self.prefix else ""
            return bool(self._do(key, "check", self._call, "list_objects_v2", Prefix=root, MaxKeys=1).get("KeyCount"))

        async def head() -> bool:
            try:
                await self._call("head_object", Key=self._k(key))
                return True
            except FileNotFoundError:
                return False

        return self._do(key, "check", head)
