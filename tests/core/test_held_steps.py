"""A step held open (BaseHook.hold_step) while the hook goes on with later steps: completed and
written once, under its own number and mode, after them (how Keras' epoch logs and a trainer's
training logs reach the TRAIN step before an evaluation)."""

from __future__ import annotations

import numpy as np

from smdebug.core.hook import BaseHook
from smdebug.core.save_config import SaveConfig
from smdebug.modes import ModeKeys
from smdebug.trials import create_trial


def _hook(tmp_path, interval):
    return BaseHook(out_dir=str(tmp_path / "t"), save_config=SaveConfig(save_interval=interval))


def test_a_held_step_is_written_after_the_later_steps_with_what_was_added_to_it(tmp_path):
    hook = _hook(tmp_path, 1)
    hook.set_mode(ModeKeys.TRAIN)
    hook._begin_step()  # step 0, TRAIN
    hook.save_tensor("w", np.arange(3.0))
    held = hook.hold_step()
    hook.set_mode(ModeKeys.EVAL)
    hook._begin_step()  # step 1, EVAL
    hook.save_tensor("e", np.ones(2))
    hook._begin_step()  # step 1 is handed to the writer; step 2
    assert hook.last_saved_step == 1

    def add():
        hook.save_scalar("val_loss", 0.25)
        hook.keep_step()

    hook.complete_held(held, add)
    assert (hook.step, hook.recording_mode, hook.last_saved_step) == (2, ModeKeys.EVAL, 1)
    hook.close()
    trial = create_trial(hook.out_dir)
    assert trial.steps() == [0, 1]
    assert trial.mode_modestep(0) == (ModeKeys.TRAIN, 0)
    assert trial.mode_modestep(1) == (ModeKeys.EVAL, 0)
    np.testing.assert_allclose(trial.tensor("w").value(0), np.arange(3.0))
    np.testing.assert_allclose(trial.tensor("scalar/val_loss").value(0), [0.25])
    assert trial.tensor("scalar/val_loss").steps() == [0]


def test_scalars_added_to_a_held_step_that_saves_nothing_go_with_the_next_saved_step(tmp_path):
    hook = _hook(tmp_path, 2)  # steps 0 and 2 save
    hook.set_mode(ModeKeys.TRAIN)
    hook._begin_step()
    hook.save_tensor("w", np.arange(3.0))
    hook._begin_step()  # step 1 saves nothing
    held = hook.hold_step()
    hook.set_mode(ModeKeys.EVAL)
    hook._begin_step()  # step 2 saves
    hook.complete_held(held, lambda: hook.save_scalar("x", 1.5))
    assert hook.last_saved_step == 0  # step 1 was not written
    hook.close()
    trial = create_trial(hook.out_dir)
    assert trial.steps() == [0, 2]
    assert trial.tensor("scalar/x").steps() == [2]
    np.testing.assert_allclose(trial.tensor("scalar/x").value(2), [1.5])
