"""The report's HTML: sections, tables and the rules' verdicts (inline PNG charts, no scripts)."""

from __future__ import annotations

import html
import json

import numpy as np

from smdebug.analysis.profiler_report.advice import advice_for

__all__ = ["section", "table", "CSS", "rules_section", "verdict_of", "fmt_s", "fmt_ms", "img"]

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1150px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.88em}td,th{border:1px solid #ddd;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.fired{color:#b00020;font-weight:bold}.ok{color:#1b7a1b}.nodata{color:#a66;font-weight:bold}
img{max-width:100%;border:1px solid #eee}.meta{color:#555}.fix{background:#fff8e1}.evidence{font-size:.85em;color:#444}
ul.glance li{margin:.2em 0}
"""


def section(sid: str, title: str, body: str) -> str:
    return f"<section id='{sid}'><h2>{html.escape(title)}</h2>{body}</section>"


def _cell(v) -> str:
    if isinstance(v, float):
        return f"<td class='num'>{'-' if not np.isfinite(v) else f'{v:,.2f}'}</td>"
    if isinstance(v, (int, np.integer)):
        return f"<td class='num'>{int(v):,}</td>"
    if isinstance(v, Raw):
        return f"<td class='{v.cls}'>{v.html}</td>"
    return f"<td>{html.escape('-' if v is None else str(v))}</td>"


class Raw:
    """A table cell that is already HTML (with an optional CSS class)."""

    def __init__(self, markup: str, cls: str = ""):
        self.html, self.cls = markup, cls


def table(headers, rows, tid: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    head = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
    ident = f" id='{tid}'" if tid else ""
    return f"<table{ident}>{head}<tbody>{body}</tbody></table>"


def img(src: str, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='{src}'>"


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.2f} s"


def fmt_ms(us: float) -> str:
    return f"{us / 1e3:,.1f} ms"


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


def _params(p) -> str:
    if isinstance(p, dict):
        return ", ".join(f"{k}={v}" for k, v in p.items())
    return str(p or "-").replace("\n", ", ")


def _evidence(report: dict, origin_us: int | None) -> str:
    details = report.get("Details")
    items = []
    v = _verdict(report)
    if v.get("message"):
        items.append(f"<li>{html.escape(str(v['message']))}</li>")
    windows = v.get("fired_windows") or []
    if windows and origin_us is not None:
        shown = ", ".join(f"{(a - origin_us) / 1e6:.1f}-{(b - origin_us) / 1e6:.1f} s" for a, b in windows[:8])
        more = f" and {len(windows) - 8} more" if len(windows) > 8 else ""
        items.append(f"<li>fired in the windows {shown}{more} (time since the job started)</li>")
    viol = report.get("Violations")
    if viol is not None:
        items.append(f"<li>violations: {html.escape(str(viol))}, datapoints: "
                     f"{html.escape(str(report.get('Datapoints', '-')))}</li>")
    if isinstance(details, dict):
        for k, v in list(details.items())[:12]:
            text = json.dumps(v, default=str) if not isinstance(v, str) else v
            if len(text) > 240:
                text = text[:240] + " ..."
            items.append(f"<li><b>{html.escape(str(k))}</b>: {html.escape(text)}</li>")
        if len(details) > 12:
            items.append(f"<li>... and {len(details) - 12} more entries in the rule's report</li>")
    elif details:
        items.append(f"<li>{html.escape(str(details)[:400])}</li>")
    return f"<ul class='evidence'>{''.join(items)}</ul>" if items else "-"


def rules_section(rule_reports: dict, origin_us: int | None = None) -> str:
    """Every rule's verdict with its evidence and the recommended fix; fired rules first."""
    if not rule_reports:
        return section("rules", "Rules: verdicts and what to fix",
                       "<p class='nodata'>No profiler rule was run for this report, so nothing was judged: "
                       "run them with <code>smdebug profile rules</code> or the ProfilerReport rule.</p>")

    def order(item):
        name, rep = item
        return (verdict_of(rep)[1] != "fired", -int(rep.get("RuleTriggered", 0) or 0), name)

    rows = []
    for name, rep in sorted(rule_reports.items(), key=order):
        verdict, cls = verdict_of(rep)
        check, fix = advice_for(name, rep)
        rows.append((name, Raw(html.escape(verdict), cls), Raw(_evidence(rep, origin_us)), check,
                     Raw(html.escape(fix), "fix" if cls == "fired" else ""), _params(rep.get("RuleParameters"))))
    fired = sum(1 for _, rep in rule_reports.items() if verdict_of(rep)[1] == "fired")
    lead = (f"<p>{fired} of {len(rule_reports)} rules fired.</p>" if fired
            else f"<p class='ok'>None of the {len(rule_reports)} rules fired.</p>")
    return section("rules", "Rules: verdicts and what to fix", lead + table(
        ["rule", "verdict", "evidence", "what it checks", "what to do", "parameters"], rows, tid="rule-verdicts"))
