"""Zero-code-change Keras 3: fit with validation data and evaluate under ``smdebug run`` leave the
trial of the same script given a KerasHook by hand (TensorFlow takes ~10 s to import: one pair)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.trials import create_trial

pytest.importorskip("tensorflow")

SCRIPT = str(Path(__file__).parent / "scripts" / "keras_fit.py")
COLLECTIONS = ["weights:save_interval=1", "losses:save_interval=1", "metrics:save_interval=1"]


def _run(tmp_path, name, args, zcc):
    lines = []
    result = smdebug.launch(
        [sys.executable, SCRIPT, *args],
        run_dir=str(tmp_path / name),
        name=name,
        collection_configs=COLLECTIONS,
        zcc=zcc,
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    return create_trial(result.out_dir)


def test_unmodified_keras_fit_gives_the_explicit_trial(tmp_path, capfd):
    zcc = _run(tmp_path, "zcc", [], True)
    err = capfd.readouterr().err
    assert err.count("smdebug: attached to Sequential") == 1 and "attach to Keras failed" not in err
    explicit = _run(tmp_path, "explicit", ["--explicit"], False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert "dense/weights/dense/kernel:0" in zcc.tensor_names() and "loss" in zcc.tensor_names()
    assert zcc.steps() == explicit.steps()
    assert [m.name for m in zcc.modes()] == [m.name for m in explicit.modes()] == ["TRAIN", "EVAL"]
    last = zcc.steps()[-1]
    assert zcc.tensor("loss").value(last) == pytest.approx(explicit.tensor("loss").value(last), rel=1e-4)


def test_vanishing_gradient_on_gradients_without_the_abs_mean_ends_error_saying_what_to_add(tmp_path):
    # gradients saved as l2/max/mean/min reductions: VanishingGradient judges nothing, and says why
    result = smdebug.launch(
        [sys.executable, SCRIPT],
        run_dir=str(tmp_path / "r"),
        name="vg",
        collection_configs=["gradients:reductions=l2_norm,max,mean,min"],
        rules=["vanishing_gradient"],
        echo=lambda line: None,
    )
    assert result.exit_code == 0
    (rule,) = result.rules
    assert rule["RuleEvaluationStatus"] == "Error", rule
    details = rule["StatusDetails"]
    assert "VanishingGradient: evaluated no tensor" in details
    assert "saved only as reductions (l2, max, mean, min)" in details and 'abs_reductions=["mean"]' in details
