"""What one line of a framework timeline file is, for the bulk reader
(:mod:`smdebug.profiler.reading.trace_bulk`): the templates of complete events (``"ph": "X"``)
made from the first such line of a batch, and what a metadata line (``"ph": "M"``) says. The
rules for the values (an event's step, a pid that is not a number) are 1.0.34's, shared with the
general reader (:mod:`smdebug.profiler.reading.trace_files`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from smdebug.profiler.reading.byte_columns import INT, QINT, STR, JoinedLines, LineTemplate

__all__ = ["LineTemplate", "Templates", "TableShape", "Meta", "templates", "meta_line", "step_of", "int_or_minus_one"]

_NEED = {"name", "ph", "pid", "ts", "dur"}
_INT_KEYS = {"pid", "tid", "ts", "dur"}
_ARG_INT_KEYS = {"pid", "thread_id"}
# what a metadata line says: ((pid, process name) of a process_name line or None, time base or None)
MetaLine = tuple[tuple[int, str] | None, int | None]


@dataclass
class TableShape:
    """The args template's keys when all its values are integers (``text``: written as strings)."""

    keys: list[str]
    text: list[bool]


@dataclass
class Templates:
    """What the events of a batch are read with, from its first complete event: ``full`` (with
    the args of that event's shape; None when it has none or they are not flat), ``bare`` (no
    args) and ``head`` (everything before any args, which orjson then reads)."""

    full: LineTemplate | None
    bare: LineTemplate
    head: LineTemplate
    table: TableShape | None = None  # when the args of ``full`` can be kept as columns


def _style(d: dict[str, Any], raw: bytes) -> tuple[bytes, bytes] | None:
    for item, kv in ((",", ":"), (", ", ": ")):
        if json.dumps(d, separators=(item, kv), ensure_ascii=False).encode() == raw:
            return kv.encode(), item.encode()
    return None


def _digits(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18


def _kind(value: object) -> str | None:
    if isinstance(value, str):
        return STR
    return INT if type(value) is int and -(10**18) < value < 10**18 else None


def templates(raw: bytes) -> Templates | None:
    """The templates of a complete event line like ``raw``; None when it is not one the bulk path
    reads (another ``ph``, a number that is not an integer, args before other keys...)."""
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(d, dict) or d.get("ph") != "X" or not _NEED <= set(d) or "args" in list(d)[:-1]:
        return None
    style = _style(d, raw)
    fields = [(k, b'"X"' if k == "ph" else _kind(v)) for k, v in d.items() if k != "args"]
    if style is None or any(
        kind is None or (k in _INT_KEYS and kind != INT) or (k == "name" and kind != STR) for k, kind in fields
    ):
        return None
    kv, item = style
    full = table = None
    args = d.get("args")
    if isinstance(args, dict) and args:
        arg_fields = [(k, QINT if k == "step_num" and _digits(v) else _kind(v)) for k, v in args.items()]
        if all(kind is not None and (k not in _ARG_INT_KEYS or kind == INT) for k, kind in arg_fields):
            full = LineTemplate.of(fields + [("args", arg_fields)], kv, item)
            if all(kind in (INT, QINT) for _, kind in arg_fields):
                table = TableShape([k for k, _ in arg_fields], [kind == QINT for _, kind in arg_fields])
    return Templates(
        full, LineTemplate.of(fields, kv, item), LineTemplate.of(fields, kv, item, item + b'"args"' + kv), table
    )


def step_of(args: Any) -> int:
    """1.0.34's step of an event: ``int(args["step_num"])``, -1 when absent or not a number
    (``args``: the decoded JSON, any value)."""
    if not args or "step_num" not in args:
        return -1
    try:
        return int(args["step_num"])
    except (TypeError, ValueError):
        return -1


def int_or_minus_one(value: Any) -> int:  # a decoded JSON value
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return -1
    return out if -(2**63) <= out < 2**63 else -1


def meta_line(raw: bytes) -> MetaLine | None:
    """``(announced, base)`` of a metadata line: ``announced`` is ``(pid, process name)`` of a
    ``process_name`` line, ``base`` its ``start_time_since_epoch_in_micros``; None when the line
    is not one the bulk path reads."""
    try:
        ev = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(ev, dict) or ev.get("ph") != "M":
        return None
    meta_args = ev.get("args") or {}
    if not isinstance(meta_args, dict):
        return None
    announced = None
    if ev.get("name") == "process_name":
        pid, name = ev.get("pid"), meta_args.get("name", "Unknown")
        if type(pid) is not int or abs(pid) >= 2**62 or not isinstance(name, str):
            return None
        announced = (pid, name)
    base = meta_args.get("start_time_since_epoch_in_micros")
    if base is not None and (type(base) is not int or abs(base) >= 2**61):
        return None
    return announced, base


_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class Meta:
    """What the metadata lines of a batch say, as columns in line order: the ``process_name``
    lines (``ann_*``: file, pid, line, and the name as a code into ``ann_names``) and where the
    time base is set (line, value, file)."""

    ann_file: np.ndarray = field(default_factory=lambda: _EMPTY)
    ann_pid: np.ndarray = field(default_factory=lambda: _EMPTY)
    ann_line: np.ndarray = field(default_factory=lambda: _EMPTY)
    ann_name: np.ndarray = field(default_factory=lambda: _EMPTY)
    ann_names: list[str] = field(default_factory=list)
    base_line: list[int] = field(default_factory=list)
    base_value: list[int] = field(default_factory=list)
    base_file: list[int] = field(default_factory=list)

    def read_lines(
        self, b: JoinedLines, line: np.ndarray, file: np.ndarray, lo: np.ndarray, hi: np.ndarray, file_ok: np.ndarray
    ) -> None:
        """Take in the lines ``b.big[lo:hi]`` (line numbers ``line``, in order, of files ``file``):
        each distinct line is decoded once (the files of a batch repeat their metadata lines). A
        file with a line that is not a metadata line the bulk path reads is not ok (``file_ok``)
        and what its lines say is left out."""
        if not len(line):
            return
        codes, texts = b.intern(lo, hi)
        got = [meta_line(text) for text in texts]
        bad = np.array([g is None for g in got], dtype=bool)
        if bad.any():
            file_ok[file[bad[codes]]] = False
        keep = file_ok[file]
        names: dict[str, int] = {}
        name_of = np.array(
            [names.setdefault(g[0][1], len(names)) if g is not None and g[0] is not None else -1 for g in got],
            dtype=np.int64,
        )
        pid_of = np.array([g[0][0] if g is not None and g[0] is not None else 0 for g in got], dtype=np.int64)
        says = (name_of[codes] >= 0) & keep
        said = codes[says]
        self.ann_file, self.ann_pid, self.ann_line = file[says], pid_of[said], line[says]
        self.ann_name, self.ann_names = name_of[said], list(names)
        sets = np.array([g is not None and g[1] is not None for g in got], dtype=bool)[codes] & keep
        if sets.any():
            self.base_line += line[sets].tolist()
            self.base_value += [got[c][1] for c in codes[sets].tolist()]
            self.base_file += file[sets].tolist()
