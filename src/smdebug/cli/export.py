"""``smdebug export TRIAL -o OUT --format parquet|csv``: reductions and scalars as one tidy table.

Columns: ``step, mode, mode_step, worker, tensor, reduction, abs, value``. A saved reduction is a
row with its name (``abs`` tells abs reductions); a scalar tensor is a row with reduction ``value``;
with ``--raw-max-size N`` tensors of at most N elements are flattened, element i as reduction
``value[i]``. Parquet (pyarrow, the ``export`` extra) is written as a dataset partitioned by mode
(``OUT/mode=TRAIN/part-0.parquet``: hive partitioning that DuckDB, Polars and Spark read directly).
"""

from __future__ import annotations

import os

from smdebug.cli.common import CliError, add_trial_argument, open_trial, parse_mode, progress

COLUMNS = ("step", "mode", "mode_step", "worker", "tensor", "reduction", "abs", "value")


def add(sub) -> None:
    p = sub.add_parser("export", help="reductions and scalars as one tidy table (Parquet or CSV)")
    add_trial_argument(p)
    p.add_argument("-o", "--output", required=True, help="output folder (parquet) or file (csv)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="default parquet")
    p.add_argument("--tensor", metavar="REGEX", help="only tensors whose name matches REGEX")
    p.add_argument("--mode", help="only this mode (train, eval, predict, global)")
    p.add_argument("--raw-max-size", type=int, default=1, metavar="N",
                   help="flatten raw tensors of at most N elements (default 1: scalars only)")
    p.set_defaults(func=run)


def rows(trial, regex=None, mode=None, raw_max_size=1):
    """Yield the table's rows as tuples in COLUMNS order."""
    import numpy as np

    names = trial.tensor_names(regex=regex) if regex else trial.tensor_names()
    modes = [mode] if mode is not None else (trial.modes() or [parse_mode("global")])
    for name in progress(names, len(names), "tensors"):
        t = trial.tensor(name)
        for m in modes:
            for ms in t.steps(mode=m):
                g = trial.global_step(m, ms) if m.name != "GLOBAL" else ms
                for w in t.workers(ms, mode=m):
                    saved = t.saved(ms, mode=m, worker=w)
                    if saved["reductions"]:
                        for (op, ab), v in t.reduction_values(ms, mode=m, worker=w).items():
                            yield (g, m.name, ms, w, name, op, bool(ab), float(np.asarray(v).ravel()[0]))
                    if saved["raw"]:
                        shape = saved["shape"]
                        if shape is not None and int(np.prod(shape)) > raw_max_size:
                            continue
                        v = np.asarray(t.value(ms, mode=m, worker=w))
                        if v.size > raw_max_size or v.dtype.kind not in "fiub":
                            continue
                        flat = v.astype(np.float64).ravel()
                        if v.ndim == 0 or (v.size == 1 and raw_max_size == 1):
                            yield (g, m.name, ms, w, name, "value", False, float(flat[0]))
                        else:
                            for i, x in enumerate(flat):
                                yield (g, m.name, ms, w, name, f"value[{i}]", False, float(x))


def to_columns(row_iter) -> dict:
    cols = {c: [] for c in COLUMNS}
    for r in row_iter:
        for c, v in zip(COLUMNS, r):
            cols[c].append(v)
    return cols


def run(args) -> int:
    from smdebug.patterns import PatternError, compile

    if args.tensor:
        try:
            compile(args.tensor, arg="--tensor")
        except PatternError as exc:
            raise CliError(str(exc)) from None
    out = args.output
    parent = os.path.dirname(os.path.abspath(out)) or "."
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise CliError(f"-o {out}: cannot write there ({parent} is missing or not writable)")
    if args.format == "parquet" and os.path.isdir(out) and os.listdir(out):
        raise CliError(f"-o {out}: folder exists and is not empty")
    trial = open_trial(args.trial)
    cols = to_columns(rows(trial, args.tensor, parse_mode(args.mode), args.raw_max_size))
    n = len(cols["step"])
    if args.format == "csv":
        _write_csv(out, cols)
    else:
        _write_parquet(out, cols)
    print(f"wrote {out}: {n} rows ({args.format})")
    return 0


def _write_csv(path: str, cols: dict) -> None:
    import csv

    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerows(zip(*(cols[c] for c in COLUMNS)))


def _write_parquet(path: str, cols: dict) -> None:
    try:
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:
        raise CliError("Parquet needs pyarrow: pip install 'smdebug[export]' (or use --format csv)") from None
    schema = pa.schema([
        ("step", pa.int64()), ("mode", pa.string()), ("mode_step", pa.int64()), ("worker", pa.string()),
        ("tensor", pa.string()), ("reduction", pa.string()), ("abs", pa.bool_()), ("value", pa.float64()),
    ])
    table = pa.table({c: cols[c] for c in COLUMNS}, schema=schema)
    ds.write_dataset(
        table, path, format="parquet", partitioning=["mode"], partitioning_flavor="hive",
        existing_data_behavior="overwrite_or_ignore", basename_template="part-{i}.parquet",
    )
