"""save_config as the glossary writes it (a Python dict), schedules that save nothing refused, regexes
that do not compile refused when given."""

from __future__ import annotations

import pytest

from smdebug.core.modes import ModeKeys
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.exceptions import SMDebugValueError


def test_a_dict_of_parameters_is_one_schedule_for_every_mode():
    sc = SaveConfig.parse({"save_interval": 10, "start_step": 5})
    assert sc == SaveConfig(save_interval=10, start_step=5)
    for m in ModeKeys:
        assert sc.get_save_config(m).save_interval == 10
    assert [s for s in range(40) if sc.should_save_step(ModeKeys.EVAL, s)] == [10, 20, 30]


def test_a_dict_of_modes_still_means_per_mode_schedules():
    sc = SaveConfig.parse({"TRAIN": {"save_interval": 2}, ModeKeys.EVAL: SaveConfigMode(save_steps=[3])})
    assert sc.get_save_config(ModeKeys.TRAIN).save_interval == 2
    assert sc.get_save_config(ModeKeys.EVAL).save_steps == [3]
    assert sc.mode_save_configs[ModeKeys.PREDICT] is None


@pytest.mark.parametrize(
    "bad,key",
    [
        ({"save_intervall": 10}, "save_intervall"),
        ({"TRAIN": {}, "save_interval": 10}, "save_interval"),
        ({"training": {}}, "training"),
    ],
)
def test_other_dicts_are_refused_naming_the_key(bad, key):
    with pytest.raises(SMDebugValueError, match=repr(key)):
        SaveConfig.parse(bad)


def test_a_hook_takes_the_dict(tmp_path):
    from smdebug.core.hook import BaseHook

    hook = BaseHook(out_dir=str(tmp_path / "t"), save_config={"save_interval": 10})
    assert hook.save_config == SaveConfig(save_interval=10)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SaveConfigMode(start_step=10, end_step=5),
        lambda: SaveConfig(start_step=10, end_step=5),
        lambda: SaveConfig.parse({"start_step": "10", "end_step": "5"}),
        lambda: SaveConfig.parse({"TRAIN": {"start_step": 10, "end_step": 5}}),
    ],
)
def test_start_step_after_end_step_is_refused(make):
    with pytest.raises(SMDebugValueError, match="start_step=10 is after end_step=5"):
        make()


def test_start_step_equal_to_end_step_or_without_end_is_fine():
    assert SaveConfigMode(start_step=5, end_step=5).save_steps == []
    assert SaveConfigMode(start_step=50).end_step is None


def test_a_regex_that_does_not_compile_is_refused_when_given(tmp_path):
    from smdebug.core.collection import Collection
    from smdebug.core.hook import BaseHook

    with pytest.raises(SMDebugValueError, match=r"include_regex of collection 'default' '\[unclosed'"):
        BaseHook(out_dir=str(tmp_path / "t"), include_regex=["ok", "[unclosed"])
    c = Collection("mine")
    with pytest.raises(SMDebugValueError, match=r"include_regex of collection 'mine' '\(x'"):
        c.include(["fine", "(x"])
    assert c.include_regex == ["fine"]
