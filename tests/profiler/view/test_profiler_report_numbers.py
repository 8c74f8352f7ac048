"""How the profiler report and ``smdebug profile rules`` show numbers: no number of the page's
visible text or of the command's output has more than 4 significant digits (identifiers aside:
steps, pids, node names, dates), each system metric carries its own unit, times are times in the
job, parameters read as what they mean, the job summary's phases add up, and StepOutlier's
verdict agrees with the slowest-steps table beside it."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from synth import STALL_STEP, SynthTrial, write_profile

from smdebug.profiler.views.report import profiler_report_html
from smdebug.profiler.views.units import fmt_duration, metric_unit, sig

# the unit each system metric the profiler writes is shown with (smdebug.profiler.recording.system, job_metrics)
UNITS = {
    "CPUUtilization": "%",
    "I/OWaitPercentage": "%",
    "GPUUtilization": "%",
    "GPUMemoryUtilization": "%",
    "MemoryUsedPercent": "%",
    "JobCPUDemand": "%",
    "JobCPUUtilization": "%",
    "JobMemoryUsedPercent": "%",
    "IOPS": "IOPS",
    "ReadThroughputInBytesPerSecond": "B/s",
    "WriteThroughputInBytesPerSecond": "B/s",
    "ReceiveBytesPerSecond": "B/s",
    "TransmitBytesPerSecond": "B/s",
}
BYTE_UNITS = ("B/s", "kB/s", "MB/s", "GB/s")
# parameters that make every rule judge (and most fire) on a short synthetic profile, so that each
# rule's evidence shows its details: bottleneck samples by time, GPU statistics, distances...
PARAMS = [
    "StepOutlier.n_outliers=0",
    "CPUBottleneck.patience=0",
    "CPUBottleneck.cpu_threshold=50",
    "CPUBottleneck.gpu_threshold=40",
    "CPUBottleneck.threshold=1",
    "IOBottleneck.patience=0",
    "IOBottleneck.io_threshold=1",
    "IOBottleneck.gpu_threshold=40",
    "IOBottleneck.threshold=1",
    "LowGPUUtilization.patience=0",
    "LowGPUUtilization.window=20",
    "BatchSize.patience=0",
    "BatchSize.window=20",
    "GPUMemoryIncrease.patience=0",
    "GPUMemoryIncrease.increase=1",
    "LoadBalancing.patience=0",
    "LoadBalancing.threshold=0.01",
    "MaxInitializationTime.threshold=0.01",
]


class _Visible(HTMLParser):
    """The text a reader sees: no attributes, no style, script or title (the page's, or an SVG
    slice's tooltip); a table cell or a line break ends a piece."""

    def __init__(self):
        super().__init__()
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script", "title"):
            self.skip += 1
        self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("style", "script", "title"):
            self.skip -= 1
        self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def visible_text(page: str) -> str:
    parser = _Visible()
    parser.feed(page)
    return "".join(parser.parts)


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_IDENTIFIERS = [
    re.compile(p)
    for p in (
        r"\d{4}-\d{2}-\d{2}",  # dates
        r"\d{2}:\d{2}:\d{2}",  # clock times
        r"(?:/[\w.\-]+)+",  # paths
        r"\b\d+-[A-Za-z][\w.\-]*",  # processes as the files name them (0-algo-1, 4242-vm)
        r"\b[A-Za-z]\w*(?:-\w+)+",  # node and process names (algo-1-0)
        r"\b[A-Za-z]\w*(?:[.:][A-Za-z]\w*)+",  # Step:ModeKeys.TRAIN
    )
]


def significant_digits(token: str) -> int:
    """As a reader counts them: an integer's digits all count (``60000000``: 8), a decimal's from
    its first non-zero digit on (``0.0209``: 3, ``100.5``: 4)."""
    digits = token.replace(",", "")
    if "." in digits:
        return len(digits.replace(".", "").lstrip("0"))
    return len(digits.lstrip("0")) or 1


def long_numbers(text: str, identifiers: set = frozenset(), most: int = 4) -> list[str]:
    """The numbers of ``text`` with more than ``most`` significant digits that are no identifier:
    not part of a name (``cpu0``, ``p95``, ``algo-1-0``, a path), a date or clock time, or in
    ``identifiers`` (step numbers, pids)."""
    for pattern in _IDENTIFIERS:
        text = pattern.sub(" ", text)
    out = []
    for m in _NUMBER.finditer(text):
        before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 2]
        if before.isalpha() or before == "_":  # cpu0, p95, gpu_threshold_p95
            continue
        if after[:1].isalpha() and after[:1] != "x" or after[:1] == "x" and after[1:2].isalpha():
            continue  # 1st; but 5.56x (times the median) is a number
        token = m.group().rstrip(",")
        if token.replace(",", "") in identifiers:
            continue
        if significant_digits(token) > most:
            out.append(token)
    return out


def test_the_checker_sees_what_the_user_saw():
    """The raw numbers the report used to show fail it; identifiers pass."""
    bad = (
        'dataloading_time: {"p25": 0.020855000000000002} ratio: 5.555555555555555 '
        'scan_interval_us:60000000 1796214597000000: {"node": "algo-1"} 1,234,567 samples 133.34 ms'
    )
    assert long_numbers(bad) == [
        "0.020855000000000002",
        "5.555555555555555",
        "60000000",
        "1796214597000000",
        "1,234,567",
        "133.34",
    ]
    good = (
        "step 12345 of algo-1-0 on cpu17 (p95 70 %), 2024-05-01 12:30:31 UTC, +1 h 02 min, 5.56x the "
        "median, 12.3 MB/s, 1,000 datapoints, /tmp/pytest-12345/profile, 0-algo-1 4242-vm"
    )
    assert long_numbers(good, identifiers={"12345"}) == []


def _reports(trial, params=PARAMS):
    from smdebug.cli.profile import run_profiler_rules

    return run_profiler_rules(trial, None, params)


@pytest.fixture(scope="module")
def rich_profile(tmp_path_factory):
    """121 steps (one stalled), 2 GPUs, every kind of system metric, the job ended."""
    from smdebug.profiler.trial import ProfilerTrial

    root = tmp_path_factory.mktemp("rich") / "profile"
    synth = write_profile(root, steps=121, gpus=2, ended=True, all_metrics=True)
    trial = ProfilerTrial(str(root))
    reports = _reports(trial)
    return synth, trial, reports, profiler_report_html(trial, reports)


def test_no_number_of_the_report_has_more_than_4_significant_digits(rich_profile):
    synth, trial, reports, page = rich_profile
    text = visible_text(page)
    # every rule judged, most fired: their evidence (bottleneck samples by time, GPU statistics,
    # distances, step statistics) is on the page
    fired = [n for n, r in reports.items() if r["RuleTriggered"]]
    assert {"StepOutlier", "CPUBottleneck", "LowGPUUtilization", "BatchSize", "GPUMemoryIncrease", "Dataloader"} <= set(
        fired
    ), fired
    assert reports["LoadBalancing"]["Details"]["algo-1"]["distances"]  # (its two GPUs do the same work)
    steps = {str(int(s)) for s in synth.steps("TRAIN").step}
    assert long_numbers(text, identifiers=steps | {"4242"}) == []
    assert "e+" not in text and "e-0" not in text  # no exponent notation
    # times are times in the job, not epoch microseconds or seconds
    assert not re.search(r"\d{10,}", text)
    assert "+1.7 s" in text  # the stalled step's start, in the slowest steps and StepOutlier's evidence
    # parameters as what they mean
    assert "scan_interval_us: 60 s" in text and "60000000" not in text
    assert "threshold: 0.01 min" in text and "n_outliers: 0" in text and "cpu_threshold: 50 %" in text
    assert "increase: 1 percentage points" in text and "mode: None (every mode)" in text


def test_no_number_of_profile_rules_has_more_than_4_significant_digits(rich_profile, capsys):
    from smdebug.cli import main

    synth, trial, _, _ = rich_profile
    params = [a for p in PARAMS for a in ("--param", p)]
    assert main(["profile", "rules", trial.path, *params]) == 1
    out = capsys.readouterr().out
    assert "FIRED StepOutlier" in out and "FIRED CPUBottleneck" in out
    steps = {str(int(s)) for s in synth.steps("TRAIN").step}
    assert long_numbers(out, identifiers=steps) == []
    assert "e+" not in out and not re.search(r"\d{10,}", out)


def _system_stats(page: str) -> list[list[str]]:
    table = page[page.index("<table id='system-stats'>") :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1])
    return [[re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r)] for r in rows]


def _has_unit(cell: str, unit: str) -> bool:
    if unit == "B/s":
        return cell.endswith(BYTE_UNITS) and not cell.endswith("IOPS")
    return cell.endswith(f" {unit}")


def test_each_system_metric_carries_its_own_unit(rich_profile):
    _, trial, reports, page = rich_profile
    rows = _system_stats(page)
    metrics = {r[1] for r in rows}
    assert metrics == set(UNITS)  # every metric the profiler writes is in the profile
    words = {"%": "percent", "IOPS": "operations/s", "B/s": "bytes/s"}
    for _node, metric, unit, *values, samples in rows:
        want = UNITS[metric]
        assert unit == words[want], (metric, unit)
        assert all(_has_unit(v, want) for v in values), (metric, values)  # max, p99, p95, p50, min
        assert samples.isdigit()
    # the IOPS row is not a percentage, the bytes are scaled: 12,345,678.9 bytes/s is "12.3 MB/s"
    (iops,) = [r for r in rows if r[1] == "IOPS"]
    assert iops[3] == "1.5 IOPS"
    (read,) = [r for r in rows if r[1] == "ReadThroughputInBytesPerSecond"]
    assert read[7] == "12.3 MB/s"
    (recv,) = [r for r in rows if r[1] == "ReceiveBytesPerSecond"]
    assert recv[7] == "2.35 GB/s"
    # OverallSystemUsage's evidence: percentages, and the network in bytes/s
    evidence = visible_text(page[page.index("<td>OverallSystemUsage</td>") :])
    assert re.search(r"Network\s*\n*\s*/\s*algo-1", evidence) or "Network / algo-1" in evidence
    net = evidence[evidence.index("Network / algo-1") :].split("\n")
    net = [c for c in (x.strip() for x in net[1:]) if c][:5]
    assert all(c.endswith(BYTE_UNITS) for c in net), net
    # and the module that decides agrees, for every metric
    for metric, unit in UNITS.items():
        assert metric_unit(metric) == unit, metric


def test_the_timeline_counters_carry_their_unit(rich_profile):
    from smdebug.profiler.views.timeline import build_timeline

    _, trial, _, _ = rich_profile
    trace = build_timeline(trial)
    args = {e["name"]: next(iter(e["args"])) for e in trace["traceEvents"] if e["ph"] == "C"}
    want = {"%": "%", "IOPS": "ops/s", "B/s": "bytes/s"}
    for name, arg in args.items():
        metric = name.split(" ")[-1]
        assert arg == want[UNITS[metric]], (name, arg)


def test_the_summary_phases_add_up_and_say_why_when_the_data_is_partial(tmp_path):
    """The system metrics stop before the last steps (get_latest_timestamp, the smallest over the
    streams, is then earlier than the last step's end): the report used to show a negative
    finalization and a training loop longer than the total."""
    trial = SynthTrial(tmp_path, steps=40, kineto=False)
    last_step_end = int(trial.steps("TRAIN").end_us.max())
    early = last_step_end - 2_000_000
    trial.get_latest_timestamp = lambda: early
    trial._series = [s.window(None, early) for s in trial._series]
    trial.job_finished = lambda: False
    page = profiler_report_html(trial, {})
    summary = page[
        page.index("<table id='job-summary'>") : page.index("</table>", page.index("<table id='job-summary'>"))
    ]
    cells = {
        html.unescape(k): html.unescape(v) for k, v in re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td></tr>", summary)
    }

    def seconds(text):
        value, unit = text.split(" ")
        return float(value) * {"µs": 1e-6, "ms": 1e-3, "s": 1, "min": 60, "h": 3600}[unit]

    total = seconds(cells["total"])
    init = seconds(cells["initialization (start to first step)"])
    loop = seconds(cells["training loop (first step's start to last step's end)"])
    final = seconds(cells["finalization (last step's end to end)"])
    assert min(init, loop, final) >= 0 and loop <= total
    assert init + loop + final == pytest.approx(total, rel=0.02)
    assert not re.search(r">-\d", summary)
    notes = visible_text(page[page.index("<ul class='meta' id='summary-notes'>") :])
    assert "no end marker" in notes and "the system metrics end at +" in notes and "framework events at +" in notes


def test_step_outlier_says_why_the_slowest_step_is_or_is_not_an_outlier(tmp_path):
    """The slowest-steps table shows step 7 at 5x the median; the verdict beside it says what
    StepOutlier's test made of it: an outlier, but one of fewer than n_outliers; not one with a
    larger stddev; not judged yet with 40 steps."""
    from smdebug.profiler.trial import ProfilerTrial

    write_profile(tmp_path / "p", steps=121, ended=True)
    trial = ProfilerTrial(str(tmp_path / "p"))
    msg = _reports(trial, [])["StepOutlier"]["Verdict"]["message"]
    assert msg.startswith(
        "no issue: the slowest step, 7 of algo-1-0 Step:ModeKeys.TRAIN (500 ms, 5x the median), is an outlier"
    )
    assert "fires only on more than n_outliers=10 outlier steps, and Step:ModeKeys.TRAIN of algo-1-0 has 1" in msg
    page = visible_text(profiler_report_html(trial, _reports(trial, [])))
    assert f"\n{STALL_STEP}\n" in page and "\n5x\n" in page  # the table's row beside it
    msg = _reports(trial, ["StepOutlier.stddev=20"])["StepOutlier"]["Verdict"]["message"]
    assert (
        "is not an outlier by StepOutlier's test: an outlier takes longer than mean + stddev=20 standard "
        "deviations of the 121 steps = 828 ms" in msg
    )
    write_profile(tmp_path / "short", steps=40)
    msg = _reports(ProfilerTrial(str(tmp_path / "short")), [])["StepOutlier"]["Verdict"]["message"]
    assert "judges after more than 100 steps of one phase on one node: 40 so far" in msg and "5x the median" in msg


def test_formats():
    assert [sig(x) for x in (0.020855000000000002, 5.555555555555555, 100.0, 9.996, 12345.6, 0)] == [
        "0.0209",
        "5.56",
        "100",
        "10",
        "12.3k",
        "0",
    ]
    assert [fmt_duration(s) for s in (0.020855, 0.00085, 1.5, 60, 312, 12000, 0.99996)] == [
        "20.9 ms",
        "850 µs",
        "1.5 s",
        "60 s",
        "5.2 min",
        "3.33 h",
        "1 s",
    ]
    assert np.isnan(float("nan")) and sig(float("nan")) == "-"


def test_a_long_profile_reads_in_few_digits():
    """A day of windows and millions of datapoints: counts in three figures, runs of windows merged."""
    from smdebug.profiler.views.report.evidence import evidence_html
    from smdebug.rules.profiler.base import count_text

    assert [count_text(n) for n in (2400, 9999, 25000, 216000, 1728000)] == ["2400", "9999", "25k", "216k", "1.73M"]
    t0, minute = 1_700_000_000_000_000, 60_000_000
    report = {
        "RuleTriggered": 1440,
        "Violations": 1234567,
        "Datapoints": 8640000,
        "Verdict": {
            "message": "fired",
            "fired_windows": [[t0 + k * minute, t0 + (k + 1) * minute] for k in range(1, 1441) if k != 700],
        },
    }
    text = visible_text(evidence_html("LowGPUUtilization", report, t0))
    assert (
        "fired in the windows +1 min 00 s to +11 h 40 min (699 windows), +11 h 41 min to +24 h 01 min "
        "(740 windows)" in text
    )
    assert "violations: 1.23M, datapoints: 8.64M" in text and long_numbers(text) == []
