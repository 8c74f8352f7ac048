"""A rule's stop request ends Keras training in every case: a GradientTape loop, a request seen at
a validation batch of ``fit``, a hook that disabled itself, and a step that already held records."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from kerasutil import compile_sgd, digits, sequential

import smdebug.tensorflow as smd
from smdebug.core.stop_request import write_stop_request
from smdebug.exceptions import TrainingStopRequested
from smdebug.storage import open_store
from smdebug.trials import create_trial

BS = 32  # 160 samples: 5 training batches an epoch


def make_hook(out, interval=1, colls=("losses",)):
    hook = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=interval), include_collections=list(colls))
    hook.stop_watcher.interval = 0.0  # look at every step boundary
    return hook


def ask_stop(out, step=2):
    write_stop_request(open_store(str(out)), "LossNotDecreasing", step, "flat")


def break_hook(hook):
    def boom(*args, **kwargs):
        raise RuntimeError("a failure inside the hook")

    hook._save = boom


def tape_loop(hook, model, steps, on_step=None):
    """An eager custom loop with a wrapped tape and optimizer; returns the steps it trained."""
    x, y = digits()
    opt = hook.wrap_optimizer(keras.optimizers.SGD(0.1))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    done = 0
    for i in range(steps):
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = loss_fn(y[:BS], model(x[:BS], training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply(grads, model.trainable_variables)
        done += 1
        if on_step is not None:
            on_step(i)
    return done


@pytest.mark.parametrize("disabled", [False, True], ids=["enabled", "disabled"])
def test_wrapped_tape_raises_at_the_next_step(tmp_path, disabled):
    out = tmp_path / "t"
    model = sequential()
    hook = make_hook(out, colls=["losses", "weights", "gradients"])

    def on_step(i):
        if i == 1 and disabled:
            break_hook(hook)  # the next step's tape.gradient fails inside the hook
        if i == 2:
            ask_stop(out)

    with pytest.raises(TrainingStopRequested) as info:
        tape_loop(hook, model, 6, on_step)
    assert info.value.rule_name == "LossNotDecreasing" and info.value.step == 2
    assert hook.disabled is disabled
    # raised once: the loop may go on (e.g. after a checkpoint)
    assert tape_loop(hook, model, 2) == 2
    hook.close()
    steps = create_trial(str(out)).steps(mode=smd.modes.TRAIN)
    # the raise came at the 4th ``with``, before its step began: steps 0-2 were written with their numbers
    # disabled at step 2 (that step is lost, as any step an error happened in); enabled: the loop's
    # two more steps are 3 and 4
    assert steps == ([0, 1] if disabled else [0, 1, 2, 3, 4])
    if not disabled:
        tr = create_trial(str(out))
        assert "gradients/dense/kernelGrad" in tr.tensor_names(step=2, mode=smd.modes.TRAIN)


def test_request_during_validation_stops_fit_at_the_epoch_end(tmp_path):
    out = tmp_path / "t"
    model = compile_sgd(sequential())
    x, y = digits()
    hook = make_hook(out, interval=1, colls=["losses", "metrics"])

    class AskInValidation(keras.callbacks.Callback):
        def on_test_batch_end(self, batch, logs=None):
            if batch == 0:
                ask_stop(out)  # seen at the next validation batch

    hist = model.fit(
        x,
        y,
        batch_size=BS,
        epochs=3,
        shuffle=False,
        verbose=0,
        validation_data=(x[:64], y[:64]),
        callbacks=[hook, AskInValidation()],
    )
    hook.close()
    assert len(hist.history["loss"]) == 1  # the first epoch ended, no other began
    tr = create_trial(str(out))
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1, 2, 3, 4]
    assert tr.steps(mode=smd.modes.EVAL) == [0, 1]
    # the epoch's logs still went to its last TRAIN step: nothing was written early and lost
    val_loss = tr.tensor("val_loss").value(4, mode=smd.modes.TRAIN)
    np.testing.assert_allclose(val_loss, hist.history["val_loss"][0], rtol=1e-5)


def test_a_disabled_hook_still_stops_fit_once(tmp_path, caplog):
    out = tmp_path / "t"
    model = compile_sgd(sequential())
    x, y = digits()
    hook = make_hook(out)

    class BreakThenAsk(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 0:
                break_hook(hook)  # the hook fails at the end of the next batch
            if batch == 2:
                ask_stop(out)

    hist = model.fit(x, y, batch_size=BS, epochs=3, verbose=0, callbacks=[hook, BreakThenAsk()])
    assert hook.disabled and "disabled the hook" in caplog.text
    assert len(hist.history["loss"]) == 1
    # once: a later fit trains all its epochs
    hist = model.fit(x, y, batch_size=BS, epochs=2, verbose=0, callbacks=[hook])
    assert len(hist.history["loss"]) == 2
    hook.close()
    assert create_trial(str(out)).steps(mode=smd.modes.TRAIN) == [0]


def test_a_request_seen_in_evaluate_stops_the_next_fit(tmp_path):
    out = tmp_path / "t"
    model = compile_sgd(sequential())
    x, y = digits()
    hook = make_hook(out)
    ask_stop(out)
    model.evaluate(x, y, batch_size=BS, verbose=0, callbacks=[hook])  # seen here: nothing to stop
    hist = model.fit(x, y, batch_size=BS, epochs=3, verbose=0, callbacks=[hook])
    hook.close()
    assert len(hist.history["loss"]) == 1
    assert create_trial(str(out)).steps(mode=smd.modes.TRAIN) == [0]


def test_a_step_holding_records_keeps_its_number(tmp_path):
    out = tmp_path / "t"
    model = compile_sgd(sequential())
    x, y = digits()
    hook = make_hook(out, interval=2)

    class ScalarThenAsk(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:  # step 1 saves nothing: the scalar waits for step 2, which saves
                hook.save_scalar("lr", 0.1)
                ask_stop(out)

    hist = model.fit(x, y, batch_size=BS, epochs=3, shuffle=False, verbose=0, callbacks=[hook, ScalarThenAsk()])
    hook.close()
    assert len(hist.history["loss"]) == 1
    tr = create_trial(str(out))
    # step 2 (the batch that began when the request was seen) holds the scalar and its own loss
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 2]
    assert {"loss", "scalar/lr"} <= set(tr.tensor_names(step=2, mode=smd.modes.TRAIN))
