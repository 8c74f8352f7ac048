"""The writer's gate: once a framework hook opens it, each handed-over step waits for the next
opening (training in a stretch that hardly needs the GIL), never when steps queue up, never at
flush or close."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from smdebug.core.modes import ModeKeys
from smdebug.core.output.step_writer import StepRecords, StepWriter


class SpyGate(threading.Event):
    def __init__(self):
        super().__init__()
        self.waiting = threading.Event()
        self.waits = 0

    def wait(self, timeout=None):
        self.waits += 1
        self.waiting.set()
        return super().wait(timeout)


def _rec(step):
    return StepRecords(step, ModeKeys.TRAIN, step, tensors=[("x", np.zeros(1, dtype=np.float32), None)])


@pytest.fixture
def writer(tmp_path, monkeypatch):
    monkeypatch.setattr(StepWriter, "GATE_TIMEOUT", 60.0)  # a test that waits for it fails by timing out
    w = StepWriter(str(tmp_path / "t"), "worker_0")
    written = []
    real = w._write
    w._write = lambda rec: (written.append(rec.step), real(rec))
    w.gate = SpyGate()
    yield w, written
    w.close()


def test_a_step_waits_for_the_gate(writer):
    w, written = writer
    w.submit(_rec(0))  # closes the gate
    assert w.gate.waiting.wait(30)
    assert written == []  # the writer is waiting for the gate
    w.open_gate()
    t0 = time.monotonic()
    w.flush()
    assert written == [0]
    assert time.monotonic() - t0 < 30


def test_queued_steps_do_not_wait(writer):
    w, written = writer
    busy, release = threading.Event(), threading.Event()
    real = w._write

    def slow_first(rec):
        if rec.step == -1:  # hold the writer while two more steps queue up behind it
            busy.set()
            release.wait(30)
        real(rec)

    w._write = slow_first
    w.submit(_rec(-1))
    w.open_gate()
    assert busy.wait(30)
    w.gate = SpyGate()  # count from here
    w.submit(_rec(0))
    w.submit(_rec(1))
    release.set()
    assert w.gate.waiting.wait(30)  # only the last one waits
    assert written == [-1, 0]
    assert w.gate.waits == 1


def test_flush_and_close_do_not_wait_for_the_gate(writer):
    w, written = writer
    w.submit(_rec(0))
    t0 = time.monotonic()
    w.flush()
    w.submit(_rec(1))
    w.close()
    assert written == [0, 1]
    assert time.monotonic() - t0 < 30  # not GATE_TIMEOUT


def test_without_a_gate_nothing_waits(tmp_path):
    w = StepWriter(str(tmp_path / "t"), "worker_0")
    w.submit(_rec(0))
    w.flush()
    assert (tmp_path / "t" / "index" / "000000000" / "000000000000_worker_0.json").exists()
    assert w.gate is None
    w.close()


def test_the_pytorch_hook_opens_the_gate_in_backward(tmp_path):
    import torch
    import torch.nn as nn

    import smdebug.pytorch as smd
    from smdebug.trials import create_trial

    model = nn.Linear(4, 2)
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients"],
    )
    hook.register_module(model)
    for _ in range(3):
        model(torch.randn(3, 4)).sum().backward()
    assert hook._writer is not None and hook._writer.gate is not None and hook._writer.gate.is_set()
    model(torch.randn(3, 4))  # a step without backward: the gate stays closed, the step is written anyway
    hook.close()
    assert create_trial(str(tmp_path / "t")).steps() == [0, 1, 2, 3]
