"""The S3 Store against a real moto server process, through a counting, fault-injecting proxy."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from s3server import free_port
from smdebug.exceptions import ObjectNotFound, SMDebugValueError, StorageError
from smdebug.storage import open_store
from smdebug.storage.remote import FsspecStore
from smdebug.storage.s3 import CONNECT_ATTEMPTS, MAX_ATTEMPTS, S3Store, retry_delay

FOLDER_KEYS = [
    "collections/000000000/worker_0_collections.json",
    "events/000000000000/000000000000_worker_0.tfevents",
    "events/000000001000/000000001000_worker_0.tfevents",
    "index/000000000/000000000000_worker_0.json",
    "index/000000000/000000000500_worker_0.json",
    "index/000000000/000000000999_worker_0.json",
    "index/000000000/000000000999_worker_1.json",
    "index/000000001/000000001000_worker_0.json",
    "index/000000012/000000012000_worker_0.json",
    "index2/x.json",
    "index-a/y.json",
    "training_job_end.ts",
]


@pytest.fixture
def store(proxy, bucket) -> S3Store:
    s = open_store(f"s3://{bucket}/trial")
    assert isinstance(s, S3Store)
    return s


@pytest.fixture
def filled(store, proxy) -> S3Store:
    for k in FOLDER_KEYS:
        store.write(k, k.encode())
    proxy.reset()
    return store


def _counts(proxy) -> dict:
    return {k: v for k, v in proxy.snapshot().items() if v}


# ------------------------------------------------------------------------------ basic operations


def test_open_store_s3(store, bucket):
    assert isinstance(store, S3Store) and store.url == f"s3://{bucket}/trial"
    assert store.describe("index/a.json") == f"s3://{bucket}/trial/index/a.json"
    assert open_store(f"s3://{bucket}/trial/").describe("k") == f"s3://{bucket}/trial/k"
    with pytest.raises(SMDebugValueError, match="names no bucket"):
        open_store("s3://")


def test_write_read_one_request_each(store, proxy):
    store.write("a/b.bin", b"0123456789")
    assert _counts(proxy) == {"PUT": 1}
    assert store.read("a/b.bin") == b"0123456789"
    assert _counts(proxy) == {"PUT": 1, "GET": 1}
    store.write("a/b.bin", b"new")  # overwrite
    assert store.read("a/b.bin") == b"new"
    store.write("empty", b"")
    assert store.read("empty") == b""


def test_write_chunks_one_put(store, proxy):
    arr = np.arange(6, dtype=np.float32)
    chunks = [b"head", bytearray(b"-mid-"), memoryview(b"view"), arr]
    store.write_chunks("events/e.tfevents", chunks)
    assert _counts(proxy) == {"PUT": 1}
    assert store.read("events/e.tfevents") == b"head-mid-view" + arr.tobytes()


def test_read_missing_is_object_not_found(store, proxy, boto_client):
    with pytest.raises(ObjectNotFound, match=f"s3://{store.bucket}/trial/nope does not exist") as ei:
        store.read("nope")
    assert isinstance(ei.value, FileNotFoundError) and ei.value.__cause__ is not None
    missing_bucket = open_store("s3://no-such-bucket-smd/p")
    with pytest.raises(ObjectNotFound, match="s3://no-such-bucket-smd/p/k"):
        missing_bucket.read("k")
    with pytest.raises(ObjectNotFound, match="the bucket 'no-such-bucket-smd' does not exist"):
        missing_bucket.list("index/")  # not an empty listing: the bucket itself is missing
    assert missing_bucket.exists("k") is False


def test_read_many_concurrent_with_missing(store, proxy):
    keys = [f"index/{i:03d}.json" for i in range(20)]
    for k in keys:
        store.write(k, k.encode() * 3)
    proxy.reset()
    got = store.read_many(keys[:10] + ["index/missing.json"] + keys[10:])
    assert _counts(proxy) == {"GET": 21}
    assert isinstance(got[10], ObjectNotFound) and "index/missing.json" in str(got[10])
    assert got[:10] + got[11:] == [k.encode() * 3 for k in keys]
    assert store.read_many([]) == []


def test_read_ranges(store, proxy):
    data = bytes(range(100))
    store.write("ev", data)
    proxy.reset()
    got = store.read_ranges("ev", [(10, 5), (0, 3), (95, 10), (100, 4), (150, 1), (7, 0)])
    assert got == [data[10:15], data[:3], data[95:], b"", b"", b""]
    assert _counts(proxy) == {"RANGE": 5}  # a zero-length range needs no request
    with pytest.raises(ObjectNotFound, match="/trial/nope"):
        store.read_ranges("nope", [(0, 1)])


def test_read_ranges_many_regroups_in_order(store, proxy):
    blobs = {f"events/{i}.tfevents": bytes([i]) * 50 + bytes(range(50)) for i in range(6)}
    for k, v in blobs.items():
        store.write(k, v)
    proxy.reset()
    requests = []
    for i, k in enumerate(blobs):
        requests.append((k, [(40 + i, 20), (0, 2), (90, 30)]))
    requests.insert(3, ("events/missing.tfevents", [(0, 4), (4, 4)]))
    got = store.read_ranges_many(requests)
    n_ranges = sum(len(r) for _, r in requests)
    assert _counts(proxy) == {"RANGE": n_ranges}
    assert isinstance(got[3], ObjectNotFound) and "events/missing.tfevents" in str(got[3])
    for (k, ranges), res in zip(requests[:3] + requests[4:], got[:3] + got[4:]):
        assert res == [blobs[k][s : s + n] for s, n in ranges]
    assert store.read_ranges_many([]) == []


def test_exists_is_one_head(filled, proxy):
    assert filled.exists("training_job_end.ts") is True
    assert _counts(proxy) == {"HEAD": 1}
    proxy.reset()
    assert filled.exists("no/such/key") is False
    assert _counts(proxy) == {"HEAD": 1}
    proxy.reset()
    assert filled.exists("index") is False  # a 'folder' is not an object (one HEAD, no listing)
    assert _counts(proxy) == {"HEAD": 1}


def test_delete(filled, proxy):
    filled.delete("training_job_end.ts")
    assert _counts(proxy) == {"DELETE": 1}
    assert not filled.exists("training_job_end.ts")
    filled.delete("training_job_end.ts")  # already gone: no error
    assert "training_job_end.ts" not in filled.list("")


# -------------------------------------------------------------------------------------- listing


def test_list_folders(filled, proxy):
    idx = [k for k in FOLDER_KEYS if k.startswith("index/")]
    assert filled.list("index/") == idx
    assert filled.list("index") == idx  # a folder name without the slash: not index2/, index-a/
    assert filled.list("") == sorted(FOLDER_KEYS)
    assert filled.list("events/") == [k for k in FOLDER_KEYS if k.startswith("events/")]
    assert filled.list("training_job_end.ts") == ["training_job_end.ts"]
    assert filled.list("nothing/") == []
    assert _counts(proxy) == {"LIST": 6}


def test_list_start_after(filled, proxy):
    idx = [k for k in FOLDER_KEYS if k.startswith("index/")]
    after = "index/000000000/000000000999_worker_0.json"
    assert filled.list("index/", start_after=after) == [k for k in idx if k > after]
    assert filled.list("index/", start_after="index/000000000/000000000999_~") == idx[-2:]
    assert filled.list("index/", start_after="a") == idx  # before the prefix
    assert filled.list("", start_after="index/") == [k for k in sorted(FOLDER_KEYS) if k > "index/"]
    assert _counts(proxy) == {"LIST": 4}


def test_list_empty_range_is_one_list(filled, proxy):
    assert filled.list("index/", start_after="index/000000012/000000012000_worker_0.json") == []
    assert _counts(proxy) == {"LIST": 1}


def test_list_bucket_root(proxy, bucket):
    s = open_store(f"s3://{bucket}")
    for k in ("b/1", "a/2", "c"):
        s.write(k, b"x")
    assert s.list("") == ["a/2", "b/1", "c"]
    assert s.list("b/") == ["b/1"] and s.list("", start_after="a/2") == ["b/1", "c"]
    assert s.describe("a/2") == f"s3://{bucket}/a/2"
    assert s.exists("") and s.read("c") == b"x"


def test_list_pages_of_1000(store, proxy, aws_env, monkeypatch):
    keys = [f"index/{f:09d}/{i:012d}_worker_0.json" for f in range(5) for i in range(410)]  # 2050 keys
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", aws_env)  # fill it directly, not through the proxy
    direct = open_store(store.url)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: direct.write(k, b""), keys + ["zzz/other", "index0"]))
    assert _counts(proxy) == {}
    assert store.list("index/") == keys
    assert _counts(proxy) == {"LIST": math.ceil(len(keys) / 1000)}
    proxy.reset()
    after = keys[799]
    assert store.list("index/", start_after=after) == keys[800:]
    assert _counts(proxy) == {"LIST": math.ceil((len(keys) - 800) / 1000)}


# ------------------------------------------------------------------------- configuration, errors


def test_filesystem_per_endpoint(proxy, bucket, aws_env, monkeypatch):
    via_proxy = open_store(f"s3://{bucket}/p")
    assert open_store(f"s3://{bucket}/q").fs is via_proxy.fs  # same endpoint: one connection pool
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", aws_env)
    direct = open_store(f"s3://{bucket}/p")
    assert direct.fs is not via_proxy.fs and direct.endpoint == aws_env
    direct.write("k", b"v")
    assert _counts(proxy) == {}
    assert via_proxy.read("k") == b"v" and _counts(proxy) == {"GET": 1}
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    assert open_store(f"s3://{bucket}/p").fs is via_proxy.fs
    cfg = via_proxy.fs.s3.meta.config
    assert (cfg.connect_timeout, cfg.read_timeout, cfg.retries["mode"]) == (5, 60, "standard")


def test_retry_policy():
    class Resp:
        def __init__(self, status):
            self.status_code = status

    import botocore.exceptions as bce

    def delay(attempts, **kw):
        return retry_delay(attempts, **kw)

    throttled = (Resp(503), {"Error": {"Code": "SlowDown"}})
    unavailable = (Resp(503), {"Error": {"Code": "ServiceUnavailable"}})
    assert 0 <= delay(1, response=unavailable) <= 0.1 and 0 <= delay(1, response=throttled) <= 1
    assert delay(MAX_ATTEMPTS - 1, response=throttled) is not None
    assert delay(MAX_ATTEMPTS, response=throttled) is None
    assert delay(1, response=(Resp(404), {"Error": {"Code": "NoSuchKey"}})) is None
    assert delay(1, response=(Resp(200), {})) is None
    refused = bce.EndpointConnectionError(endpoint_url="http://x")
    assert delay(CONNECT_ATTEMPTS - 1, caught_exception=refused) is not None
    assert delay(CONNECT_ATTEMPTS, caught_exception=refused) is None
    reset = bce.ConnectionClosedError(endpoint_url="http://x")
    assert delay(MAX_ATTEMPTS - 1, caught_exception=reset) is not None
    assert delay(1, caught_exception=ValueError("x")) is None


def test_unreachable_endpoint_fails_fast(aws_env, monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    s = open_store("s3://bucket/prefix")
    for call in (lambda: s.read("k"), lambda: s.exists("k"), lambda: s.list("index/"), lambda: s.write("k", b"x")):
        t0 = time.monotonic()
        with pytest.raises(StorageError, match=r"s3://bucket/prefix.*unreachable") as ei:
            call()
        assert time.monotonic() - t0 < 15
        assert not isinstance(ei.value, ObjectNotFound)
        assert f"127.0.0.1:{port}" in str(ei.value)
    got = s.read_many(["a", "b"])
    assert all(isinstance(g, StorageError) and not isinstance(g, ObjectNotFound) for g in got)


def test_missing_s3fs_names_the_extra():
    code = textwrap.dedent(
        """
        import sys
        import smdebug, smdebug.trials, smdebug.storage
        smdebug.storage.open_store("/tmp/local-store-probe")
        heavy = [m for m in ("fsspec", "s3fs", "aiobotocore", "botocore", "boto3") if m in sys.modules]
        assert not heavy, heavy
        sys.modules["s3fs"] = None  # as if not installed
        from smdebug.exceptions import MissingDependency
        try:
            smdebug.storage.open_store("s3://bucket/prefix")
        except MissingDependency as exc:
            assert isinstance(exc, ImportError)
            print(exc)
        else:
            raise SystemExit("no MissingDependency")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "s3fs" in proc.stdout and "pip install 'smdebug-open[s3]'" in proc.stdout


# ------------------------------------------------------------------------------- fault injection


def test_fault_injection_reads_and_writes_succeed(store, proxy):
    proxy.configure(error_rate=0.2, reset_rate=0.05, slow_rate=0.05, delay_s=0.2, seed=7)
    rng = np.random.default_rng(3)
    blobs = {f"events/{i:03d}.tfevents": rng.bytes(int(rng.integers(1, 5000))) for i in range(50)}
    with ThreadPoolExecutor(4) as ex:
        list(ex.map(lambda kv: store.write(*kv), blobs.items()))
    keys = list(blobs)
    assert store.read_many(keys) == [blobs[k] for k in keys]
    got = store.read_ranges_many([(k, [(0, 10), (len(blobs[k]) // 2, 100)]) for k in keys])
    assert got == [[blobs[k][:10], blobs[k][len(blobs[k]) // 2 :][:100]] for k in keys]
    assert store.list("events/") == keys
    assert all(store.exists(k) for k in keys[:10])
    counts, faults = proxy.snapshot(), dict(proxy.faults)
    assert faults.get("503", 0) >= 10 and faults.get("reset", 0) >= 1 and faults.get("slow", 0) >= 1, faults
    assert counts["PUT"] > 50 and counts["GET"] > 50 and counts["RANGE"] > 100, counts


# ---------------------------------------------------------------------------------- end to end


def _write_trial(url: str) -> None:
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.modes import ModeKeys
    from smdebug.core.writer import FileWriter

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(2)
    for w in ("worker_0", "worker_1"):
        cm.export(url, f"{w}_collections.json")
    for step in range(0, 12, 2):
        for wi, w in enumerate(("worker_0", "worker_1")):
            mode = ModeKeys.TRAIN if step < 8 else ModeKeys.EVAL
            with FileWriter(trial_dir=url, step=step, worker=w) as fw:
                for t in ("dense/weights", "dense/bias", "loss"):
                    val = np.full((3, 2) if t != "loss" else (), step * 10 + wi, dtype=np.float32)
                    val = val + np.arange(val.size, dtype=np.float32).reshape(val.shape)
                    fw.write_tensor(tdata=val, tname=t, mode=mode, mode_step=step // 2)
    open_store(url).write("training_job_end.ts", b"")


def _snapshot(trial) -> dict:
    from smdebug.core.modes import ModeKeys

    out = {"steps": trial.steps(), "names": sorted(trial.tensor_names()), "workers": sorted(trial.workers())}
    out["train"] = trial.steps(mode=ModeKeys.TRAIN)
    out["eval"] = trial.steps(mode=ModeKeys.EVAL)
    for name in out["names"]:
        t = trial.tensor(name)
        for step in t.steps():
            for w in out["workers"]:
                out[(name, step, w)] = t.value(step, worker=w).tolist()
    return out


def test_trial_on_s3_matches_local(proxy, bucket, tmp_path):
    from smdebug.trials import create_trial

    url = f"s3://{bucket}/t1"
    _write_trial(url)
    _write_trial(str(tmp_path / "t1"))
    proxy.reset()
    remote = create_trial(url)
    opened = _counts(proxy)
    remote_view = _snapshot(remote)
    local_view = _snapshot(create_trial(str(tmp_path / "t1")))
    assert remote_view == local_view
    assert remote_view["steps"] == list(range(0, 12, 2)) and remote_view["names"] == [
        "dense/bias",
        "dense/weights",
        "loss",
    ]
    # opening: list collections, read one, list the index, read its 12 files concurrently
    assert opened.get("LIST", 0) <= 3 and opened.get("GET", 0) == 1 + 12, opened
    assert isinstance(remote.store, S3Store) and remote.path == url


# ----------------------------------------------------------------------- the generic fsspec path


def test_memory_filesystem_store():
    s = open_store("memory://smd-test/store")
    assert isinstance(s, FsspecStore) and not isinstance(s, S3Store)
    for k in ("index/0/a.json", "index/1/b.json", "index2/c", "end"):
        s.write(k, k.encode())
    s.write_chunks("ev", [b"abc", memoryview(b"def")])
    assert s.list("index/") == ["index/0/a.json", "index/1/b.json"]
    assert s.list("index", start_after="index/0/a.json") == ["index/1/b.json"]
    assert s.read("ev") == b"abcdef" and s.read_ranges("ev", [(4, 5), (0, 2)]) == [b"ef", b"ab"]
    got = s.read_many(["end", "nope"])
    assert got[0] == b"end" and isinstance(got[1], ObjectNotFound)
    rr = s.read_ranges_many([("ev", [(1, 2)]), ("nope", [(0, 1)])])
    assert rr[0] == [b"bc"] and isinstance(rr[1], ObjectNotFound)
    assert s.exists("end") and not s.exists("nope")
    s.delete("end")
    s.delete("end")
    assert not s.exists("end") and s.describe("x") == "memory://smd-test/store/x"
    with pytest.raises(ObjectNotFound):
        s.read("end")
