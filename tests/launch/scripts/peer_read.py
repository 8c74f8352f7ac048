"""Run by smdebug 1.0.34's interpreter: the trial's steps, tensor names and one loss value, as JSON."""

import json
import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"  # 1.0.34 logs to stdout

from smdebug.trials import create_trial  # noqa: E402

trial = create_trial(sys.argv[1])
names = sorted(trial.tensor_names())
print(
    json.dumps(
        {"steps": trial.steps(), "names": names, "loss": float(trial.tensor("loss_output_0").value(trial.steps()[-1]))}
    )
)
