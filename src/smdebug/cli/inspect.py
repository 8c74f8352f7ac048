"""``smdebug inspect PATH``: what a trial holds."""

from __future__ import annotations

import numpy as np

from smdebug.core.modes import ModeKeys


def add_inspect(sub) -> None:
    p = sub.add_parser("inspect", help="print the steps, modes, workers, collections and tensors of a trial")
    p.add_argument("path", help="trial folder or s3://bucket/prefix")
    p.add_argument("--max-steps", type=int, default=20, help="steps to print per series (default 20)")
    p.set_defaults(func=run_inspect)


def _short(seq, n: int) -> str:
    seq = list(seq)
    if len(seq) <= n:
        return ", ".join(map(str, seq))
    return ", ".join(map(str, seq[: n // 2])) + f", ... ({len(seq) - n} more) ..., " + ", ".join(
        map(str, seq[-(n // 2) :])
    )


def _scalar(v) -> float:
    return float(np.asarray(v, dtype=np.float64).ravel()[0])


def run_inspect(args) -> int:
    from smdebug.trials import create_trial

    tr = create_trial(args.path)
    steps = tr.steps()
    print(f"trial      {tr.name}  ({tr.path})")
    print(f"ended      {'yes' if tr.loaded_all_steps else 'not yet (training_job_end.ts absent)'}")
    print(f"steps      {len(steps)}: {_short(steps, args.max_steps)}")
    for m in tr.modes():
        ms = tr.steps(mode=m)
        print(f"  {m.name:<8} {len(ms)} mode steps: {_short(ms, args.max_steps)}")
    print(f"workers    {', '.join(tr.workers())} (num_workers={tr.num_workers})")
    print("collections")
    for name in sorted(tr.collections()):
        names = tr.tensor_names(collection=name)
        print(f"  {name:<20} {len(names)} saved tensor(s)")
    names = tr.tensor_names()
    print(f"tensors    {len(names)}")
    for n in names:
        t = tr.tensor(n)
        ts = t.steps()
        last = ts[-1] if ts else None
        extra = ""
        if last is not None:
            reds = t.reduction_values(last)
            if reds:
                extra = "  reductions: " + ", ".join(
                    f"{'abs_' if ab else ''}{op}" for op, ab in sorted(reds)
                )
            try:
                extra = f"  shape {tuple(t.shape(last))}" + extra
            except Exception:  # noqa: BLE001 - reductions only: no shape to show
                pass
        print(f"  {n:<40} {len(ts)} steps{extra}")
    losses = tr.tensor_names(collection="losses") if "losses" in tr.collections() else []
    losses = losses or tr.tensor_names(regex="[Ll]oss")
    for n in losses:
        t = tr.tensor(n)
        print(f"loss {n}")
        for m in tr.modes() or [ModeKeys.GLOBAL]:
            vals = t.values(mode=m)
            if vals:
                shown = _short([f"{s}:{_scalar(v):.4f}" for s, v in vals.items()], args.max_steps)
                print(f"  {m.name:<8} {shown}")
    return 0
