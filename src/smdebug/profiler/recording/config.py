"""ProfilerConfig: SageMaker's profiler configuration as smdebug 1.0.34 reads it, plus keyword arguments.

The JSON file is ``$SMPROFILER_CONFIG_PATH``, else ``/opt/ml/input/config/profilerconfig.json``::

    {"ProfilingIntervalInMilliseconds": 500,
     "ProfilingParameters": {"LocalPath": "/opt/ml/output/profiler",
        "RotateMaxFileSizeInBytes": 10485760, "RotateFileCloseIntervalInSeconds": 60,
        "DataloaderProfilingConfig": "{\"StartStep\": 0, \"NumSteps\": 10, \"MetricsRegex\": \".*\", }",
        "PythonProfilingConfig": "{\"StartStep\": 4, \"NumSteps\": 2, \"ProfilerName\": \"cprofile\", }",
        "DetailedProfilingConfig": "{\"StartStep\": 3, \"NumSteps\": 1, }"},
     "DisableProfiler": false}

Differences from 1.0.34, on purpose: keys are matched without regard to case but values keep their
case (1.0.34 lower-cases the whole file, paths included); the sub-configurations (strings holding a
Python dict literal, as the SageMaker SDK writes them with a trailing comma) are read with
``ast.literal_eval``, never ``eval``; ``Duration`` is accepted for ``DurationInSeconds`` (the SDK
writes it); an invalid value raises :class:`SMDebugValueError` naming the key instead of being
reset to a default; ``ProfilingIntervalInMilliseconds`` drives our own system-metrics sampler.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from smdebug.exceptions import SMDebugValueError

__all__ = ["ProfilerConfig", "ProfilingRange", "CONFIG_PATH_ENV", "DEFAULT_CONFIG_PATH", "DEFAULT_LOCAL_PATH"]

logger = logging.getLogger("smdebug")

CONFIG_PATH_ENV = "SMPROFILER_CONFIG_PATH"
DEFAULT_CONFIG_PATH = "/opt/ml/input/config/profilerconfig.json"
DEFAULT_LOCAL_PATH = "/opt/ml/output/profiler"
DEFAULT_INTERVAL_MS = 500
DEFAULT_ROTATE_MAX_FILE_SIZE = 10 * 1024 * 1024
DEFAULT_ROTATE_CLOSE_INTERVAL_S = 60.0
DEFAULT_FILE_OPEN_FAIL_THRESHOLD = 50
MIN_INTERVAL_MS = 10
_MAX_CONFIG_BYTES = 16 << 20  # a profiler configuration is a few KiB
MAX_INTERVAL_MS = 60_000  # SageMaker's longest interval (it accepts 100, 200, 500, 1000, 5000, 60000)
PYTHON_PROFILERS = ("cprofile", "pyinstrument")
CPROFILE_TIMERS = ("total_time", "cpu_time", "off_cpu_time", "default")

_RANGE_KEYS = {
    "startstep": "start_step",
    "numsteps": "num_steps",
    "starttimeinsecsinceepoch": "start_time",
    "durationinseconds": "duration",
    "duration": "duration",
}
_TOP_KEYS = {"profilingintervalinmilliseconds": "interval_millis", "disableprofiler": "disabled"}
_PARAM_KEYS = {
    "localpath": "local_path",
    "rotatemaxfilesizeinbytes": "rotate_max_file_size",
    "rotatefilecloseintervalinseconds": "rotate_close_interval_s",
    "fileopenfailthreshold": "file_open_fail_threshold",
    "disableprofiler": "disabled",
}
_EXTRA_KEYS: dict[str, dict[str, str]] = {
    "DataloaderProfilingConfig": {"metricsregex": "metrics_regex"},
    "PythonProfilingConfig": {"profilername": "profiler_name", "cprofiletimer": "cprofile_timer"},
    "DetailedProfilingConfig": {},
    "SMDataParallelProfilingConfig": {},
    "HorovodProfilingConfig": {},
}
_SUBCONFIG_FIELD: dict[str, tuple[str, str | None]] = {
    "dataloaderprofilingconfig": ("DataloaderProfilingConfig", "dataloader"),
    "pythonprofilingconfig": ("PythonProfilingConfig", "python"),
    "detailedprofilingconfig": ("DetailedProfilingConfig", "detailed"),
    "smdataparallelprofilingconfig": ("SMDataParallelProfilingConfig", None),  # accepted, not recorded yet
    "horovodprofilingconfig": ("HorovodProfilingConfig", None),
}


_N = TypeVar("_N", int, float)


def _number(key: str, value: Any, kind: type[_N], minimum: float | None = None, maximum: float | None = None) -> _N:
    """``value`` (a JSON value: a number, or a string of one) as ``kind``, within the bounds."""
    if isinstance(value, bool):
        raise SMDebugValueError(f"profiler config: {key}={value!r} must be a number")
    try:
        out = kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        raise SMDebugValueError(f"profiler config: {key}={value!r} must be a number") from None
    if minimum is not None and out < minimum:
        raise SMDebugValueError(f"profiler config: {key}={value!r} must be >= {minimum}")
    if maximum is not None and out > maximum:
        raise SMDebugValueError(f"profiler config: {key}={value!r} must be <= {maximum}")
    return out


def _bool(key: str, value: Any) -> bool:
    from smdebug.codec.values import parse_bool  # the one parser of booleans

    try:
        return parse_bool(value)
    except ValueError:
        raise SMDebugValueError(f"profiler config: {key}={value!r} must be true or false") from None


@dataclass
class ProfilingRange:
    """Which steps (``start_step`` and ``num_steps``) or which time (``start_time`` in seconds since
    the epoch and ``duration`` in seconds) a profiling feature covers. Neither: from the first step
    seen, one step. ``options`` holds the feature's other keys (``metrics_regex``, ``profiler_name``...)."""

    start_step: int | None = None
    num_steps: int | None = None
    start_time: float | None = None
    duration: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    name: str = "ProfilingRange"

    def __post_init__(self) -> None:
        n = self.name
        if self.start_step is not None:
            self.start_step = _number(f"{n}.StartStep", self.start_step, int, 0)
        if self.num_steps is not None:
            self.num_steps = _number(f"{n}.NumSteps", self.num_steps, int, 1)
        if self.start_time is not None:
            self.start_time = _number(f"{n}.StartTimeInSecSinceEpoch", self.start_time, float, 0)
        if self.duration is not None:
            self.duration = _number(f"{n}.DurationInSeconds", self.duration, float, 0)
        steps = self.start_step is not None or self.num_steps is not None
        times = self.start_time is not None or self.duration is not None
        if steps and times:
            raise SMDebugValueError(
                f"profiler config: {n} gives both a step range (StartStep/NumSteps) and a time range "
                "(StartTimeInSecSinceEpoch/DurationInSeconds): give one"
            )
        if self.duration is not None and self.start_time is None:
            raise SMDebugValueError(f"profiler config: {n}.DurationInSeconds needs StartTimeInSecSinceEpoch")
        self._first_step: int | None = None  # the first step seen (a range without its start)

    @property
    def by_time(self) -> bool:
        return self.start_time is not None

    def has_step(self, step: int, now_s: float | None = None) -> bool:
        """Whether ``step`` (a mode step) starting at ``now_s`` is in the range."""
        start_time = self.start_time
        if start_time is not None:  # by_time
            if now_s is None or now_s < start_time:
                return False
            if self.duration is None:  # the one step that starts after start_time
                if self._first_step is None:
                    self._first_step = step
                return step == self._first_step
            return now_s < start_time + self.duration
        start = self.start_step
        if start is None:
            if self._first_step is None:
                self._first_step = step
            start = self._first_step
        return start <= step < start + (self.num_steps or 1)

    @classmethod
    def parse(cls, name: str, value: object) -> ProfilingRange | None:
        """A sub-configuration from its JSON value: a dict, or a string holding a dict literal
        (JSON or the SDK's Python literal with a trailing comma); empty -> None (feature off)."""
        if value is None or isinstance(value, ProfilingRange):
            return value
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return None
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError) as exc:
                raise SMDebugValueError(f"profiler config: {name}={text!r} is not a dict literal ({exc})") from None
        if not isinstance(value, dict):
            raise SMDebugValueError(f"profiler config: {name} must be a dict, not {type(value).__name__}")
        if not value:
            return None
        extra = _EXTRA_KEYS.get(name, {})
        kw: dict[str, Any] = {}
        options: dict[str, Any] = {}
        for key, v in value.items():
            low = str(key).lower()
            if low in _RANGE_KEYS:
                kw[_RANGE_KEYS[low]] = v
            elif low in extra:
                options[extra[low]] = v
            else:
                raise SMDebugValueError(f"profiler config: {name}.{key} is not a known key")
        _check_options(name, options)
        return cls(**kw, options=options, name=name)


def _check_options(name: str, options: dict[str, Any]) -> None:
    if "metrics_regex" in options:
        try:
            re.compile(str(options["metrics_regex"]))
        except re.error as exc:
            raise SMDebugValueError(f"profiler config: {name}.MetricsRegex is not a valid regex ({exc})") from None
    if "profiler_name" in options:
        options["profiler_name"] = str(options["profiler_name"]).lower()
        if options["profiler_name"] not in PYTHON_PROFILERS:
            raise SMDebugValueError(
                f"profiler config: {name}.ProfilerName={options['profiler_name']!r} must be one of {PYTHON_PROFILERS}"
            )
    if "cprofile_timer" in options:
        options["cprofile_timer"] = str(options["cprofile_timer"]).lower()
        if options["cprofile_timer"] not in CPROFILE_TIMERS:
            raise SMDebugValueError(
                f"profiler config: {name}.cProfileTimer={options['cprofile_timer']!r} must be one of {CPROFILE_TIMERS}"
            )


# a sub-configuration as given: parsed (ProfilingRange), a dict or a string holding one (the JSON
# value), (start_step, num_steps), or None (the feature off)
RangeSpec: TypeAlias = "ProfilingRange | dict[str, Any] | str | tuple[int, int] | list[int] | None"


def _range_arg(name: str, value: object) -> ProfilingRange | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:  # (start_step, num_steps)
        value = {"StartStep": value[0], "NumSteps": value[1]}
    return ProfilingRange.parse(name, value)


def _take_keys(doc: dict[Any, Any], names: dict[str, str], kw: dict[str, Any]) -> list[Any]:
    """Sets ``kw[names[key.lower()]]`` to the value of each key of ``doc`` that ``names`` knows
    (in lower case); the other keys, in order."""
    rest = []
    for key, value in doc.items():
        low = str(key).lower()
        if low in names:
            kw[names[low]] = value
        else:
            rest.append(key)
    return rest


@dataclass(init=False)
class ProfilerConfig:
    """What to record and where. Keyword arguments mirror the JSON keys::

        ProfilerConfig(local_path="/tmp/prof", interval_millis=100,
                       python={"StartStep": 5, "NumSteps": 2, "ProfilerName": "cprofile"},
                       dataloader=(0, 1000))

    ``local_path`` None: the hook's ``<out_dir>/profiler``. ``system_metrics`` / ``framework_metrics``
    switch the two streams; ``dataloader`` None records data-loader events on every step.
    ``dataloader``, ``python`` and ``detailed`` are given as a :class:`ProfilingRange`, a dict of
    its JSON keys (or a string holding one) or ``(start_step, num_steps)``, and kept parsed.
    """

    local_path: str | None
    interval_millis: int
    system_metrics: bool
    framework_metrics: bool
    dataloader: ProfilingRange | None
    python: ProfilingRange | None
    detailed: ProfilingRange | None
    rotate_max_file_size: int
    rotate_close_interval_s: float
    file_open_fail_threshold: int
    disabled: bool

    def __init__(
        self,
        local_path: str | os.PathLike[str] | None = None,
        interval_millis: int = DEFAULT_INTERVAL_MS,
        system_metrics: bool = True,
        framework_metrics: bool = True,
        dataloader: RangeSpec = None,
        python: RangeSpec = None,
        detailed: RangeSpec = None,
        rotate_max_file_size: int = DEFAULT_ROTATE_MAX_FILE_SIZE,
        rotate_close_interval_s: float = DEFAULT_ROTATE_CLOSE_INTERVAL_S,
        file_open_fail_threshold: int = DEFAULT_FILE_OPEN_FAIL_THRESHOLD,
        disabled: bool = False,
    ) -> None:
        if local_path is not None:
            if not isinstance(local_path, (str, os.PathLike)) or not str(local_path).strip():
                raise SMDebugValueError(f"profiler config: LocalPath={local_path!r} must be a non-empty path")
            local_path = str(local_path).strip()
        self.local_path = local_path
        self.interval_millis = _number(
            "ProfilingIntervalInMilliseconds", interval_millis, int, MIN_INTERVAL_MS, MAX_INTERVAL_MS
        )
        self.system_metrics = system_metrics
        self.framework_metrics = framework_metrics
        self.rotate_max_file_size = _number("RotateMaxFileSizeInBytes", rotate_max_file_size, int, 1)
        self.rotate_close_interval_s = _number("RotateFileCloseIntervalInSeconds", rotate_close_interval_s, float, 0)
        self.file_open_fail_threshold = _number("FileOpenFailThreshold", file_open_fail_threshold, int, 1)
        self.dataloader = _range_arg("DataloaderProfilingConfig", dataloader)
        self.python = _range_arg("PythonProfilingConfig", python)
        self.detailed = _range_arg("DetailedProfilingConfig", detailed)
        self.disabled = _bool("DisableProfiler", disabled)

    @property
    def python_profiler(self) -> str:
        return (self.python.options.get("profiler_name") if self.python else None) or "cprofile"

    @property
    def cprofile_timer(self) -> str:
        return (self.python.options.get("cprofile_timer") if self.python else None) or "total_time"

    def dataloader_metric_wanted(self, metric: str) -> bool:
        regex = self.dataloader.options.get("metrics_regex") if self.dataloader else None
        # 1.0.34 lower-cased the regex and the name: the match ignores case
        return regex is None or re.search(str(regex), metric, re.IGNORECASE) is not None

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_dict(cls, doc: dict[str, Any], source: str = "profiler config") -> ProfilerConfig:
        if not isinstance(doc, dict):
            raise SMDebugValueError(f"{source}: the configuration must be a JSON object")
        kw: dict[str, Any] = {}
        params = None
        for key in _take_keys(doc, _TOP_KEYS, kw):
            if str(key).lower() == "profilingparameters":
                params = doc[key]
            else:
                logger.warning("smdebug: %s: key %s is not used by smdebug's profiler", source, key)
        if params is None or params == {}:
            kw["framework_metrics"] = False  # as in 1.0.34: no ProfilingParameters, no framework metrics
            params = {}
        if not isinstance(params, dict):
            raise SMDebugValueError(f"{source}: ProfilingParameters must be a JSON object")
        kw["local_path"] = DEFAULT_LOCAL_PATH
        for key in _take_keys(params, _PARAM_KEYS, kw):
            low = str(key).lower()
            if low in _SUBCONFIG_FIELD:
                name, attr = _SUBCONFIG_FIELD[low]
                parsed = ProfilingRange.parse(name, params[key])  # checked even when not recorded yet
                if attr is not None:
                    kw[attr] = parsed
            elif low != "profilerenabled":
                logger.warning("smdebug: %s: key ProfilingParameters.%s is not used by smdebug's profiler", source, key)
        return cls(**kw)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike[str]) -> ProfilerConfig:
        path = str(path)
        try:
            with open(path, encoding="utf-8") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise SMDebugValueError(f"profiler config {path}: not a regular file")
                text = f.read(_MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise SMDebugValueError(f"profiler config {path}: cannot read it ({exc.strerror})") from None
        if len(text) > _MAX_CONFIG_BYTES:
            raise SMDebugValueError(f"profiler config {path}: more than {_MAX_CONFIG_BYTES >> 20} MiB")
        try:
            doc = json.loads(text)
        except RecursionError:
            raise SMDebugValueError(f"profiler config {path}: JSON nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise SMDebugValueError(f"profiler config {path}: not valid JSON ({exc})") from None
        return cls.from_dict(doc, source=f"profiler config {path}")

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> ProfilerConfig | None:
        """The configuration in ``path``, else ``$SMPROFILER_CONFIG_PATH``, else SageMaker's
        ``/opt/ml/input/config/profilerconfig.json``; None when that file does not exist."""
        if path is None:
            path = os.environ.get(CONFIG_PATH_ENV) or DEFAULT_CONFIG_PATH
            if not os.path.exists(path):
                return None
        return cls.from_json_file(path)
