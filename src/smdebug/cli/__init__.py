"""The ``smdebug`` command line: info, show, plot, rules, watch, report, profile, export.

Each subcommand lives in its own module, whose top level imports nothing heavy: numpy, rich,
matplotlib and pyarrow are imported by the subcommand that runs, so ``smdebug --help`` is fast.
Bad input prints one line naming what was wrong and exits 2; ``SMDEBUG_CLI_TRACEBACK=1`` shows
the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

__all__ = ["main"]

# subcommand modules, in the order --help lists them
_MODULES = ("info", "show", "plot", "rules", "nonfinite", "report", "profile", "export", "consolidate", "run")


class _Parser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line (``smdebug plot: ...``), exit status 2,
    like every other bad input; ``--help`` still shows the usage."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Version(argparse.Action):
    """``--version``: one line, never wrapped (argparse's version action wraps at the terminal width)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line())
        parser.exit(0)


DISTRIBUTION = "smdebug-open"  # pyproject.toml's name: AWS's package on the public index is "smdebug"


def version_line() -> str:
    """``smdebug-open 1.1.0 (import smdebug, from /path/to/smdebug)``: this package, not AWS's smdebug."""
    import smdebug

    return (
        f"{DISTRIBUTION} {smdebug.__version__} (import smdebug, from {os.path.dirname(smdebug.__file__)}; "
        "a re-implementation of SageMaker Debugger's smdebug, not AWS's 'smdebug' package)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="smdebug",
        description="Look into smdebug trials: what was saved, values, plots, rules, reports, exports.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="which package this is (its distribution name and version) and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _MODULES:
        importlib.import_module(f"smdebug.cli.{name}").add(sub)
    return parser


def main(argv=None) -> int:
    from smdebug.cli.common import CliError, GuardedStdout

    try:
        parser = build_parser()  # imports the subcommands' modules: a Ctrl-C may land there
    except KeyboardInterrupt:
        print("smdebug: interrupted", file=sys.stderr)
        return 130
    args = parser.parse_args(argv)
    stdout = sys.stdout
    try:
        sys.stdout = GuardedStdout(stdout)
        code = args.func(args) or 0
        sys.stdout.flush()
        return code
    except CliError as exc:
        print(f"smdebug {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"smdebug {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `smdebug info T | head`: the reader has what it wanted: no message
        _quiet_stdout()
        return 1  # as Python's documentation advises, and as rich does for the tables
    except Exception as exc:  # noqa: BLE001 - one line instead of a traceback
        if os.environ.get("SMDEBUG_CLI_TRACEBACK"):
            raise
        from smdebug.exceptions import SMDebugError

        kind = "" if isinstance(exc, (SMDebugError, OSError)) else f"{type(exc).__name__}: "
        print(f"smdebug {args.command}: {kind}{exc}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = stdout


def _quiet_stdout() -> None:
    """Point standard output at /dev/null: Python's flush at exit would hit the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout): nothing to flush
        pass


if __name__ == "__main__":
    sys.exit(main())
