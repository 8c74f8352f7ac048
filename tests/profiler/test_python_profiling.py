"""Python profiling of the configured steps only, in 1.0.34's stats layout, read by 1.0.34's analysis."""

from __future__ import annotations

from pathlib import Path

import pytest

from smdebug.profiler import Profiler, ProfilerConfig
from smdtest import run_json

PEER_READ = Path(__file__).with_name("peer_read.py")


def work(n: int) -> int:
    return sum(i * i for i in range(n))


def _run(root, python, steps=5, n=2000, **kw):
    cfg = ProfilerConfig(local_path=str(root), python=python, system_metrics=False, **kw)
    running = []
    with Profiler(cfg, framework="pytorch") as p:
        for s in range(steps):
            p.step_start("train", s)
            work(n)
            p.phase_boundary("forwardpassend")  # PyTorch's forward hook of the model
            work(n // 2)
            running.append(p.python.running)
    return running


def _dirs(root, profiler="cprofile"):
    return sorted(
        (p.name for p in Path(root, "framework", "pytorch", profiler).glob("*/*")),
        key=lambda n: float(n.split("_")[0].rsplit("-", 1)[1]),
    )


def test_cprofile_covers_the_configured_steps_only_and_1034_reads_it(tmp_path, peer):
    running = _run(tmp_path, {"StartStep": 2, "NumSteps": 2, "ProfilerName": "cprofile"})
    assert running == [False, False, True, True, False]
    names = [[part.rsplit("-", 1)[0] for part in n.split("_")] for n in _dirs(tmp_path)]
    assert names == [
        ["train-2-stepstart", "train-2-forwardpassend"],
        ["train-2-forwardpassend", "train-2-stepend"],
        ["train-3-stepstart", "train-3-forwardpassend"],
        ["train-3-forwardpassend", "train-3-stepend"],
    ]
    out = run_json(peer, PEER_READ, tmp_path, "python", "pytorch", 2, 3)
    assert sorted(out["listed"]) == sorted(
        ["train", s, a, "train", s, b]
        for s in ("2", "3")
        for a, b in (("stepstart", "forwardpassend"), ("forwardpassend", "stepend"))
    )
    assert any(f.endswith("(work)") for f in out["functions"])
    assert not any(f.endswith(("(_write)", "(complete)")) for f in out["functions"])  # nor the profiler writing


def test_time_range(tmp_path):
    assert _run(tmp_path / "a", {"StartTimeInSecSinceEpoch": 1, "DurationInSeconds": 1e10}, steps=3) == [True] * 3
    assert _run(tmp_path / "b", {"StartTimeInSecSinceEpoch": 4e9, "DurationInSeconds": 10}, steps=3) == [False] * 3
    assert not Path(tmp_path / "b" / "framework" / "pytorch").exists()


@pytest.mark.parametrize("timer", ["total_time", "cpu_time", "off_cpu_time", "default"])
def test_cprofile_timers(tmp_path, timer):
    _run(tmp_path, {"StartStep": 1, "NumSteps": 1, "cProfileTimer": timer}, steps=2)
    import pstats

    (first, *_) = sorted(Path(tmp_path).rglob("python_stats"))
    assert any(k[2] == "work" for k in pstats.Stats(str(first)).stats)


def test_pyinstrument(tmp_path, peer):
    pytest.importorskip("pyinstrument")
    _run(tmp_path, {"StartStep": 1, "NumSteps": 1, "ProfilerName": "pyinstrument"}, steps=3, n=300_000)
    dirs = _dirs(tmp_path, "pyinstrument")
    assert len(dirs) == 2
    for d in Path(tmp_path, "framework", "pytorch", "pyinstrument").glob("*/*"):
        assert sorted(p.name for p in d.iterdir()) == ["python_stats.html", "python_stats.json"]
    out = run_json(peer, PEER_READ, tmp_path, "python", "pytorch", 1, 1, "pyinstrument")
    assert len(out["listed"]) == 4  # 1.0.34 lists the .json and the .html of each interval
    assert "work" in out["functions"]


def test_pyinstrument_missing_is_a_clear_error(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyinstrument", None)
    with pytest.raises(
        ImportError, match=r"'pyinstrument' is needed for PythonProfilingConfig.*smdebug-open\[profiler\]"
    ):
        Profiler(
            ProfilerConfig(local_path=str(tmp_path), python={"ProfilerName": "pyinstrument"}, system_metrics=False)
        )
