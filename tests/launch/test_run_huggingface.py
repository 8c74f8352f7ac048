"""`smdebug run` on a Hugging Face Trainer script that imports nothing of smdebug: the model
computes its loss itself (a new CrossEntropyLoss at each call) and returns it as ``output.loss``;
the loss is saved at every scheduled step, TRAIN and EVAL, and the Trainer's evaluations are
EVAL steps (tests/launch/scripts/hf_trainer.py: 40 optimizer steps, an evaluation of one batch
after each of its 10 epochs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import smdebug
from smdebug import modes
from smdebug.trials import create_trial

SCRIPT = str(Path(__file__).parent / "scripts" / "hf_trainer.py")


def test_a_trainer_script_saves_its_models_loss_every_5th_step_in_train_and_eval(tmp_path):
    pytest.importorskip("transformers")
    lines: list[str] = []
    result = smdebug.launch(
        [sys.executable, SCRIPT, str(tmp_path / "log.json")],
        run_dir=str(tmp_path / "run"),
        collection_configs=["losses:save_interval=5"],
        name="hf",
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    history = json.loads((tmp_path / "log.json").read_text())
    trial = create_trial(result.out_dir)
    assert trial.tensor_names(collection="losses") == ["loss_output_0"]  # no CrossEntropyLoss_output_0
    loss = trial.tensor("loss_output_0")
    # 40 TRAIN steps (the Trainer's optimizer steps), 10 EVAL steps (one batch per evaluation)
    assert loss.steps(mode=modes.TRAIN) == list(range(0, 40, 5))
    assert loss.steps(mode=modes.EVAL) == [0, 5]
    # the Trainer logs each step's loss (logging_steps=1, no accumulation) at step k + 1
    logged = {e["step"] - 1: e["loss"] for e in history if "loss" in e}
    assert sorted(logged) == list(range(40))
    np.testing.assert_allclose(
        [float(loss.value(s, mode=modes.TRAIN)) for s in range(0, 40, 5)],
        [logged[s] for s in range(0, 40, 5)],
        rtol=1e-4,
    )
    # each evaluation is one batch: its eval_loss is that EVAL step's loss (evaluations 1 and 6)
    evals = [e["eval_loss"] for e in history if "eval_loss" in e]
    assert len(evals) == 10
    np.testing.assert_allclose([float(loss.value(s, mode=modes.EVAL)) for s in (0, 5)], [evals[0], evals[5]], rtol=1e-4)
