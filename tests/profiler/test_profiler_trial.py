"""One ProfilerTrial: the class ``create_trial(path, profiler=True)`` returns, the one the rules,
views and CLI open with ``ProfilerTrial(path)``, and the one 1.0.34's path names; its constructor
takes our order (the path first) and 1.0.34's keywords, and refuses 1.0.34's positional order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smdebug.exceptions import SMDebugTypeError
from smdebug.profiler.reading import ProfileFolder
from smdebug.profiler.trial import ProfilerTrial
from smdebug.trials import create_trial

FIXTURES = Path(__file__).parent / "fixtures" / "sagemaker-debugger"
SRC = Path(__file__).parents[2] / "src" / "smdebug"


def test_there_is_one_class_named_profiler_trial_and_the_1034_path_names_it():
    homes = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if re.search(r"^class ProfilerTrial\b", p.read_text(encoding="utf-8"), re.M)
    ]
    assert homes == ["profiler/trial.py"]
    from smdebug.trials import profiler_trial

    assert profiler_trial.ProfilerTrial is ProfilerTrial and profiler_trial.__all__ == ["ProfilerTrial"]


def test_create_trial_and_the_path_first_constructor_give_the_same_class(tmp_path):
    root = str(FIXTURES / "test_traces")
    made = create_trial(root, profiler=True, output_dir=str(tmp_path / "out"))
    opened = ProfilerTrial(root)
    assert type(made) is ProfilerTrial and type(opened) is ProfilerTrial and isinstance(made, ProfileFolder)
    assert made.path == opened.path == root and made.name == opened.name == "test_traces"
    assert made.output_dir == str(tmp_path / "out") and opened.output_dir is None and opened.temp_dir is None
    assert len(made.framework_events()) == len(opened.framework_events()) > 0
    # the 1.0.34 readers read the same folder as the columns
    assert len(opened.get_system_metrics(0, 2**62)) == sum(len(s) for s in opened.system_series()) > 0


def test_the_1034_keywords_open_the_same_trial(tmp_path):
    root = str(FIXTURES / "test_traces")
    trial = ProfilerTrial(name="job", trial_dir=root, output_dir=str(tmp_path / "out"))
    assert (trial.name, trial.path, trial.temp_dir) == ("job", root, str(tmp_path / "out" / ".sagemaker-ignore"))
    assert trial.first_timestamp == ProfilerTrial(root).first_timestamp


def test_the_1034_positional_order_opens_the_same_trial_and_a_missing_path_is_refused(tmp_path):
    root = str(FIXTURES / "test_traces")
    trial = ProfilerTrial("job", root, str(tmp_path / "out"))  # 1.0.34's ProfilerTrial(name, trial_dir, output_dir)
    assert (trial.name, trial.path, trial.temp_dir) == ("job", root, str(tmp_path / "out" / ".sagemaker-ignore"))
    assert trial.first_timestamp == ProfilerTrial(root).first_timestamp
    with pytest.raises(SMDebugTypeError, match="needs the profiler folder"):
        ProfilerTrial()
