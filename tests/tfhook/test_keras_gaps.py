"""KerasHook behaviours 1.0.34's users relied on: custom collections over model variables, models
built inside fit, biases vs optimizer variables, optimizer variables in tape loops, epoch-end
logs (val_loss) and register_model."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from kerasutil import compile_sgd, digits, sequential

import smdebug.tensorflow as smd
from smdebug.exceptions import SMDebugTypeError
from smdebug.trials import create_trial

BS = 32
T, E = smd.modes.TRAIN, smd.modes.EVAL


def _unbuilt(seed=0):
    """A Sequential without an Input: Keras builds its variables inside fit."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.layers.Dense(16, activation="relu", name="dense"), keras.layers.Dense(10, name="dense_1")]
    )


def _compile_adam(model):
    model.compile(
        keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]
    )
    return model


def test_custom_collection_regex_sees_model_variables(tmp_path):
    model = compile_sgd(sequential())
    x, y = digits()
    hook = smd.KerasHook(
        str(tmp_path / "a"), save_config=smd.SaveConfig(save_interval=2), include_collections=["custom"]
    )
    hook.get_collection("custom").include("dense_1/")
    model.fit(x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "a"))
    # what the regex matches: dense_1's variables, and its gradients and inputs/outputs captured in fit
    assert tr.tensor_names(collection="custom") == [
        "dense_1/inputs",
        "dense_1/outputs",
        "dense_1/weights/dense_1/bias:0",
        "dense_1/weights/dense_1/kernel:0",
        "gradients/dense_1/biasGrad",
        "gradients/dense_1/kernelGrad",
    ]
    assert tr.tensor("gradients/dense_1/kernelGrad").steps(mode=T) == [0, 2, 4]
    kernel = tr.tensor("dense_1/weights/dense_1/kernel:0")
    assert kernel.steps(mode=T) == [0, 2, 4]
    np.testing.assert_array_equal(kernel.value(4, mode=T), model.get_layer("dense_1").kernel.numpy())

    # include_regex goes to the default collection: the same variables, whatever else is due
    model = compile_sgd(sequential())
    hook = smd.KerasHook(
        str(tmp_path / "b"), save_config=smd.SaveConfig(save_interval=2), include_regex=["dense/kernel"]
    )
    model.fit(x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "b"))
    assert tr.tensor_names(collection="default") == ["dense/weights/dense/kernel:0", "gradients/dense/kernelGrad"]
    assert tr.tensor("dense/weights/dense/kernel:0").steps(mode=T) == [0, 2, 4]


def test_model_built_in_fit_and_biases_apart_from_optimizer_slots(tmp_path):
    model = _compile_adam(_unbuilt())
    assert not model.weights  # nothing to read when the callback starts
    x, y = digits()
    hook = smd.KerasHook(
        str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_interval=2),
        include_collections=["weights", "biases", "optimizer_variables"],
    )
    model.fit(x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.tensor_names(collection="weights") == ["dense/weights/dense/kernel:0", "dense_1/weights/dense_1/kernel:0"]
    assert tr.tensor_names(collection="biases") == ["dense/weights/dense/bias:0", "dense_1/weights/dense_1/bias:0"]
    opt = model.optimizer.iterations.path.split("/")[0]
    # Adam's per-weight slots (..._bias_momentum, ..._kernel_velocity) are in no collection, as in 1.0.34
    assert tr.tensor_names(collection="optimizer_variables") == [f"{opt}/iteration:0", f"{opt}/learning_rate:0"]
    assert not [n for n in tr.tensor_names() if "momentum" in n or "velocity" in n]
    np.testing.assert_array_equal(
        tr.tensor("dense/weights/dense/bias:0").value(4, mode=T), model.get_layer("dense").bias.numpy()
    )
    assert tr.tensor(f"{opt}/iteration:0").value(4, mode=T).item() == 5


def test_tape_loop_saves_optimizer_variables(tmp_path):
    model = sequential()
    hook = smd.KerasHook(
        str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_interval=2),
        include_collections=["optimizer_variables", "losses"],
    )
    opt = hook.wrap_optimizer(keras.optimizers.Adam(0.01))
    assert hook.wrap_optimizer(opt) is opt  # wrapping twice is wrapping once
    x, y = digits(128)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for i in range(4):
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = loss_fn(y[i * BS : (i + 1) * BS], model(x[i * BS : (i + 1) * BS]))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    name = opt.iterations.path.split("/")[0]
    assert tr.tensor_names(collection="optimizer_variables") == [f"{name}/iteration:0", f"{name}/learning_rate:0"]
    it = tr.tensor(f"{name}/iteration:0")
    assert it.steps(mode=T) == [0, 2]
    assert [it.value(s, mode=T).item() for s in (0, 2)] == [1, 3]  # read after the step's update
    with pytest.raises(SMDebugTypeError, match="wrap_optimizer"):
        hook.wrap_optimizer("sgd")


@pytest.mark.parametrize("validation", [True, False])
def test_epoch_end_logs_go_to_the_last_train_step(tmp_path, validation):
    model = compile_sgd(sequential())
    x, y = digits()  # 5 batches an epoch
    hook = smd.KerasHook(str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=3))
    val = (x[:64], y[:64]) if validation else None
    hist = model.fit(x, y, batch_size=BS, epochs=2, shuffle=False, callbacks=[hook], verbose=0, validation_data=val)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    # the schedule saves TRAIN steps 0, 3, 6, 9; the epochs end at TRAIN steps 4 and 9
    assert tr.steps(mode=T) == [0, 3, 4, 6, 9]
    loss = tr.tensor("loss")
    for epoch, step in enumerate((4, 9)):
        assert loss.value(step, mode=T).item() == pytest.approx(hist.history["loss"][epoch], rel=1e-6)
        assert tr.tensor("accuracy").value(step, mode=T).item() == pytest.approx(hist.history["accuracy"][epoch])
        if validation:
            assert tr.tensor("val_loss").value(step, mode=T).item() == pytest.approx(
                hist.history["val_loss"][epoch], rel=1e-6
            )
    # batch: only at scheduled steps, the batch index (1.0.34 wrote the epoch index at an epoch's end)
    assert tr.tensor("batch").steps(mode=T) == [0, 3, 6, 9] and tr.tensor("batch").value(9, mode=T).item() == 4
    if validation:
        assert tr.tensor_names(collection="losses") == ["loss", "val_loss"]
        assert tr.tensor_names(collection="metrics") == ["accuracy", "batch", "val_accuracy"]
        assert tr.tensor("val_loss").steps(mode=T) == [4, 9] and tr.steps(mode=E) == [0, 3]
        # the held TRAIN step is written once, after the validation steps that followed it
        assert tr.tensor("loss").steps(mode=E) == [0, 3]
    else:
        assert "val_loss" not in tr.tensor_names()


def test_register_model_before_compile(tmp_path):
    model = sequential()
    hook = smd.KerasHook(
        str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=2), include_collections=["weights", "gradients"]
    )
    hook.register_model(model)
    with pytest.raises(SMDebugTypeError, match="register_model"):
        hook.register_model("model")
    compile_sgd(model)
    x, y = digits(96)
    model.fit(x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert "gradients/dense/kernelGrad" in tr.tensor_names(collection="gradients")
    assert tr.tensor_names(collection="weights") == ["dense/weights/dense/kernel:0", "dense_1/weights/dense_1/kernel:0"]
    assert tr.steps(mode=T) == [0, 2]


def test_wrong_arguments_raise_at_once_even_inside_fit(tmp_path):
    """A wrong argument to a public method is the caller's error: raised, whatever
    SMDEBUG_PROPAGATE_ERRORS says, and the hook goes on (the conftest unsets it)."""
    hook = smd.KerasHook(str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1))
    with pytest.raises(ValueError, match="Invalid mode 'a'"):
        hook.set_mode("a")
    with pytest.raises(TypeError, match="not a number"):
        hook.save_scalar("acc", "high")
    with pytest.raises(TypeError, match="collections_to_write"):
        hook.save_tensor("t", np.zeros(2), 3)
    with pytest.raises(TypeError, match="tensor_name"):
        hook.save_tensor(None, np.zeros(2))
    assert not hook.disabled
    model = compile_sgd(sequential())
    x, y = digits(64)

    class Caller(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            hook.save_scalar("bad", [1.0, 2.0])

    with pytest.raises(TypeError, match="not a scalar"):
        model.fit(x, y, batch_size=BS, epochs=1, callbacks=[hook, Caller()], verbose=0)
    assert not hook.disabled
    hook.disabled = True  # the checks run on a disabled hook too
    with pytest.raises(ValueError, match="Invalid mode"):
        hook.set_mode("a")


def test_a_resumed_job_continues_the_step_numbers(tmp_path):
    """The folder holds an interrupted job's steps (no end-of-training marker): a new hook goes on
    after them, in every mode, and writes none of them again."""
    from smdebug.core.locations import END_OF_JOB

    out = tmp_path / "t"
    x, y = digits()  # 5 train batches an epoch, 2 validation batches
    model = compile_sgd(sequential())
    first = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    model.fit(
        x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[first], verbose=0, validation_data=(x[:64], y[:64])
    )
    kernel_at_4 = model.get_layer("dense").kernel.numpy().copy()
    first.close()
    (out / END_OF_JOB).unlink()
    second = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    model.fit(
        x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[second], verbose=0, validation_data=(x[:64], y[:64])
    )
    second.close()
    tr = create_trial(str(out))
    assert tr.steps(mode=T) == list(range(10)) and tr.steps(mode=E) == [0, 1, 2, 3]
    assert tr.steps() == list(range(14))  # global: 0-6 the first job, 7-13 the resumed one
    kernel = tr.tensor("dense/weights/dense/kernel:0")
    np.testing.assert_array_equal(kernel.value(4, mode=T), kernel_at_4)  # the first job's step is kept
    np.testing.assert_array_equal(kernel.value(9, mode=T), model.get_layer("dense").kernel.numpy())
    assert tr.tensor("loss").value(9, mode=T).item() > 0 and tr.tensor("val_loss").steps(mode=T) == [4, 9]
