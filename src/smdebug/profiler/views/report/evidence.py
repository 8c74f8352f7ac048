"""A profiler rule's evidence as the report shows it: its verdict's message, where it fired, and its
``Details`` as small tables, each number to three significant figures with its unit (durations,
percentages, bytes/s), times as times in the job (``+12.3 s`` after the profile's first record)
instead of epoch microseconds.

``Details`` is 1.0.34's free-form dict (per rule: :mod:`smdebug.rules.profiler`). It is drawn
generically: scalars as ``name | value`` rows, nested dicts as tables (one row per path, e.g.
``CPU / algo-1``, one column per key of the innermost dicts; dicts of the same columns share one
table), at most :data:`MAX_ROWS` rows a table. What each number is comes from :data:`HINTS`
(per rule, by key), else from its size and key (an integer over 1e14 is a time in microseconds
since the epoch).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from typing import Any

from smdebug.profiler.views.units import (
    fmt_at,
    fmt_bytes_rate,
    fmt_count,
    fmt_duration,
    fmt_percent,
    fmt_span,
    fmt_us,
    sig,
)

__all__ = ["evidence_html", "details_tables", "HINTS", "MAX_ROWS"]

MAX_ROWS = 8
MAX_LIST = 8
_EPOCH_US = 1e14  # an integer above it is a time in µs since the epoch (2001 on is above 9.8e14)

# rule -> {key: kind}. Kinds: "s" (a duration in seconds), "us" (a duration in µs), "at_us" / "at_s"
# (a time since the epoch, shown as the time in the job), "%", "points" (percentage points), "B/s",
# "count", "num" (a plain number), "id" (identifiers, as they are), "skip" (not shown). "*": the
# kind of any other number of the rule.
HINTS: dict[str, dict[str, str]] = {
    "StepOutlier": {
        "step_stats": "s",
        "stddev": "s",
        "step_starts_us": "at_us",
        "number_of_outliers": "count",
        "step_numbers": "id",
    },
    "Dataloader": {"dataloading_time": "s", "dataloaders": "num", "cores": "count", "num_workers": "count"},
    "CPUBottleneck": {
        "ratio": "%",
        "low_gpu_utilization": "count",
        "host_busy_not_job": "count",
        "GPUs": "count",
        "CPUs": "count",
        "*": "%",
    },
    "IOBottleneck": {"ratio": "%", "low_gpu_utilization": "count", "GPUs": "count", "CPUs": "count", "*": "%"},
    "MaxInitializationTime": {"job_start": "at_s", "job_end": "at_s", "step_num": "at_us"},
    "OverallSystemUsage": {"Network": "B/s", "*": "%"},
    "LowGPUUtilization": {"last_timestamp": "at_us", "*": "%"},
    "BatchSize": {"last_timestamp": "at_us", "*": "%"},
    "GPUMemoryIncrease": {"last_timestamp": "at_us", "increase": "points", "*": "%"},
    "LoadBalancing": {"workloads": "skip", "distances": "num"},
}
# a key's label in the tables (the key itself otherwise: what --json prints)
LABELS = {
    "number_of_outliers": "outliers",
    "step_numbers": "outlier steps",
    "step_starts_us": "outliers started at",
    "stddev": "std",
    "last_timestamp": "last violation (window starting at)",
    "dataloaders": "processes loading data per second (median)",
    "dataloading_time": "batch loading time",
    "ratio": "share of samples that were bottlenecks",
    "low_gpu_utilization": "samples with a GPU below gpu_threshold",
    "host_busy_not_job": "samples with the cores busy but not the job",
    "job_start": "first record",
    "job_end": "last record",
    "step_num": "step starts",
    "bottlenecks": "bottleneck samples",
    "GPUs": "GPUs low",
    "CPUs": "cores busy",
    "increase": "increase",
}


def _kind(key: str, path: tuple, hints: dict) -> str | None:
    for k in (key, *reversed(path)):
        if k in hints:
            return hints[k]
    return hints.get("*")


def _guess(key: str, v: float) -> str:
    """The kind of a number the hints do not name."""
    if isinstance(v, int) and abs(v) > _EPOCH_US:
        return "at_us"
    if isinstance(v, float) and 1e9 < v < 1e11 and any(w in key.lower() for w in ("time", "start", "end")):
        return "at_s"
    return "count" if isinstance(v, int) else "num"


def _number(v: float, kind: str, origin: int | None) -> str:
    if kind == "s":
        return fmt_duration(v)
    if kind == "us":
        return fmt_us(v)
    if kind == "at_us":
        return fmt_at(v, origin) if origin is not None else sig(v)
    if kind == "at_s":
        return fmt_at(v * 1e6, origin) if origin is not None else sig(v)
    if kind == "%":
        return fmt_percent(v)
    if kind == "points":
        return f"{sig(v)} points"
    if kind == "B/s":
        return fmt_bytes_rate(v)
    if kind == "count":
        return fmt_count(v)
    if kind == "id":
        return str(int(v)) if float(v) == int(v) else sig(v)
    return sig(v)


def _value(key: str, v: object, path: tuple, hints: dict, origin: int | None) -> str:
    """One value of the details as text."""
    kind = _kind(key, path, hints)
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "-"}[v]
    if isinstance(v, (int, float)):
        if isinstance(v, float) and not math.isfinite(v):
            return "-"
        return _number(v, kind or _guess(key, v), origin)
    if isinstance(v, (list, tuple)):
        shown = [_value(key, x, path, hints, origin) for x in v[:MAX_LIST]]
        more = f" and {len(v) - MAX_LIST} more" if len(v) > MAX_LIST else ""
        return (", ".join(shown) + more) if shown else "none"
    text = str(v)
    return text if len(text) <= 200 else text[:200] + " ..."


def _label(key: object) -> str:
    key = str(key)
    return LABELS.get(key, key)


def _row_label(path: tuple, origin: int | None) -> str:
    """A row's label: its path, an epoch-µs key as the time in the job."""
    parts = []
    for p in path:
        p = str(p)
        if p.isdigit() and int(p) > _EPOCH_US and origin is not None:
            parts.append(fmt_at(int(p), origin))
        else:
            parts.append(_label(p))
    return " / ".join(parts)


def _flat(record: dict) -> dict:
    """A dict whose values are scalars, lists or dicts of those, as ``{(parent key or None, key):
    value}``: the inner dicts' keys inlined (``{"step_stats": {"mean": ..}}`` -> column ``mean``,
    of the kind of ``step_stats``)."""
    out: dict = {}
    for k, v in record.items():
        if isinstance(v, dict):
            out.update(((k, ik), iv) for ik, iv in v.items())
        else:
            out[(None, k)] = v
    return out


def _is_record(d: object) -> bool:
    """A dict drawn as one table row: no value is a dict of dicts."""
    return isinstance(d, dict) and all(
        not isinstance(v, dict) or all(not isinstance(x, dict) for x in v.values()) for v in d.values()
    )


def _records(d: dict[Any, Any], path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], dict[Any, Any]]]:
    """``(path, record)`` of every record under ``d`` (see :func:`_is_record`)."""
    for k, v in d.items():
        if not isinstance(v, dict):
            continue
        if _is_record(v) and any(not isinstance(x, dict) for x in v.values()):
            yield (*path, k), v
        elif _is_record(v):  # a dict of scalar dicts: each inner dict a row
            for ik, iv in v.items():
                yield (*path, k, ik), iv
        else:
            yield from _records(v, (*path, k))


def _table(headers: list, rows: list, more: int = 0) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    if more:
        body += f"<tr><td colspan='{len(headers)}'>... and {fmt_count(more)} more</td></tr>"
    return f"<table class='evidence'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def details_tables(rule: str, details: object, origin_us: int | None) -> str:
    """``details`` (a rule report's ``Details``) as small tables (see the module's docstring)."""
    if details in (None, {}, [], ""):
        return ""
    if not isinstance(details, dict):
        text = str(details)
        return f"<p class='evidence'>{html.escape(text[:400])}</p>"
    hints = HINTS.get(rule, {})
    scalars = [(k, v) for k, v in details.items() if not isinstance(v, dict) and hints.get(k) != "skip"]
    parts = []
    if scalars:
        parts.append(_table(["", ""], [(_label(k), _value(str(k), v, (), hints, origin_us)) for k, v in scalars]))
    groups: dict = {}  # columns -> [(path, flat record)], in order
    for k, v in details.items():
        if not isinstance(v, dict) or hints.get(k) == "skip":
            continue
        if not v:
            parts.append(_table(["", ""], [(_label(k), "none")]))
            continue
        if _is_record(v) and all(not isinstance(x, dict) for x in v.values()):
            found = [((k,), v)]
        else:
            found = list(_records({k: v}, ()))
        for path, rec in found:
            if any(hints.get(str(p)) == "skip" for p in path):
                continue
            flat = {c: x for c, x in _flat(rec).items() if hints.get(c[1]) != "skip"}
            groups.setdefault(tuple(flat), []).append((path, flat))
    for cols, recs in groups.items():
        tops = {path[0] for path, _ in recs}
        inner = len(tops) == 1 and all(len(path) > 1 for path, _ in recs)
        # one top key: it heads the table and the rows are named by the rest of their path
        headers = [_label(recs[0][0][0]) if inner else ""] + [_label(c[1]) for c in cols]
        rows = []
        for path, flat in recs[:MAX_ROWS]:
            cells = [_value(str(c[1]), flat[c], path + ((c[0],) if c[0] else ()), hints, origin_us) for c in cols]
            rows.append([_row_label(path[1:] if inner else path, origin_us)] + cells)
        parts.append(_table(headers, rows, more=max(len(recs) - MAX_ROWS, 0)))
    return "".join(parts)


def _runs(windows: list) -> list:
    """Windows that follow one another as one run: ``[[start, end, windows in it]]``."""
    out: list = []
    for a, b in windows:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
            out[-1][2] += 1
        else:
            out.append([a, b, 1])
    return out


def evidence_html(rule: str, report: dict, origin_us: int | None) -> str:
    """The evidence cell of one rule: its verdict's message, the windows where it fired (times in
    the job), violations and datapoints, and its details as tables."""
    found = report.get("Verdict")
    v: dict = found if isinstance(found, dict) else {}
    items = []
    if v.get("message"):
        items.append(f"<li>{html.escape(str(v['message']))}</li>")
    windows = _runs(v.get("fired_windows") or [])
    if windows and origin_us is not None:
        shown = ", ".join(
            fmt_span(a, b, origin_us) + (f" ({fmt_count(n)} windows)" if n > 1 else "")
            for a, b, n in windows[:MAX_LIST]
        )
        more = f" and {fmt_count(len(windows) - MAX_LIST)} more" if len(windows) > MAX_LIST else ""
        items.append(f"<li>fired in the windows {shown}{more} (time since the job started)</li>")
    if report.get("Violations") is not None:
        dp = report.get("Datapoints")
        items.append(
            f"<li>violations: {html.escape(_value('Violations', report['Violations'], (), {}, None))}, "
            f"datapoints: {html.escape('-' if dp is None else _value('Datapoints', dp, (), {}, None))}</li>"
        )
    body = f"<ul class='evidence'>{''.join(items)}</ul>" if items else ""
    body += details_tables(rule, report.get("Details"), origin_us)
    return body or "-"
