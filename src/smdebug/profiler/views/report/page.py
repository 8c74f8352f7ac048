"""The report's HTML: its style, its tables' cells and the rules' verdicts (inline PNG charts, no
scripts), on :mod:`smdebug.analysis.page_kit` (sections, tables, images, the document shell)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from smdebug.analysis.page_kit import Raw, img, section, text_cell
from smdebug.analysis.page_kit import table as kit_table
from smdebug.profiler.views.report.advice import advice_for
from smdebug.profiler.views.report.evidence import evidence_html
from smdebug.profiler.views.units import fmt_count, fmt_duration, fmt_param, fmt_us, parse_params, sig

__all__ = ["section", "table", "CSS", "rules_section", "verdict_of", "fmt_s", "fmt_ms", "img"]

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1150px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.88em}td,th{border:1px solid #ddd;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.fired{color:#b00020;font-weight:bold}.ok{color:#1b7a1b}.nodata{color:#a66;font-weight:bold}
img{max-width:100%;border:1px solid #eee}.meta{color:#555}.fix{background:#fff8e1}.evidence{font-size:.85em;color:#444}
table.evidence{margin:.3em .3em .3em 0;display:inline-table;vertical-align:top}td.params{font-size:.85em}
tr.rule>td{border-bottom:none}tr.rule-evidence>td{border-top:none;padding-bottom:.8em}tr.rule-evidence b{font-size:.8em;color:#666}
ul.glance li{margin:.2em 0}
"""


def _cell(v: object) -> str:
    """A table cell: a float to three significant figures, an int as a count (pass identifiers,
    such as step numbers, as strings), anything else as :func:`~smdebug.analysis.page_kit.text_cell`
    makes it (escaped text, or a ``Raw`` cell as it is)."""
    if isinstance(v, (float, np.floating)):
        return f"<td class='num'>{sig(float(v))}</td>"
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return f"<td class='num'>{fmt_count(int(v))}</td>"
    return text_cell(v)


def table(headers: Sequence[Any] | None, rows: Iterable[Sequence[Any]], tid: str | None = None) -> str:
    """A :func:`~smdebug.analysis.page_kit.table` whose numbers are shown as the report shows them."""
    return kit_table(headers, rows, tid=tid, cell=_cell)


def fmt_s(seconds: float | None) -> str:
    """A duration in seconds, to three significant figures in the unit that suits it."""
    return fmt_duration(seconds)


def fmt_ms(us: float) -> str:
    """A duration in microseconds (the name is older than the unit it picks: ``20.9 ms``, ``1.5 s``)."""
    return fmt_us(us)


def _verdict(report: dict) -> dict:
    v = report.get("Verdict")
    return v if isinstance(v, dict) else {}


def verdict_of(report: dict) -> tuple[str, str]:
    """``(verdict text, CSS class)`` of one rule report: 1.0.34's schema (``RuleTriggered``,
    ``Datapoints``), and our rules' ``Verdict`` (status and message) when present."""
    v = _verdict(report)
    status = v.get("status") or report.get("status")
    if report.get("Error") or status == "error":
        return f"error: {report.get('Error') or v.get('message', '')}", "nodata"
    triggered = int(report.get("RuleTriggered", 0) or 0)
    if triggered > 0 or status == "issues found":
        return f"fired ({triggered} time{'s' if triggered != 1 else ''})", "fired"
    if isinstance(status, str) and status not in ("", "ok", "no issue"):
        return status, "nodata"
    if report.get("Datapoints") == 0:
        return "looked at no data", "nodata"
    return "no issue", "ok"


def _params(rule: str, p: str | dict[Any, Any] | None) -> str:
    """The rule's parameters, one a line, each value as what it means (``scan_interval_us: 60 s``)."""
    pairs = parse_params(p)
    if not pairs:
        return "-"
    return "<br>".join(f"{html.escape(name)}: {html.escape(fmt_param(rule, name, value))}" for name, value in pairs)


def rules_section(rule_reports: dict[str, dict[str, Any]], origin_us: int | None = None) -> str:
    """Every rule's verdict with its evidence and the recommended fix; fired rules first."""
    if not rule_reports:
        return section(
            "rules",
            "Rules: verdicts and what to fix",
            "<p class='nodata'>No profiler rule was run for this report, so nothing was judged: "
            "run them with <code>smdebug profile rules</code> or the ProfilerReport rule.</p>",
        )

    def order(item: tuple[str, dict[str, Any]]) -> tuple[bool, int, str]:
        name, rep = item
        return (verdict_of(rep)[1] != "fired", -int(rep.get("RuleTriggered", 0) or 0), name)

    headers = ["rule", "verdict", "what it checks", "what to do", "parameters"]
    body = []
    for name, rep in sorted(rule_reports.items(), key=order):
        verdict, cls = verdict_of(rep)
        check, fix = advice_for(name, rep)
        cells = (
            name,
            Raw(html.escape(verdict), cls),
            check,
            Raw(html.escape(fix), "fix" if cls == "fired" else ""),
            Raw(_params(name, rep.get("RuleParameters")), "params"),
        )
        # the evidence under the verdict, the row's whole width: its tables need the room
        body.append(
            f"<tr class='rule'>{''.join(_cell(c) for c in cells)}</tr>"
            f"<tr class='rule-evidence'><td colspan='{len(headers)}'><b>evidence</b>"
            f"{evidence_html(name, rep, origin_us)}</td></tr>"
        )
    fired = sum(1 for _, rep in rule_reports.items() if verdict_of(rep)[1] == "fired")
    lead = (
        f"<p>{fired} of {len(rule_reports)} rules fired.</p>"
        if fired
        else f"<p class='ok'>None of the {len(rule_reports)} rules fired.</p>"
    )
    head = "".join(f"<th>{h}</th>" for h in headers)
    verdicts = f"<table id='rule-verdicts'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return section("rules", "Rules: verdicts and what to fix", lead + verdicts)
