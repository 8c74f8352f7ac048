"""Zero-code-change MXNet Gluon: an unmodified loop under ``smdebug run`` (the job run by the
MXNet virtualenv's python) leaves the names of the loop hooked by hand."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import smdebug
from smdebug.trials import create_trial

REPO = Path(__file__).resolve().parents[2]
MXPY = os.environ.get("SMDEBUG_MXNET_PYTHON") or str(REPO / ".venv-mxnet" / "bin" / "python")
SCRIPT = str(Path(__file__).parent / "scripts" / "gluon_mlp.py")
COLLECTIONS = ["weights:save_interval=1", "losses:save_interval=1"]

pytestmark = pytest.mark.skipif(
    not os.path.exists(MXPY),
    reason=f"no MXNet virtualenv python at {MXPY} (make mxnet-venv, or set SMDEBUG_MXNET_PYTHON)",
)


def _run(tmp_path, name, args, zcc):
    lines = []
    result = smdebug.launch(
        [MXPY, SCRIPT, *args],
        run_dir=str(tmp_path / name),
        name=name,
        collection_configs=COLLECTIONS,
        zcc=zcc,
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    return create_trial(result.out_dir)


def test_unmodified_gluon_loop_gives_the_explicit_names(tmp_path, capfd):
    zcc = _run(tmp_path, "zcc", [], True)
    assert "smdebug: attached to HybridSequential 'hybridsequential0'" in capfd.readouterr().err
    explicit = _run(tmp_path, "explicit", ["--explicit"], False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert "softmaxcrossentropyloss0_output_0" in zcc.tensor_names(collection="losses")
    assert zcc.steps() == explicit.steps() == [0, 1, 2, 3]


def test_the_loop_with_its_own_hook_keeps_it(tmp_path, capfd):
    trial = _run(tmp_path, "own", ["--explicit"], True)
    assert "attached to" not in capfd.readouterr().err
    assert trial.steps() == [0, 1, 2, 3]
