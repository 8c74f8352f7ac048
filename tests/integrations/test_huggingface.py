"""SMDebugCallback in a Hugging Face ``transformers.Trainer`` (CPU, a tiny BERT built from a config:
nothing is downloaded), with gradient accumulation and evaluation during training."""

from __future__ import annotations

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from hf_rows import Rows  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug import modes  # noqa: E402
from smdebug.integrations.huggingface import SMDebugCallback  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

LR = 0.1
W = "BertForSequenceClassification_classifier.weight"


def _model():
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        num_labels=2,
    )
    return transformers.BertForSequenceClassification(config)


def _trainer(tmp_path, hook, **kw):
    kw = {"logging_steps": 1, **kw}
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        gradient_accumulation_steps=2,
        max_steps=4,
        eval_strategy="steps",
        eval_steps=2,
        learning_rate=LR,
        optim="sgd",
        lr_scheduler_type="constant",
        max_grad_norm=0.0,
        weight_decay=0.0,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
        **kw,
    )
    return transformers.Trainer(
        model=_model(), args=args, train_dataset=Rows(32, 1), eval_dataset=Rows(8, 2), callbacks=[SMDebugCallback(hook)]
    )


def test_trainer_steps_modes_gradients_and_logged_metrics(tmp_path):
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients"],
    )
    trainer = _trainer(tmp_path, hook)
    trainer.train()
    hook.set_mode(modes.PREDICT)
    trainer.predict(Rows(4, 3))
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    # 4 optimizer steps of 2 micro-batches each: 4 TRAIN steps, numbered as the Trainer counts them
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2, 3] == list(range(trainer.state.global_step))
    # two evaluations (after optimizer steps 2 and 4) of 2 batches each; one predict batch
    assert trial.steps(mode=modes.EVAL) == [0, 1, 2, 3]
    assert trial.steps(mode=modes.PREDICT) == [0]
    grad = trial.tensor("gradient/" + W)
    assert grad.steps(mode=modes.TRAIN) == [0, 1, 2, 3] and grad.steps(mode=modes.EVAL) == []
    w = trial.tensor(W)
    for step in range(3):  # plain SGD: the saved gradient is the accumulated one the optimizer used
        update = w.value(step + 1, mode=modes.TRAIN) - w.value(step, mode=modes.TRAIN)
        np.testing.assert_allclose(update, -LR * grad.value(step, mode=modes.TRAIN), rtol=1e-4, atol=1e-6)
    # the Trainer's logged loss, at the step it was logged after
    logged = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    loss = trial.tensor("scalar/loss")
    assert loss.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    np.testing.assert_allclose([loss.value(s, mode=modes.TRAIN)[0] for s in range(4)], logged, rtol=1e-5)
    eval_losses = [e["eval_loss"] for e in trainer.state.log_history if "eval_loss" in e]
    saved = trial.tensor("scalar/eval_loss")
    np.testing.assert_allclose([saved.value(s)[0] for s in saved.steps()], eval_losses, rtol=1e-5)


def test_the_callback_needs_a_pytorch_hook():
    from smdebug.exceptions import SMDebugTypeError

    with pytest.raises(SMDebugTypeError, match="hook"):
        SMDebugCallback(hook="not a hook")


def test_each_logged_value_is_saved_in_its_mode_at_its_step_whatever_the_schedule(tmp_path):
    """save_interval=5 saves TRAIN and EVAL step 0 only; the Trainer logs every 2nd optimizer step,
    evaluates after steps 2 and 4 (2 batches each), then sums up training; trainer.predict runs
    with no set_mode. Each log goes with the step it was logged at, in its mode."""
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=5), include_collections=["weights"]
    )
    trainer = _trainer(tmp_path, hook, logging_steps=2)
    trainer.train()
    predicted = trainer.predict(Rows(4, 3))
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    history = trainer.state.log_history
    # TRAIN step 0 (the schedule), 1 and 3 (logged after them: "step" 2 and 4 in the log history)
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 3]
    assert trial.steps(mode=modes.EVAL) == [0, 1, 3]  # step 0 (the schedule), the last batch of each evaluation
    assert trial.steps(mode=modes.PREDICT) == [0]  # the prediction's one batch, with its metrics

    def where(name):
        t = trial.tensor("scalar/" + name)
        return {m.name: t.steps(mode=m) for m in (modes.TRAIN, modes.EVAL, modes.PREDICT) if t.steps(mode=m)}

    for name in ("loss", "grad_norm", "learning_rate"):
        assert where(name) == {"TRAIN": [1, 3]}, name
    assert where("eval_loss") == where("eval_runtime") == {"EVAL": [1, 3]}
    assert where("train_loss") == where("train_runtime") == {"TRAIN": [3]}  # the summary: the last TRAIN step
    assert where("test_loss") == {"PREDICT": [0]}
    assert where("epoch") == {"TRAIN": [1, 3], "EVAL": [1, 3]}  # in the logs of both
    value = lambda name, step, mode: float(trial.tensor("scalar/" + name).value(step, mode=mode)[0])  # noqa: E731
    np.testing.assert_allclose(
        [value("loss", s, modes.TRAIN) for s in (1, 3)], [e["loss"] for e in history if "loss" in e], rtol=1e-5
    )
    np.testing.assert_allclose(
        [value("eval_loss", s, modes.EVAL) for s in (1, 3)],
        [e["eval_loss"] for e in history if "eval_loss" in e],
        rtol=1e-5,
    )
    np.testing.assert_allclose(value("train_loss", 3, modes.TRAIN), history[-1]["train_loss"], rtol=1e-5)
    np.testing.assert_allclose(value("test_loss", 0, modes.PREDICT), predicted.metrics["test_loss"], rtol=1e-5)
