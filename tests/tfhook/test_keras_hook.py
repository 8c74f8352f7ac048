"""KerasHook on real Keras 3 models: names, steps per mode, and values equal to Keras' own."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from kerasutil import Recorder, compile_sgd, digits, functional, sequential, subclassed

import smdebug.tensorflow as smd
from smdebug.trials import create_trial

ALL_COLLS = ["weights", "biases", "gradients", "losses", "metrics", "layers", "optimizer_variables"]
BS = 32


def run_fit(out, model, *, jit=False, interval=1, colls=ALL_COLLS, epochs=1, validation=True, **kw):
    compile_sgd(model, jit=jit)
    x, y = digits()
    hook = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=interval), include_collections=colls, **kw)
    rec = Recorder()
    val = (x[:64], y[:64]) if validation else None
    hist = model.fit(
        x, y, batch_size=BS, epochs=epochs, shuffle=False, callbacks=[hook, rec], verbose=0, validation_data=val
    )
    return hook, rec, hist, x, y


def test_names_collections_and_steps_per_mode(tmp_path):
    model = sequential()
    hook, rec, hist, x, y = run_fit(tmp_path / "t", model, interval=2, epochs=2)
    model.evaluate(x, y, batch_size=BS, callbacks=[hook], verbose=0)
    model.predict(x[:64], batch_size=BS, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    # fit: 5 train batches x 2 epochs, 2 validation batches per epoch; evaluate: 5; predict: 2;
    # TRAIN step 9 ends the second epoch: the epoch's logs are saved there
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6, 8, 9]
    assert tr.steps(mode=smd.modes.EVAL) == [0, 2, 4, 6, 8]
    assert tr.steps(mode=smd.modes.PREDICT) == [0]
    assert tr.tensor_names(collection="weights") == ["dense/weights/dense/kernel:0", "dense_1/weights/dense_1/kernel:0"]
    assert tr.tensor_names(collection="biases") == ["dense/weights/dense/bias:0", "dense_1/weights/dense_1/bias:0"]
    assert tr.tensor_names(collection="gradients") == [
        "gradients/dense/biasGrad",
        "gradients/dense/kernelGrad",
        "gradients/dense_1/biasGrad",
        "gradients/dense_1/kernelGrad",
    ]
    assert tr.tensor_names(collection="losses") == ["loss", "val_loss"]
    assert tr.tensor_names(collection="metrics") == ["accuracy", "batch", "val_accuracy"]
    assert tr.tensor_names(collection="layers") == [
        "dense/inputs",
        "dense/outputs",
        "dense_1/inputs",
        "dense_1/outputs",
    ]
    opt = model.optimizer.iterations.path.split("/")[0]  # sgd, or sgd_<n> after other optimizers
    assert tr.tensor_names(collection="optimizer_variables") == [f"{opt}/iteration:0", f"{opt}/learning_rate:0"]
    g = tr.tensor("gradients/dense/kernelGrad")
    assert g.steps(mode=smd.modes.TRAIN) == [0, 2, 4, 6, 8] and g.steps(mode=smd.modes.EVAL) == []
    # logs and History are what Keras gives without the hook
    assert set(hist.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}


@pytest.mark.parametrize("jit", [False, True])
def test_values_equal_keras(tmp_path, jit):
    model = sequential()
    hook, rec, _, x, _ = run_fit(tmp_path / "t", model, jit=jit, validation=False)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    T = smd.modes.TRAIN

    def strip(d):
        return {k.split("/", 1)[1]: v for k, v in d.items()}

    for step in range(5):
        before, after = strip(rec.before["TRAIN"][step]), strip(rec.after["TRAIN"][step])
        logs = rec.logs["TRAIN"][step]
        kernel = tr.tensor("dense/weights/dense/kernel:0").value(step, mode=T)
        np.testing.assert_array_equal(kernel, after["dense/kernel"])
        grad = tr.tensor("gradients/dense_1/kernelGrad").value(step, mode=T)
        expected = (before["dense_1/kernel"] - after["dense_1/kernel"]) / 0.1
        np.testing.assert_allclose(grad, expected, atol=2e-5)
        assert float(tr.tensor("loss").value(step, mode=T).ravel()[0]) == pytest.approx(logs["loss"])
        assert float(tr.tensor("accuracy").value(step, mode=T).ravel()[0]) == pytest.approx(logs["accuracy"])
        xb = x[step * BS : (step + 1) * BS]
        np.testing.assert_allclose(tr.tensor("dense/inputs").value(step, mode=T), xb)
        out = np.maximum(xb @ before["dense/kernel"] + before["dense/bias"], 0)
        np.testing.assert_allclose(tr.tensor("dense/outputs").value(step, mode=T), out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("raw", [False, True])
def test_reductions_and_raw_values_of_weights_and_gradients(tmp_path, raw):
    """Reductions (with or without the raw value) of the weights, read at the batch's end, and of
    the gradients, captured in the step: numpy's of Keras' own values, to float32 rounding; the
    raw values are Keras' own."""
    model = sequential()
    colls = ["weights", "gradients"]
    ops = [
        ("min", False),
        ("max", False),
        ("mean", False),
        ("std", False),
        ("variance", False),
        ("sum", False),
        ("mean", True),
        ("max", True),
        ("l1", False),
        ("l2", False),
    ]
    rc = smd.ReductionConfig(
        reductions=["min", "max", "mean", "std", "variance", "sum"],
        abs_reductions=["mean", "max"],
        norms=["l1", "l2"],
        save_raw_tensor=raw,
    )
    compile_sgd(model)
    x, y = digits()
    hook = smd.KerasHook(
        str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), include_collections=colls, reduction_config=rc
    )
    rec = Recorder()
    model.fit(x[: 5 * BS], y[: 5 * BS], batch_size=BS, epochs=1, shuffle=False, callbacks=[hook, rec], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    T = smd.modes.TRAIN
    for step in range(5):
        after = {k.split("/", 1)[1]: v for k, v in rec.after["TRAIN"][step].items()}
        before = {k.split("/", 1)[1]: v for k, v in rec.before["TRAIN"][step].items()}
        grad = (before["dense_1/kernel"] - after["dense_1/kernel"]) / 0.1
        for name, value, tol in (
            ("dense/weights/dense/kernel:0", after["dense/kernel"], 1e-6),
            ("gradients/dense_1/kernelGrad", grad, 2e-5),
        ):
            t = tr.tensor(name)
            if raw:
                np.testing.assert_allclose(t.value(step, mode=T), value, rtol=0, atol=tol)
            else:
                with pytest.raises(Exception):  # noqa: B017  reductions only
                    t.value(step, mode=T)
            v64 = value.astype(np.float64)
            ref = {
                ("min", False): v64.min(),
                ("max", False): v64.max(),
                ("mean", False): v64.mean(),
                ("std", False): v64.std(),
                ("variance", False): v64.var(),
                ("sum", False): v64.sum(),
                ("mean", True): np.abs(v64).mean(),
                ("max", True): np.abs(v64).max(),
                ("l1", False): np.abs(v64).sum(),
                ("l2", False): np.sqrt((v64 * v64).sum()),
            }
            scale = np.abs(v64).sum()  # rounding of a float32 sum (and of the gradient estimate) is relative to it
            for op, is_abs in ops:
                got = float(np.asarray(t.reduction_value(step, op, abs=is_abs, mode=T)).ravel()[0])
                atol = tol * (scale if op in ("sum", "l1") else scale / value.size if op == "mean" else 1)
                want = ref[(op, is_abs)]
                assert got == pytest.approx(want, rel=1e-5, abs=atol), (name, step, op, is_abs)


@pytest.mark.parametrize("make", [functional, subclassed])
def test_functional_and_subclassed_models(tmp_path, make):
    model = make()
    hook, rec, _, x, _ = run_fit(tmp_path / "t", model, validation=False)
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert "gradients/dense/kernelGrad" in tr.tensor_names(collection="gradients")
    assert {"dense/outputs", "dense_1/outputs"} <= set(tr.tensor_names(collection="layers"))
    kernels = tr.tensor_names(collection="weights")
    assert len(kernels) == 2 and all(k.endswith("kernel:0") for k in kernels)
    paths = [p for p in rec.after["TRAIN"][3] if p.endswith("dense_1/kernel")]
    np.testing.assert_array_equal(
        tr.tensor([k for k in kernels if "dense_1" in k][0]).value(3, mode=smd.modes.TRAIN),
        rec.after["TRAIN"][3][paths[0]],
    )


def test_only_saved_steps_run_the_instrumented_function(tmp_path):
    model = sequential()
    calls = []
    hook, *_ = run_fit(tmp_path / "t", model, interval=3, colls=["gradients"], validation=False)
    fn = model.train_function
    orig = fn.instrumented
    fn.instrumented = lambda it: calls.append(1) or orig(it)
    x, y = digits()
    model.fit(x, y, batch_size=BS, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    assert model.train_function is fn  # a second fit keeps the hook's function
    assert len(calls) == 2  # TRAIN steps 5..9 of the second fit: 6 and 9 save
    hook.close()
    assert model.train_function is fn.plain  # close gives the model its own function back


def test_gradient_tape_loop(tmp_path):
    model = sequential()
    opt = tf.keras.optimizers.SGD(0.1)
    hook = smd.KerasHook(
        str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    x, y = digits(96)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    want = []
    for i in range(3):
        xb, yb = x[i * BS : (i + 1) * BS], y[i * BS : (i + 1) * BS]
        with hook.wrap_tape(tf.GradientTape()) as tape:
            loss = loss_fn(yb, model(xb))
        w = {v.path.split("/", 1)[1]: v.numpy().copy() for v in model.trainable_weights}
        grads = tape.gradient(loss, model.trainable_weights)
        want.append(
            (float(loss), w, {v.path.split("/", 1)[1]: g.numpy() for v, g in zip(model.trainable_weights, grads)})
        )
        opt.apply_gradients(zip(grads, model.trainable_weights))
    hook.close()
    tr = create_trial(str(tmp_path / "t"))
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    assert tr.tensor_names(collection="gradients") == [
        "gradients/dense/biasGrad",
        "gradients/dense/kernelGrad",
        "gradients/dense_1/biasGrad",
        "gradients/dense_1/kernelGrad",
    ]
    for step, (loss, w, g) in enumerate(want):
        assert float(tr.tensor("loss").value(step, mode=smd.modes.TRAIN).ravel()[0]) == pytest.approx(loss)
        np.testing.assert_array_equal(
            tr.tensor("gradients/dense/kernelGrad").value(step, mode=smd.modes.TRAIN), g["dense/kernel"]
        )
        np.testing.assert_array_equal(
            tr.tensor("weights/dense/kernel:0").value(step, mode=smd.modes.TRAIN), w["dense/kernel"]
        )


def test_an_error_in_the_hook_never_stops_training(tmp_path, caplog):
    model = sequential()
    compile_sgd(model)
    x, y = digits()
    hook = smd.KerasHook(
        str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"]
    )

    def boom(*args, **kwargs):
        raise RuntimeError("a failure inside the hook")

    class Bad(smd.KerasHook.__mro__[0].__bases__[0]):  # a plain keras Callback
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                hook._save = boom  # the hook fails at the end of the next batch

    hist = model.fit(x, y, batch_size=BS, epochs=2, callbacks=[hook, Bad()], verbose=0)
    assert len(hist.history["loss"]) == 2 and hook.disabled
    assert "disabled the hook" in caplog.text
    hook.close()
    # the step the error happened in is lost; every step before it is kept
    assert create_trial(str(tmp_path / "t")).steps(mode=smd.modes.TRAIN) == [0, 1]


def test_stop_request_stops_fit(tmp_path):
    from smdebug.core.stop_request import write_stop_request
    from smdebug.storage import open_store

    model = sequential()
    compile_sgd(model)
    x, y = digits()
    out = tmp_path / "t"
    hook = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.stop_watcher.interval = 0.0

    class Asker(smd.KerasHook.__mro__[0].__bases__[0]):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                write_stop_request(open_store(str(out)), "LossNotDecreasing", 2, "flat")

    hist = model.fit(x, y, batch_size=BS, epochs=3, callbacks=[hook, Asker()], verbose=0)
    hook.close()
    assert len(hist.history["loss"]) == 1  # stopped during the first epoch
    assert create_trial(str(out)).steps(mode=smd.modes.TRAIN) == [0, 1, 2, 3]
