"""``smdebug report TRIAL -o report.html``: one self-contained HTML page about a trial
(``--profile``: about a profiler folder, see :mod:`smdebug.profiler.views.report`).

The first tensor that went NaN or inf (and where), losses per mode, gradient and weight norms per
layer, the built-in rules that apply to what was saved and what each found where it fired (the
tensor, its value, the condition, the worker, the global and mode step), workers, collections,
and what was saved. Plots are inline PNG images; the page fetches nothing (no fonts, scripts or
images from elsewhere).
"""

from __future__ import annotations

import base64
import html
import io
import time

from smdebug.analysis.page_kit import document, img, section, table
from smdebug.cli.common import (
    CliError,
    add_output_argument,
    add_repeatable,
    add_trial_argument,
    check_writable,
    needs_extra,
    say,
    writing,
)
from smdebug.modes import ModeKeys


def add(sub) -> None:
    p = sub.add_parser("report", help="write one self-contained HTML report (plots, rules, what was saved)")
    add_trial_argument(p)
    add_output_argument(p, "the .html file to write")
    p.add_argument("--no-rules", action="store_true", help="leave the rules out")
    p.add_argument(
        "--profile",
        action="store_true",
        help="TRIAL is a profiler folder (or a folder whose profiler/ or profiler-output/ holds one): "
        "write the profiler report (steps, phases, system usage, the profiler rules' verdicts)",
    )
    add_repeatable(
        p,
        "--param",
        "RULE.NAME=VALUE",
        "with --profile: a profiler rule's parameter, e.g. StepOutlier.n_outliers=0 (repeatable; "
        "as smdebug profile rules --param)",
    )
    p.set_defaults(func=run)


def applicable_rules(trial) -> list:
    """``[(rule name, params)]`` of the registered built-in rules whose inputs the trial holds
    (each rule says what it needs: ``report_needs`` / ``report_params``), sorted by name."""
    from smdebug.rules.builtin import rule_classes

    out = []
    for name, cls in rule_classes().items():
        params = cls.report_params(trial)
        if params is not None:
            out.append((name, params))
    return out


def run_applicable_rules(trial) -> list:
    """Each applicable rule over every step: dicts with rule, status, steps, message and finding
    (the first firing's :meth:`smdebug.rules.finding.Finding.to_json`, with its mode and mode step;
    None when the rule did not fire or does not say what it found)."""
    from smdebug.cli.rules import build_rules, evaluate_step
    from smdebug.rules.rule_invoker import nothing_evaluated_message

    results = []
    for name, params in applicable_rules(trial):
        try:
            runs = build_rules(trial, [[name, params]])
        except CliError as exc:
            results.append({"rule": name, "status": "error", "steps": [], "message": str(exc), "finding": None})
            continue
        try:
            for step in trial.steps():
                evaluate_step(runs, trial, step)
                if runs[0].done:
                    break
        except Exception as exc:  # noqa: BLE001 - one rule's failure is reported, not fatal
            results.append(
                {
                    "rule": name,
                    "status": "error",
                    "steps": [],
                    "message": f"{type(exc).__name__}: {exc}",
                    "finding": None,
                }
            )
            continue
        r = runs[0]
        if r.firings:
            f = r.firings[0]
            results.append(
                {
                    "rule": name,
                    "status": "fired",
                    "steps": [x.step for x in r.firings],
                    "message": f.what(),
                    "finding": _finding_json(f),
                }
            )
        elif getattr(r.rule, "tensors_evaluated", None) == 0:
            # a selection that matched nothing is not a clean bill of health (smdebug rules exits 2 for it)
            results.append(
                {
                    "rule": name,
                    "status": "evaluated nothing",
                    "steps": [],
                    "message": nothing_evaluated_message(r.rule, r.evaluated),
                    "finding": None,
                }
            )
        else:
            results.append(
                {
                    "rule": name,
                    "status": "no issue",
                    "steps": [],
                    "message": f"{r.evaluated} steps evaluated",
                    "finding": None,
                }
            )
    return results


def _finding_json(firing) -> dict | None:
    """The firing's finding as JSON, its mode and mode step filled in from the firing when the
    finding could not tell them; None when the rule did not say what it found."""
    if firing.finding is None:
        return None
    out = firing.finding.to_json()
    if out.get("mode") is None:
        out["mode"] = firing.mode
    if out.get("mode_step") is None:
        out["mode_step"] = firing.mode_step
    return out


_STATUS_CLASS = {"fired": "fired", "error": "error", "evaluated nothing": "error", "no issue": "ok"}


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


MAX_NORM_LINES = 200  # tensors of a collection drawn in its chart (the table lists them all)


def _norm_series(trial, collection: str) -> list:
    """The L2 norm of each tensor of ``collection`` over the steps (TRAIN, else GLOBAL)."""
    from smdebug.cli.series import NotPlottable, tensor_series

    if collection not in trial.collections():
        return []
    modes = [m for m in trial.modes() if m.name in ("TRAIN", "GLOBAL")] or trial.modes() or [ModeKeys.GLOBAL]
    series = []
    for n in trial.tensor_names(collection=collection):
        try:
            s = tensor_series(trial, n, modes[0], "l2")
        except NotPlottable as exc:
            say(f"smdebug report: skipped {exc}")
            continue
        if s is not None:
            s.label = n
            series.append(s)
    return series


def _chart(sid: str, series: list, title: str) -> str:
    """The chart of ``series`` with two toggles, log scale and TensorBoard's smoothing: four
    pictures, the one shown chosen by CSS from the two checkboxes (no script needed)."""
    from smdebug.cli.plot import figure

    imgs = []
    for log in (False, True):
        for smooth in (False, True):
            alt = sid + (" log" if log else "") + (" smoothed" if smooth else "")
            png = _png(figure(series, title, by_mode_step=False, log=log, smooth=smooth))
            imgs.append(img(png, alt, f"v{int(log)}{int(smooth)}"))
    return (
        f"<div class='chart'><input type='checkbox' class='log' id='{sid}-log'><label for='{sid}-log'>log scale"
        f"</label> <input type='checkbox' class='smooth' id='{sid}-smooth'><label for='{sid}-smooth'>smoothed"
        f"</label>{''.join(imgs)}</div>"
    )


def _normstable(sid: str, series: list) -> str:
    """One row per tensor: its norm at the first and last step, smallest, largest, and the first step
    where it was NaN or infinite; sortable (click a heading) and filtered by a regex."""
    import math

    from smdebug.cli.plot import natural_key
    from smdebug.rules.finding import show_value

    rows = []
    for s in sorted(series, key=lambda s: natural_key(s.label)):
        finite = [v for v in s.values if math.isfinite(v)]
        bad = next((st for st, v in zip(s.steps, s.values) if not math.isfinite(v)), None)
        cells = [
            (s.label, None),
            (show_value(s.values[0]), s.values[0]),
            (show_value(s.values[-1]), s.values[-1]),
            (show_value(min(finite)) if finite else "-", min(finite) if finite else None),
            (show_value(max(finite)) if finite else "-", max(finite) if finite else None),
            ("-" if bad is None else str(bad), bad),
        ]
        rows.append(
            "<tr>"
            + "".join(
                f"<td{'' if v is None or not math.isfinite(v) else f' data-v={v!r}'}>{html.escape(str(t))}</td>"
                for t, v in cells
            )
            + "</tr>"
        )
    head = "".join(
        f"<th title='sort'>{h}</th>" for h in ("tensor", "first", "last", "min", "max", "first NaN/inf step")
    )
    return (
        f"<p><input type='search' class='filter' data-table='{sid}-table' placeholder='filter tensors (regex)'> "
        f"{len(series)} tensors; click a heading to sort</p><table id='{sid}-table' class='sortable'>"
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


# the norm tables: sorted by a click on a heading, rows filtered by the regex typed above them
_SCRIPT = """<script>
document.querySelectorAll('table.sortable').forEach(function (t) {
  t.querySelectorAll('th').forEach(function (th, i) {
    th.addEventListener('click', function () {
      var rows = Array.from(t.tBodies[0].rows), up = th.dataset.up !== '1';
      rows.sort(function (a, b) {
        var x = a.cells[i], y = b.cells[i];
        var u = x.dataset.v, w = y.dataset.v;
        var c = (u !== undefined && w !== undefined) ? u - w : x.textContent.localeCompare(y.textContent, undefined, {numeric: true});
        return up ? c : -c;
      });
      th.dataset.up = up ? '1' : '0';
      rows.forEach(function (r) { t.tBodies[0].appendChild(r); });
    });
  });
});
document.querySelectorAll('input.filter').forEach(function (f) {
  f.addEventListener('input', function () {
    var re; try { re = new RegExp(f.value, 'i'); } catch (e) { return; }
    Array.from(document.getElementById(f.dataset.table).tBodies[0].rows).forEach(function (r) {
      r.style.display = re.test(r.cells[0].textContent) ? '' : 'none';
    });
  });
});
</script>"""


HISTOGRAM_PANELS = 12  # tensors whose values get a histogram (the first in natural order)


def _histograms(trial) -> str | None:
    """For the weights and gradients saved whole (raw values), a histogram of each tensor's values at
    its first and last saved step, one panel per tensor (HISTOGRAM_PANELS at most, then how many more)."""
    import numpy as np
    from matplotlib.figure import Figure

    from smdebug.cli.plot import natural_key

    out = []
    for coll in ("weights", "gradients"):
        if coll not in trial.collections():
            continue
        names = sorted(trial.tensor_names(collection=coll), key=natural_key)
        raw = []
        for n in names:
            t = trial.tensor(n)
            steps = t.steps()
            first = next((s for s in steps if t.saved(s)["raw"]), None)
            if first is not None:
                raw.append((n, t, first, next(s for s in reversed(steps) if t.saved(s)["raw"])))
        if not raw:
            continue
        shown = raw[:HISTOGRAM_PANELS]
        cols = min(4, len(shown))
        rows = (len(shown) + cols - 1) // cols
        fig = Figure(figsize=(3.2 * cols, 2.4 * rows), dpi=100)
        for i, (n, t, first, last) in enumerate(shown):
            ax = fig.add_subplot(rows, cols, i + 1)
            for step, color in ((first, "#1f77b4"), (last, "#d62728")) if last != first else ((first, "#1f77b4"),):
                v = np.asarray(t.value(step), dtype=np.float64).ravel()
                v = v[np.isfinite(v)]
                if v.size:
                    ax.hist(v, bins=40, alpha=0.55, color=color, label=f"step {step}")
            ax.set_title(n, fontsize="small")
            ax.tick_params(labelsize="x-small")
            ax.legend(fontsize="xx-small")
        fig.tight_layout()
        more = (
            f"<p class='meta'>{len(raw) - len(shown)} more {coll} saved whole are not drawn.</p>"
            if len(raw) > len(shown)
            else ""
        )
        out.append(f"<h3>{html.escape(coll)}</h3>{img(_png(fig), f'{coll} histograms')}{more}")
    return "".join(out) or None


def _loss_chart(trial) -> str | None:
    from smdebug.cli.plot import collect

    try:
        series = collect(trial, speak=lambda line: say(f"smdebug report: {line}"))
    except CliError:
        return None
    return _chart("losses", series, "losses per mode")


def _where(step, mode, mode_step, worker) -> str:
    """``global step 5 (TRAIN step 5, worker_0)``."""
    inside = []
    if mode is not None and mode_step is not None:
        inside.append(f"{getattr(mode, 'name', mode)} step {mode_step}")
    if worker:
        inside.append(str(worker))
    return f"global step {step}" + (f" ({', '.join(inside)})" if inside else "")


def _finding_html(found: dict) -> str:
    """What a firing found (a :meth:`Finding.to_json` dict): its sentence, then each tensor with its
    value, the condition that held, and where (global step, mode step, worker)."""
    from smdebug.rules.finding import FINDING_FIELDS, show_value

    e = html.escape
    items = []
    tensors, values = found.get("tensors") or [], found.get("values") or []
    if len(tensors) == len(values):  # one value a tensor
        for name, value in zip(tensors, values):
            items.append(
                f"<li>tensor <code class='tensor'>{e(str(name))}</code> = "
                f"<b class='value'>{e(show_value(value))}</b></li>"
            )
    else:  # e.g. a loss's previous and current value, or a ratio over several tensors
        items.extend(f"<li>tensor <code class='tensor'>{e(str(name))}</code></li>" for name in tensors)
        if values:
            items.append(
                "<li>"
                + ("value " if len(values) == 1 else "values ")
                + ", ".join(f"<b class='value'>{e(show_value(v))}</b>" for v in values)
                + "</li>"
            )
    if found.get("condition"):
        items.append(f"<li>condition <code class='condition'>{e(str(found['condition']))}</code></li>")
    where = _where(found.get("step"), found.get("mode"), found.get("mode_step"), found.get("worker"))
    items.append(f"<li class='where'>at {e(where)}</li>")
    extra = [(k, v) for k, v in found.items() if k not in FINDING_FIELDS and isinstance(v, (str, int, float, bool))]
    if extra:
        items.append(
            "<li>" + e(", ".join(f"{k} {show_value(v) if isinstance(v, float) else v}" for k, v in extra)) + "</li>"
        )
    return f"<p class='found'>{e(str(found.get('message') or ''))}</p><ul class='finding'>{''.join(items)}</ul>"


def _rules_html(results: list) -> str:
    if not results:
        return "<p>No built-in rule applies to what this trial saved.</p>"
    rows = []
    for r in results:
        if r.get("finding"):
            detail = _finding_html(r["finding"])
        elif r["status"] == "evaluated nothing":
            detail = f"<p class='reason'>{html.escape(r['message'])}</p>"
        else:
            detail = html.escape(r["message"])
        rows.append(
            f"<tr><td>{html.escape(r['rule'])}</td>"
            f"<td class='{_STATUS_CLASS[r['status']]}'>{html.escape(r['status'])}</td>"
            f"<td>{html.escape(', '.join(map(str, r['steps'])) or '-')}</td>"
            f"<td>{detail}</td></tr>"
        )
    return (
        "<table id='rule-results'><thead><tr><th>rule</th><th>result</th><th>fired at step</th>"
        f"<th>what it found</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _nonfinite_html(trial) -> str:
    """The "First non-finite value" section: the first tensor, in the order the model computed
    them, that held NaN or inf, at the first step any did (:mod:`smdebug.analysis.nonfinite`)."""
    e = html.escape
    try:
        from smdebug.analysis.nonfinite import scan_nonfinite

        scan = scan_nonfinite(trial)  # first_nonfinite(trial), saying also how much it read
    except Exception as exc:  # noqa: BLE001 - the rest of the page is still worth writing
        say(f"smdebug report: could not look for non-finite values: {type(exc).__name__}: {exc}")
        return f"<p class='error'>Could not look for non-finite values: {e(type(exc).__name__)}: {e(str(exc))}</p>"
    nf = scan.found
    if nf is not None:
        size = nf.size if nf.size else nf.count
        what = "saved reduction" if getattr(nf, "from_reductions", False) else "value"
        many = f"{nf.count} of {size} {what}{'s' if size != 1 else ''}"
        return (
            f"<p id='first-nonfinite' class='fired'><code class='tensor'>{e(nf.tensor)}</code> was the first "
            f"tensor to hold <b class='kind'>{e(nf.kind)}</b>: <span class='count'>{e(many)}</span>, at "
            f"<span class='where'>{e(_where(nf.step, nf.mode, nf.mode_step, nf.worker))}</span>.</p>"
            "<p class='meta'>The first tensor, in the order the model computed them, that held NaN or inf, "
            "at the first step any did; what came after it was computed from it.</p>"
        )
    if not scan.steps:
        return "<p id='first-nonfinite'>The trial holds no step with a tensor yet: nothing to check.</p>"
    if not scan.values:
        return "<p id='first-nonfinite'>The trial holds no numeric tensor: nothing to check for NaN or inf.</p>"
    n = scan.steps
    return f"<p id='first-nonfinite' class='ok'>Every saved value is finite ({n} step{'s' if n != 1 else ''}).</p>"


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
th{background:#f4f4f4}.fired{color:#b00020;font-weight:bold}.ok{color:#1b7a1b}.error{color:#a66}
img{max-width:100%;border:1px solid #eee}.meta{color:#555}
.chart img{display:none}.chart label{margin-right:1em;cursor:pointer}
.chart .log:not(:checked)~.smooth:not(:checked)~img.v00,.chart .log:checked~.smooth:not(:checked)~img.v10,
.chart .log:not(:checked)~.smooth:checked~img.v01,.chart .log:checked~.smooth:checked~img.v11{display:block}
table.sortable th{cursor:pointer}table.sortable td,#saved td{white-space:nowrap}
ul.finding{margin:.2em 0;padding-left:1.2em}p.found{margin:.1em 0}code{background:#f6f6f6;padding:0 .2em}
"""


def _xgboost_sections(trial) -> list | None:
    """For an XGBoost trial, the sections of CreateXgboostReport's page (metrics, feature importance,
    confusion matrix and scores, ROC); None for a trial of another framework."""
    if not trial.tensor_names(regex=r"^(feature_importance|trees|hyperparameters|average_shap)/"):
        return None
    from smdebug.rules.builtin.trees import CreateXgboostReport
    from smdebug.rules.builtin.xgboost_report import report_sections

    return report_sections(CreateXgboostReport(trial).collect())


def render(trial, with_rules: bool = True) -> str:
    """The report's HTML."""
    from smdebug.cli.info import summarize

    info = summarize(trial)
    ended = "ended" if info["training_ended"] else "still running (no end-of-training marker yet)"
    summary = (
        f"<p class='meta'>{html.escape(info['path'])} &middot; training {ended} &middot; "
        f"{len(info['steps'])} steps &middot; workers: {html.escape(', '.join(info['workers']))} &middot; "
        f"written {time.strftime('%Y-%m-%d %H:%M:%S')}</p>"
        + table(
            ["mode", "steps", "first", "last"],
            [(m, len(s), s[0] if s else "-", s[-1] if s else "-") for m, s in info["mode_steps"].items()],
        )
    )
    parts = [
        f"<h1>smdebug report: {html.escape(info['trial'])}</h1>",
        section("summary", "Summary", summary),
        section("nonfinite", "First non-finite value", _nonfinite_html(trial)),
    ]
    loss = _loss_chart(trial)
    parts.append(section("losses", "Losses", loss or "<p>No losses were saved.</p>"))
    xgboost = _xgboost_sections(trial)
    for coll, title in (("gradients", "Gradient norms (L2) per layer"), ("weights", "Weight norms (L2) per layer")):
        if xgboost is not None:
            break  # boosted trees have no gradients or weights per layer: their page is below
        series = _norm_series(trial, coll)
        body = (
            _chart(coll, series[:MAX_NORM_LINES], title) + _normstable(coll, series)
            if series
            else f"<p>No {coll} were saved.</p>"
        )
        parts.append(section(coll, title, body))
    if xgboost is not None:
        parts.append(section("xgboost", "XGBoost training", "".join(xgboost)))
    else:
        hists = _histograms(trial)
        if hists:
            parts.append(section("histograms", "Distributions of the values saved whole (first and last step)", hists))
    if with_rules:
        parts.append(section("rules", "Rules", _rules_html(run_applicable_rules(trial))))
    parts.append(
        section(
            "collections",
            "Collections",
            table(["collection", "tensors saved"], [(c, len(n)) for c, n in info["collections"].items()]),
        )
    )
    saved = table(
        ["tensor", "steps", "modes", "raw", "reductions", "shape"],
        [
            (
                t["name"],
                len(t["steps"]),
                " ".join(f"{m}:{c}" for m, c in t["modes"].items()),
                "yes" if t["raw"] else "no",
                ", ".join(t["reductions"]) or "-",
                "x".join(map(str, t["shape"])) if t["shape"] else "-",
            )
            for t in info["tensors"]
        ],
    )
    if len(info["tensors"]) > 30:  # a long list stays folded: the charts and tables above come first
        saved = f"<details><summary>{len(info['tensors'])} tensors</summary>{saved}</details>"
    parts.append(section("saved", "What was saved", saved))
    body = "\n".join(parts)
    return document(f"smdebug report: {info['trial']}", body, _CSS, _SCRIPT)


def _run_profile(args, out: str) -> int:
    from smdebug.cli.profile import open_profile, run_profiler_rules
    from smdebug.profiler.views.report import profiler_report_html

    if args.no_rules and args.param:
        raise CliError(f"--param {args.param[0]}: sets a profiler rule's parameter, and --no-rules runs none")
    trial = open_profile(args.trial)
    reports = {} if args.no_rules else run_profiler_rules(trial, None, args.param)
    page = profiler_report_html(trial, reports)
    with writing(out), open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"wrote {out}; open it with: xdg-open {out}")
    return 0


def run(args) -> int:
    out = check_writable(args.output)
    needs_extra("matplotlib", "plot")
    if args.profile:
        return _run_profile(args, out)
    from smdebug.cli.profile import open_report_trial

    trial = open_report_trial(args)  # a profiler folder: says to add --profile
    page = render(trial, with_rules=not args.no_rules)
    with writing(out), open(out, "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"wrote {out}; open it with: xdg-open {out}")
    return 0
