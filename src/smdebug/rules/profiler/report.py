"""ProfilerReport: runs the other profiler rules over the same windows and writes their reports."""

from __future__ import annotations

import importlib
import json
import os

from smdebug.exceptions import NoMoreProfilerData, RuleConfigurationError
from smdebug.rules.builtin.base import Param
from smdebug.rules.params import as_str, optional
from smdebug.rules.profiler.base import ProfilerRule, scan_param

__all__ = ["ProfilerReport", "SUB_RULES", "HTML_RENDERER"]

# what ProfilerReport runs, in 1.0.34's order (OverallFrameworkMetrics is not part of this package)
SUB_RULES = (
    "CPUBottleneck",
    "IOBottleneck",
    "LowGPUUtilization",
    "StepOutlier",
    "GPUMemoryIncrease",
    "BatchSize",
    "MaxInitializationTime",
    "LoadBalancing",
    "OverallSystemUsage",
    "Dataloader",
)
# the hook point of the HTML report: a module with write_report(trial, reports, output_path) -> path
HTML_RENDERER = "smdebug.profiler.views.report"


def _sub_rule_classes() -> dict:
    from smdebug.rules.profiler import profiler_rule_classes

    classes = profiler_rule_classes()
    return {name: classes[name] for name in SUB_RULES}


def split_overrides(params: dict) -> tuple:
    """``({rule: {param: value}}, other params)`` from ``<Rule>_<param>`` keys (rule names without
    regard to case, parameters checked against the rule's own); a key naming no sub-rule is left
    in the other params, a bad parameter of a sub-rule is a RuleConfigurationError naming the key."""
    classes = _sub_rule_classes()
    lowered = {n.lower(): n for n in classes}
    overrides: dict = {}
    rest: dict = {}
    for key, value in params.items():
        head, sep, tail = str(key).partition("_")
        rule = lowered.get(head.lower()) if sep else None
        if rule is None:
            rest[key] = value
            continue
        known = {p.name for p in classes[rule].params}
        if tail not in known:
            raise RuleConfigurationError(
                "ProfilerReport", key, f"{rule} has no parameter {tail!r} (accepted: {', '.join(sorted(known))})"
            )
        overrides.setdefault(rule, {})[tail] = value
    return overrides, rest


class ProfilerReport(ProfilerRule):
    """Runs CPUBottleneck, IOBottleneck, LowGPUUtilization, StepOutlier, GPUMemoryIncrease,
    BatchSize, MaxInitializationTime, LoadBalancing, OverallSystemUsage and Dataloader over the
    same windows, and writes each one's ``report`` to ``<output_dir>/profiler-reports/<Rule>.json``
    after every window it judges once caught up with the data (live: every window), and at the end.

    Parameters ``<Rule>_<param>`` (e.g. ``CPUBottleneck_threshold=90``, rule names without regard
    to case) configure a sub-rule; the others run with their defaults (ours: smdebug-rulesconfig's,
    so LoadBalancing's threshold is 0.5 where 1.0.34's report used its code's 0.2). ``nb_path`` is
    accepted and ignored (1.0.34's notebook). As 1.0.34, it fires once, at the end of the data,
    when any sub-rule fired (``end_of_rule``), after writing the HTML report through
    ``smdebug.profiler.views.report.write_report`` when that module is installed. A sub-rule
    that raises is logged once, marked ``"error"`` in its report, and left out of later windows.
    ``output_dir`` (keyword-only): where to write; default the trial's ``output_dir``, else
    ``<trial path>/profiler-output``.
    """

    params = (scan_param(), Param("nb_path", optional(as_str), None, "ignored (1.0.34's notebook path)"))
    # the parameters, parsed when the rule is built (see ``params``)
    scan_interval_us: int
    nb_path: str | None
    reads_framework = True
    inputs = "the profile (system metrics and framework events)"

    def __init__(self, base_trial, action_str="", other_trials=None, *, output_dir=None, **params):
        # params: ProfilerRule's (sleep=, stop_out_dir=, live_step_us=, scan_interval_us...) and the
        # sub-rules' as <Rule>_<param>
        overrides, rest = split_overrides(params)
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **rest)
        self.overrides = overrides
        self.report["RuleParameters"] = "\n".join(
            [f"scan_interval_us:{self.scan_interval_us}"]
            + [f"{r}_{k}:{v}" for r, kv in sorted(overrides.items()) for k, v in sorted(kv.items())]
        )
        self.rules = {}
        for name, cls in _sub_rule_classes().items():
            try:
                self.rules[name] = cls(base_trial, sleep=self.sleep, **overrides.get(name, {}))
                self.rules[name].source = self.source  # each window read once for all of them
            except RuleConfigurationError as exc:
                key = f"{name}_{exc.parameter}" if exc.parameter else name
                raise RuleConfigurationError("ProfilerReport", key, exc.message) from None
        self.errors: dict = {}
        self.output_dir = output_dir or getattr(base_trial, "output_dir", None)
        if not self.output_dir:
            if getattr(base_trial, "path", None) is None:
                raise RuleConfigurationError("ProfilerReport", "output_dir", "the trial has no path: pass output_dir=")
            self.output_dir = os.path.join(str(base_trial.path), "profiler-output")
        self.html_path: str | None = None
        try:
            os.makedirs(self.reports_dir, exist_ok=True)
        except OSError as exc:
            raise RuleConfigurationError(
                "ProfilerReport",
                "output_dir",
                f"cannot create {self.reports_dir}: "
                f"{exc.strerror or exc} (pass output_dir=, or create_trial(..., "
                "output_dir=...))",
            ) from None

    @property
    def reports_dir(self) -> str:
        return os.path.join(self.output_dir, "profiler-reports")

    def enough_data(self) -> bool:
        return True

    def invoke(self, step) -> None:
        try:
            start, end = self.next_window()
        except NoMoreProfilerData:
            self.finish()
            fired = sorted(n for n, r in self.rules.items() if r.report["RuleTriggered"])
            if fired:
                self.reason = f"rules that fired: {', '.join(fired)}"
                self.fire(step, end_of_rule=True)
            raise
        data = self.source.window(start, end, framework=True)
        self.run_window(data)
        if self.caught_up(data):  # live: after every window; a long profile read offline: at the end
            self.write_reports()

    def judge(self, data) -> bool:
        before = self.report["Datapoints"]
        for name, rule in self.rules.items():
            if name in self.errors:
                continue
            try:
                rule.run_window(data)
            except Exception as exc:  # noqa: BLE001 - one sub-rule's failure does not end the report
                self.errors[name] = f"{type(exc).__name__}: {exc}"
                self.logger.error(
                    "ProfilerReport: %s failed in window [%d, %d) us and is left out: %s",
                    name,
                    data.start_us,
                    data.end_us,
                    self.errors[name],
                )
        total = sum(r.report["Datapoints"] for r in self.rules.values())
        self.count(total - before)
        self.report["Details"] = {n: r.report["Verdict"]["status"] for n, r in self.rules.items()}
        return False

    def sub_reports(self) -> dict:
        """``{rule: report dict}`` of every sub-rule (an ``"error"`` verdict for one that failed)."""
        out = {}
        for name, rule in self.rules.items():
            rep = dict(rule.report)
            if name in self.errors:
                rep["Verdict"] = {**rep["Verdict"], "status": "error", "message": self.errors[name]}
            out[name] = rep
        return out

    def write_reports(self) -> None:
        os.makedirs(self.reports_dir, exist_ok=True)
        for name, rep in self.sub_reports().items():
            path = os.path.join(self.reports_dir, f"{name}.json")
            tmp = path + ".tmp"
            text = json.dumps(rep, default=_plain)  # in one go: json.dump encodes in Python, piece by piece
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)

    def finish(self) -> None:
        """The end of the data: the last reports, then the HTML report when a renderer exists."""
        usage = self.rules.get("OverallSystemUsage")
        if usage is not None and "OverallSystemUsage" not in self.errors:
            usage.summarise()
        self.write_reports()
        self.html_path = self.render_html()

    def render_html(self) -> str | None:
        """The hook point of the HTML report (module ``HTML_RENDERER``); None when not installed."""
        try:
            renderer = importlib.import_module(HTML_RENDERER)
        except ModuleNotFoundError as exc:
            if exc.name != HTML_RENDERER:
                raise
            self.logger.info(
                "ProfilerReport: no HTML renderer (%s); reports are in %s", HTML_RENDERER, self.reports_dir
            )
            return None
        path = os.path.join(self.output_dir, "profiler-report.html")
        try:
            return renderer.write_report(self.base_trial, self.sub_reports(), path)
        except Exception as exc:  # noqa: BLE001 - the JSON reports stand without the page
            self.logger.error("ProfilerReport: the HTML report failed: %s: %s", type(exc).__name__, exc)
            return None


def _plain(value):
    """numpy scalars and arrays as JSON."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")
