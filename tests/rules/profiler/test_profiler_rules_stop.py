"""A profiler rule following a running PyTorch job stops it: StepOutlier sees the stalled step
as the job writes its profile, fires, and its StopTraining action ends training at the next step."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("torch")
pytest.importorskip("psutil")

from prof_runs import train  # noqa: E402

from smdebug.core.stop_request import read_stop_request  # noqa: E402
from smdebug.profiler.trial import ProfilerTrial  # noqa: E402
from smdebug.rules import invoke_rule  # noqa: E402
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class  # noqa: E402
from smdebug.storage.local import LocalStore  # noqa: E402

STALL_STEP = 105


def test_step_outlier_stops_the_job_it_follows(tmp_path):
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    trial = ProfilerTrial(str(out_dir))  # the job has not started: the rule waits for its data
    rule = get_rule_class("StepOutlier")(
        trial,
        n_outliers="0",
        min_ratio="30",
        scan_interval_us="1000000",
        action_str='{"name": "StopTraining"}',
        stop_out_dir=str(out_dir),
    )
    rule.poll_s = 0.2
    done = {}

    def follow():
        done["run"] = invoke_rule(rule)

    watcher = threading.Thread(target=follow, daemon=True)
    watcher.start()
    run = train(
        tmp_path, stall_step=STALL_STEP, stall_s=4.0, step_s=0.03, same_dir=True, rotate_s=0.3, until_stopped_s=60
    )
    watcher.join(timeout=120)
    assert not watcher.is_alive(), "the rule did not end with the job"
    assert run.stalled, f"training was not stopped ({run.steps} steps)"
    req = read_stop_request(LocalStore(str(out_dir)))
    assert req.rule == "StepOutlier" and "slowest step 105" in req.reason
    assert done["run"].fired and done["run"].ended in ("no_more_data", "end_step")
    details = rule.report["Details"]["step_details"]
    (node,) = details.values()
    assert STALL_STEP in node["step_numbers"]
    assert run.steps > STALL_STEP
