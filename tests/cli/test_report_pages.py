"""`smdebug report` pages as a user sees them, in headless Chromium: the README tour's trial, a
40-tensor model, a run whose loss goes NaN, an XGBoost trial. Each test takes a screenshot; with
SMDEBUG_DOCS_IMAGES=1 it goes to docs/images/ (the pictures the guide shows), else to the test's
temporary folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from chromium import needs_chromium
from smdebug.cli import main
from smdebug.trials import create_trial

torch = pytest.importorskip("torch")
import smdebug.pytorch as smd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _shot(chromium, tmp_path, name: str, section: str | None = None, height: int = 900) -> None:
    if section is not None:
        chromium.evaluate(f"document.getElementById('{section}').scrollIntoView()")
    folder = ROOT / "docs" / "images" if os.environ.get("SMDEBUG_DOCS_IMAGES") == "1" else tmp_path
    png = folder / name
    chromium.screenshot(png, height=height)
    assert png.stat().st_size > 10_000


def _train(out_dir, model, steps, nan_at=None, lr=0.1):
    torch.manual_seed(0)
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    hook = smd.Hook(
        out_dir=str(out_dir),
        include_collections=["weights", "gradients", "losses"],
        save_config=smd.SaveConfig(save_interval=1),
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for step in range(steps):
        x = torch.randn(16, 8)
        if step == nan_at:
            x[0, 0] = float("nan")
        loss_fn(model(x), torch.randint(0, 3, (16,))).backward()
        opt.step()
        opt.zero_grad()
    hook.close()
    return str(out_dir)


def _report(trial: str, tmp_path, *extra) -> Path:
    out = tmp_path / "report.html"
    assert main(["report", trial, "-o", str(out), *extra]) == 0
    return out


def _visible(state, section: str) -> list:
    return [i["alt"] for i in state["images"] if i["section"] == section and i["visible"] and i["complete"]]


@needs_chromium
def test_the_readme_tours_report_says_what_was_saved(tmp_path, chromium):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    trial = _train(tmp_path / "tour", model, 4)
    state = chromium.open(_report(trial, tmp_path).as_uri())
    assert chromium.problems() == []
    text = state["text"]
    assert "No gradients were saved" not in text and "No weights were saved" not in text
    assert _visible(state, "gradients") == ["gradients"] and _visible(state, "weights") == ["weights"]
    assert "gradient/Sequential_0.weight" in text and "CrossEntropyLoss_output_0" in text
    assert _visible(state, "histograms") == ["weights histograms", "gradients histograms"]
    _shot(chromium, tmp_path, "report-tour.png", height=1000)


@needs_chromium
def test_a_40_tensor_models_gradient_chart_has_a_legend_a_log_toggle_and_a_filter(tmp_path, chromium):
    from smdebug.cli import report
    from smdebug.cli.plot import figure, natural_key

    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 8) for _ in range(19)] + [torch.nn.Linear(8, 3)]
    model = torch.nn.Sequential(*[m for layer in layers for m in (layer, torch.nn.Tanh())][:-1])
    trial = _train(tmp_path / "deep", model, 12)
    series = report._norm_series(create_trial(trial), "gradients")
    assert len(series) == 40
    # the legend: the 12 largest, then how many more; in natural order (Sequential_2 before Sequential_10)
    legend = [t.get_text() for t in figure(series, "g", False).axes[0].get_legend().get_texts()]
    assert len(legend) == 13 and legend[-1] == "+28 more (the table lists all)"
    names = legend[:-1]
    assert names == sorted(names, key=natural_key)
    largest = {s.label: max(abs(v) for v in s.values) for s in series}
    assert min(largest[n] for n in names) >= max(v for n, v in largest.items() if n not in names)

    state = chromium.open(_report(trial, tmp_path, "--no-rules").as_uri())
    assert chromium.problems() == []
    assert _visible(state, "gradients") == ["gradients"]
    chromium.evaluate("document.getElementById('gradients-log').click()")
    assert _visible(chromium.state(), "gradients") == ["gradients log"]
    chromium.evaluate("document.getElementById('gradients-smooth').click()")
    assert _visible(chromium.state(), "gradients") == ["gradients log smoothed"]
    rows = (
        "Array.from(document.getElementById('gradients-table').tBodies[0].rows)"
        ".filter(r => r.style.display !== 'none').map(r => r.cells[0].textContent)"
    )
    assert len(chromium.evaluate(rows)) == 40
    chromium.evaluate(
        "var f = document.querySelector(\"input.filter[data-table='gradients-table']\");"
        "f.value = 'Sequential_2\\\\.'; f.dispatchEvent(new Event('input'))"
    )
    assert chromium.evaluate(rows) == ["gradient/Sequential_2.bias", "gradient/Sequential_2.weight"]
    chromium.evaluate(
        "var f = document.querySelector(\"input.filter[data-table='gradients-table']\");"
        "f.value = ''; f.dispatchEvent(new Event('input'))"
    )
    chromium.evaluate("document.querySelectorAll('#gradients-table th')[4].click()")  # sort by max
    maxima = chromium.evaluate(
        "Array.from(document.getElementById('gradients-table').tBodies[0].rows).map(r => Number(r.cells[4].dataset.v))"
    )
    assert maxima == sorted(maxima)
    chromium.evaluate("document.getElementById('gradients-smooth').click()")
    _shot(chromium, tmp_path, "report-many-gradients.png", section="gradients", height=1100)


@needs_chromium
def test_an_exploding_runs_chart_marks_the_nan_steps(tmp_path, chromium):
    from smdebug.cli.plot import collect, figure

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    trial = _train(tmp_path / "nan", model, 20, nan_at=12)
    series = collect(create_trial(trial))
    ax = figure(series, "losses", False).axes[0]
    marks = [c for c in ax.collections if c.get_label() == "NaN or inf"]
    assert len(marks) == 1 and sorted(marks[0].get_offsets()[:, 0].tolist()) == list(range(12, 20))
    assert "NaN or inf" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_xlim()[1] >= 19  # the marks are on the axis, though no line reaches those steps
    assert all(float(t) == int(t) for t in ax.get_xticks())  # whole steps only

    state = chromium.open(_report(trial, tmp_path, "--no-rules").as_uri())
    assert chromium.problems() == []
    assert _visible(state, "losses") == ["losses"]
    assert "was the first tensor to hold NaN" in state["text"] and "at global step 12" in state["text"]
    assert np.isnan(create_trial(trial).tensor("CrossEntropyLoss_output_0").value(12)).all()
    _shot(chromium, tmp_path, "report-nan.png", section="nonfinite", height=800)


@needs_chromium
def test_an_xgboost_trials_report_shows_feature_importance(tmp_path, chromium):
    xgb = pytest.importorskip("xgboost")
    from sklearn.datasets import load_breast_cancer

    import smdebug.xgboost as smd_xgb

    X, y = load_breast_cancer(return_X_y=True)
    hook = smd_xgb.Hook(
        out_dir=str(tmp_path / "xgb"),
        include_collections=["metrics", "feature_importance", "predictions", "labels", "hyperparameters"],
        save_config=smd_xgb.SaveConfig(save_interval=1),
        hyperparameters={"objective": "binary:logistic", "max_depth": 2},
        validation_data=xgb.DMatrix(X[400:], label=y[400:]),
    )
    xgb.train(
        {"objective": "binary:logistic", "max_depth": 2, "nthread": 1},
        xgb.DMatrix(X[:400], label=y[:400]),
        num_boost_round=5,
        evals=[(xgb.DMatrix(X[400:], label=y[400:]), "validation")],
        callbacks=[hook],
    )
    hook.close()
    state = chromium.open(_report(str(tmp_path / "xgb"), tmp_path, "--no-rules").as_uri())
    assert chromium.problems() == []
    assert "feature-importance" in state["sections"] and "gradients" not in state["sections"]
    shown = _visible(state, "feature-importance")
    assert shown and all("importance" in alt.lower() for alt in shown), shown
    _shot(chromium, tmp_path, "report-xgboost.png", section="feature-importance", height=900)
