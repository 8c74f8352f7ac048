"""The ``smdebug`` command line: info, show, plot, rules, watch, report, export.

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
_MODULES = ("info", "show", "plot", "rules", "report", "export", "consolidate", "run")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smdebug",
        description="Look into smdebug trials: what was saved, values, plots, rules, reports, exports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in _MODULES:
        importlib.import_module(f"smdebug.cli.{name}").add(sub)
    return parser


def main(argv=None) -> int:
    from smdebug.cli.common import CliError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except CliError as exc:
        print(f"smdebug {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"smdebug {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line instead of a traceback
        if os.environ.get("SMDEBUG_CLI_TRACEBACK"):
            raise
        from smdebug.exceptions import SMDebugError

        kind = "" if isinstance(exc, (SMDebugError, OSError)) else f"{type(exc).__name__}: "
        print(f"smdebug {args.command}: {kind}{exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
