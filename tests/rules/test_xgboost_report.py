"""CreateXgboostReport on real XGBoost runs; the report is opened in headless Chromium.

Chromium is driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``: JSON
messages ended by NUL on file descriptors 3 and 4), so no port is opened and no extra package is
needed. The page must load without console errors or exceptions, request nothing but itself and
its inline ``data:`` images, and hold decoded images in the expected sections.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import precision_recall_fscore_support, roc_auc_score
from xgb_trials import breast_cancer, digits, end_trial, split, write_collections, write_xgb_trial

from chromium import needs_chromium
from smdebug.core.writer import FileWriter
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import CreateXgboostReport, required_collections
from smdebug.rules.builtin.classification import confusion_matrix
from smdebug.rules.builtin.xgboost_report import classification_scores, roc_curve
from smdebug.trials import create_trial

COMMON_SECTIONS = ["summary", "hyperparameters", "labels-distribution", "metrics", "feature-importance"]


def report_of(path, **params):
    """Run CreateXgboostReport over the whole trial; the rule and the page it wrote."""
    rule = CreateXgboostReport(create_trial(str(path)), **params)
    invoke_rule(rule, raise_eval_cond=True)  # it never fires
    return rule, Path(rule.report_path)


def assert_clean_page(state: dict, problems: list, sections: list):
    assert problems == []
    assert state["title"] == "XGBoost training report"
    assert state["sections"] == sections
    assert state["images"], "no plot in the page"
    for img in state["images"]:
        assert img["complete"] and img["width"] > 100, img


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    X, y = breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 3, "eval_metric": ["logloss", "auc"], "nthread": 1}
    job = tmp_path_factory.mktemp("binary-job")
    return write_xgb_trial(job / "debug-output", params, *split(X, y, 150), num_round=6, save_interval=2)


@needs_chromium
def test_binary_report_opens_clean_in_chromium(binary, chromium):
    rule, page = report_of(binary.path)
    # beside the trial, as SageMaker lays out a job's rule output
    assert page == Path(binary.path).parent / "rule-output" / "CreateXgboostReport" / "xgboost_report.html"
    assert rule.reports_written == 1
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    state = chromium.open(page.as_uri())
    assert_clean_page(
        state,
        chromium.problems(),
        COMMON_SECTIONS + ["confusion-matrix", "classification-scores", "accuracy-per-class", "roc"],
    )
    by_section = {}
    for img in state["images"]:
        by_section.setdefault(img["section"], []).append(img["alt"])
    assert by_section["metrics"] == ["auc per step", "logloss per step"]
    assert by_section["feature-importance"] == [f"feature importance {k}" for k in ("weight", "gain", "cover")]
    # the numbers shown are those of the last saved round, as scikit-learn computes them
    y, p = binary.labels.astype(int), binary.predictions[4]
    assert f"Accuracy {np.mean((p > 0.5) == y):.4f} on 150 validation samples" in state["text"]
    assert f"Area under the ROC curve: {roc_auc_score(y, p):.4f}" in state["text"]
    assert "binary classification" in state["text"] and "0 to 4 (3 saved)" in state["text"]


@needs_chromium
def test_multiclass_report_in_output_path(tmp_path, chromium):
    X, y = digits()
    params = {"objective": "multi:softprob", "num_class": 10, "max_depth": 3, "nthread": 1}
    run = write_xgb_trial(tmp_path / "trial", params, *split(X, y, 200), num_round=3)
    rule, page = report_of(run.path, output_path=str(tmp_path / "out"))
    assert page == tmp_path / "out" / "rule-output" / "CreateXgboostReport" / "xgboost_report.html"
    state = chromium.open(page.as_uri())
    assert_clean_page(
        state,
        chromium.problems(),
        COMMON_SECTIONS + ["confusion-matrix", "classification-scores", "accuracy-per-class"],
    )
    assert "multi-class classification" in state["text"]
    for k in range(10):
        assert f"class {k}\t" in state["text"]


@needs_chromium
def test_regression_report(tmp_path, chromium):
    X, _ = breast_cancer()
    y = X[:, 0]  # mean radius from the other features
    params = {"objective": "reg:squarederror", "max_depth": 3, "nthread": 1}
    run = write_xgb_trial(tmp_path / "trial", params, *split(X[:, 1:], y, 150), num_round=4)
    _, page = report_of(run.path)
    state = chromium.open(page.as_uri())
    assert_clean_page(state, chromium.problems(), COMMON_SECTIONS + ["residuals", "error-per-label-bin"])
    res = run.predictions[3] - run.labels
    assert f"{np.abs(res).mean():.6g}" in state["text"]


@needs_chromium
def test_page_checks_catch_errors(tmp_path, chromium):
    """The checks above can fail: a broken image, a console error and an outside address are caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<html><body><section id="x"><img alt="missing" src="missing.png"></section>'
        '<img src="http://192.0.2.1/x.png"><script>console.error("boom")</script></body></html>'
    )
    state = chromium.open(bad.as_uri())
    problems = chromium.problems()
    assert any("console.error" in p and "boom" in p for p in problems)
    assert any("network request: http://192.0.2.1/x.png" in p for p in problems)
    assert any(not img["complete"] or img["width"] == 0 for img in state["images"])


def test_report_written_at_newest_step_while_training_runs(tmp_path):
    X, y = breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1}
    run = write_xgb_trial(tmp_path / "trial", params, *split(X, y, 100), num_round=4, end=False)
    rule = CreateXgboostReport(create_trial(run.path))
    for step in range(3):
        rule.invoke(step)
        assert rule.reports_written == 0  # not the newest step
    rule.invoke(3)
    assert rule.reports_written == 1
    assert "0 to 3 (4 saved)" in Path(rule.report_path).read_text()


def test_scores_match_sklearn(binary):
    X, y = digits()
    rng = np.random.default_rng(0)
    labels, preds = y, np.where(rng.random(len(y)) < 0.3, rng.integers(0, 10, len(y)), y)
    preds[preds == 9] = 8  # class 9 is never predicted: its precision is undefined (0)
    s = classification_scores(confusion_matrix(labels, preds, 10))
    for avg in ("micro", "macro", "weighted"):
        ref = precision_recall_fscore_support(labels, preds, average=avg, zero_division=0)[:3]
        np.testing.assert_allclose(s[avg], ref, rtol=1e-12)
    per_class = precision_recall_fscore_support(labels, preds, zero_division=0)
    np.testing.assert_allclose(s["f1"], per_class[2], rtol=1e-12)
    yb, pb = binary.labels, binary.predictions[4]
    assert roc_curve(yb, pb)[2] == pytest.approx(roc_auc_score(yb, pb), rel=1e-12)


def test_parameters_and_collections(binary):
    trial = create_trial(binary.path)
    assert CreateXgboostReport(trial).output_path is None
    with pytest.raises(RuleConfigurationError) as info:
        CreateXgboostReport(trial, output_path=5)
    assert info.value.parameter == "output_path"
    with pytest.raises(RuleConfigurationError) as info:
        CreateXgboostReport(trial, threshold="1")
    assert info.value.parameter == "threshold"
    got = {(h.name, tuple(sorted(h.parameters.items()))) for h in required_collections("CreateXgboostReport")}
    assert got == {
        (c, (("save_interval", "5"),)) for c in ("metrics", "feature_importance", "predictions", "labels")
    } | {("hyperparameters", (("save_steps", "0"),))}


def test_import_is_light():
    code = (
        "import sys, smdebug.rules.builtin.trees, smdebug.rules.builtin.classification; "
        "print(sorted(m for m in ('matplotlib', 'xgboost', 'pandas', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_report_of_metrics_only(tmp_path):
    """A trial with only metrics (no collections saved for the report) still gets a report, which says so."""
    write_collections(str(tmp_path / "job" / "debug-output"))
    for step in range(3):
        with FileWriter(trial_dir=str(tmp_path / "job" / "debug-output"), step=step) as fw:
            fw.write_tensor(np.array([1.0 / (step + 1)]), "train-poisson-nloglik")
            fw.write_tensor(np.array([2.0 / (step + 1)]), "valid_0-poisson-nloglik")
    end_trial(str(tmp_path / "job" / "debug-output"))
    rule, page = report_of(tmp_path / "job" / "debug-output")
    data = rule.collect()
    assert [(m.name, m.steps.tolist(), m.values.tolist()) for m in data.metrics] == [
        ("train-poisson-nloglik", [0, 1, 2], [1.0, 0.5, 1 / 3]),
        ("valid_0-poisson-nloglik", [0, 1, 2], [2.0, 1.0, 2 / 3]),
    ]
    text = page.read_text()
    assert page == tmp_path / "job" / "rule-output" / "CreateXgboostReport" / "xgboost_report.html"
    assert "id='metrics'" in text and "No predictions and labels were saved" in text
    assert "id='feature-importance'" not in text and "id='confusion-matrix'" not in text


def test_report_beside_an_s3_trial(bucket, boto_client):
    """On S3 (the moto server) the report goes beside the trial, as on SageMaker."""
    X, y = breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1}
    write_xgb_trial(f"s3://{bucket}/job/debug-output", params, *split(X, y, 100), num_round=2)
    rule, _ = report_of(f"s3://{bucket}/job/debug-output")
    assert rule.report_path == f"s3://{bucket}/job/rule-output/CreateXgboostReport/xgboost_report.html"
    body = boto_client.get_object(Bucket=bucket, Key="job/rule-output/CreateXgboostReport/xgboost_report.html")
    text = body["Body"].read().decode()
    for section in COMMON_SECTIONS + ["confusion-matrix", "classification-scores", "accuracy-per-class", "roc"]:
        assert f"<section id='{section}'>" in text


def test_cli_rules_prints_where_the_report_is(tmp_path, capsys):
    """`smdebug rules TRIAL --rule CreateXgboostReport`: the summary says where the page was written."""
    from smdebug.cli import main

    X, y = breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1}
    run = write_xgb_trial(tmp_path / "job" / "debug-output", params, *split(X, y, 150), num_round=2)
    assert main(["rules", run.path, "--rule", "CreateXgboostReport"]) == 0
    out = capsys.readouterr().out
    page = tmp_path / "job" / "rule-output" / "CreateXgboostReport" / "xgboost_report.html"
    assert page.is_file()
    assert f"CreateXgboostReport: report written to {page}" in out
    assert "no issue found" not in out  # it never fires: its summary is where the report went


def test_smdebug_report_on_an_xgboost_trial_shows_the_xgboost_page(tmp_path):
    """No empty gradient and weight norms for boosted trees: the main report carries the XGBoost
    page's sections (metrics, feature importance, confusion matrix)."""
    from smdebug.cli import main

    X, y = breast_cancer()
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1}
    run = write_xgb_trial(tmp_path / "job" / "debug-output", params, *split(X, y, 150), num_round=3)
    out = tmp_path / "report.html"
    assert main(["report", run.path, "-o", str(out), "--no-rules"]) == 0
    page = out.read_text()
    assert "id='xgboost'" in page and "id='feature-importance'" in page and "id='confusion-matrix'" in page
    assert "id='gradients'" not in page and "id='weights'" not in page
