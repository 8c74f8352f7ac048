"""A rule in one process stops a PyTorch job in another: ExplodingTensor with the local StopTraining action.

The job's steps take STEP_SECONDS each (stop_trainer.py), as a real job's would; the rule follows
the trial as it is written (invoke_rule on a live trial) and writes the stop request when it fires;
the hook raises TrainingStopRequested at its next forward. Nothing waits on a fixed delay: the test
waits for the processes to end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from smdebug.trials import create_trial

HERE = Path(__file__).resolve().parent
RULE = """
import sys
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import ExplodingTensor
from smdebug.trials import create_trial
trial = create_trial(sys.argv[1], collection_wait_timeout=60)
rule = ExplodingTensor(trial, action_str='{"name": "StopTraining"}', collection_names="weights,losses")
try:
    invoke_rule(rule, raise_eval_cond=True)
    print("no fire")
except RuleEvaluationConditionMet as exc:
    print(exc.step)
"""


def test_exploding_tensor_stops_a_running_job(tmp_path):
    out = tmp_path / "job"
    nan_step = 5
    env_poll = {"SMDEBUG_POLL_INTERVAL": "0.05"}
    import os

    env = {**os.environ, **env_poll}
    trainer = subprocess.Popen(
        [sys.executable, str(HERE / "stop_trainer.py"), str(out), str(nan_step)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    rule = subprocess.Popen(
        [sys.executable, "-c", RULE, str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        t_out, t_err = trainer.communicate(timeout=240)
        r_out, r_err = rule.communicate(timeout=120)
    finally:
        for p in (trainer, rule):
            if p.poll() is None:
                p.kill()
    assert trainer.returncode == 0, t_err[-3000:]
    assert rule.returncode == 0, r_err[-3000:]
    fired_at = int(r_out.strip().splitlines()[-1])
    job = json.loads(t_out.strip().splitlines()[-1])
    # the weights are NaN from the step after the first NaN input (the update with NaN gradients)
    assert fired_at in (nan_step, nan_step + 1)
    assert job["ended"].startswith("stopped: training stopped at the request of rule ExplodingTensor")
    assert f"step {fired_at}" in job["ended"]
    assert job["steps"] <= fired_at + 1 + 3, job  # stopped within 3 saved steps of the firing
    trial = create_trial(str(out))
    assert trial.steps() == list(range(job["steps"] + 1)) or trial.steps() == list(range(job["steps"]))
    assert trial.loaded_all_steps
    w = trial.tensor("Sequential_0.weight")
    for s in trial.steps():
        v = w.value(s)
        assert np.isfinite(v).all() == (s <= nan_step)
