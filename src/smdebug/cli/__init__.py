"""The ``smdebug`` command line."""

from __future__ import annotations

import argparse
import sys

from smdebug.cli.consolidate import add_consolidate
from smdebug.cli.inspect import add_inspect

__all__ = ["main"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="smdebug", description="Inspect smdebug trials.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_inspect(sub)
    add_consolidate(sub)
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except Exception as exc:  # noqa: BLE001 - a clean message instead of a traceback
        from smdebug.exceptions import SMDebugError

        if isinstance(exc, (SMDebugError, OSError)):
            print(f"smdebug {args.command}: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
