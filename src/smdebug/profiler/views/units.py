"""Numbers as the profiler report and ``smdebug profile`` show them: three significant figures
with a unit (``0.0209 s`` -> ``20.9 ms``, ``12345678.9`` bytes/s -> ``12.3 MB/s``), times in the job
(``+12.3 s`` after the profile's first record), rule parameters read as what they mean
(``scan_interval_us`` 60000000 -> ``60 s``), and the unit of each system metric.

System metrics and their units (the names the profiler writes, see :mod:`smdebug.profiler.recording.system`
and :mod:`smdebug.profiler.recording.job_metrics`): ``CPUUtilization``, ``I/OWaitPercentage``,
``GPUUtilization``, ``GPUMemoryUtilization``, ``MemoryUsedPercent``, ``JobCPUDemand``,
``JobCPUUtilization``, ``JobMemoryUsedPercent``: percent; ``IOPS``: I/O operations per second;
``ReadThroughputInBytesPerSecond``, ``WriteThroughputInBytesPerSecond``, ``ReceiveBytesPerSecond``,
``TransmitBytesPerSecond``: bytes per second. A metric the report does not know has no unit (its
number is shown as it is, to three significant figures).
"""

from __future__ import annotations

import math
import time
from typing import Any, SupportsFloat

__all__ = [
    "sig",
    "fmt_count",
    "fmt_duration",
    "fmt_us",
    "fmt_at",
    "fmt_span",
    "fmt_clock",
    "fmt_bytes_rate",
    "metric_unit",
    "unit_word",
    "fmt_metric",
    "fmt_percent",
    "fmt_param",
    "parse_params",
    "UNIT_WORDS",
]


def sig(x: SupportsFloat | None, n: int = 3) -> str:
    """``x`` to ``n`` significant figures, trailing zeros dropped (``0.020855000000000002`` ->
    ``0.0209``, ``5.555555555555555`` -> ``5.56``, ``100.0`` -> ``100``); from 10,000 on with a
    k, M or G suffix (``12.3k``); ``-`` for None, NaN or infinity."""
    if x is None or isinstance(x, bool):
        return "-" if x is None else str(x)
    x = float(x)
    if not math.isfinite(x):
        return "-"
    if x == 0:
        return "0"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(float(f"{x:.{n}g}")) >= scale:
            return sig(x / (scale if suffix != "k" else 1e3), n) + suffix
    rounded = float(f"{x:.{n}g}")  # (9.996 -> 10.0: the digits are counted after rounding)
    mag = math.floor(math.log10(abs(rounded)))
    text = f"{rounded:.{max(n - 1 - mag, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt_count(n: SupportsFloat | None) -> str:
    """A count: exact below 10,000 (``1,234``), else to three figures (``12.3k``, ``1.2M``)."""
    if n is None:
        return "-"
    n = float(n)
    if not math.isfinite(n):
        return "-"
    if abs(n) < 10_000 and n == int(n):
        return f"{int(n):,}"
    return sig(n)


def fmt_duration(seconds: SupportsFloat | None) -> str:
    """A duration in the unit that suits it: ``850 µs``, ``20.9 ms``, ``1.5 s``, ``60 s``, ``5.2 min``,
    ``3.41 h``."""
    if seconds is None:
        return "-"
    s = float(seconds)
    if not math.isfinite(s):
        return "-"
    a = abs(s)
    if a == 0:
        return "0 s"
    # the unit is chosen after rounding: 999.96 ms is "1 s", not "1000 ms"
    if float(f"{a:.3g}") < 1e-3:
        return f"{sig(s * 1e6)} µs"
    if float(f"{a:.3g}") < 1:
        return f"{sig(s * 1e3)} ms"
    if float(f"{a:.3g}") < 120:  # (a minute is "60 s")
        return f"{sig(s)} s"
    if float(f"{a:.3g}") < 3600:
        return f"{sig(s / 60)} min"
    return f"{sig(s / 3600)} h"


def fmt_us(us: SupportsFloat | None) -> str:
    """A duration given in microseconds (see :func:`fmt_duration`)."""
    return "-" if us is None else fmt_duration(float(us) / 1e6)


def _clock_part(seconds: float) -> str:
    """A time in the job: ``12.3 s``; from a minute on ``5 min 12 s``; from an hour on ``3 h 02 min``."""
    s = max(seconds, 0.0)
    if float(f"{s:.3g}") < 60:
        return fmt_duration(s) if s >= 1e-3 else "0 s"
    if s < 3600:
        m, sec = divmod(int(round(s)), 60)
        return f"{m} min {sec:02d} s"
    h, rest = divmod(int(round(s)), 3600)
    return f"{h} h {rest // 60:02d} min"


def fmt_at(us: SupportsFloat | None, origin_us: SupportsFloat | None) -> str:
    """An absolute time (µs since the epoch) as the time since the profile's start ``origin_us``:
    ``+12.3 s``, ``+5 min 12 s``; a time before the start is ``-0.5 s``."""
    if us is None or origin_us is None:
        return "-"
    d = (float(us) - float(origin_us)) / 1e6
    return ("-" if d < 0 else "+") + _clock_part(abs(d))


def fmt_span(start_us: SupportsFloat, end_us: SupportsFloat, origin_us: float) -> str:
    """``1.7-2.2 s`` (both under a minute, one unit), else ``+5 min 12 s to +6 min 12 s``."""
    a, b = (float(start_us) - origin_us) / 1e6, (float(end_us) - origin_us) / 1e6
    if 0 <= a < 60 and 0 <= b < 60 and (a == 0 or a >= 1) and b >= 1:
        return f"{sig(a)}-{sig(b)} s"
    return f"{fmt_at(start_us, origin_us)} to {fmt_at(end_us, origin_us)}"


def fmt_clock(us: SupportsFloat | None) -> str:
    """An absolute time (µs since the epoch) as a UTC clock time, ``2024-05-01 12:30:31 UTC``."""
    if us is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(us) / 1e6))


def fmt_bytes_rate(v: SupportsFloat | None) -> str:
    """Bytes per second: ``512 B/s``, ``12.3 MB/s`` (powers of 1000)."""
    if v is None or not math.isfinite(float(v)):
        return "-"
    v = float(v)
    for scale, unit in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
        if abs(float(f"{v:.3g}")) >= scale:
            return f"{sig(v / scale)} {unit}"
    return f"{sig(v)} B/s"


def fmt_percent(v: SupportsFloat | None) -> str:
    return "-" if v is None or not math.isfinite(float(v)) else f"{sig(v)} %"


# the unit of a metric -> how the report names it in words (its "unit" column, the stats' "unit")
UNIT_WORDS = {"%": "percent", "B/s": "bytes/s", "IOPS": "operations/s", "": ""}


def metric_unit(name: str, dimension: str = "", type: str = "") -> str:  # noqa: A002 - the Series' field
    """The unit of a system metric (``"%"``, ``"B/s"``, ``"IOPS"``, or ``""`` when unknown) from
    its name and dimension as the profiler writes them (``cpu3``/``CPUUtilization``,
    ``ReadThroughputInBytesPerSecond``, ``IOPS``...)."""
    for part in (dimension or "", name or ""):
        if part == "IOPS":
            return "IOPS"
        if "BytesPerSecond" in part or part.endswith("Bytes/s"):
            return "B/s"
        if part.endswith(("Utilization", "Percent", "Percentage")) or part == "JobCPUDemand":
            return "%"
    return ""


def unit_word(unit: str) -> str:
    return UNIT_WORDS.get(unit, unit)


def fmt_metric(value: SupportsFloat | None, unit: str) -> str:
    """A system metric's value with its unit (see :func:`metric_unit`)."""
    if unit == "%":
        return fmt_percent(value)
    if unit == "B/s":
        return fmt_bytes_rate(value)
    if unit == "IOPS":
        return "-" if value is None or not math.isfinite(float(value)) else f"{sig(value)} IOPS"
    return sig(value)


# ------------------------------------------------------------------ rule parameters
# (rule or "*", parameter) -> what its number is: "us" (microseconds), "%", "min", "points"
# (percentage points), "count", "x" (times the median), "std" (standard deviations), "" (as is)
_PARAM_KINDS = {
    ("*", "scan_interval_us"): "us",
    ("*", "patience"): "count",
    ("*", "window"): "count",
    ("*", "n_outliers"): "count",
    ("*", "threshold_p95"): "%",
    ("*", "threshold_p5"): "%",
    ("*", "cpu_threshold_p95"): "%",
    ("*", "gpu_threshold_p95"): "%",
    ("*", "gpu_memory_threshold_p95"): "%",
    ("*", "gpu_threshold"): "%",
    ("*", "cpu_threshold"): "%",
    ("*", "io_threshold"): "%",
    ("*", "min_threshold"): "%",
    ("*", "max_threshold"): "%",
    ("CPUBottleneck", "threshold"): "%",
    ("IOBottleneck", "threshold"): "%",
    ("MaxInitializationTime", "threshold"): "min",
    ("GPUMemoryIncrease", "increase"): "points",
    ("StepOutlier", "stddev"): "std",
    ("StepOutlier", "min_ratio"): "x",
}


def _number(text: str | SupportsFloat | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def fmt_param(rule: str, name: str, value: str | SupportsFloat | None) -> str:
    """A rule parameter's value as what it means: ``scan_interval_us`` 60000000 -> ``60 s``,
    ``threshold`` 50.0 (CPUBottleneck) -> ``50 %``, ``mode`` None -> ``None (every mode)``."""
    kind = _PARAM_KINDS.get((rule, name), _PARAM_KINDS.get(("*", name)))
    v = _number(value)
    if v is None or kind is None:
        if str(value) == "None" and name == "mode":
            return "None (every mode)"
        return sig(v) if v is not None else str(value)
    if kind == "us":
        return fmt_us(v)
    if kind == "%":
        return f"{sig(v)} %"
    if kind == "min":
        return f"{sig(v)} min"
    if kind == "points":
        return f"{sig(v)} percentage points"
    if kind == "count":
        return fmt_count(v)
    if kind == "x":
        return "0 (off)" if v == 0 else f"{sig(v)}x the median step"
    if kind == "std":
        return f"{sig(v)} standard deviations"
    return sig(v)


def parse_params(p: str | dict[Any, Any] | None) -> list[tuple[str, str]]:
    """A report's ``RuleParameters`` (``"name:value\\n..."``, or a dict) as ``[(name, value)]``."""
    if isinstance(p, dict):
        return [(str(k), str(v)) for k, v in p.items()]
    out = []
    for line in str(p or "").splitlines():
        name, colon, value = line.partition(":")
        if name.strip():
            out.append((name.strip(), value.strip() if colon else ""))
    return out
