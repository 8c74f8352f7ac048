"""``smdebug nonfinite TRIAL``: which tensor went NaN or inf first, at which step, on which worker.

The steps are scanned in order; at the first step where any saved value (a raw tensor, or its
saved reductions when no raw value was saved) is NaN or ±inf, the first such tensor in the order
the model computed it is named (:func:`smdebug.analysis.nonfinite.first_nonfinite`). XGBoost's
structural NaN (a leaf's ``trees/Split``) do not count. Exit status: 1 when a non-finite value was
found, 0 when every value was finite, 2 when the trial holds no numeric tensor in the steps
scanned (nothing was checked), as on bad input.
"""

from __future__ import annotations

from smdebug.cli.common import (
    add_json_argument,
    add_step_range,
    add_trial_argument,
    check_step_range,
    emit_json,
    open_trial,
)


def add(sub) -> None:
    p = sub.add_parser(
        "nonfinite",
        help="the first tensor that went NaN or inf (in the order the model "
        "computed them) and where; exit 1 when found",
    )
    add_trial_argument(p)
    add_step_range(p, "scan")
    p.add_argument(
        "--regex",
        action="append",
        metavar="REGEX",
        help="scan only the tensors matching REGEX (repeat for several; default: every tensor)",
    )
    add_json_argument(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from smdebug.analysis.nonfinite import scan_nonfinite

    check_step_range(args.start_step, args.end_step)
    trial = open_trial(args.trial)
    scan = scan_nonfinite(trial, start_step=args.start_step, end_step=args.end_step, regex=args.regex)
    code = 1 if scan.found is not None else 0 if scan.values else 2
    if args.json:
        emit_json(
            {
                "found": scan.found is not None,
                "first": scan.found.to_json() if scan.found else None,
                "steps_checked": scan.steps,
                "values_checked": scan.values,
            }
        )
    elif scan.found is not None:
        print(scan.found.text())
    elif scan.values:
        print(
            f"every value is finite: {scan.values} numeric values checked in {scan.steps} "
            f"step{'s' if scan.steps != 1 else ''}"
        )
    else:
        print(f"{trial.path}: no numeric tensor in the steps scanned: nothing to check for NaN or inf")
    return code
