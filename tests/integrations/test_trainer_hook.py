"""The trainer callbacks' driver (smdebug.integrations._common.TrainerHook) without a trainer: a
TRAIN step held open across an evaluation is written when the hook closes, with its logged values,
in its mode (nothing of it is lost when training ends mid-evaluation)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
from torch import nn  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug import modes  # noqa: E402
from smdebug.integrations._common import TrainerHook  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402


def test_a_train_step_held_across_an_evaluation_is_written_at_close(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=100))
    th = TrainerHook.of(hook, "test")
    assert TrainerHook.of(hook, "test") is th  # one per hook
    th.attach(nn.Linear(2, 1), train_steps_only=False)
    for step in range(3):
        th.begin_step(modes.TRAIN, step)
    th.save_metrics({"loss": 0.5, "note": "not a number"}, modes.TRAIN)  # TRAIN step 2: not a scheduled step
    th.begin_step(modes.EVAL, hold=True)  # an evaluation inside training: TRAIN step 2 is held open
    th.save_metrics({"eval_loss": 0.25}, modes.EVAL)
    hook.close()  # training ended mid-evaluation: the held step is written too
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor("scalar/loss").steps(mode=modes.TRAIN) == [2]
    assert trial.tensor("scalar/loss").steps(mode=modes.EVAL) == []
    assert trial.tensor("scalar/eval_loss").steps(mode=modes.EVAL) == [0]
    assert "scalar/note" not in trial.tensor_names()
    assert float(trial.tensor("scalar/loss").value(2, mode=modes.TRAIN)[0]) == pytest.approx(0.5)
