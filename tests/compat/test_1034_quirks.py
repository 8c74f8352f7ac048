"""Behaviours of smdebug 1.0.34 found in its own tests, kept on purpose."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB, index_key
from smdebug.core.modes import ModeKeys
from smdebug.core.writer import FileWriter
from smdebug.exceptions import IndexReaderException
from smdebug.trials import create_trial


def _write(out_dir, step: int, value: np.ndarray) -> None:
    with FileWriter(trial_dir=str(out_dir), step=step, worker="worker_0") as fw:
        fw.write_tensor(tdata=value, tname="w", mode=ModeKeys.TRAIN, mode_step=step)


def test_index_with_empty_event_file_name_keeps_its_step(tmp_path):
    """1.0.34 lists the step and its tensors; reading a value of that step fails, naming the index."""
    _write(tmp_path, 0, np.arange(3, dtype=np.float32))
    _write(tmp_path, 1, np.arange(3, dtype=np.float32) + 1)
    key = tmp_path / index_key(1, "worker_0")
    doc = json.loads(key.read_bytes())
    doc["meta"]["event_file_name"] = ""
    key.write_text(json.dumps(doc))
    cm = CollectionManager()
    cm.add("default")
    cm.export(str(tmp_path), "worker_0_collections.json")
    (tmp_path / END_OF_JOB).write_bytes(b"")

    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 1]
    assert trial.tensor_names(step=1) == ["w"]
    assert trial.tensor("w").steps(mode=ModeKeys.TRAIN) == [0, 1]
    np.testing.assert_array_equal(trial.tensor("w").value(0), np.arange(3, dtype=np.float32))
    with pytest.raises(IndexReaderException, match="event_file_name is empty") as ei:
        trial.tensor("w").value(1)
    assert str(key) in str(ei.value)


@pytest.mark.parametrize("module", ["smdebug.pytorch.collection", "smdebug.pytorch.hook"])
def test_star_import_brings_collection_keys(module):
    """``from smdebug.pytorch.collection import *`` (and .hook) brings CollectionKeys, as in 1.0.34."""
    code = f"from {module} import *\nprint(CollectionKeys.LOSSES, CollectionKeys.WEIGHTS)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["losses", "weights"]
