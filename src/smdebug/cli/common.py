"""What every subcommand shares: opening a trial with a one-line error, modes, progress on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

__all__ = ["CliError", "open_trial", "parse_mode", "progress", "add_trial_argument", "tensor_of"]


class CliError(Exception):
    """Bad input on the command line: printed as one line, exit status 2."""


def add_trial_argument(parser) -> None:
    parser.add_argument("trial", help="trial folder or s3://bucket/prefix")


def open_trial(path: str, wait: float = 0.0, **kwargs):
    """The trial at ``path``, or a CliError saying why it is not one. With ``wait`` (seconds), a
    job that has not started writing yet is waited for (its folder, then its collections file)."""
    import time

    from smdebug.exceptions import MissingCollectionFiles
    from smdebug.storage import is_remote
    from smdebug.trials import create_trial

    deadline = time.monotonic() + wait
    if not is_remote(path):
        local = os.path.expanduser(path)
        while not os.path.exists(local) and time.monotonic() < deadline:
            time.sleep(0.1)  # the job creates its out_dir when it starts
        if not os.path.exists(local):
            raise CliError(f"{path}: no such folder")
        if not os.path.isdir(local):
            raise CliError(f"{path}: not a folder (give the trial's out_dir)")
    if wait:
        kwargs.setdefault("collection_wait_timeout", max(deadline - time.monotonic(), 0.0))
    try:
        return create_trial(path, **kwargs)
    except MissingCollectionFiles:
        raise CliError(f"{path} is not an smdebug trial: it has no collections/ file (wrong folder?)") from None


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
    from rich.progress import Progress

    with Progress(transient=True, console=_stderr_console()) as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def check_writable(path: str) -> str:
    """``path``'s folder must exist and be writable: else a CliError naming it."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(folder):
        raise CliError(f"-o {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise CliError(f"-o {path}: folder {folder} is not writable")
    return path
