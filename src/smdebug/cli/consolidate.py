"""``smdebug consolidate PATH``: write a trial's consolidated index objects."""

from __future__ import annotations


def add(sub) -> None:
    p = sub.add_parser(
        "consolidate",
        help="write consolidated index objects (under _smdebug/index/) so that "
        "the trial opens with one read per 1000 steps and worker",
    )
    p.add_argument("trial", help="trial folder or s3://bucket/prefix")
    p.add_argument(
        "--include-incomplete",
        action="store_true",
        help="also consolidate the newest buckets of a job without training_job_end.ts (safe on a "
        "live job: readers read the steps written later from their per-step files)",
    )
    p.set_defaults(func=run_consolidate)


def run_consolidate(args) -> int:
    from smdebug.cli.common import open_trial
    from smdebug.trials import consolidate

    open_trial(args.trial)  # a one-line error for a path that is not a trial
    report = consolidate(args.trial, include_incomplete=args.include_incomplete)
    print(f"consolidated {report.index_files} index files into {len(report.written)} objects")
    for (bucket, worker), why in sorted(report.skipped.items()):
        print(f"  skipped bucket {bucket} of {worker}: {why}")
    return 0
