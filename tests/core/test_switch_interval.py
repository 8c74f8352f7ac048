"""Python's thread switch interval: left alone by default; lowered while a background writer runs
when $SMDEBUG_GIL_SWITCH_INTERVAL asks, and given back."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.output import step_writer
from smdebug.core.output.step_writer import SWITCH_INTERVAL_ENV, StepWriter


@pytest.fixture(autouse=True)
def default_interval(monkeypatch):
    monkeypatch.delenv(SWITCH_INTERVAL_ENV, raising=False)
    # a fresh count of running writers: a hook another test left open must not hide the change
    monkeypatch.setattr(step_writer, "switch_interval", step_writer._SwitchInterval())
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def test_left_alone_by_default(tmp_path):
    w = StepWriter(str(tmp_path / "a"), "worker_0")
    assert sys.getswitchinterval() == pytest.approx(0.005)  # a library does not change it unasked
    w.close()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_lowered_while_a_writer_runs_and_restored_after(tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH_INTERVAL_ENV, "0.001")
    a = StepWriter(str(tmp_path / "a"), "worker_0")
    assert sys.getswitchinterval() == pytest.approx(0.001)
    b = StepWriter(str(tmp_path / "b"), "worker_0")
    a.close()
    assert sys.getswitchinterval() == pytest.approx(0.001)  # b still runs
    b.close()
    assert sys.getswitchinterval() == pytest.approx(0.005)
    b.close()  # closing twice changes nothing
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_inline_writer_leaves_it_alone(tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH_INTERVAL_ENV, "0.001")
    w = StepWriter(str(tmp_path / "a"), "worker_0", background=False)
    assert sys.getswitchinterval() == pytest.approx(0.005)
    w.close()


@pytest.mark.parametrize("value, expected", [("0", 0.005), ("0.0002", 0.0002), ("0.5", 0.005), ("soon", 0.005)])
def test_environment_variable(tmp_path, monkeypatch, value, expected):
    monkeypatch.setenv(SWITCH_INTERVAL_ENV, value)
    w = StepWriter(str(tmp_path / "a"), "worker_0")
    assert sys.getswitchinterval() == pytest.approx(expected)  # never raised above the current one
    w.close()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_value_set_by_the_program_meanwhile_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH_INTERVAL_ENV, "0.001")
    w = StepWriter(str(tmp_path / "a"), "worker_0")
    sys.setswitchinterval(0.002)
    w.close()
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_a_training_hook_lowers_it_until_close(tmp_path, monkeypatch):
    monkeypatch.setenv(SWITCH_INTERVAL_ENV, "0.001")
    model = nn.Linear(4, 2)
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"]
    )
    hook.register_module(model)
    model(torch.randn(3, 4))
    model(torch.randn(3, 4))  # the first step is handed to the writer
    assert sys.getswitchinterval() == pytest.approx(0.001)
    hook.close()
    assert sys.getswitchinterval() == pytest.approx(0.005)
