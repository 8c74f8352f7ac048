"""S3 with faults while large values are written and read: the fault-injecting proxy answers 503,
resets connections before answering, breaks GET bodies off half way (a reset mid-body, or a clean
close: a truncated body). Nothing is lost, every fault costs exactly one more request (bounded
retries), and an endpoint that is gone gives a clear error within seconds.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from s3server import S3Proxy, free_port
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB
from smdebug.core.writer import FileWriter
from smdebug.exceptions import StorageError
from smdebug.storage import open_store
from smdebug.trials import create_trial

STEPS = 3
NAMES = ("big_a", "big_b")
FAULTS = {"error_rate": 0.15, "reset_rate": 0.1, "midbody_rate": 0.15, "truncate_rate": 0.15}


def _value(name: str, step: int) -> np.ndarray:
    rng = np.random.default_rng([step, NAMES.index(name)])
    return rng.standard_normal((3, 512, 512)).astype(np.float32)  # 3 MB


def _write(url: str) -> None:
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(url, "worker_0_collections.json")
    for s in range(STEPS):
        with FileWriter(trial_dir=url, step=s, worker="worker_0") as fw:
            for n in NAMES:
                fw.write_tensor(tdata=_value(n, s), tname=n)
    open_store(url).write(END_OF_JOB, b"")


def _read_all(url: str) -> None:
    trial = create_trial(url)
    assert trial.steps() == list(range(STEPS))
    for n in NAMES:
        got = trial.tensor(n).values()
        assert sorted(got) == list(range(STEPS))
        for s, v in got.items():
            np.testing.assert_array_equal(v, _value(n, s))


def _run(proxy, url: str, faults: dict) -> dict:
    proxy.reset()
    proxy.configure(seed=7, fault_attempts=3, max_faults_per_request=2, **faults)
    _write(url)
    _read_all(url)
    return {"requests": sum(proxy.counts.values()), "faults": dict(proxy.faults)}


def test_large_values_through_faults(proxy, bucket):
    clean = _run(proxy, f"s3://{bucket}/clean", {})
    assert clean["faults"] == {}
    faulty = _run(proxy, f"s3://{bucket}/faulty", FAULTS)
    n_faults = sum(faulty["faults"].values())
    print(
        f"\nS3 faults injected: {n_faults} {faulty['faults']}; requests {faulty['requests']} "
        f"(without faults {clean['requests']})"
    )
    assert set(faulty["faults"]) == {"503", "reset", "midbody", "truncate"}
    # bounded retries: each fault cost one more request, no more
    assert faulty["requests"] == clean["requests"] + n_faults


def test_endpoint_gone_for_good(aws_env, bucket, monkeypatch):
    """A trial opened through an endpoint that then goes away: the next read fails with a
    StorageError naming the object and the endpoint, after a few quick attempts."""
    url = f"s3://{bucket}/gone"
    _write(url)
    own = S3Proxy(aws_env)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", own.url)
    trial = create_trial(url)
    assert trial.steps() == list(range(STEPS))
    own.close()
    t0 = time.monotonic()
    with pytest.raises(StorageError) as ei:
        trial.tensor("big_a").value(1)
    took = time.monotonic() - t0
    msg = str(ei.value)
    assert f"s3://{bucket}/gone/events/000000000001" in msg and own.url in msg and "unreachable" in msg, msg
    assert took < 15, took
    # and a trial opened where nothing listens at all
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", dead)
    t0 = time.monotonic()
    with pytest.raises(StorageError) as ei:
        create_trial(url)
    assert dead in str(ei.value) and f"s3://{bucket}/gone" in str(ei.value), str(ei.value)
    assert time.monotonic() - t0 < 15
