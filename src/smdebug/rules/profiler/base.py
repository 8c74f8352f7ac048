"""What every profiler rule shares: time windows over a profiler trial, offline and live.

A profiler rule is a :class:`~smdebug.rules.builtin.base.BuiltinRule` (same registry, parameters,
actions and :func:`~smdebug.rules.invoke_rule`) whose "step" is a window counter, as 1.0.34's:
invocation ``k`` judges the ``k``-th window of ``scan_interval_us`` microseconds from the trial's
first timestamp. A window is half-open, ``[start_us, end_us)``, so a sample on a boundary is
judged once (1.0.34's windows were inclusive at both ends). The data a window holds is complete
once the trial holds data past its end (and, where a node's framework events hold steps, a step
that ends past it: an event is written when it ends, so a stalled step comes after the events
inside it: ``get_complete_timestamp``). With ``live_step_us`` (keyword-only, not a rule
parameter; ``smdebug run`` gives ``LIVE_STEP_US``, 0.25 s), a rule does not wait for the end of a
window while the job runs: the part of it that is complete, cut at a multiple of ``live_step_us``,
is judged as a window of its own, and the next starts there, so the rule judges data about a second
after it is written whatever its ``scan_interval_us`` (rules accumulate their data across windows,
so their verdicts do not depend on where windows end; a profile read after the job, or without
``live_step_us``, is cut into full windows). Framework events that start in a window judged while
a node's first timeline file was still being written come in the first window judged once they are
there (``WindowSource.window``): none is lost to a window judged early. When
the job has ended, the last partial window is judged and the next invocation raises
:class:`~smdebug.exceptions.NoMoreProfilerData`, which ends ``invoke_rule`` normally.

The trial is anything with the profiler trial's methods: ``first_timestamp`` (µs, None before any
data), ``get_latest_timestamp()`` (and ``get_complete_timestamp()`` where it has one), ``job_finished()``, ``refresh()``, ``system_series(start_us,
end_us)`` -> list of :class:`~smdebug.profiler.reading.frames.Series` and
``framework_events(start_us, end_us)`` -> :class:`~smdebug.profiler.reading.frames.FrameworkEvents`.

Every rule keeps 1.0.34's ``report`` dict (``RuleTriggered``, ``Violations``, ``Details``,
``Datapoints``, ``RuleParameters``) and adds ``Verdict``: ``status`` (``"issues found"``,
``"no issue"``, ``"not enough data"``, ``"no GPU data"``, ``"no data"``), a ``message`` saying
why, the windows judged and the windows where the rule fired. A rule over an empty profile, or a
GPU rule over a profile without GPU metrics, says so: it is never a silent "no issue".
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from smdebug.exceptions import NoMoreProfilerData, RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules.actions import Firing
from smdebug.rules.builtin.base import BuiltinRule, Param
from smdebug.rules.params import as_float, as_int, bounded
from smdebug.rules.profiler.windows import WindowData, WindowSource, fetch_window
from smdebug.storage import open_store

__all__ = [
    "ProfilerRule",
    "WindowData",
    "WindowSource",
    "fetch_window",
    "judge_together",
    "scan_param",
    "percent_param",
    "count_param",
    "count_text",
    "STATUSES",
]

STATUSES = ("issues found", "no issue", "not enough data", "no GPU data", "no data")


MIN_SCAN_INTERVAL_US = 100_000
LIVE_STEP_US = 250_000  # smdebug run's live_step_us: the part of a window already complete is judged, cut at this step  # a window is one pass over the profile's files: 1 µs windows take minutes


def count_text(n: int) -> str:
    """A count in a verdict's message: as it is below 10,000 (``2400``), else to three significant
    figures (``216k``, ``1.73M``), as the profiler report shows counts."""
    n = int(n)
    if abs(n) < 10_000:
        return str(n)
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale * 0.9995 or suffix == "k":
            return f"{float(f'{n / scale:.3g}'):g}{suffix}"
    return str(n)


def scan_param() -> Param:
    return Param(
        "scan_interval_us",
        bounded(as_int, MIN_SCAN_INTERVAL_US),
        "60000000",
        "window length in microseconds (0.1 s at least)",
    )


def percent_param(name: str, default: str, doc: str = "") -> Param:
    return Param(name, bounded(as_float, 0, 100), default, doc)


def count_param(name: str, default: str, doc: str = "", lo: int = 0) -> Param:
    return Param(name, bounded(as_int, lo), default, doc)


class ProfilerRule(BuiltinRule, register=False):
    """Base of the profiler rules: ``RuleName(profiler_trial, action_str="", **params)``.

    Subclasses declare ``params`` (with :func:`scan_param`), set ``reads_framework`` when they read
    framework events and ``needs_gpu`` when they judge GPU metrics, and implement
    :meth:`judge` (one window -> True when the condition is met in it) and may override
    :meth:`enough_data` and :meth:`describe_inputs`. ``sleep`` (keyword-only, not a rule
    parameter) replaces ``time.sleep`` between two looks at a running job, for tests;
    ``live_step_us`` (keyword-only) judges the complete part of a window while the job runs (see
    the module's docstring).

    Actions run as for the debugger rules. The StopTraining action (without a SageMaker job
    prefix) writes its stop request where a hook looks for one: ``stop_out_dir`` (keyword-only,
    the training job's hook ``out_dir``), else the profiler folder itself (a hook whose
    ``ProfilerConfig(local_path=...)`` is its own out_dir sees it there; with the default
    ``<out_dir>/profiler`` pass ``stop_out_dir=<out_dir>``).
    """

    base_trial: Any  # a ProfilerTrial (smdebug.profiler.reading), not a tensor Trial

    profiler_rule: ClassVar[bool] = True
    reads_framework: ClassVar[bool] = False
    needs_gpu: ClassVar[bool] = False
    inputs: ClassVar[str] = "system metrics"  # what the rule reads, for messages
    poll_s: ClassVar[float] = 1.0
    patience: int  # parameters every profiler rule has (scan_param)
    scan_interval_us: int

    def __init__(
        self,
        base_trial,
        action_str="",
        other_trials=None,
        *,
        sleep=None,
        stop_out_dir=None,
        live_step_us=None,
        **params,
    ):
        if not callable(getattr(base_trial, "system_series", None)) or not callable(
            getattr(base_trial, "framework_events", None)
        ):
            what = "None" if base_trial is None else f"a {type(base_trial).__name__}"
            raise RuleConfigurationError(
                type(self).__name__,
                "base_trial",
                f"{what} is no profiler trial: give create_trial(path, profiler=True) of the "
                "profiler's folder (<out_dir>/profiler, or a job's profiler-output)",
            )
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        self.stop_out_dir = stop_out_dir
        self.live_step_us = live_step_us
        self.report["RuleParameters"] = "\n".join(f"{p.name}:{getattr(self, p.name)}" for p in self.params)
        self.sleep = sleep or time.sleep
        self.source = WindowSource(base_trial)  # ProfilerReport and judge_together share theirs
        self.last_timestamp: int | None = None
        self.windows_judged = 0
        self.fired_windows: list = []
        self.gpus_seen = False
        self.reason = ""
        self.report["Verdict"] = self.verdict()

    # -- what each rule implements -------------------------------------------------------------
    def judge(self, data: WindowData) -> bool:
        raise NotImplementedError

    def enough_data(self) -> bool:
        """Whether the rule has seen enough to judge (its ``patience``); False: "not enough data"."""
        patience = getattr(self, "patience", None)
        return patience is None or self.report["Datapoints"] > patience

    def enough_data_means(self) -> str:
        """What ``enough_data`` waits for, for the "not enough data" verdict."""
        return f"more than patience={self.patience} datapoints"

    def selection(self) -> str:
        return f"it reads {self.inputs}; the profile held none in the windows judged"

    # -- the window driver -----------------------------------------------------------------------
    def invoke_at_step(self, step) -> bool:  # the Rule API: a step here is a window number
        raise NotImplementedError("profiler rules are invoked by window: use invoke(step)")

    def invoke(self, step) -> None:
        """Judge the next window (waiting for it while the job runs); raise
        RuleEvaluationConditionMet(rule, step) when met there, NoMoreProfilerData after the end."""
        start, end = self.next_window()
        data = self.source.window(start, end, framework=self.reads_framework)
        self.run_window(data)
        if self.report["Verdict"]["fired_windows"] and self.report["Verdict"]["fired_windows"][-1] == [start, end]:
            self.fire(step)

    def fire(self, step, end_of_rule: bool = False) -> None:
        """Run the actions and raise RuleEvaluationConditionMet(rule, step) (the window number)."""
        exc = RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=end_of_rule)
        self.fired_at = time.time()  # before the actions (a launcher tells a late firing by it)
        if len(self._actions):
            self._actions.invoke(Firing(self.rule_name, step, f"{exc}: {self.reason}", self.action_target()))
        raise exc

    def action_target(self):
        """What the actions are told is the trial: one with the ``store`` a hook watches."""
        if self.stop_out_dir is None and getattr(self.base_trial, "store", None) is not None:
            return self.base_trial
        return _StoreTarget(open_store(self.stop_out_dir or self.base_trial.path))

    def run_window(self, data: WindowData) -> bool:
        """Judge one fetched window, update the report; True when the rule fired in it."""
        if any(s.type == "gpu" for s in data.series):
            self.gpus_seen = True
        met = bool(self.judge(data))
        self.windows_judged += 1
        self.last_timestamp = data.end_us
        if met:
            self.fired_windows.append([data.start_us, data.end_us])
            self.logger.info(
                "%s fired in window [%d, %d) us: %s", self.rule_name, data.start_us, data.end_us, self.reason
            )
        self.report["Verdict"] = self.verdict()
        return met

    def _first_start(self, start: int) -> int:
        """The first window starts at the trial's first data as known when the window is judged: a
        stream whose files appear later (a framework timeline closed after the first system samples)
        may hold earlier events, which a start fixed at the first look would leave out."""
        if self.windows_judged:
            return start
        first = self.base_trial.first_timestamp
        return min(start, int(first)) if first is not None else start

    def next_window(self) -> tuple:
        """``(start_us, end_us)`` of the next window, once the trial holds it (or the job ended)."""
        trial = self.base_trial
        if self.last_timestamp is None:
            first = trial.first_timestamp
            while first is None:
                if trial.job_finished():
                    self.source.refresh()
                    if trial.first_timestamp is None:
                        raise NoMoreProfilerData(0)
                self.sleep(self.poll_s)
                self.source.refresh()
                first = trial.first_timestamp
            self.last_timestamp = int(first)
        start = self.last_timestamp
        end = start + self.scan_interval_us
        while True:
            latest = self.source.latest()
            if latest is not None and latest >= end:
                return self._first_start(start), end
            step = self.live_step_us
            if step and latest is not None and (cut := int(latest) // step * step) > start:
                # live_step_us: the job runs and the window is not complete yet: judge what is, so
                # that the rule acts within a second of the data being there, not at the window's end
                return self._first_start(start), cut
            if trial.job_finished():
                self.source.refresh()  # what was written before the end marker
                # all of it: the streams end at different times (system samples every interval_ms
                # may stop before the last framework events), and no stream grows any more
                end_of = getattr(trial, "get_end_timestamp", trial.get_latest_timestamp)
                latest = end_of()
                if latest is None or latest < start:
                    raise NoMoreProfilerData(start)
                return self._first_start(start), min(end, int(latest) + 1)
            self.sleep(self.poll_s)
            self.source.refresh()

    # -- the verdict -------------------------------------------------------------------------------
    def verdict(self) -> dict:
        """``Verdict``: status, message, windows judged and fired (``[start_us, end_us)`` each)."""
        r = self.report
        if r["RuleTriggered"] or self.fired_windows:
            status, msg = "issues found", self.reason or f"{r['Violations']} violations"
        elif self.needs_gpu and not self.gpus_seen:
            status = "no GPU data"
            msg = (
                f"no GPU data: the profile holds no GPU metrics in {self.windows_judged} windows, "
                "so this GPU rule could not judge anything"
            )
        elif r["Datapoints"] == 0:
            status, msg = "no data", f"no data: {self.selection()} ({self.windows_judged} windows)"
        elif not self.enough_data():
            status = "not enough data"
            msg = (
                f"not enough data: {count_text(r['Datapoints'])} datapoints; the rule judges after "
                f"{self.enough_data_means()}"
            )
        else:
            status, msg = "no issue", f"no issue in {count_text(r['Datapoints'])} datapoints"
        return {
            "status": status,
            "message": msg,
            "windows_judged": self.windows_judged,
            "fired_windows": list(self.fired_windows),
        }  # [start, end] lists, never changed once added

    def caught_up(self, data: WindowData) -> bool:
        """Whether ``data`` is the last window the trial holds now (the next one is not complete):
        rules whose report summarises everything so far refresh it then, not after every window
        of a long profile read offline."""
        latest = self.source.latest()
        return latest is None or latest < data.end_us + (data.end_us - data.start_us)

    def count(self, n: int) -> None:
        """Count ``n`` datapoints judged (1.0.34's Datapoints; and "looked at nothing" when 0)."""
        self.report["Datapoints"] += int(n)
        self.evaluated(int(n))


def judge_together(rules: list) -> None:
    """Run profiler rules of one trial over its windows, each window fetched once for all of
    them (what ProfilerReport does for its sub-rules): each rule's report is the one
    ``invoke_rule(rule)`` leaves (tested), for one walk over the profile instead of one per rule.
    Rules with the same ``scan_interval_us`` share a walk. A rule that fires in a window runs its
    actions there, as under ``invoke_rule``; an error in a rule propagates, as there too."""
    from smdebug.rules.rule_invoker import nothing_evaluated_message

    groups: dict = {}
    for rule in rules:
        groups.setdefault(rule.scan_interval_us, []).append(rule)
    for group in groups.values():
        lead = group[0]
        for rule in group[1:]:
            rule.source = lead.source
        framework = any(r.reads_framework for r in group)
        window = 0
        while True:
            try:
                start, end = lead.next_window()
            except NoMoreProfilerData:
                break
            data = lead.source.window(start, end, framework=framework)
            for rule in group:
                if rule.run_window(data):
                    try:
                        rule.fire(window)
                    except RuleEvaluationConditionMet as exc:
                        rule.logger.info("%s", exc)
            window += 1
        for rule in group:
            if rule.tensors_evaluated == 0:
                rule.logger.warning("%s", nothing_evaluated_message(rule, rule.windows_judged))


@dataclass
class _StoreTarget:
    store: object
