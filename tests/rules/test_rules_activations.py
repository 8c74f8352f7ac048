"""DeadRelu, SaturatedActivation, CheckInputImages and NLPSequenceRatio on trials written by real
PyTorch training runs, with the tensor names the PyTorch hook gives module inputs and outputs
(``relu_output_0``, ``tanh_input_0``, ``Sequential_input_0``, ``embedding_input_0``, ``1_output_0``).
The expected step is worked out from what the training loop itself saw (torch forward hooks)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from runs_training import Classifier, TextNet, digits, fired_at, full_batch, train

from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin import CheckInputImages, DeadRelu, NLPSequenceRatio, SaturatedActivation


def _record(module: nn.Module, which: str) -> list:
    """What ``module`` saw (its input or output) at each forward call, recorded by torch itself."""
    seen: list = []

    def hook(_m, inputs, output):
        seen.append((inputs[0] if which == "input" else output).detach().numpy().copy())

    module.register_forward_hook(hook)
    return seen


# ---------------------------------------------------------------- DeadRelu
def _dead_percent(x, threshold=1.0):
    x = x.reshape(x.shape[0], -1)
    return 100 * np.mean(100 * np.mean(x > 0, axis=0) < threshold)


def _relu_run(tmp_path, n_dead, at_step=4, steps=8):
    """fc1 (10 units) -> relu -> fc2; before step ``at_step`` the bias of ``n_dead`` units becomes -100."""
    x, y = digits()
    model = Classifier(hidden=10)
    seen = _record(model.relu, "output")

    def kill(g, m):
        if g == at_step:
            m.fc1.bias[:n_dead] = -100.0

    run = train(
        tmp_path / "t",
        model,
        "T" * steps,
        full_batch(x[:200] / 16, y[:200]),
        lr=0.1,
        hook_kwargs={"include_collections": ["losses", "outputs"]},
        before_step=kill,
    )
    return run, [_dead_percent(s) for s in seen]


def test_dead_relu_fires_when_a_negative_bias_kills_most_units(tmp_path):
    run, dead = _relu_run(tmp_path, n_dead=6)
    assert "relu_output_0" in run.trial.tensor_names()  # the PyTorch name the default regex matches
    assert max(dead[:4]) <= 50 and min(dead[4:]) >= 60
    assert fired_at(DeadRelu(run.trial)) == 4
    # ReLU units killed by the bias stay dead: the rule fires again at every later step
    assert fired_at(DeadRelu(run.trial), start_step=5) == 5


def test_dead_relu_does_not_fire_when_fewer_than_half_are_dead(tmp_path):
    run, dead = _relu_run(tmp_path, n_dead=4)
    assert 40 <= max(dead) <= 50
    assert fired_at(DeadRelu(run.trial)) is None
    # a lower layer threshold fires where 40 % are dead
    first = next(s for s, d in enumerate(dead) if d > 30)
    assert first == 4 and fired_at(DeadRelu(run.trial, threshold_layer="30")) == 4


def test_dead_relu_in_a_sequential_needs_the_index_name(tmp_path):
    """In nn.Sequential the ReLU is '1': its output is '1_output_0', not matched by the default."""
    x, y = digits()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 10), nn.ReLU(), nn.Linear(10, 10))
    with torch.no_grad():
        model[0].bias[:8] = -100.0
    run = train(
        tmp_path / "t",
        model,
        "T" * 3,
        full_batch(x[:100] / 16, y[:100]),
        hook_kwargs={"include_regex": ["^1_output_0$"]},
    )
    assert "1_output_0" in run.trial.tensor_names()
    assert fired_at(DeadRelu(run.trial)) is None  # nothing matches .*relu_output
    assert fired_at(DeadRelu(run.trial, tensor_regex="^1_output_0$")) == 0


# ---------------------------------------------------------------- SaturatedActivation
class TanhNet(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(64, 16)
        self.tanh = nn.Tanh()
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc2(self.tanh(self.fc1(x)))


def _saturated_percent(x, lo=-9.4999, hi=9.4999):
    active = (x > lo) & (x < hi)
    return 100 * np.mean(100 * np.mean(active, axis=0) < 1.0)


def _tanh_run(tmp_path, scale_at=None, steps=6):
    x, y = digits()
    model = TanhNet()
    seen = _record(model.tanh, "input")

    def scale(g, m):
        if g == scale_at:
            m.fc1.weight *= 5000.0
            m.fc1.bias *= 5000.0

    run = train(
        tmp_path / "t",
        model,
        "T" * steps,
        full_batch(x[:200], y[:200]),
        lr=0.001,
        hook_kwargs={"include_collections": ["losses", "inputs"]},
        before_step=scale,
    )
    return run, seen


def test_saturated_activation_fires_on_large_tanh_inputs(tmp_path):
    run, seen = _tanh_run(tmp_path, scale_at=3)
    assert "tanh_input_0" in run.trial.tensor_names()
    pct = [_saturated_percent(s) for s in seen]
    assert max(pct[:3]) <= 50 < min(pct[3:])
    assert np.abs(seen[3]).max() > 100  # large pre-activations
    assert fired_at(SaturatedActivation(run.trial)) == 3


def test_saturated_activation_does_not_fire_on_moderate_tanh_inputs(tmp_path):
    run, seen = _tanh_run(tmp_path)
    assert max(_saturated_percent(s) for s in seen) == 0
    assert fired_at(SaturatedActivation(run.trial)) is None
    # the 2020 tuple parameter: with (-0.01, 0.01) as the tanh range most units are "saturated"
    narrow = next(s for s, v in enumerate(seen) if _saturated_percent(v, -0.01, 0.01) > 50)
    assert fired_at(SaturatedActivation(run.trial, threshold_tanh="(-0.01, 0.01)")) == narrow
    # a tensor named neither tanh nor sigmoid is skipped
    assert fired_at(SaturatedActivation(run.trial, tensor_regex="fc1_output", threshold_tanh="(-0.01, 0.01)")) is None


# ---------------------------------------------------------------- CheckInputImages
def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))


def _image_run(tmp_path, images, steps=8):
    _, y = digits()

    def batch(_letter, i):
        sl = slice(100 * i, 100 * (i + 1))
        return images[sl], y[sl]

    return train(
        tmp_path / "t", _cnn(), "T" * steps, batch, lr=0.01, hook_kwargs={"include_regex": ["^Sequential_input_0$"]}
    )


def test_check_input_images_fires_on_unnormalised_digits(tmp_path):
    x, _ = digits()
    run = _image_run(tmp_path, x.reshape(-1, 1, 8, 8))  # pixels 0..16
    assert run.trial.tensor("Sequential_input_0").value(0).shape == (100, 1, 8, 8)
    assert np.mean(np.concatenate(run.inputs[:5])) > 4
    # 100 images a step: the 500 images needed are there at step 4
    assert fired_at(CheckInputImages(run.trial, regex="^Sequential_input_0$")) == 4
    assert fired_at(CheckInputImages(run.trial, regex="^Sequential_input_0$", threshold_samples="700")) == 6
    # the default regex is MXNet's: nothing matches in a PyTorch trial
    assert fired_at(CheckInputImages(run.trial)) is None


def test_check_input_images_does_not_fire_on_normalised_digits(tmp_path):
    x, _ = digits()
    z = (x - x.mean()) / x.std()
    run = _image_run(tmp_path, z.reshape(-1, 1, 8, 8).astype(np.float32))
    assert abs(np.mean(np.concatenate(run.inputs))) < 0.2
    assert fired_at(CheckInputImages(run.trial, regex="^Sequential_input_0$")) is None
    # channels last (NHWC): channel "3", the one channel's mean is the same
    nhwc = train(
        tmp_path / "nhwc",
        _NHWC(),
        "T" * 6,
        lambda _l, i: (x.reshape(-1, 8, 8, 1)[100 * i : 100 * (i + 1)], digits()[1][100 * i : 100 * (i + 1)]),
        hook_kwargs={"include_regex": ["^_NHWC_input_0$"]},
    )
    assert fired_at(CheckInputImages(nhwc.trial, regex="^_NHWC_input_0$", channel="3")) == 4


class _NHWC(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = _cnn()

    def forward(self, x):
        return self.net(x.permute(0, 3, 1, 2))


# ---------------------------------------------------------------- NLPSequenceRatio


def _padded(rng, lengths, width=20):
    ids = np.zeros((len(lengths), width), dtype=np.int64)
    for row, n in zip(ids, lengths):
        row[:n] = rng.integers(1, 50, size=n)
    return ids


def _text_run(tmp_path, short_at=None, steps=6):
    """Batches of 16 token sequences padded with 0 to 20 tokens; long sentences, except at step ``short_at``."""
    rng = np.random.default_rng(0)
    batches = [
        _padded(rng, rng.integers(3, 7, size=16) if s == short_at else rng.integers(13, 21, size=16))
        for s in range(steps)
    ]

    def batch(_letter, i):
        return batches[i], (batches[i][:, 0] % 2).astype(np.int64)

    run = train(
        tmp_path / "t", TextNet(), "T" * steps, batch, lr=0.1, hook_kwargs={"include_collections": ["losses", "inputs"]}
    )
    return run, [100 * np.mean(b == 0) for b in batches]


def test_nlp_sequence_ratio_fires_on_mostly_padding(tmp_path):
    run, pad = _text_run(tmp_path, short_at=3)
    assert "embedding_input_0" in run.trial.tensor_names()
    assert max(pad[:3]) < 50 < pad[3]
    assert fired_at(NLPSequenceRatio(run.trial, tensor_regex=".*embedding_input_0")) == 3
    # a per-token threshold: padding over 30 % fires from the first step
    first = next(s for s, p in enumerate(pad) if p > 30)
    assert (
        fired_at(
            NLPSequenceRatio(
                run.trial, tensor_regex=".*embedding_input_0", token_values="7, 0", token_thresholds_percent="90, 30"
            )
        )
        == first
    )


def test_nlp_sequence_ratio_does_not_fire_on_long_sentences(tmp_path):
    run, pad = _text_run(tmp_path)
    assert max(pad) < 50
    assert fired_at(NLPSequenceRatio(run.trial, tensor_regex=".*embedding_input_0")) is None
    assert fired_at(NLPSequenceRatio(run.trial)) is None  # MXNet's default name matches nothing


# ---------------------------------------------------------------- parameters
@pytest.fixture(scope="module")
def small_trial(tmp_path_factory):
    x, y = digits()
    return train(tmp_path_factory.mktemp("p") / "t", Classifier(), "TT", full_batch(x[:50], y[:50])).trial


def test_defaults(small_trial):
    r = DeadRelu(small_trial)
    assert ([p.pattern for p in r.tensor_regex], r.threshold_inactivity, r.threshold_layer) == (
        [".*relu_output"],
        1.0,
        50.0,
    )
    r = SaturatedActivation(small_trial)
    assert [p.pattern for p in r.tensor_regex] == [".*tanh_input|.*sigmoid_input"] and r.collection_names == []
    assert r.ranges == {"tanh": (-9.4999, 9.4999), "sigmoid": (-23.0, 16.99999)}
    r = CheckInputImages(small_trial)
    assert (r.threshold_mean, r.threshold_samples, r.regex.pattern, r.channel) == (
        0.2,
        500,
        ".*hybridsequential0_input_0",
        1,
    )
    r = NLPSequenceRatio(small_trial)
    assert ([p.pattern for p in r.tensor_regex], r.thresholds) == ([".*embedding0_input_0"], {0: 50.0})
    assert [c.name for c in DeadRelu.hook_collections] == ["relu_output"]
    assert CheckInputImages.hook_collections[0].parameters["include_regex"] == ".*hybridsequential0_input_0"


def test_string_parameters(small_trial):
    r = NLPSequenceRatio(small_trial, token_values="3, 0", token_thresholds_percent="50")
    assert r.thresholds == {3: 50.0, 0: 50.0}
    r = NLPSequenceRatio(small_trial, token_values=[3, 0], token_thresholds_percent=[10, 20.5])
    assert r.thresholds == {3: 10.0, 0: 20.5}
    r = SaturatedActivation(small_trial, threshold_tanh_min="-3", threshold_tanh_max=3.0, threshold_sigmoid="-5, 5")
    assert r.ranges == {"tanh": (-3.0, 3.0), "sigmoid": (-5.0, 5.0)}
    r = DeadRelu(small_trial, tensor_regex=".*relu_output|.*ReLU_output", threshold_layer="75")
    assert [p.pattern for p in r.tensor_regex] == [".*relu_output|.*ReLU_output"] and r.threshold_layer == 75.0


@pytest.mark.parametrize(
    "cls, params, bad",
    [
        (DeadRelu, {"threshold_layer": "abc"}, "threshold_layer"),
        (DeadRelu, {"threshold_inactivity": "150"}, "threshold_inactivity"),
        (DeadRelu, {"tensor_regex": "relu[("}, "tensor_regex"),
        (DeadRelu, {"collection_names": "relu"}, "collection_names"),
        (SaturatedActivation, {"threshold_tanh_min": "5", "threshold_tanh_max": "-5"}, "threshold_tanh_min"),
        (SaturatedActivation, {"threshold_tanh": "(1, 2, 3)"}, "threshold_tanh"),
        (SaturatedActivation, {"threshold_sigmoid_max": "high"}, "threshold_sigmoid_max"),
        (CheckInputImages, {"threshold_samples": "many"}, "threshold_samples"),
        (CheckInputImages, {"threshold_samples": "0"}, "threshold_samples"),
        (CheckInputImages, {"channel": "1.5"}, "channel"),
        (CheckInputImages, {"regex": "(("}, "regex"),
        (NLPSequenceRatio, {"token_values": "a, b"}, "token_values"),
        (
            NLPSequenceRatio,
            {"token_values": "1, 2, 3", "token_thresholds_percent": "10, 20"},
            "token_thresholds_percent",
        ),
        (NLPSequenceRatio, {"token_thresholds_percent": "150"}, "token_thresholds_percent"),
    ],
)
def test_bad_parameters_are_refused_at_construction(small_trial, cls, params, bad):
    with pytest.raises(RuleConfigurationError) as info:
        cls(small_trial, **params)
    assert info.value.parameter == bad and repr(bad) in str(info.value)
