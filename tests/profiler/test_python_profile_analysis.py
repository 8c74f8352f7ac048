"""1.0.34's Python-profile analysis API (cProfileAnalysis, PyinstrumentAnalysis, python_profile_utils)
on stats written by 1.0.34's profiler (in its interpreter, by the test) and by ours, read by both
implementations with the same query script: the same rows, steps, phases, node ids and functions."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smdtest import run_json

HERE = Path(__file__).parent
WRITE_1034 = HERE / "peer_python_profile.py"
QUERIES = HERE / "python_profile_queries.py"


@pytest.fixture(scope="module")
def stats_1034(peer, tmp_path_factory):
    """1.0.34's cProfile and pyinstrument folders (written in its interpreter) and their node id."""
    root = tmp_path_factory.mktemp("stats1034")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    node = (
        subprocess.run([peer, str(WRITE_1034), str(root)], capture_output=True, text=True, check=True, env=env)
        .stdout.strip()
        .splitlines()[-1]
    )
    return {p: root / "framework" / "pytorch" / p for p in ("cprofile", "pyinstrument")}, node


def _ours_stats(root, profiler):
    from smdebug.profiler import Profiler, ProfilerConfig

    def work(n):
        return sum(i * i for i in range(n))

    cfg = ProfilerConfig(
        local_path=str(root), python={"StartStep": 2, "NumSteps": 2, "ProfilerName": profiler}, system_metrics=False
    )
    with Profiler(cfg, framework="pytorch") as p:
        for s in range(6):
            p.step_start("train", s)
            work(300_000 if profiler == "pyinstrument" else 20_000)
            p.phase_boundary("forwardpassend")
            work(1000)
    return root / "framework" / "pytorch" / profiler


def test_1034_and_our_stats_read_by_both(tmp_path, peer, stats_1034):
    """One run of each implementation over four folders: 1.0.34's cProfile and pyinstrument stats, ours."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyinstrument")
    folders, node = stats_1034
    specs = [
        folders["cprofile"],
        folders["pyinstrument"],
        _ours_stats(tmp_path / "c", "cprofile"),
        _ours_stats(tmp_path / "p", "pyinstrument"),
    ]
    ours, theirs = run_json(sys.executable, QUERIES, *specs), run_json(peer, QUERIES, *specs)
    for profiler, mine, its in zip(("cprofile", "pyinstrument"), ours[:2], theirs[:2]):
        _same_on_1034_stats(profiler, node, mine, its)
    for profiler, mine, its in zip(("cprofile", "pyinstrument"), ours[2:], theirs[2:]):
        _same_on_our_stats(profiler, mine, its)


def _same_on_1034_stats(profiler, node, ours, theirs):
    differ = {"by_job_phase"}  # 1.0.34 files the post-close interval under "initialization"
    for key in theirs:
        if key not in differ:
            assert ours[key] == theirs[key], key
    assert ours["node_ids"] == [node]
    rows = ours["listed"]["rows"]
    per_interval = 2 if profiler == "pyinstrument" else 1  # pyinstrument's .json and .html: two rows
    assert len(rows) == 6 * per_interval
    c = {name: i for i, name in enumerate(ours["listed"]["columns"])}
    assert sorted(
        {
            (
                r[c["start_mode"]],
                r[c["start_step"]],
                r[c["start_phase"]],
                r[c["end_mode"]],
                r[c["end_step"]],
                r[c["end_phase"]],
            )
            for r in rows
        }
    ) == sorted(
        [
            ("prestepzero", -1, "start", "train", 0, "stepstart"),
            ("prestepzero", -1, "end", "posthookclose", "inf", "end"),
            ("train", 2, "stepstart", "train", 2, "forwardpassend"),
            ("train", 2, "forwardpassend", "train", 3, "stepstart"),
            ("train", 3, "stepstart", "train", 3, "forwardpassend"),
            ("train", 3, "forwardpassend", "train", 4, "stepstart"),
        ]
    )
    assert ours["by_step_9"] is None and ours["pre_step_zero"] is not None and ours["post_hook_close"] is not None
    if profiler == "cprofile":
        # steps 2..3 with 1.0.34's test: the interval ending at step 4's start is out
        # (forward runs twice, its generator 2 x 20001 times; backward once)
        got = {k.split("(")[1]: v for k, v in ours["by_step_2_3"]["ours"].items() if "genexpr" not in k}
        assert got == {"forward)": [2, 2], "backward)": [1, 1]}
        assert sorted(v for k, v in ours["by_step_2_3"]["ours"].items() if "genexpr" in k) == [[20001] * 2, [40002] * 2]
        assert ours["by_training_phase"] == [[1, 1], [5, 1], [5, 6]]
        # ours: before step 0 is initialization, after the hook closed finalization (1.0.34: the
        # post-close stats overwrite "initialization" and there is no "finalization")
        assert set(ours["by_job_phase"]) == {"initialization", "training_loop", "finalization"}
        assert set(theirs["by_job_phase"]) == {"initialization", "training_loop"}
        assert ours["by_job_phase"]["initialization"] == ours["pre_step_zero"]
        assert (
            ours["by_job_phase"]["finalization"] == ours["post_hook_close"] == theirs["by_job_phase"]["initialization"]
        )
        assert ours["by_job_phase"]["training_loop"] == theirs["by_job_phase"]["training_loop"]
    else:
        assert ours["by_step_3"]["intervals"] == 1 and ours["by_step_3"]["html"] == ["python_stats.html"]
        assert "forward" in ours["by_step_2_3"]["functions"]


def _same_on_our_stats(profiler, ours, theirs):
    assert ours == theirs
    per_interval = 2 if profiler == "pyinstrument" else 1
    assert len(ours["listed"]["rows"]) == 4 * per_interval
    # ours profiles the configured steps only: nothing before step 0 or after close
    assert ours["pre_step_zero"] is None and ours["post_hook_close"] is None
    assert ours["by_step_2_3"] is not None and ours["by_step_9"] is None


def test_s3_stats_read_as_local(tmp_path, stats_1034, bucket, boto_client):
    """``cProfileAnalysis(local_profile_dir, s3_path=<profiler root>)`` downloads 1.0.34's stats and
    our stats and answers as on the local folders."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyinstrument")
    folders, _ = stats_1034
    ours = _ours_stats(tmp_path / "ours", "cprofile")
    specs, local = [], []
    for name, folder in (("a", folders["cprofile"]), ("b", folders["pyinstrument"]), ("c", ours)):
        root = folder.parents[2]
        for f in folder.rglob("*"):
            if f.is_file():
                boto_client.put_object(Bucket=bucket, Key=f"{name}/{f.relative_to(root)}", Body=f.read_bytes())
        boto_client.put_object(Bucket=bucket, Key=f"{name}/framework/pevents/x/1_n_pythontimeline.json", Body=b"[]")
        (tmp_path / f"dl{name}").mkdir()
        specs.append(f"{folder},s3://{bucket}/{name},{tmp_path / f'dl{name}'}")
        local.append(folder)
    remote = run_json(sys.executable, QUERIES, *specs)
    assert remote == run_json(sys.executable, QUERIES, *local)
    assert len(list((tmp_path / "dla" / "python_stats").rglob("python_stats"))) == 6


def test_api_shapes_and_wrong_input(tmp_path):
    pd = pytest.importorskip("pandas")
    from smdebug.profiler.analysis.python_profile_analysis import cProfileAnalysis
    from smdebug.profiler.analysis.utils.python_profile_analysis_utils import FUNCTION_STATS_COLUMNS, Metrics
    from smdebug.profiler.python_profile_utils import PythonProfileModes, StepPhase, python_profile_mode_to_str

    assert python_profile_mode_to_str(PythonProfileModes.PRE_STEP_ZERO) == "prestepzero"
    assert StepPhase("forwardpassend") is StepPhase.FORWARD_PASS_END
    folder = _ours_stats(tmp_path / "a", "cprofile")
    a = cProfileAnalysis(local_profile_dir=str(folder))
    stats = a.fetch_profile_stats_by_step(2, 3)
    df = stats.get_function_stats()
    assert list(df.columns) == FUNCTION_STATS_COLUMNS and len(df) == len(stats.function_stats_list) > 0
    assert df["# of total calls"].dtype.kind == "i"
    stats.print_top_n_functions(Metrics.CUMULATIVE_TIME, 3)
    with pytest.raises(TypeError, match="Metrics"):
        stats.print_top_n_functions("cumtime")
    with pytest.raises(ValueError, match="local_profile_dir.*no folder"):
        cProfileAnalysis(local_profile_dir=str(tmp_path / "missing"))
    bad = folder / "n" / "not-a-stats-folder"
    bad.mkdir(parents=True)
    (bad / "python_stats").write_bytes(b"")
    with pytest.raises(ValueError, match="not-a-stats-folder"):
        a.list_profile_stats()
    shutil.rmtree(folder.parent.parent)
    empty = tmp_path / "e" / "framework" / "pytorch" / "cprofile"
    empty.mkdir(parents=True)
    assert cProfileAnalysis(local_profile_dir=str(empty)).list_profile_stats().equals(pd.DataFrame())
