"""Wrong arguments to the profiling API are errors that say what to give, not AttributeErrors
from deep inside, and a tensor trial is not silently read as an empty profile."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from smdebug.core.writer import FileWriter
from smdebug.exceptions import RuleConfigurationError, SMDebugTypeError, SMDebugValueError
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class
from smdebug.trials import create_trial


@pytest.fixture
def tensor_trial(tmp_path):
    with FileWriter(trial_dir=str(tmp_path / "t"), step=0) as w:
        w.write_tensor(tdata=np.ones(3, dtype=np.float32), tname="w")
    return str(tmp_path / "t")


def test_a_hook_refuses_a_profiler_config_that_is_no_config(tmp_path):
    smd = pytest.importorskip("smdebug.pytorch")
    with pytest.raises(SMDebugTypeError, match="profiler_config='x' must be a smdebug.profiler.ProfilerConfig"):
        smd.Hook(out_dir=str(tmp_path / "h"), profiler_config="x")


def test_a_profiler_rule_needs_a_profiler_trial():
    tensor_like = SimpleNamespace(tensor_names=lambda **_: [], steps=lambda **_: [])  # a tensor trial's reads
    for trial in (None, tensor_like):
        with pytest.raises(RuleConfigurationError) as exc:
            get_rule_class("StepOutlier")(trial)
        assert exc.value.parameter == "base_trial" and "create_trial(path, profiler=True)" in str(exc.value)


def test_a_tensor_trial_opened_as_a_profile_is_refused(tensor_trial, tmp_path):
    with pytest.raises(SMDebugValueError, match="is a tensor trial .* not a profile"):
        create_trial(tensor_trial, profiler=True)
    # a folder with nothing yet (a job about to write its profile) still opens
    assert not create_trial(str(tmp_path / "later"), profiler=True).has_data()


def test_a_profiler_config_file_nested_too_deeply_names_the_file(tmp_path):
    from smdebug.profiler.recording.config import ProfilerConfig

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SMDebugValueError, match=f"profiler config {deep}: JSON nested too deeply"):
        ProfilerConfig.from_json_file(deep)
    with pytest.raises(SMDebugValueError, match="not a regular file"):
        ProfilerConfig.from_json_file("/dev/zero")
