"""The engines are optional extras: importing smdebug (its core, trials, rules, the framework
hooks and smdebug.integrations itself) imports none of transformers, lightning or dask."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

ENGINES = ("transformers", "lightning", "pytorch_lightning", "dask", "distributed", "accelerate")


def test_smdebug_imports_no_engine():
    code = (
        "import sys, json\n"
        "import smdebug, smdebug.trials, smdebug.rules, smdebug.core.hook, smdebug.pytorch, smdebug.xgboost\n"
        "import smdebug.integrations, smdebug.pytorch.sharded\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {ENGINES!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("extra, engine", [("huggingface", "transformers"), ("lightning", "lightning")])
def test_a_callback_without_its_trainer_names_the_extra_to_install(monkeypatch, extra, engine):
    """The trainer made missing (None in sys.modules: its import fails as if not installed); no
    framework is needed to get the error."""
    monkeypatch.setitem(sys.modules, engine, None)
    monkeypatch.delitem(sys.modules, f"smdebug.integrations.{extra}", raising=False)
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(f"smdebug.integrations.{extra}")
    message = str(info.value)
    assert f"pip install 'smdebug-open[{extra}]'" in message and engine in message
    cause = info.value.__cause__
    assert isinstance(cause, ModuleNotFoundError) and cause.name.partition(".")[0] == engine
    assert info.value.name == cause.name  # the module that is missing
