"""1.0.34's ``smdebug.profiler.utils``: time units and conversions used with the profiler readers.

``TimeUnits`` says in which unit a timestamp passed to ``get_events`` is; the conversions truncate
to int as 1.0.34's do (nanoseconds in, microseconds out keeps the fraction, as 1.0.34), so they
are typed ``float``: an int except from nanoseconds (a fraction, or the timestamp as given).
"""

from __future__ import annotations

import time
from datetime import datetime
from enum import Enum
from typing import SupportsInt

from smdebug.profiler.reading.system_files import system_file_info
from smdebug.profiler.reading.trace_files import node_id_from_trace_name

__all__ = [
    "TimeUnits",
    "convert_utc_timestamp_to_nanoseconds",
    "convert_utc_timestamp_to_microseconds",
    "convert_utc_timestamp_to_seconds",
    "convert_utc_datetime_to_nanoseconds",
    "convert_utc_datetime_to_microseconds",
    "us_since_epoch_to_human_readable_time",
    "ns_since_epoch_to_human_readable_time",
    "is_valid_tracefilename",
    "get_node_id_from_tracefilename",
    "get_timestamp_from_tracefilename",
    "get_node_id_from_system_profiler_filename",
    "get_utctimestamp_us_since_epoch_from_system_profiler_file",
    "validate_system_profiler_file",
]


class TimeUnits(Enum):
    SECONDS = 1
    MILLISECONDS = 2
    MICROSECONDS = 3
    NANOSECONDS = 4


def _unit(unit: object) -> TimeUnits:
    if not isinstance(unit, TimeUnits):
        from smdebug.exceptions import SMDebugTypeError

        raise SMDebugTypeError(
            f"unit={unit!r}: use smdebug.profiler.utils.TimeUnits (SECONDS, MILLISECONDS, MICROSECONDS, NANOSECONDS)"
        )
    return unit


def convert_utc_timestamp_to_nanoseconds(timestamp: float, unit: TimeUnits = TimeUnits.MICROSECONDS) -> float:
    unit = _unit(unit)
    if unit == TimeUnits.SECONDS:
        return int(timestamp * 1000 * 1000 * 1000)
    if unit == TimeUnits.MILLISECONDS:
        return int(timestamp * 1000 * 1000)
    if unit == TimeUnits.MICROSECONDS:
        return int(timestamp * 1000)
    return timestamp


def convert_utc_timestamp_to_microseconds(timestamp: float, unit: TimeUnits = TimeUnits.MICROSECONDS) -> float:
    unit = _unit(unit)
    if unit == TimeUnits.SECONDS:
        return int(timestamp * 1000 * 1000)
    if unit == TimeUnits.MILLISECONDS:
        return int(timestamp * 1000)
    if unit == TimeUnits.MICROSECONDS:
        return int(timestamp)
    return timestamp / 1000


def convert_utc_timestamp_to_seconds(timestamp: float, unit: TimeUnits = TimeUnits.MICROSECONDS) -> float:
    unit = _unit(unit)
    if unit == TimeUnits.SECONDS:
        return int(timestamp)
    if unit == TimeUnits.MILLISECONDS:
        return int(timestamp / 1000)
    if unit == TimeUnits.MICROSECONDS:
        return int(timestamp / 1000 / 1000)
    return timestamp / 1000 / 1000 / 1000


def convert_utc_datetime_to_nanoseconds(timestamp_datetime: datetime) -> int:
    return int(convert_utc_timestamp_to_nanoseconds(timestamp_datetime.timestamp(), unit=TimeUnits.SECONDS))


def convert_utc_datetime_to_microseconds(timestamp_datetime: datetime) -> int:
    return int(convert_utc_timestamp_to_microseconds(timestamp_datetime.timestamp(), unit=TimeUnits.SECONDS))


def us_since_epoch_to_human_readable_time(us_since_epoch: SupportsInt) -> str:
    """``%Y-%m-%dT%H:%M:%S:%f`` in UTC (1.0.34's format: a ``:`` before the microseconds)."""
    seconds, us = divmod(int(us_since_epoch), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f":{us:06d}"


def ns_since_epoch_to_human_readable_time(ns_since_epoch: SupportsInt) -> str:
    return us_since_epoch_to_human_readable_time(int(ns_since_epoch) // 1000)


def is_valid_tracefilename(filename: str) -> bool:
    return filename.endswith(".json") and "pevents" in filename and len(filename.split("_")) >= 3


def get_node_id_from_tracefilename(filename: str) -> str:
    """The node id field of ``<T>_<node>_<suffix>`` (``<pid>-algo-<n>`` read as ``algo-<n>-<pid>``)."""
    return node_id_from_trace_name(filename.split("/")[-1])


def get_timestamp_from_tracefilename(filename: str) -> int:
    return int(filename.split("/")[-1].split("_")[0])


def validate_system_profiler_file(filename: str) -> bool:
    return system_file_info(filename) is not None


def get_node_id_from_system_profiler_filename(filename: str) -> str | None:
    info = system_file_info(filename)
    return info[1] if info else None


def get_utctimestamp_us_since_epoch_from_system_profiler_file(filename: str) -> int | None:
    info = system_file_info(filename)
    return info[0] if info else None
