"""Real PyTorch training runs (scikit-learn digits, tiny models) written with ``smdebug.pytorch.Hook``,
for the tests of the training and activation rules, and the rule-firing helper."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.trials import create_trial

EVERY = smd.SaveConfig(save_interval=1)
LOSS = "CrossEntropyLoss_output_0"
MODES = {"T": ModeKeys.TRAIN, "E": ModeKeys.EVAL}


@lru_cache(maxsize=1)
def digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1797 8x8 digit images (pixels 0..16, float32) and their labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target.astype(np.int64)


def fired_at(rule, **kwargs) -> int | None:
    """The global step at which ``rule`` fires over its whole trial, or None."""
    try:
        invoke_rule(rule, raise_eval_cond=True, **kwargs)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


@dataclass
class Run:
    trial: object
    model: nn.Module
    modes: list = field(default_factory=list)  # mode of each global step
    losses: list = field(default_factory=list)  # loss (float) of each global step
    inputs: list = field(default_factory=list)  # the model's input of each global step (numpy)


class Classifier(nn.Module):
    """fc1 -> relu -> fc2 on flat digits; attribute names give the hook's tensor names."""

    def __init__(self, hidden=32, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1 = nn.Linear(64, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


def train(
    path,
    model: nn.Module,
    schedule: str,
    batch: Callable[[str, int], tuple[np.ndarray, np.ndarray]],
    lr: float = 0.1,
    optimizer: str = "sgd",
    hook_kwargs: dict | None = None,
    before_step: Callable[[int, nn.Module], None] | None = None,
) -> Run:
    """One step per letter of ``schedule`` (T: train, E: eval without gradients); ``batch(letter, i)``
    gives the step's (x, y), i counting steps of that letter; ``before_step(global step, model)``
    may change the model. Everything is saved at every step."""
    kwargs = {"save_config": EVERY, "include_collections": ["losses"], **(hook_kwargs or {})}
    hook = smd.Hook(out_dir=str(path), **kwargs)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    params = list(model.parameters())
    opt = torch.optim.Adam(params, lr=lr) if optimizer == "adam" else torch.optim.SGD(params, lr=lr)
    run = Run(trial=None, model=model)
    counts = {"T": 0, "E": 0}
    mode = None
    for g, letter in enumerate(schedule):
        if before_step is not None:
            with torch.no_grad():
                before_step(g, model)
        if MODES[letter] != mode:
            mode = MODES[letter]
            hook.set_mode(mode)
            model.train(letter == "T")
        x, y = batch(letter, counts[letter])
        counts[letter] += 1
        xt, yt = torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y))
        if letter == "T":
            opt.zero_grad()
            loss = loss_fn(model(xt), yt)
            loss.backward()
            opt.step()
        else:
            with torch.no_grad():
                loss = loss_fn(model(xt), yt)
        run.modes.append(mode)
        run.losses.append(float(loss.detach()))
        run.inputs.append(np.asarray(x))
    hook.close()
    run.trial = create_trial(str(path))
    return run


def full_batch(x, y, x_val=None, y_val=None, eval_batches=1):
    """Training on all of (x, y) at each step; EVAL step i on part i % eval_batches of the validation set."""
    parts = np.array_split(np.arange(len(x_val)), eval_batches) if x_val is not None else []

    def batch(letter, i):
        if letter == "T":
            return x, y
        idx = parts[i % eval_batches]
        return x_val[idx], y_val[idx]

    return batch


# ---------------------------------------------------------------- a trainer the test pauses
class Trainer:
    """A PyTorch training process that trains only when told to, through its stdin.

    One process serves several jobs in turn (importing torch is the slow part): ``open(out_dir)``
    starts a job (a new model and hook), ``step(n)`` trains n steps and returns once every step
    but the last one (still in flight: the hook writes a step when the next one begins) is on
    disk, ``end()`` closes the hook (the trial's end-of-job marker); ``quit()`` ends the process.
    """

    def __init__(self):
        import os
        import subprocess
        import sys

        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.trained = 0
        self.open_job = False

    def _send(self, line: str) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if not reply:
            raise RuntimeError(f"the trainer ended (exit code {self.proc.wait()})")
        return reply

    def open(self, out_dir) -> None:
        assert self._send(f"open {out_dir}") == "ready"
        self.trained, self.open_job = 0, True

    def step(self, n: int = 1) -> int:
        """Train n steps; the last step on disk."""
        reply = self._send(f"step {n}")
        self.trained += n
        return int(reply.split()[1])

    def end(self) -> None:
        if self.open_job:
            assert self._send("end") == "closed"
            self.open_job = False

    def quit(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except Exception:
                self.proc.kill()
                self.proc.wait()


def _wait_for_index(out_dir, step: int, deadline_s: float = 60.0) -> None:
    """Wait (polling the folder) until the index file of ``step`` exists."""
    import glob
    import os
    import time

    pattern = os.path.join(out_dir, "index", "*", f"{step:012d}_*.json")
    end = time.monotonic() + deadline_s
    while not glob.glob(pattern):
        if time.monotonic() > end:
            raise TimeoutError(f"step {step} not written to {out_dir} in {deadline_s} s")
        time.sleep(0.005)


def _trainer_main() -> None:
    import sys

    g = torch.Generator().manual_seed(0)  # random digits-shaped data: no scikit-learn import here
    xt, yt = torch.rand(100, 64, generator=g), torch.randint(0, 10, (100,), generator=g)
    hook = out_dir = None
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "open":
            out_dir = cmd[1]
            model = Classifier()
            hook = smd.Hook(out_dir=out_dir, save_config=EVERY, include_collections=["losses"])
            loss_fn = nn.CrossEntropyLoss()
            hook.register_module(model)
            hook.register_loss(loss_fn)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            step = -1
            print("ready", flush=True)
        elif cmd[0] == "step":
            for _ in range(int(cmd[1])):
                opt.zero_grad()
                loss_fn(model(xt), yt).backward()
                opt.step()
                step += 1
            if step >= 1:
                _wait_for_index(out_dir, step - 1)
            print(f"visible {step - 1}", flush=True)
        elif cmd[0] == "end":
            hook.close()
            print("closed", flush=True)


if __name__ == "__main__":
    _trainer_main()


class TextNet(nn.Module):
    """Token ids -> an embedding (padding id 0) averaged -> two classes (NLPSequenceRatio)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = nn.Embedding(50, 8, padding_idx=0)
        self.fc = nn.Linear(8, 2)

    def forward(self, ids):
        return self.fc(self.embedding(ids).mean(dim=1))
