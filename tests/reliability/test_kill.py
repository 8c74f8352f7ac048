"""SIGKILL while a PyTorch hook writes, 20 times at random points (kill_trainer.py forks the trainers).

After each kill: every index file on disk parses (a new reader never meets a half-written one),
every step the trial lists is readable with its exact values, no temporary file is taken for data,
and the steps listed are 0..n-1 with n at least the number the test saw written before the kill.
The seed is $SMDEBUG_KILL_SEED (default 15); the summary line gives what was produced.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import numpy as np

from smdebug.codec.index import decode_index
from smdebug.trials import create_trial

KILLS = 20
MARKER = 262_144  # kill_trainer.MARKER


def _index_files(out: Path) -> list[Path]:
    folder = out / "index"
    if not folder.is_dir():
        return []
    return [p for p in folder.rglob("*") if p.is_file()]


def _n_index(out: Path) -> int:
    return sum(1 for p in _index_files(out) if p.name.endswith(".json"))


def _check_after_kill(out: Path, seen: int) -> dict:
    files = _index_files(out)
    for p in files:
        if p.name.endswith(".json"):
            parsed = decode_index(p.read_bytes(), str(p))  # raises if half-written
            assert not parsed.event_file_name.endswith(".tmp")
    trial = create_trial(str(out))
    assert trial.bad_index_files == {}
    steps = trial.steps()
    assert steps == list(range(len(steps))) and len(steps) >= seen
    marker = trial.tensor("marker")
    for s in steps:
        np.testing.assert_array_equal(marker.value(s), np.full((MARKER,), float(s), np.float32))
        for name in trial.tensor_names(step=s):
            v = trial.tensor(name).value(s)
            assert np.isfinite(v).all()
    tmp = [p for p in out.rglob("*.tmp")]
    return {"steps": len(steps), "tmp": len(tmp)}


def test_sigkill_at_random_points_while_writing(trainer, tmp_path):
    seed = int(os.environ.get("SMDEBUG_KILL_SEED", "15"))
    rng = random.Random(seed)
    survived, steps_read, tmp_left, still_writing = 0, 0, 0, 0
    for i in range(KILLS):
        out = tmp_path / f"run{i}"
        pid = trainer.start(out=str(out), seed=i)
        want = rng.randint(1, 10)
        deadline = time.monotonic() + 60
        coll = out / "collections" / "000000000" / "worker_0_collections.json"
        while (_n_index(out) < want or not coll.exists()) and time.monotonic() < deadline:
            time.sleep(0.001)  # polling the folder for the files the trainer writes, bounded
        seen = _n_index(out)
        assert seen >= want, f"the trainer wrote {seen} steps in 60 s"
        spin_until = time.perf_counter() + rng.uniform(0, 0.005)  # a random point within the next step
        while time.perf_counter() < spin_until:
            pass
        os.kill(pid, signal.SIGKILL)
        status = trainer.wait()
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        got = _check_after_kill(out, seen)
        survived += 1
        steps_read += got["steps"]
        tmp_left += got["tmp"]
        still_writing += got["steps"] > seen
    print(
        f"\nkills survived: {survived}/{KILLS} (seed {seed}); steps read back: {steps_read}; "
        f"runs killed with a temporary file on disk: {tmp_left}; runs that wrote on after the count: {still_writing}"
    )
    assert survived == KILLS
