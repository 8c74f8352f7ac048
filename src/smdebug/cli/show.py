"""``smdebug show TRIAL TENSOR``: one tensor at one step - shape, dtype, statistics, or the whole array."""

from __future__ import annotations

import sys

from smdebug.cli import common


def add(sub) -> None:
    p = sub.add_parser("show", help="a tensor's shape, dtype, min/max/mean/std, NaN/Inf counts, or its values")
    common.add_trial_argument(p)
    p.add_argument("tensor", help="tensor name (see `smdebug info`)")
    p.add_argument("--step", type=int, help="step (of --mode); default: the last step the tensor was saved at")
    p.add_argument("--mode", help="train, eval, predict or global (default global)")
    p.add_argument("--worker", help="worker name (default: the first worker that saved it)")
    p.add_argument("--full", action="store_true", help="print the whole array")
    common.add_json_argument(
        p,
        'print strict JSON for scripts: NaN and infinities as the strings "NaN", "Infinity", '
        '"-Infinity"; complex numbers as [real, imag]',
    )
    p.set_defaults(func=run)


def describe(trial, name: str, step=None, mode=None, worker=None) -> dict:
    """Statistics of a tensor at a step (its saved reductions when the raw value was not saved)."""
    import numpy as np

    from smdebug.exceptions import IndexReaderException, TensorUnavailableForStep
    from smdebug.modes import ModeKeys

    mode = mode or ModeKeys.GLOBAL
    t = common.tensor_of(trial, name)
    steps = t.steps(mode=mode)
    if not steps:
        raise common.CliError(f"tensor {name!r} has no {mode.name} steps")
    if step is None:
        step = steps[-1]
    elif step not in steps:
        try:
            trial._check_step_readable(step, mode=mode)  # an unreadable index file is not "not saved"
        except IndexReaderException as exc:
            raise common.CliError(
                f"tensor {name!r} at {mode.name} step {step} cannot be read (an index file is unreadable): {exc}"
            ) from None
        raise common.CliError(f"tensor {name!r} was not saved at {mode.name} step {step} (saved at {_few(steps)})")
    if worker is not None and worker not in t.workers(step, mode=mode):
        raise common.CliError(
            f"worker {worker!r} did not save {name!r} at step {step} (workers: {', '.join(t.workers(step, mode=mode))})"
        )
    out = {"tensor": name, "step": step, "mode": mode.name, "worker": worker}
    saved = t.saved(step, mode=mode, worker=worker)
    out["reductions"] = {
        (f"abs_{op}" if ab else op): float(np.asarray(v).ravel()[0])
        for (op, ab), v in t.reduction_values(step, mode=mode, worker=worker).items()
    }
    if not saved["raw"]:
        out["raw"] = False
        out["shape"] = list(saved["shape"]) if saved["shape"] is not None else None
        return out
    try:
        value = np.asarray(t.value(step, mode=mode, worker=worker))
    except TensorUnavailableForStep as exc:
        raise common.CliError(str(exc)) from None
    out.update(raw=True, shape=list(value.shape), dtype=str(value.dtype), size=int(value.size))
    if value.size and value.dtype.kind in "fciub":
        v = value.astype(np.float64) if value.dtype.kind != "c" else np.abs(value)
        finite = v[np.isfinite(v)]
        out["nan"] = int(np.isnan(v).sum())
        out["inf"] = int(np.isinf(v).sum())
        if finite.size:
            out.update(
                min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()), std=float(finite.std())
            )
        if value.dtype.kind == "c":
            out["statistics_of"] = "magnitude"  # min/max/mean/std/NaN/Inf of |z|
    out["_value"] = value
    return out


def _few(steps) -> str:
    return ", ".join(map(str, steps[:8])) + (", ..." if len(steps) > 8 else "")


def run(args) -> int:
    import numpy as np

    trial = common.open_trial(args.trial)
    info = describe(trial, args.tensor, args.step, common.parse_mode(args.mode), args.worker)
    value = info.pop("_value", None)
    if args.json:
        if args.full and value is not None:
            info["value"] = value.tolist()
        common.emit_json(info)
        return 0
    print(
        f"{info['tensor']}  step {info['step']} ({info['mode']})"
        + (f"  worker {info['worker']}" if info["worker"] else "")
    )
    if info.get("shape") is not None:
        print(f"shape   {tuple(info['shape'])}")
    if info.get("raw"):
        print(f"dtype   {info['dtype']}  ({info['size']} values)")
        if info.get("statistics_of"):
            print(f"(statistics of the {info['statistics_of']} of the complex values)")
        for key in ("min", "max", "mean", "std"):
            if key in info:
                print(f"{key:<7} {info[key]:.6g}")
        if "nan" in info:
            print(f"NaN     {info['nan']}\nInf     {info['inf']}")
    else:
        print("raw     not saved (reductions only)")
    for key, v in info["reductions"].items():
        print(f"saved {key}: {v:.6g}")
    if args.full and value is not None:
        with np.printoptions(threshold=sys.maxsize, linewidth=120, floatmode="unique"):
            print(value)
    return 0
