"""`smdebug report`: what a fired rule found, and the first tensor that went NaN or inf.

Real PyTorch runs (tests/cli/conftest.py): ``nan_trial`` feeds a NaN batch at TRAIN step 5 of 8
(global step 5: the TRAIN steps come first); ``digits_trial`` is a healthy run. The page is read
back with :mod:`html.parser`: each section's text, and the cells of the rules table.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest

from smdebug.cli import main, report
from smdebug.rules.finding import show_value
from smdebug.trials import create_trial

NAN_STEP = 5  # train_digits(nan_at=5): the input of TRAIN step 5 (global step 5) is NaN


class Page(HTMLParser):
    """The text of each ``<section id=...>``, and the rules table as ``{rule: [cell texts]}``."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, str] = {}
        self.rules: dict[str, list[str]] = {}
        self._section: str | None = None
        self._in_rules = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._section = attrs.get("id")
            self.sections[self._section] = ""
        elif tag == "table" and attrs.get("id") == "rule-results":
            self._in_rules = True
        elif self._in_rules and tag == "tr":
            self._row = []
        elif self._row is not None and tag == "td":
            self._cell = []
        elif tag in ("p", "li", "tr", "td", "th"):
            self._text(" ")

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
        elif tag == "table":
            self._in_rules = False
        elif tag == "td" and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self.rules[self._row[0]] = self._row
            self._row = None

    def handle_data(self, data):
        self._text(data)

    def _text(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._section is not None:
            self.sections[self._section] += data

    def text(self, section: str) -> str:
        return " ".join(self.sections[section].split())


def write_report(tmp_path, trial, monkeypatch=None, *extra) -> tuple[Page, list]:
    """Run ``smdebug report``; the page, and the rule results it was rendered from."""
    seen: list = []
    if monkeypatch is not None:
        run_rules = report.run_applicable_rules

        def keep(t):
            seen.extend(run_rules(t))
            return seen

        monkeypatch.setattr(report, "run_applicable_rules", keep)
    out = tmp_path / "report.html"
    assert main(["report", trial, "-o", str(out), *extra]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<script src" not in text and "http://" not in text and "https://" not in text
    return Page(text), seen


def test_fired_rule_shows_what_it_found(tmp_path, nan_trial, monkeypatch):
    page, results = write_report(tmp_path, nan_trial, monkeypatch)
    by_rule = {r["rule"]: r for r in results}
    exploding = by_rule["ExplodingTensor"]
    assert exploding["status"] == "fired" and exploding["steps"] == [NAN_STEP]
    found = exploding["finding"]
    assert found is not None, "ExplodingTensor does not say what it found (Rule.found)"
    assert found["step"] == NAN_STEP and found["mode"] == "TRAIN" and found["mode_step"] == NAN_STEP
    assert found["tensors"] and found["values"]
    # the tensor it names really holds a non-finite value there (on the worker it names)
    trial = create_trial(nan_trial)
    t = trial.tensor(found["tensors"][0])
    worker = found["worker"] or t.workers(NAN_STEP)[0]
    try:
        held = t.value(NAN_STEP, worker=worker)
    except Exception:  # noqa: BLE001 - a tensor saved as reductions only: its reductions
        held = np.array([v for v in t.reduction_values(NAN_STEP, worker=worker).values()])
    assert not np.isfinite(held).all()

    row = page.rules["ExplodingTensor"]
    assert row[1:3] == ["fired", str(NAN_STEP)]
    detail = row[3]
    # the finding, not the generic sentence
    assert "resulted in the condition being met" not in detail
    assert f"tensor {found['tensors'][0]} = {show_value(found['values'][0])}" in detail
    if found["condition"]:
        assert f"condition {found['condition']}" in detail
    where = f"at global step {NAN_STEP} (TRAIN step {NAN_STEP}" + (f", {found['worker']})" if found["worker"] else ")")
    assert where in detail
    # a rule that judged nothing shows why, not a clean bill of health
    for r in results:
        if r["status"] == "evaluated nothing":
            assert page.rules[r["rule"]][3] == r["message"] and "evaluated no tensor" in r["message"]


def test_first_nonfinite_names_the_tensor_and_step(tmp_path, nan_trial):
    nonfinite = pytest.importorskip("smdebug.analysis.nonfinite")
    trial = create_trial(nan_trial)
    nf = nonfinite.first_nonfinite(trial)
    # the NaN batch at step 5: the loss is the first saved tensor computed from it (the weights
    # saved at step 5 are those before its update; the gradients come after the loss)
    assert nf is not None and nf.step == NAN_STEP and nf.kind == "NaN"
    assert nf.tensor in trial.tensor_names(collection="losses")
    page, _ = write_report(tmp_path, nan_trial, None, "--no-rules")
    text = page.text("nonfinite")
    assert f"{nf.tensor} was the first tensor to hold NaN" in text
    assert f"{nf.count} of {nf.size} value" in text
    assert f"at global step {NAN_STEP} (TRAIN step {NAN_STEP}, {nf.worker})" in text
    assert "finite (" not in text


def test_healthy_run_says_every_value_is_finite(tmp_path, digits_trial, monkeypatch):
    nonfinite = pytest.importorskip("smdebug.analysis.nonfinite")
    trial = create_trial(digits_trial)
    assert nonfinite.first_nonfinite(trial) is None
    page, results = write_report(tmp_path, digits_trial, monkeypatch)
    n = len(trial.steps())
    assert page.text("nonfinite") == f"First non-finite value Every saved value is finite ({n} steps)."
    assert {r["rule"]: r["status"] for r in results}["ExplodingTensor"] == "no issue"
    assert page.rules["ExplodingTensor"][1:] == ["no issue", "-", f"{n} steps evaluated"]
    assert all(r["finding"] is None for r in results if r["status"] != "fired")


def test_trial_without_a_numeric_tensor(tmp_path):
    pytest.importorskip("smdebug.analysis.nonfinite")
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.locations import END_OF_JOB
    from smdebug.core.writer import FileWriter
    from smdebug.storage import open_store

    out = tmp_path / "words"
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(out), "worker_0_collections.json")
    for s in range(2):
        with FileWriter(trial_dir=str(out), step=s, worker="worker_0") as fw:
            fw.write_tensor(tdata=np.array(["a", "bc"]), tname="words")
    open_store(str(out)).write(END_OF_JOB, b"")
    page, _ = write_report(tmp_path, str(out), None, "--no-rules")
    assert "holds no numeric tensor" in page.text("nonfinite")
    assert "finite (" not in page.text("nonfinite")


def test_findings_are_escaped():
    """Tensor names, values and conditions are text on the page, never markup."""
    results = [
        {
            "rule": "R<1>",
            "status": "fired",
            "steps": [3],
            "message": "m",
            "finding": {
                "rule": "R",
                "step": 3,
                "mode": "TRAIN",
                "mode_step": 1,
                "worker": "w<0>",
                "tensors": ["a<b>", "c&d"],
                "values": ["NaN", 2.5e-9],
                "condition": "x < 1e-07 & y > 2",
                "message": "a<b> is <i>NaN</i>",
                "threshold": 1e-7,
            },
        }
    ]
    html = report._rules_html(results)
    assert "<b>" not in re.sub(r"<b class='value'>", "", html) and "<i>" not in html and "a<b>" not in html
    page = Page(f"<section id='rules'>{html}</section>")
    row = page.rules["R<1>"]
    assert row[:3] == ["R<1>", "fired", "3"]
    assert row[3] == (
        "a<b> is <i>NaN</i> tensor a<b> = NaN tensor c&d = 2.5e-09 condition x < 1e-07 & y > 2 "
        "at global step 3 (TRAIN step 1, w<0>) threshold 1e-07"
    )


def test_values_not_one_a_tensor_are_not_paired_with_the_tensors():
    """LossNotDecreasing names one loss and two values (before, now); Confusion several tensors and one ratio."""
    results = [
        {
            "rule": "LossNotDecreasing",
            "status": "fired",
            "steps": [10],
            "message": "m",
            "finding": {
                "rule": "LossNotDecreasing",
                "step": 10,
                "mode": "TRAIN",
                "mode_step": 10,
                "worker": "worker_0",
                "tensors": ["loss"],
                "values": [0.58, "NaN"],
                "condition": "c",
                "message": "loss went up",
            },
        },
        {
            "rule": "Confusion",
            "status": "fired",
            "steps": [2],
            "message": "m",
            "finding": {
                "rule": "Confusion",
                "step": 2,
                "mode": None,
                "mode_step": None,
                "worker": None,
                "tensors": ["labels", "predictions"],
                "values": [0.25],
                "condition": "c",
                "message": "poor",
            },
        },
    ]
    page = Page(f"<section id='rules'>{report._rules_html(results)}</section>")
    assert "tensor loss values 0.58, NaN condition c" in page.rules["LossNotDecreasing"][3]
    assert "tensor labels tensor predictions value 0.25 condition c" in page.rules["Confusion"][3]


def test_a_trial_without_modes_gets_its_norms_and_mode_table(tmp_path):
    """The README's tour saves without set_mode (every step GLOBAL): the report plots its gradient and
    weight norms and lists the GLOBAL steps, instead of 'No gradients were saved' above the tables."""
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    loss_fn, opt = torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(
        out_dir=str(tmp_path / "tour"),
        include_collections=["weights", "gradients", "losses"],
        save_config=smd.SaveConfig(save_interval=1),
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(4):
        loss_fn(model(torch.randn(16, 4)), torch.randint(0, 3, (16,))).backward()
        opt.step()
        opt.zero_grad()
    hook.close()
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "tour"), "-o", str(out), "--no-rules"]) == 0
    text = out.read_text()
    page = Page(text)
    for coll in ("gradients", "weights"):
        assert f"No {coll} were saved" not in page.text(coll)
        assert re.search(
            rf"<section id='{coll}'><h2>[^<]*</h2><div class='chart'>.*?<img class='v00' alt='{coll}'", text
        ), coll
    assert "GLOBAL 4 0 3" in page.text("summary")


def test_info_lists_the_steps_of_a_trial_without_modes_once(capsys, tmp_path):
    from smdebug.core.writer import FileWriter

    for step in (0, 1, 2):
        with FileWriter(trial_dir=str(tmp_path / "t"), step=step) as w:
            w.write_tensor(tdata=np.ones(2, dtype=np.float32), tname="w")
    from smdebug.core.collection_manager import CollectionManager

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(tmp_path / "t"), "worker_0_collections.json")
    assert main(["info", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^│ GLOBAL +│", out, re.M)) == 1, out  # one row in the steps table
    assert main(["info", str(tmp_path / "t"), "--json"]) == 0
    assert '"GLOBAL": [\n' in capsys.readouterr().out  # the JSON names the mode of the steps
