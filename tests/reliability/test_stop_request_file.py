"""Whatever lies at the stop request's key, reading it never hangs, never takes much memory, and
never logs more than a short reason: a FIFO and a link to /dev/zero are not requests (training
goes on), a huge object is a malformed request, a long reason is cut."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest

from smdebug.core import stop_request
from smdebug.core.locations import STOP_REQUEST_KEY
from smdebug.core.stop_request import MAX_REQUEST_BYTES, StopRequestWatcher, read_stop_request
from smdebug.storage import open_store
from smdebug.storage.base import Store

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/zero")

# Runs in a child process, so that a hang fails the test (timeout) instead of hanging the suite,
# and a runaway read fails it (address-space limit) instead of exhausting the machine.
CHILD = textwrap.dedent("""
    import json, logging, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    import numpy as np
    from smdebug.core.hook import BaseHook
    from smdebug.core.save_config import SaveConfig
    hook = BaseHook(out_dir=sys.argv[1], save_config=SaveConfig(save_interval=1))
    hook.stop_watcher.interval = 0.0
    seen = []
    for _ in range(3):
        seen.append(hook.stop_requested() is not None)
        hook._begin_step()
        hook.save_tensor("a", np.ones(2))
    hook.close()
    print(json.dumps({"seen": seen, "step": hook.step}))
""")


def _child(out_dir) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(out_dir)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _key_path(out_dir):
    path = out_dir / STOP_REQUEST_KEY
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@posix_only
def test_a_fifo_at_the_key_does_not_hang_training(tmp_path):
    out = tmp_path / "t"
    os.mkfifo(_key_path(out))
    result, log = _child(out)
    assert result == {"seen": [False, False, False], "step": 2}
    assert "is not a regular file" in log and log.count("is not a regular file") == 1


@posix_only
def test_a_link_to_dev_zero_does_not_exhaust_memory(tmp_path):
    out = tmp_path / "t"
    os.symlink("/dev/zero", _key_path(out))
    result, log = _child(out)
    assert result == {"seen": [False, False, False], "step": 2}
    assert "is not a regular file" in log


def test_a_5_mb_request_is_malformed_and_not_logged_whole(tmp_path, caplog):
    out = tmp_path / "t"
    _key_path(out).write_text(json.dumps({"rule": "R", "step": 3, "reason": "x" * (5 << 20)}))
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        req = StopRequestWatcher(open_store(str(out)), interval=0.0).check()
    assert req.rule == "unknown" and "larger than" in req.reason
    assert len(caplog.text) < 2000


def test_a_long_reason_is_cut_in_the_request_and_the_log(tmp_path, caplog):
    import numpy as np

    from smdebug.core.hook import BaseHook

    out = tmp_path / "t"
    _key_path(out).write_text(json.dumps({"rule": "LossNotDecreasing", "step": 3, "reason": "y" * 50_000}))
    hook = BaseHook(out_dir=str(out))
    hook.stop_watcher.interval = 0.0
    hook._begin_step()
    hook.save_tensor("a", np.ones(2))
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        req = hook.stop_requested()
    hook.close()
    assert req.rule == "LossNotDecreasing" and req.step == 3
    assert req.reason.startswith("y" * 1000) and req.reason.endswith("(49000 more characters)")
    assert "LossNotDecreasing" in caplog.text and len(caplog.text) < 2000


def test_deeply_nested_json_is_a_malformed_request(tmp_path):
    out = tmp_path / "t"
    _key_path(out).write_text("[" * 30_000 + "]" * 30_000)
    req = read_stop_request(open_store(str(out)))
    assert req.rule == "unknown" and "malformed" in req.reason


def test_a_request_at_the_limit_is_read(tmp_path):
    out = tmp_path / "t"
    doc = {"rule": "R", "step": 1, "reason": ""}
    doc["reason"] = "z" * (MAX_REQUEST_BYTES - len(json.dumps(doc)))
    _key_path(out).write_text(json.dumps(doc))
    assert len((out / STOP_REQUEST_KEY).read_bytes()) == MAX_REQUEST_BYTES
    req = read_stop_request(open_store(str(out)))
    assert (req.rule, req.step) == ("R", 1)


class _BigObjectStore(Store):
    """Object storage holding a huge object at the key: only ranged reads are allowed."""

    url = "mem://bucket/t"
    remote = True

    def __init__(self, size):
        self.size, self.asked = size, []

    def read(self, key):
        raise AssertionError("the whole object was read")

    def read_ranges(self, key, ranges):
        self.asked.extend(ranges)
        return [b"{" * min(length, self.size - start) for start, length in ranges]

    def write(self, key, data):
        raise AssertionError

    def list(self, prefix, start_after=None):
        return []

    def exists(self, key):
        return key == STOP_REQUEST_KEY

    def delete(self, key):
        raise AssertionError


def test_object_storage_reads_a_bounded_range():
    store = _BigObjectStore(size=1 << 40)
    req = StopRequestWatcher(store, interval=0.0).check()
    assert req.rule == "unknown"
    assert store.asked == [(0, MAX_REQUEST_BYTES + 1)]
    assert stop_request.MAX_REQUEST_BYTES == 64 * 1024


@pytest.mark.parametrize("t", ["9" * 400, "1e999", "true", '"noon"'])
def test_a_time_that_is_no_number_of_seconds_is_zero(tmp_path, t):
    out = tmp_path / "t"
    _key_path(out).write_text('{"rule": "R", "step": 4, "reason": "r", "time": ' + t + "}")
    req = StopRequestWatcher(open_store(str(out)), interval=0.0).check()
    assert (req.rule, req.step, req.reason, req.time) == ("R", 4, "r", 0.0)
