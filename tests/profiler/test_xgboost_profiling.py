"""XGBoost: one step per boosting round on the profiler's timeline, configured by SageMaker's JSON file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

xgb = pytest.importorskip("xgboost")
pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "xgboost"))

import xgbutil  # noqa: E402
from timelines import read_events, steps_of  # noqa: E402

import smdebug.xgboost as smd  # noqa: E402
from smdtest import run_json  # noqa: E402

PEER_READ = Path(__file__).with_name("peer_read.py")


def test_rounds_are_steps_with_python_stats_for_the_configured_ones(tmp_path, monkeypatch, peer):
    root = tmp_path / "prof"
    cfg = tmp_path / "profilerconfig.json"
    cfg.write_text(
        json.dumps(
            {
                "ProfilingIntervalInMilliseconds": 100,
                "ProfilingParameters": {
                    "LocalPath": str(root),
                    "PythonProfilingConfig": '{"StartStep": 2, "NumSteps": 2, }',
                },
            }
        )
    )
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(cfg))
    t = xgbutil.task("binary")
    hook = smd.Hook(out_dir=str(tmp_path / "run"))
    xgb.train(t.params, t.train, num_boost_round=8, evals=[(t.train, "train")], callbacks=[hook], verbose_eval=False)
    events = read_events(root)
    steps = steps_of(events, "Step:ModeKeys.GLOBAL")
    assert sorted(steps) == list(range(8)) and len(events) == 8
    ordered = [steps[s] for s in range(8)]
    assert all(a["end"] <= b["start"] for a, b in zip(ordered, ordered[1:]))
    stats = sorted(Path(root, "framework", "xgboost", "cprofile").glob("*/*/python_stats"))
    assert [p.parent.name.split("-")[:3] for p in stats] == [["global", "2", "stepstart"], ["global", "3", "stepstart"]]
    for p in stats:  # the profile covers its round
        start_us, end_us = (float(part.rsplit("-", 1)[1]) for part in p.parent.name.split("_"))
        step = steps[int(p.parent.name.split("-")[1])]
        assert step["start"] - 1000 <= start_us and end_us <= step["end"] + 1000
    theirs = run_json(peer, PEER_READ, root, "framework")["events"]
    assert sorted(int(e[6]["step_num"]) for e in theirs) == list(range(8))
    assert (root / "framework" / "training_job_end.ts").exists()
