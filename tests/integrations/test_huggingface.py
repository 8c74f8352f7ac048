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
    config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=16, num_labels=2)
    return transformers.BertForSequenceClassification(config)


def _trainer(tmp_path, hook, **kw):
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"), per_device_train_batch_size=4, per_device_eval_batch_size=4,
        gradient_accumulation_steps=2, max_steps=4, logging_steps=1, eval_strategy="steps", eval_steps=2,
        learning_rate=LR, optim="sgd", lr_scheduler_type="constant", max_grad_norm=0.0, weight_decay=0.0,
        report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0, seed=0, **kw)
    return transformers.Trainer(model=_model(), args=args, train_dataset=Rows(32, 1), eval_dataset=Rows(8, 2),
                                callbacks=[SMDebugCallback(hook)])


def test_trainer_steps_modes_gradients_and_logged_metrics(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients"])
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
