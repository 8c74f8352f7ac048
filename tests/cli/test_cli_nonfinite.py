"""`smdebug nonfinite TRIAL`: the first tensor that went NaN or inf, in the order the model computed
them, on real PyTorch runs (tests/cli/conftest.py) and a trial of odd tensors; exit 1 when found,
0 when every value was finite, 2 when there was no numeric tensor to check or on bad input."""

from __future__ import annotations

import json

import numpy as np

from smdebug.cli import build_parser, main
from smdebug.trials import create_trial


def _json(capsys, *argv) -> tuple[int, dict]:
    code = main(["nonfinite", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_names_the_first_nonfinite_tensor_and_where(capsys, nan_trial):
    # the run fed NaN inputs at TRAIN step 5: the loss is the first saved value computed from them
    # (parameters are written at the start of the step, finite; gradients after the loss)
    trial = create_trial(nan_trial)
    assert all(np.isfinite(trial.tensor(n).value(s)).all() for s in range(5) for n in trial.tensor_names(step=s))
    assert main(["nonfinite", nan_trial]) == 1
    out = capsys.readouterr().out.strip()
    assert (
        out == "CrossEntropyLoss_output_0 went NaN first: 1 of its 1 value, at global step 5 (TRAIN step 5, worker_0)"
    )
    code, doc = _json(capsys, nan_trial)
    assert code == 1 and doc["found"] is True and doc["steps_checked"] == 6
    assert doc["first"] == {
        "step": 5,
        "mode": "TRAIN",
        "mode_step": 5,
        "worker": "worker_0",
        "tensor": "CrossEntropyLoss_output_0",
        "kind": "NaN",
        "count": 1,
        "size": 1,
        "from_reductions": False,
    }
    # from step 6 on, the parameters updated with NaN gradients: the first one the hook wrote is named
    code, doc = _json(capsys, nan_trial, "--start-step", "6")
    w = trial.tensor("Sequential_0.weight").value(6)
    assert code == 1 and doc["first"]["step"] == 6 and doc["first"]["tensor"] == "Sequential_0.weight"
    assert doc["first"]["count"] == int(np.isnan(w).sum()) and doc["first"]["size"] == w.size
    # only the gradients: the first gradient computed in backward (the last layer's)
    code, doc = _json(capsys, nan_trial, "--regex", "^gradient/")
    assert code == 1 and doc["first"]["step"] == 5 and doc["first"]["tensor"].startswith("gradient/Sequential_2.")
    # steps before the NaN: all finite
    code, doc = _json(capsys, nan_trial, "--end-step", "5")
    assert code == 0 and doc == {"found": False, "first": None, "steps_checked": 5, "values_checked": 45}


def test_every_value_finite_exits_0(capsys, digits_trial):
    assert main(["nonfinite", digits_trial]) == 0
    out = capsys.readouterr().out
    assert out.startswith("every value is finite: ") and f"in {len(create_trial(digits_trial).steps())} steps" in out


def test_odd_tensors_nan_and_inf_strings_and_no_numeric_tensor(capsys, odd_trial):
    code, doc = _json(capsys, odd_trial)
    assert code == 1
    assert {k: doc["first"][k] for k in ("step", "tensor", "kind", "count", "size")} == {
        "step": 0,
        "tensor": "nonfinite",
        "kind": "NaN",
        "count": 1,
        "size": 4,
    }
    # strings only, or a regex that matches nothing: nothing to check
    assert main(["nonfinite", odd_trial, "--regex", "^words$"]) == 2
    assert "no numeric tensor" in capsys.readouterr().out
    code, doc = _json(capsys, odd_trial, "--regex", "^no_such_tensor$")
    assert code == 2 and doc["found"] is False and doc["values_checked"] == 0
    # complex and integers are checked (and finite)
    code, doc = _json(capsys, odd_trial, "--regex", "^(cplx|big)$")
    assert code == 0 and doc["values_checked"] == 6


def test_bad_input_exits_2(capsys, nan_trial, tmp_path):
    assert main(["nonfinite", nan_trial, "--start-step", "3", "--end-step", "2"]) == 2
    assert "--end-step" in capsys.readouterr().err
    assert main(["nonfinite", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert "nonfinite" in sub.choices
