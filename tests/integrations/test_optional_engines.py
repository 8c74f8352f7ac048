"""The engines are optional extras: importing smdebug (its core, trials, rules, the framework
hooks and smdebug.integrations itself) imports none of transformers, lightning or dask."""

from __future__ import annotations

import json
import subprocess
import sys

ENGINES = ("transformers", "lightning", "pytorch_lightning", "dask", "distributed", "accelerate")


def test_smdebug_imports_no_engine():
    code = ("import sys, json\n"
            "import smdebug, smdebug.trials, smdebug.rules, smdebug.core.hook, smdebug.pytorch, smdebug.xgboost\n"
            "import smdebug.integrations, smdebug.pytorch.sharded\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {ENGINES!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
