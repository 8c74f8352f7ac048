"""Reductions of host tensors come from one stack of moments (min, max, sum, l2, sum of |t|),
computed from the live tensor with no copy: they equal torch's own reductions within float32
rounding, and the cases the moments cannot tell exactly enough use torch's own op. Each test runs
with the moments by the numba kernel (where numba is installed) and by torch's ops."""

from __future__ import annotations

import warnings

import pytest
import torch
from ptutil import mlp

import smdebug.pytorch as smd
from smdebug.core.reductions import reductions_from_moments
from smdebug.pytorch.adapter import TorchAdapter, TorchOps
from smdebug.trials import create_trial

OPS = ["min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2"]
ALL_OPS = [(op, ab) for op in OPS for ab in (False, True)]


pytestmark = pytest.mark.usefixtures("moments_by")  # with the moments kernel and with torch's ops


def _torch(t: torch.Tensor, op: str, ab: bool) -> float:
    t = t.float().abs() if ab else t.float()
    if op in ("l1", "l2"):
        return float(torch.linalg.vector_norm(t.reshape(-1), ord=int(op[1])))
    return float(getattr(torch, op)(t) if op != "variance" else torch.var(t))


def _reduce(t: torch.Tensor, ops) -> list[float]:
    ad = TorchAdapter()
    objs = ad.reductions(t, None, ops)
    return [float(v) for v in ad.materialize(objs)]


def _assert_close(got, want, t, what):
    scale = float(t.float().abs().max())
    if want != want:  # nan
        assert got != got, what
    elif got != want:
        assert abs(got - want) <= 1e-5 * abs(want) + 1e-6 * scale, (what, got, want)


@pytest.mark.parametrize(
    "case", ["normal", "large_mean", "positive", "negative", "one", "zeros", "ints", "half", "big"]
)
def test_reductions_equal_torchs_own(case):
    warnings.filterwarnings("ignore", "std|var", UserWarning)  # torch on one element: nan, and says so
    g = torch.Generator().manual_seed(3)
    t = {
        "normal": lambda: torch.randn(300, 70, generator=g),
        # mean 1000, spread 0.01: the variance from sums would cancel; torch's own op is used
        "large_mean": lambda: 1000 + 0.01 * torch.randn(5000, generator=g),
        "positive": lambda: torch.rand(17, 33, generator=g) + 0.5,
        "negative": lambda: -torch.rand(40, generator=g) - 0.1,
        "one": lambda: torch.tensor([2.5]),
        "zeros": lambda: torch.zeros(20000),
        "ints": lambda: torch.arange(-50, 77),
        "half": lambda: torch.randn(64, 64, generator=g).to(torch.bfloat16),
        "big": lambda: torch.randn(512, 512, generator=g),  # large enough for the pooled |t| buffer
    }[case]()
    got = _reduce(t, ALL_OPS)
    for (op, ab), v in zip(ALL_OPS, got):
        _assert_close(v, _torch(t, op, ab), t, (case, op, ab))


def test_nan_and_inf_come_out_as_torch_says():
    t = torch.tensor([1.0, float("nan"), 3.0])
    for (op, ab), v in zip(ALL_OPS, _reduce(t, ALL_OPS)):
        assert v != v, (op, ab)  # every reduction of a tensor with nan is nan
    t = torch.tensor([1.0, float("inf"), 3.0])
    got = dict(zip(ALL_OPS, _reduce(t, ALL_OPS)))
    assert got[("max", False)] == float("inf") and got[("min", False)] == 1.0
    assert float(torch.std(t)) != float(torch.std(t))  # torch: nan, and so ours
    assert got[("std", False)] != got[("std", False)] and got[("variance", True)] != got[("variance", True)]


def test_moments_cannot_tell_cancelling_variance_prod_or_abs_min_across_zero():
    stats = TorchOps.moments([torch.tensor([1000.0, 1000.001])], [torch.tensor([1000.0, 1000.001])])[0]
    assert reductions_from_moments(stats, 2, [("std", False), ("prod", False), ("max", False)])[:2] == [None, None]
    stats = TorchOps.moments([torch.tensor([-1.0, 2.0])])[0]
    assert reductions_from_moments(stats, 2, [("min", True)]) == [None]
    assert float(reductions_from_moments(stats, 2, [("max", True)])[0]) == 2.0


def test_reductions_only_take_no_copy_of_host_tensors(tmp_path, monkeypatch):
    copies = []
    monkeypatch.setattr(TorchOps, "clone", staticmethod(lambda t: copies.append(t.shape) or t.clone()))
    monkeypatch.setattr(TorchOps, "copy_into", staticmethod(lambda d, s: copies.append(len(d))))
    model = mlp()
    rc = smd.ReductionConfig(
        reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=False
    )
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_interval=1),
        reduction_config=rc,
        include_collections=["weights", "biases", "gradients"],
    )
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    params = []
    for _ in range(3):
        params.append({n: p.detach().clone() for n, p in model.named_parameters()})
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    hook.close()
    assert copies == []
    # the deferred (parameter) reductions are of the parameters at the start of each step
    tr = create_trial(str(tmp_path / "t"))
    for s in range(3):
        for n, p in params[s].items():
            t = tr.tensor(f"Sequential_{n}")
            for op, ab in [
                ("min", False),
                ("max", False),
                ("mean", False),
                ("std", False),
                ("mean", True),
                ("l2", False),
            ]:
                _assert_close(float(t.reduction_value(s, op, abs=ab)), _torch(p, op, ab), p, (n, s, op, ab))
