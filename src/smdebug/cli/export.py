"""``smdebug export TRIAL -o OUT --format parquet|csv``: reductions and scalars as one tidy table.

Columns: ``step, mode, mode_step, worker, tensor, reduction, abs, value, int_value``. A saved
reduction is a row with its name (``abs`` tells abs reductions); a scalar tensor is a row with
reduction ``value``; with ``--raw-max-size N`` tensors of at most N elements are flattened,
element i as reduction ``value[i]``. ``value`` is a float64 (rounded beyond 2**53 for integers);
``int_value`` holds integer and boolean values exactly (int64; empty for floats, and for uint64
values above 2**63 - 1, which are counted on stderr). Tensors whose values are not numbers
(strings, complex) are skipped with one line on stderr naming them. Parquet (pyarrow, the ``export`` extra) is written as a dataset partitioned by mode
(``OUT/mode=TRAIN/part-0.parquet``: hive partitioning that DuckDB, Polars and Spark read directly).
"""

from __future__ import annotations

import os

from smdebug.cli.common import (
    CliError,
    add_output_argument,
    add_trial_argument,
    check_at_least,
    check_regex,
    check_writable,
    needs_extra,
    open_trial,
    parse_mode,
    progress,
    say,
    writing,
)

# the table's columns, in order, with their Parquet types (pyarrow's type functions)
_TYPES = {
    "step": "int64",
    "mode": "string",
    "mode_step": "int64",
    "worker": "string",
    "tensor": "string",
    "reduction": "string",
    "abs": "bool_",
    "value": "float64",
    "int_value": "int64",
}
COLUMNS = tuple(_TYPES)
_INT64 = (-(2**63), 2**63 - 1)


def add(sub) -> None:
    p = sub.add_parser("export", help="reductions and scalars as one tidy table (Parquet or CSV)")
    add_trial_argument(p)
    add_output_argument(p, "output folder (parquet) or file (csv)")
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet", help="default parquet")
    p.add_argument("--tensor", metavar="REGEX", help="only tensors whose name matches REGEX")
    p.add_argument("--mode", help="only this mode (train, eval, predict, global)")
    p.add_argument(
        "--raw-max-size",
        type=int,
        default=1,
        metavar="N",
        help="flatten raw tensors of at most N elements (default 1: scalars only)",
    )
    p.set_defaults(func=run)


class _Cells:
    """``value`` and ``int_value`` of one number; counts the integers int64 cannot hold."""

    def __init__(self):
        self.too_large = 0

    def __call__(self, x) -> list:
        import numpy as np

        x = np.asarray(x).ravel()[0]
        if x.dtype.kind not in "iub":
            return [float(x), None]
        i = int(x)
        if not _INT64[0] <= i <= _INT64[1]:
            self.too_large += 1
            return [float(x), None]
        return [float(x), i]


def rows(trial, regex=None, mode=None, raw_max_size=1, speak=say):
    """Yield the table's rows as tuples in COLUMNS order; ``speak`` gets one line per skipped tensor."""
    import numpy as np

    from smdebug.cli.series import not_numeric

    cells, skipped = _Cells(), set()
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
                            yield (g, m.name, ms, w, name, op, bool(ab), *cells(v))
                    if saved["raw"]:
                        shape = saved["shape"]
                        if shape is not None and int(np.prod(shape)) > raw_max_size:
                            continue
                        v = np.asarray(t.value(ms, mode=m, worker=w))
                        if v.size > raw_max_size:
                            continue
                        why = not_numeric(v)
                        if why:
                            if name not in skipped:
                                skipped.add(name)
                                speak(f"skipped {name}: {why}")
                            continue
                        flat = v.ravel()
                        if v.ndim == 0 or (v.size == 1 and raw_max_size == 1):
                            yield (g, m.name, ms, w, name, "value", False, *cells(flat[0]))
                        else:
                            for i, x in enumerate(flat):
                                yield (g, m.name, ms, w, name, f"value[{i}]", False, *cells(x))
    if cells.too_large:
        speak(f"{cells.too_large} uint64 values above 2**63 - 1 have an empty int_value (value is rounded)")


def to_columns(row_iter) -> dict:
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for r in row_iter:
        for c, v in zip(COLUMNS, r):
            cols[c].append(v)
    return cols


def run(args) -> int:
    check_regex(args.tensor or None, "--tensor")
    check_at_least("--raw-max-size", args.raw_max_size, 0)
    out = args.output
    if not out or not out.strip():
        raise CliError("-o: the output path is empty")
    parent = os.path.dirname(os.path.abspath(out)) or "."
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise CliError(f"-o {out}: cannot write there ({parent} is missing or not writable)")
    if args.format == "csv":
        check_writable(out)
    else:
        if os.path.exists(out) and not os.path.isdir(out):
            raise CliError(f"-o {out}: is a file; Parquet output is a folder (or use --format csv)")
        if os.path.isdir(out) and os.listdir(out):
            raise CliError(f"-o {out}: folder exists and is not empty")
        needs_extra("pyarrow", "export")
    mode = parse_mode(args.mode)
    trial = open_trial(args.trial)
    cols = to_columns(
        rows(trial, args.tensor, mode, args.raw_max_size, speak=lambda line: say(f"smdebug export: {line}"))
    )
    n = len(cols["step"])
    with writing(out):
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
        raise CliError("Parquet needs pyarrow: pip install 'smdebug-open[export]' (or use --format csv)") from None
    schema = pa.schema([(c, getattr(pa, t)()) for c, t in _TYPES.items()])
    table = pa.table({c: cols[c] for c in COLUMNS}, schema=schema)
    if table.num_rows == 0:  # write_dataset writes no file at all: the folder would be missing
        import pyarrow.parquet as pq

        os.makedirs(path, exist_ok=True)
        pq.write_table(table, os.path.join(path, "part-0.parquet"))  # the columns, no row
        return
    ds.write_dataset(
        table,
        path,
        format="parquet",
        partitioning=["mode"],
        partitioning_flavor="hive",
        existing_data_behavior="overwrite_or_ignore",
        basename_template="part-{i}.parquet",
    )
