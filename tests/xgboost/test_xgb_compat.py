"""A trial written by our XGBoost hook loads in smdebug 1.0.34's create_trial with the same answers."""

from __future__ import annotations

import math
import sys

import pytest
from xgbutil import full_hook, task, train

from smdtest import ORACLE, flatten_oracle, run_json


def _known_defect(key, ours, theirs) -> bool:
    """1.0.34 answers wrongly (fixtures/README.md): tensor_names(mode=M) with no tensor in M raises;
    a reduction of text raises in both, with different exception types."""
    if key[-1].startswith("red_") and isinstance(ours, dict) and isinstance(theirs, dict):
        return "raises" in ours and "raises" in theirs
    return key[0].startswith("tensor_names_") and theirs == {"raises": "KeyError"} and ours == []


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_peer_reads_our_xgboost_trial(tmp_path, peer):
    t = task("binary", feature_names=True)
    train(t, full_hook(tmp_path / "run", t, interval=2), rounds=5)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTHONPATH", raising=False)  # the peer imports its own smdebug, whatever ours is run from
        theirs = run_json(peer, ORACLE, tmp_path / "run")
    ours = run_json(sys.executable, ORACLE, tmp_path / "run")
    assert theirs["steps"] == [0, 2, 4] and theirs["workers"] == ["worker_0"]
    names = theirs["tensor_names"]
    assert {
        "train-logloss",
        "validation-auc",
        "predictions",
        "labels",
        "trees/Feature",
        "full_shap/mean_radius",
        "average_shap/bias",
        "hyperparameters/eval_metric",
        "feature_importance/gain/worst_radius",
    } <= set(names)
    assert set(theirs["collections"]) >= {"metrics", "losses", "feature_importance", "trees", "full_shap"}
    t_flat, o_flat = flatten_oracle(theirs), flatten_oracle(ours)
    assert set(t_flat) == set(o_flat)
    mismatches = [k for k in t_flat if not _same(t_flat[k], o_flat[k]) and not _known_defect(k, o_flat[k], t_flat[k])]
    assert not mismatches, [(k, o_flat[k], t_flat[k]) for k in mismatches[:10]]
    # real values were compared: numbers and text
    assert theirs["tensors"]["predictions"]["per_step"]["4"]["value@worker_0"]["shape"] == [t.valid.num_row()]
    assert theirs["tensors"]["trees/Feature"]["per_step"]["2"]["value@worker_0"]["strings"][-1] == "Leaf"
    assert theirs["tensors"]["hyperparameters/eval_metric"]["per_step"]["0"]["value@worker_0"] == {
        "strings": ["logloss", "auc", "error"]
    }
