"""A resumed job (spot training from a checkpoint) continues the step numbers of the steps its
worker already wrote into the folder, in every mode, and writes none of them again."""

from __future__ import annotations

import numpy as np
from ptutil import WEIGHTS, mlp, train

import smdebug.pytorch as smd
from smdebug.core.locations import END_OF_JOB
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

EVERY = {"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["weights"]}


def test_a_resumed_job_continues_after_the_steps_in_the_folder(tmp_path):
    out = tmp_path / "t"
    model = mlp()
    _, first, _, _ = train(out, "TTTE", model=model, hook_kwargs=EVERY)
    (out / END_OF_JOB).unlink()  # interrupted: no end-of-training marker
    _, second, hook, _ = train(out, "TTEP", model=model, hook_kwargs=EVERY)
    assert hook.resumed_from == 3
    trial = create_trial(str(out))
    assert trial.steps() == list(range(8))
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3, 4]
    assert trial.steps(mode=ModeKeys.EVAL) == [0, 1]
    assert trial.steps(mode=ModeKeys.PREDICT) == [0]
    assert [trial.global_step(ModeKeys.TRAIN, s) for s in range(5)] == [0, 1, 2, 4, 5]
    weight = WEIGHTS[0]
    for g, rec in enumerate(first + second):  # the first job's steps are kept as it wrote them
        np.testing.assert_array_equal(trial.tensor(weight).value(g), rec.params[weight])
