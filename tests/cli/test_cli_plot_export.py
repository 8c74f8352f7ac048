"""`smdebug plot` and `smdebug export`: the plotted and exported data equal the Trial API's."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

from smdebug import modes
from smdebug.cli import main
from smdebug.cli.plot import collect
from smdebug.trials import create_trial
from smdtest import FIXTURES


def scalar(v) -> float:
    return float(np.asarray(v).ravel()[0])


def test_plot_losses_by_default_one_line_per_mode(tmp_path, capsys, digits_trial):
    out = tmp_path / "loss.png"
    assert main(["plot", digits_trial, "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tr = create_trial(digits_trial)
    series = collect(tr)
    assert [s.label for s in series] == ["CrossEntropyLoss_output_0 (TRAIN)", "CrossEntropyLoss_output_0 (EVAL)"]
    t = tr.tensor("CrossEntropyLoss_output_0")
    train = series[0]
    assert train.mode_steps == list(range(12))
    assert train.values == [float(t.value(s, mode=modes.TRAIN)) for s in range(12)]
    assert series[1].steps == [tr.global_step(modes.EVAL, s) for s in range(3)]


def test_plot_reduction_of_matching_tensors_in_one_mode(tmp_path, digits_trial):
    out = tmp_path / "g.svg"
    assert (
        main(
            [
                "plot",
                digits_trial,
                "--tensor",
                "^gradient/.*weight",
                "--reduction",
                "l2",
                "--mode",
                "train",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    tr = create_trial(digits_trial)
    series = collect(tr, "^gradient/.*weight", "l2", False, modes.TRAIN)
    assert [s.tensor for s in series] == ["gradient/Sequential_0.weight", "gradient/Sequential_2.weight"]
    g = tr.tensor("gradient/Sequential_2.weight")
    assert series[1].values == pytest.approx(
        [float(np.linalg.norm(g.value(s, mode=modes.TRAIN).astype(np.float64))) for s in range(12)], rel=1e-5
    )


def test_plot_abs_mean_from_saved_reductions_only(tmp_path):
    tr = create_trial(str(FIXTURES / "reductions_only"))
    series = collect(tr, "^grad/x$", "mean", True, None)
    t = tr.tensor("grad/x")
    assert series[0].values == [scalar(t.reduction_value(s, "mean", abs=True)) for s in t.steps()]


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--tensor", "nothing_matches_this"], "no tensor matches"),
        (["--tensor", "(unclosed"], "not a valid regular expression"),
        (["-o", "/nonexistent-dir/x.png"], "does not exist"),
        (["-o", "{tmp}/x.gif"], ".png, .svg or .pdf"),
    ],
)
def test_plot_bad_input(tmp_path, digits_trial, extra, needle):
    extra = [e.format(tmp=tmp_path) for e in extra]
    if "-o" not in extra:
        extra += ["-o", str(tmp_path / "x.png")]
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "plot", digits_trial, *extra], capture_output=True, text=True
    )
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def _expected_rows(trial_path):
    """Every (step, mode, mode_step, worker, tensor, reduction, abs) -> value, through the Trial API."""
    tr = create_trial(trial_path)
    want = {}
    for name in tr.tensor_names():
        t = tr.tensor(name)
        for m in tr.modes():
            for ms in t.steps(mode=m):
                for w in t.workers(ms, mode=m):
                    g = tr.global_step(m, ms)
                    for (op, ab), v in t.reduction_values(ms, mode=m, worker=w).items():
                        want[(g, m.name, ms, w, name, op, ab)] = scalar(v)
                    try:
                        v = t.value(ms, mode=m, worker=w)
                    except Exception:  # noqa: BLE001 - reductions only
                        continue
                    if v.size == 1:
                        want[(g, m.name, ms, w, name, "value", False)] = float(v.ravel()[0])
    return want


def test_export_parquet_reads_back_in_duckdb_and_pyarrow(tmp_path, capsys):
    duckdb = pytest.importorskip("duckdb")
    import pyarrow.dataset as ds

    src = str(FIXTURES / "multi_worker_modes")
    out = tmp_path / "table"
    assert main(["export", src, "-o", str(out)]) == 0
    want = _expected_rows(src)
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(want)
    types = {f.name: str(f.type) for f in table.schema}
    assert types["step"] == "int64" and types["value"] == "double" and types["abs"] == "bool"
    assert types["worker"] == "string" and types["tensor"] == "string"
    rows = table.to_pylist()
    got = {
        (r["step"], r["mode"], r["mode_step"], r["worker"], r["tensor"], r["reduction"], r["abs"]): r["value"]
        for r in rows
    }
    assert got == want
    con = duckdb.connect()
    n, workers = con.execute(
        f"select count(*), count(distinct worker) from read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
    ).fetchone()
    assert n == len(want) and workers == len(create_trial(src).workers())
    modes_seen = {
        m
        for (m,) in con.execute(
            f"select distinct mode from read_parquet('{out}/**/*.parquet', hive_partitioning=true)"
        ).fetchall()
    }
    assert modes_seen == {m.name for m in create_trial(src).modes()}


def test_export_csv_with_small_raw_tensors_flattened(tmp_path, digits_trial):
    out = tmp_path / "t.csv"
    assert (
        main(
            [
                "export",
                digits_trial,
                "-o",
                str(out),
                "--format",
                "csv",
                "--tensor",
                "^Sequential_2.bias$",
                "--raw-max-size",
                "10",
                "--mode",
                "train",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(out.open()))
    t = create_trial(digits_trial).tensor("Sequential_2.bias")
    flat = [r for r in rows if r["reduction"].startswith("value[")]
    assert len(flat) == 12 * 10
    at3 = {int(r["reduction"][6:-1]): float(r["value"]) for r in flat if r["mode_step"] == "3"}
    assert np.allclose([at3[i] for i in range(10)], t.value(3, mode=modes.TRAIN), rtol=0, atol=1e-7)
    l2 = [r for r in rows if r["reduction"] == "l2" and r["mode_step"] == "3"]
    assert float(l2[0]["value"]) == pytest.approx(scalar(t.reduction_value(3, "l2", mode=modes.TRAIN)))


def test_export_bad_output(tmp_path, digits_trial):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "export", digits_trial, "-o", "/nonexistent-dir/t"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "cannot write there" in proc.stderr and "Traceback" not in proc.stderr


def test_export_parquet_of_nothing_writes_the_columns_and_no_row(tmp_path, capsys):
    # pyarrow's write_dataset writes no file for an empty table: "wrote OUT: 0 rows" with no OUT
    pytest.importorskip("pyarrow")
    import pyarrow.dataset as ds

    out = tmp_path / "table"
    assert main(["export", str(FIXTURES / "multi_worker_modes"), "-o", str(out), "--tensor", "^no such tensor$"]) == 0
    assert "0 rows" in capsys.readouterr().out
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 0 and "int_value" in table.schema.names and "step" in table.schema.names
