"""What every subcommand shares: opening a trial with a one-line error, modes, progress on stderr,
checked arguments and output files, strict JSON, and notices while waiting."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "CliError",
    "open_trial",
    "parse_mode",
    "progress",
    "add_trial_argument",
    "add_output_argument",
    "add_json_argument",
    "add_step_range",
    "add_repeatable",
    "check_regex",
    "tensor_of",
    "check_writable",
    "check_step_range",
    "check_at_least",
    "needs_extra",
    "writing",
    "GuardedStdout",
    "emit_json",
    "say",
    "Reminder",
    "poll_interval",
]


class CliError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def add_trial_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trial", help="trial folder or s3://bucket/prefix")


def add_output_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``-o/--output``, required: the file or folder written (check it with :func:`check_writable`)."""
    parser.add_argument("-o", "--output", required=True, help=help)


def add_json_argument(parser: argparse.ArgumentParser, help: str = "print JSON for scripts") -> None:
    """``--json``: machine-readable output on stdout (:func:`emit_json`)."""
    parser.add_argument("--json", action="store_true", help=help)


def add_step_range(parser: argparse.ArgumentParser, verb: str) -> None:
    """``--start-step`` / ``--end-step``: the global steps to ``verb`` (scan, evaluate); check them with
    :func:`check_step_range`."""
    parser.add_argument("--start-step", type=int, default=0, help=f"first global step to {verb} (default 0)")
    parser.add_argument("--end-step", type=int, help=f"{verb} steps before this one (default: all)")


def add_repeatable(parser: argparse.ArgumentParser, flag: str, metavar: str, help: str) -> None:
    """An option given any number of times: a list, empty when not given."""
    parser.add_argument(flag, action="append", default=[], metavar=metavar, help=help)


def check_regex(value: str | None, flag: str) -> None:
    """A regex option (``--tensor``) compiles, or a CliError naming the flag; None passes."""
    from smdebug.patterns import PatternError, compile

    if value is None:
        return
    try:
        compile(value, arg=flag)
    except PatternError as exc:
        raise CliError(str(exc)) from None


def say(message: str) -> None:
    """One line on stderr (notices, skipped items): never on stdout, which scripts read."""
    print(message, file=sys.stderr, flush=True)


def poll_interval() -> float:
    """Seconds between two looks at a running job ($SMDEBUG_POLL_INTERVAL, as the Trial's)."""
    return float(os.getenv("SMDEBUG_POLL_INTERVAL", "1"))


class Reminder:
    """Says a waiting message once when due, then sparsely: after ``first`` seconds, then at
    doubling intervals up to one every ``cap`` seconds. ``clock`` is injectable for tests."""

    def __init__(
        self, clock: Callable[[], float], speak: Callable[[str], None], first: float = 0.0, cap: float = 300.0
    ):
        self.clock, self.speak, self.cap = clock, speak, cap
        self.start = clock()
        self.due = self.start + first
        self.gap = max(first, 30.0)

    def waited(self) -> float:
        return self.clock() - self.start

    def __call__(self, message: Callable[[float], str]) -> None:
        """``message(seconds waited)`` is said when due."""
        now = self.clock()
        if now >= self.due:
            self.speak(message(now - self.start))
            self.due = now + self.gap
            self.gap = min(self.gap * 2, self.cap)


def _check_trial_path(path: str) -> None:
    if not path or not path.strip():
        raise CliError("the trial path is empty: give the trial's out_dir or s3://bucket/prefix")


def _local_problem(path: str) -> str | None:
    """Why a local ``path`` cannot be a trial folder (None: it is a folder)."""
    from smdebug.storage import is_remote

    if is_remote(path):
        return None
    local = os.path.expanduser(path)
    if not os.path.exists(local):
        return "no such folder"
    if not os.path.isdir(local):
        return "not a folder (give the trial's out_dir)"
    return None


def open_trial(path: str, wait: float = 0.0, *, clock=None, sleep=None, speak=None, **kwargs):
    """The trial at ``path``, or a CliError saying why it is not one.

    With ``wait`` (seconds), a job that has not started writing yet is waited for (its folder,
    then its collections file), saying on stderr what it waits for: at once, then sparsely.
    ``clock``, ``sleep`` and ``speak`` (default: time.monotonic, time.sleep, :func:`say`) are
    injectable so that tests drive the time.
    """
    from smdebug.exceptions import MissingCollectionFiles
    from smdebug.trials import create_trial

    _check_trial_path(path)
    not_a_trial = f"{path} is not an smdebug trial: it has no collections/ file (wrong folder?)"
    if not wait:
        problem = _local_problem(path)
        if problem:
            raise CliError(f"{path}: {problem}")
        try:
            return create_trial(path, **kwargs)
        except MissingCollectionFiles:
            raise CliError(not_a_trial) from None
    clock, sleep = clock or time.monotonic, sleep or time.sleep
    remind = Reminder(clock, speak or say)
    while True:
        problem = _local_problem(path)
        if problem is None:
            try:
                return create_trial(path, collection_wait_timeout=0, **kwargs)
            except MissingCollectionFiles:
                pass
        if problem and problem != "no such folder":
            raise CliError(f"{path}: {problem}")
        what = (
            "its folder (the job creates it when it starts)"
            if problem
            else "its collections file (the hook writes it at the first step)"
        )
        waited = remind.waited()
        if waited >= wait:
            why = f"{path}: no such folder" if problem else not_a_trial
            raise CliError(f"{why}, after waiting {wait:g} s (--wait)")

        def message(s: float, what: str = what) -> str:
            return f"waiting for {path}: {what} ({s:.0f} s of --wait {wait:g} s)"

        remind(message)
        sleep(max(min(poll_interval(), wait - waited), 0.0))


def parse_mode(value: str | None):
    """``train``/``eval``/``predict``/``global`` (any case) to ModeKeys; None stays None."""
    if value is None:
        return None
    from smdebug.modes import parse_mode as parse

    try:
        return parse(value)
    except ValueError:
        raise CliError(f"--mode {value!r}: expected one of train, eval, predict, global") from None


def tensor_of(trial, name: str):
    """``trial.tensor(name)`` or a CliError listing close names."""
    if not trial.has_tensor(name):
        import difflib

        close = difflib.get_close_matches(name, trial.tensor_names(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else " (see `smdebug info`)"
        raise CliError(f"no tensor {name!r} in {trial.path}{hint}")
    return trial.tensor(name)


def progress(items: Iterable, total: int | None, description: str) -> Iterator:
    """Iterate ``items`` with a rich progress bar on stderr when stderr is a terminal; silent otherwise."""
    if not sys.stderr.isatty() or (total is not None and total < 2):
        yield from items
        return
    needs_extra("rich", "cli")
    from rich.progress import Progress

    with Progress(transient=True, console=_stderr_console()) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def check_writable(path: str, kind: str = "file") -> str:
    """``-o path``: not empty, not a folder (for a file), in a folder that exists and is writable."""
    if not path or not path.strip():
        raise CliError("-o: the output path is empty")
    if kind == "file" and os.path.isdir(path):
        raise CliError(f"-o {path}: is a folder; give a file name")
    if kind == "file" and os.path.exists(path):
        if not os.access(path, os.W_OK):
            raise CliError(f"-o {path}: the file is not writable")
        if not os.path.isfile(path):  # a device or a pipe: found now, not after the work (/dev/full)
            try:
                with open(path, "ab") as f:
                    f.write(b"\n")
                    f.flush()
            except OSError as exc:
                raise CliError(f"-o {path}: cannot write it: {exc.strerror or exc}") from None
        return path
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(folder):
        raise CliError(f"-o {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise CliError(f"-o {path}: folder {folder} is not writable")
    return path


class writing:  # noqa: N801 - used as a context manager, like open()
    """``with writing(path):`` turns an OSError while writing ``path`` into a CliError naming it
    (``No space left on device`` alone does not say which file)."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if isinstance(exc, OSError):
            why = exc.strerror or str(exc)
            raise CliError(f"-o {self.path}: cannot write it: {why}") from None
        return False


class GuardedStdout:
    """Standard output whose write errors (a full disk, a closed pipe) are a CliError saying that it
    was standard output that could not be written; everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def _fail(self, exc: OSError):
        if isinstance(exc, BrokenPipeError):
            raise exc  # the reader closed the pipe (`| head`): not an error (see smdebug.cli.main)
        raise CliError(f"cannot write standard output: {exc.strerror or exc}") from None

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._fail(exc)

    def flush(self):
        try:
            self._stream.flush()
        except OSError as exc:
            self._fail(exc)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def check_step_range(start: int | None, end: int | None) -> None:
    """``--start-step`` / ``--end-step``: not negative, and start before end."""
    if start is not None and start < 0:
        raise CliError(f"--start-step {start}: must be at least 0")
    if end is not None and end < 0:
        raise CliError(f"--end-step {end}: must be at least 0")
    if start is not None and end is not None and end <= start:
        raise CliError(
            f"--start-step {start} --end-step {end}: the end step must be after the start step "
            "(steps start <= step < end are evaluated)"
        )


def check_at_least(option: str, value, least) -> None:
    """A numeric option must be a finite number >= ``least``."""
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise CliError(f"{option} {value}: expected a finite number")
    if value < least:
        raise CliError(f"{option} {value:g}: must be at least {least}")


def needs_extra(module: str, extra: str) -> None:
    """A CliError naming the extra to install when ``module`` (matplotlib, rich, ...) is missing."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        raise CliError(f"this command needs {module}: pip install 'smdebug-open[{extra}]'") from None


# ---------------------------------------------------------------- strict JSON
# Every --json document is strict JSON (RFC 8259), built whole before anything is written:
# non-finite floats become the strings "NaN", "Infinity", "-Infinity"; complex numbers
# [real, imag]; bytes are decoded as UTF-8 (undecodable bytes as \\xNN escapes).
NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def jsonable(obj):
    """``obj`` (dicts, lists, numpy values and arrays) as plain JSON data, see above."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "iub" or (obj.dtype.kind == "f" and np.isfinite(obj).all()):
            return obj.tolist()
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else NONFINITE[repr(obj)]
    if isinstance(obj, complex):
        return [jsonable(obj.real), jsonable(obj.imag)]
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", errors="backslashreplace")
    raise TypeError(f"cannot write a {type(obj).__name__} as JSON")


def emit_json(obj, indent: int | None = 1) -> None:
    """Print ``obj`` as one strict JSON document: built whole first, so a failure writes nothing."""
    import json

    text = json.dumps(jsonable(obj), indent=indent, allow_nan=False)
    sys.stdout.write(text + "\n")
