"""Readers and a writer at once: three reader processes open and refresh a trial while two workers
write it (on a local folder, and on S3 against the moto server).

Each reader checks at every refresh that no step is listed twice or out of order, that no step it
listed before is missing, and that each new step has every worker's exact value; at the end each
has seen every step exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB
from smdebug.core.writer import FileWriter
from smdebug.storage import open_store

READER = Path(__file__).with_name("reader_proc.py")
SRC = str(Path(__file__).resolve().parents[2] / "src")
STEPS = {"local": 30, "s3": 8}
WORKERS = ["worker_0", "worker_1"]


def _value(step: int, worker: int) -> np.ndarray:
    return np.full((4,), step * 10 + worker, np.float32)


def _write(url: str, steps: int, readers) -> None:
    """Both workers' steps, worker_1 one step behind worker_0; after each round, until every
    reader has listed the steps complete so far (so that each refreshes while the next is written)."""
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(len(WORKERS))
    for s in range(steps + 1):
        for i, w in enumerate(WORKERS):
            step = s - i
            if 0 <= step < steps:
                with FileWriter(trial_dir=url, step=step, worker=w) as fw:
                    fw.write_tensor(tdata=_value(step, i), tname="t")
                if step == 0:
                    cm.export(url, f"{w}_collections.json")
        if s < steps:
            for r in readers:
                while True:
                    line = r.stdout.readline()
                    assert line.startswith("n "), f"reader said {line!r}: {r.stderr.read()[-3000:]}"
                    if int(line.split()[1]) >= s:
                        break
    open_store(url).write(END_OF_JOB, b"")


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_three_readers_while_two_workers_write(backend, tmp_path, request):
    if backend == "s3":
        url = f"s3://{request.getfixturevalue('bucket')}/trial"
    else:
        url = str(tmp_path / "trial")
    steps = STEPS[backend]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]), SMDEBUG_POLL_INTERVAL="0.01"
    )
    readers = [
        subprocess.Popen(
            [sys.executable, str(READER), url, str(steps), str(len(WORKERS))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    try:
        _write(url, steps, readers)
        results = []
        for r in readers:
            out, err = r.communicate(timeout=150)
            assert r.returncode == 0, err[-3000:]
            results.append(json.loads(out.splitlines()[-1]))
    finally:
        for r in readers:
            if r.poll() is None:
                r.kill()
                r.wait()
    for res in results:
        assert res["violations"] == []
        assert res["ended"] and res["steps"] == list(range(steps))
    print(f"\n{backend}: refreshes per reader {[r['refreshes'] for r in results]}")
