"""``smdebug info TRIAL`` (alias ``inspect``): what a trial holds, as a table or JSON."""

from __future__ import annotations

import sys

from smdebug.cli.common import (
    add_json_argument,
    add_trial_argument,
    check_at_least,
    emit_json,
    needs_extra,
    open_trial,
    progress,
)
from smdebug.modes import ModeKeys


def add(sub) -> None:
    for name in ("info", "inspect"):
        about = "steps per mode, workers, collections, tensors and what was saved"
        p = sub.add_parser(name, help=about if name == "info" else "the same as info")
        add_trial_argument(p)
        add_json_argument(p)
        p.add_argument("--max-steps", type=int, default=12, help="steps to list per series in the table (default 12)")
        p.set_defaults(func=run)


def _short(seq, n: int) -> str:
    seq = list(seq)
    if len(seq) <= n:
        return ", ".join(map(str, seq))
    half = max(n // 2, 1)
    return ", ".join(map(str, seq[:half])) + f", … ({len(seq) - 2 * half} more) …, " + ", ".join(map(str, seq[-half:]))


def _reduction_name(op: str, ab: bool) -> str:
    return f"abs_{op}" if ab else op


def summarize(trial) -> dict:
    """Everything ``info`` shows, as plain data (also the ``--json`` output)."""
    steps = trial.steps()
    # a trial saved without set_mode (the README's tour, XGBoost) lists no mode: its steps are GLOBAL
    modes = trial.modes() or ([ModeKeys.GLOBAL] if steps else [])
    out = {
        "trial": trial.name,
        "path": trial.path,
        "training_ended": bool(trial.loaded_all_steps),
        "steps": steps,
        "mode_steps": {m.name: trial.steps(mode=m) for m in modes},
        "workers": list(trial.workers()),
        "collections": {},
        "tensors": [],
    }
    collections = trial.collections()
    for cname in sorted(collections):
        out["collections"][cname] = trial.tensor_names(collection=cname)
    names = trial.tensor_names()
    for name in progress(names, len(names), "tensors"):
        t = trial.tensor(name)
        tsteps = t.steps()
        row = {"name": name, "steps": tsteps, "modes": {}, "raw": False, "reductions": [], "shape": None}
        for m in modes:
            ms = t.steps(mode=m)
            if ms:
                row["modes"][m.name] = len(ms)
        if tsteps:
            saved = t.saved(tsteps[-1])
            row["raw"] = saved["raw"]
            row["reductions"] = [_reduction_name(op, ab) for op, ab in saved["reductions"]]
            row["shape"] = list(saved["shape"]) if saved["shape"] is not None else None
            if row["shape"] is None and saved["raw"]:
                row["shape"] = list(t.shape(tsteps[-1]))
        out["tensors"].append(row)
    return out


def run(args) -> int:
    check_at_least("--max-steps", args.max_steps, 1)
    if not args.json:
        needs_extra("rich", "cli")  # the tables
    trial = open_trial(args.trial)
    info = summarize(trial)
    if args.json:
        emit_json(info)
        return 0
    _print_tables(info, args.max_steps)
    return 0


def _print_tables(info: dict, n: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=max(Console().width, 120) if not sys.stdout.isatty() else None)
    ended = "yes" if info["training_ended"] else "not yet (no training_job_end.ts)"
    console.print(f"[bold]trial[/] {info['trial']}  ({info['path']})")
    console.print(f"training ended: {ended}")
    console.print(f"workers: {', '.join(info['workers']) or '-'}")
    steps = Table(title="steps", title_justify="left")
    steps.add_column("mode")
    steps.add_column("count", justify="right")
    steps.add_column("steps")
    steps.add_row("GLOBAL", str(len(info["steps"])), _short(info["steps"], n))
    for mode, ms in info["mode_steps"].items():
        if mode != "GLOBAL" or ms != info["steps"]:  # the row above says it (a trial without modes)
            steps.add_row(mode, str(len(ms)), _short(ms, n))
    console.print(steps)
    colls = Table(title="collections", title_justify="left")
    colls.add_column("collection")
    colls.add_column("tensors", justify="right")
    colls.add_column("names")
    for cname, names in info["collections"].items():
        colls.add_row(cname, str(len(names)), _short(names, 4))
    console.print(colls)
    tens = Table(title="tensors", title_justify="left")
    for col in ("tensor", "steps", "modes", "first..last", "raw", "reductions", "shape"):
        tens.add_column(col, justify="right" if col == "steps" else "left")
    for row in info["tensors"]:
        s = row["steps"]
        tens.add_row(
            row["name"],
            str(len(s)),
            " ".join(f"{m}:{c}" for m, c in row["modes"].items()),
            f"{s[0]}..{s[-1]}" if s else "-",
            "yes" if row["raw"] else "no",
            ", ".join(row["reductions"]) or "-",
            "x".join(map(str, row["shape"])) if row["shape"] else ("scalar" if row["shape"] == [] else "-"),
        )
    console.print(tens)
