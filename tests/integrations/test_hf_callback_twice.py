"""SMDebugCallback given twice to one Trainer (two callbacks of one hook, or one callback added
again): every Trainer event is handled once, so the TRAIN steps are the Trainer's 0..n-1, each
once, with one warning. A tiny BERT built from a config on the CPU: nothing is downloaded."""

from __future__ import annotations

import logging

import numpy as np
import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402
from hf_rows import Rows  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug import modes  # noqa: E402
from smdebug.integrations.huggingface import SMDebugCallback  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

W = "BertForSequenceClassification_classifier.weight"
TWICE = "more than one SMDebugCallback"


def _trainer(tmp_path, callbacks, max_steps=4):
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
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"),
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        gradient_accumulation_steps=2,
        max_steps=max_steps,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=2,
        learning_rate=0.1,
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
    )
    return transformers.Trainer(
        model=transformers.BertForSequenceClassification(config),
        args=args,
        train_dataset=Rows(32, 1),
        eval_dataset=Rows(8, 2),
        callbacks=callbacks,
    )


def _hook(tmp_path, name="run"):
    return smd.Hook(
        out_dir=str(tmp_path / name),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients"],
    )


def _check_once(out_dir, trainer):
    trial = create_trial(str(out_dir))
    steps = list(range(trainer.state.global_step))
    assert trial.steps(mode=modes.TRAIN) == steps == [0, 1, 2, 3]
    assert trial.steps(mode=modes.EVAL) == [0, 1, 2, 3]  # two evaluations of 2 batches
    assert trial.tensor("gradient/" + W).steps(mode=modes.TRAIN) == steps
    # the Trainer's logged losses, one at each step
    logged = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    loss = trial.tensor("scalar/loss")
    assert loss.steps(mode=modes.TRAIN) == steps and loss.steps(mode=modes.EVAL) == []
    np.testing.assert_allclose([loss.value(s, mode=modes.TRAIN)[0] for s in steps], logged, rtol=1e-5)
    evals = [e["eval_loss"] for e in trainer.state.log_history if "eval_loss" in e]
    saved = trial.tensor("scalar/eval_loss")
    assert (
        saved.steps(mode=modes.EVAL) == [1, 3] and saved.steps(mode=modes.TRAIN) == []
    )  # each evaluation's last batch
    np.testing.assert_allclose([saved.value(s, mode=modes.EVAL)[0] for s in (1, 3)], evals, rtol=1e-5)


def _twice_warnings(caplog):
    return [r for r in caplog.records if TWICE in r.getMessage()]


@pytest.mark.parametrize("how", ["two callbacks of one hook", "one callback added again"])
def test_a_callback_given_twice_numbers_each_trainer_step_once(tmp_path, caplog, how):
    caplog.set_level(logging.WARNING, logger="smdebug")
    hook = _hook(tmp_path)
    callback = SMDebugCallback(hook)
    if how == "two callbacks of one hook":
        trainer = _trainer(tmp_path, [callback, SMDebugCallback(hook)])
    else:
        trainer = _trainer(tmp_path, [callback])
        trainer.add_callback(callback)
    trainer.train()
    hook.close()
    _check_once(tmp_path / "run", trainer)
    assert len(_twice_warnings(caplog)) == 1


def test_one_hook_serves_one_trainer_after_another(tmp_path, caplog):
    """Not a repeat: a second Trainer's events (its own state) are handled, with no warning."""
    caplog.set_level(logging.WARNING, logger="smdebug")
    hook = _hook(tmp_path)
    first = _trainer(tmp_path, [SMDebugCallback(hook)], max_steps=2)
    first.train()
    second = _trainer(tmp_path, [SMDebugCallback(hook)], max_steps=2)
    second.train()
    hook.close()
    # the second Trainer counts from 0 again: the hook goes on after the first one's steps
    assert create_trial(str(tmp_path / "run")).steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    assert _twice_warnings(caplog) == []


def test_callbacks_of_two_hooks_in_one_trainer_each_save(tmp_path, caplog):
    """Two hooks, a callback each: not a repeat (the first hook watches the model; both run steps)."""
    caplog.set_level(logging.WARNING, logger="smdebug")
    a, b = _hook(tmp_path, "a"), _hook(tmp_path, "b")
    trainer = _trainer(tmp_path, [SMDebugCallback(a), SMDebugCallback(b)], max_steps=2)
    trainer.train()
    a.close()
    b.close()
    assert create_trial(str(tmp_path / "a")).steps(mode=modes.TRAIN) == [0, 1]
    assert create_trial(str(tmp_path / "b")).tensor("scalar/loss").steps(mode=modes.TRAIN) == [0, 1]
    assert _twice_warnings(caplog) == []
