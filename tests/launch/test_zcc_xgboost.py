"""Zero-code-change XGBoost: xgb.train and XGBClassifier().fit under ``smdebug run`` leave the trial
names of the same script hooked by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.trials import create_trial

pytest.importorskip("xgboost")

SCRIPT = str(Path(__file__).parent / "scripts" / "xgb_train.py")
COLLECTIONS = ["metrics:save_interval=1", "feature_importance:save_interval=1"]


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


@pytest.mark.parametrize("api, metric", [("train", "validation-logloss"), ("sklearn", "validation_0-logloss")])
def test_unmodified_xgboost_gives_the_explicit_names(tmp_path, api, metric):
    zcc = _run(tmp_path, "zcc", ["--api", api], True)
    explicit = _run(tmp_path, "explicit", ["--api", api, "--explicit"], False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert metric in zcc.tensor_names() and "feature_importance/gain/f0" in zcc.tensor_names()
    assert zcc.steps() == explicit.steps() == [0, 1, 2, 3, 4]
    assert zcc.tensor(metric).value(4) == pytest.approx(explicit.tensor(metric).value(4), rel=1e-6)


def test_the_script_with_its_own_hook_keeps_it(tmp_path, capfd):
    lines = []
    result = smdebug.launch(
        [sys.executable, SCRIPT, "--explicit"],
        run_dir=str(tmp_path / "r"),
        collection_configs=COLLECTIONS,
        echo=lines.append,
    )
    assert result.exit_code == 0
    assert create_trial(result.out_dir).steps() == [0, 1, 2, 3, 4]
    assert "attached to" not in capfd.readouterr().err  # no second hook


def test_the_attach_line_is_printed(tmp_path, capfd):
    _run(tmp_path, "zcc", [], True)
    assert "smdebug: attached to xgboost.train via zero-code-change" in capfd.readouterr().err
