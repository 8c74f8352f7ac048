"""The disk fills up, the out_dir becomes unwritable, or is deleted while a PyTorch hook writes.

Real faults in a forked trainer (kill_trainer.py): RLIMIT_FSIZE makes every write past 512 kB fail
with EFBIG, as a full disk fails with ENOSPC; file modes are taken away from a trainer running as
an unprivileged user; the out_dir is removed while the trainer waits between two steps. Each time
training runs to its end exactly as without the hook's trouble (same losses, same parameters), the
hook says once what it could not write (and once more, at close, how much), and every step written
before the fault reads back exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.trials import create_trial

STEPS = 12
MARKER = 262_144  # kill_trainer.MARKER
NOBODY = 65534


@pytest.fixture(scope="module")
def reference(trainer, tmp_path_factory):
    """Losses and parameters of the same training with nothing going wrong."""
    work = tmp_path_factory.mktemp("reference")
    trainer.start(out=str(work / "out"), seed=3, steps=STEPS, big_from=6, workdir=str(work))
    assert trainer.wait() == 0
    return json.loads((work / "report.json").read_text())


@pytest.fixture
def work():
    """A folder the unprivileged trainer can write to (pytest's tmp folders are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="smd-disk-"))
    os.chmod(d, 0o777)
    try:
        yield d
    finally:
        for p in [d, *d.rglob("*")]:
            if p.is_dir() and not p.is_symlink():
                os.chmod(p, 0o777)
        shutil.rmtree(d)


def _wait_for(cond, what: str) -> None:
    deadline = time.monotonic() + 60
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)  # polling for files the trainer writes, bounded


def _finish(trainer, work: Path, reference: dict) -> list[str]:
    status = trainer.wait()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (work / "log").read_text()[-3000:]
    report = json.loads((work / "report.json").read_text())
    assert report["losses"] == reference["losses"]  # training went on, untouched
    assert report["params"] == reference["params"]
    assert len(report["losses"]) == STEPS
    errors = [line for line in (work / "log").read_text().splitlines() if line.startswith(("ERROR", "WARNING"))]
    print("\n".join(errors))
    return errors


def _assert_steps_exact(trial, steps) -> None:
    marker = trial.tensor("marker")
    for s in steps:
        size = MARKER if s >= 6 else 1024
        np.testing.assert_array_equal(marker.value(s), np.full((size,), float(s), np.float32))
        for name in trial.tensor_names(step=s):
            assert np.isfinite(trial.tensor(name).value(s)).all()


def _assert_said_once(errors: list[str], lost: int, out: Path) -> None:
    first = [e for e in errors if "could not write step" in e]
    summary = [e for e in errors if "could not be written" in e]
    assert len(first) == 1, errors
    assert len(summary) == 1 and f"{lost} step(s)" in summary[0] and str(out) in summary[0], errors
    assert len(errors) == 2, errors


def test_disk_full(trainer, work, reference):
    """From step 6 on each step's event file is 1 MB, more than the 512 kB the trainer may write."""
    out = work / "out"
    trainer.start(out=str(out), seed=3, steps=STEPS, big_from=6, workdir=str(work), fsize=512 * 1024)
    errors = _finish(trainer, work, reference)
    _assert_said_once(errors, STEPS - 6, out)
    assert "File too large" in errors[0]
    assert list(out.rglob("*.tmp")) == []  # no partial file is left to fill the disk further
    trial = create_trial(str(out))
    assert trial.steps() == list(range(6))
    assert trial.bad_index_files == {}
    _assert_steps_exact(trial, range(6))
    assert trial.loaded_all_steps or (out / "training_job_end.ts").exists()


@pytest.mark.skipif(not hasattr(os, "setuid"), reason="needs POSIX users")
def test_out_dir_becomes_unwritable(trainer, work, reference):
    uid = NOBODY if os.geteuid() == 0 else -1  # root ignores file modes: train as nobody
    out = work / "out"
    trainer.start(out=str(out), seed=3, steps=STEPS, big_from=6, workdir=str(work), pause_at=5, uid=uid)
    _wait_for(lambda: (work / "paused").exists(), "the trainer to pause")
    _wait_for(lambda: (out / "index" / "000000000" / "000000000003_worker_0.json").exists(), "step 3")
    ro = stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    for d in (out / "events", out / "index" / "000000000"):
        os.chmod(d, ro)
    (work / "go").touch()
    errors = _finish(trainer, work, reference)
    # step 4 was handed to the writer when step 5 began, after the modes changed: 4..11 are lost
    _assert_said_once(errors, STEPS - 4, out)
    assert "Permission denied" in errors[0]
    trial = create_trial(str(out))
    assert trial.steps() == list(range(4))
    _assert_steps_exact(trial, range(4))


def test_out_dir_deleted_mid_run(trainer, work, reference):
    out = work / "out"
    trainer.start(out=str(out), seed=3, steps=STEPS, big_from=6, workdir=str(work), pause_at=5)
    _wait_for(lambda: (work / "paused").exists(), "the trainer to pause")
    _wait_for(lambda: (out / "index" / "000000000" / "000000000003_worker_0.json").exists(), "step 3")
    shutil.rmtree(out)
    (work / "go").touch()
    errors = _finish(trainer, work, reference)
    assert errors == []  # nothing failed to write: the folder is made again
    # the steps written after the deletion form a trial of their own, with its collections file
    trial = create_trial(str(out))
    assert trial.steps() == list(range(4, STEPS))
    _assert_steps_exact(trial, range(4, STEPS))
