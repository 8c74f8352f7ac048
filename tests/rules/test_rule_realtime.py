"""invoke_rule beside a running training: a PyTorch training in a subprocess writes a trial while
the rule follows it in this process. The test hands out steps to the trainer only as the rule
evaluates them, so training can never be more than two steps ahead: the rule must evaluate each
step as soon as it is complete (the hook hands a step to its writer when the next one starts),
exactly once, and end cleanly when the job ends."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from smdebug.core.locations import INDEX_PREFIX, parse_index_key
from smdebug.rules import Rule, invoke_rule
from smdebug.storage import open_store
from smdebug.trials import create_trial

TRAINER = Path(__file__).resolve().parent / "rt_trainer.py"
STEPS = 8


class Follow(Rule):
    def __init__(self, base_trial, on_step):
        super().__init__(base_trial, action_str='{"name": "Log"}')
        self.on_step = on_step
        self.calls = []
        self.written_then = []

    def set_required_tensors(self, step):
        self.req_tensors.add("CrossEntropyLoss_output_0", steps=[step])

    def invoke_at_step(self, step):
        self.calls.append(step)
        loss = float(self.base_trial.tensor("CrossEntropyLoss_output_0").value(step))
        keys = open_store(self.base_trial.path).list(INDEX_PREFIX)
        self.written_then.append(max(parse_index_key(k)[0] for k in keys if parse_index_key(k)))
        self.on_step(step)
        return loss > 100  # never: a real loss is read at every step


def test_invoke_rule_follows_a_running_training(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "0.02")
    out = tmp_path / "job"
    proc = subprocess.Popen(
        [sys.executable, str(TRAINER), str(out), str(STEPS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    handed = 0

    def hand_out(n):
        nonlocal handed
        for _ in range(n):
            if handed < STEPS:
                proc.stdin.write("go\n")
                proc.stdin.flush()
                handed += 1

    result = {}
    try:
        hand_out(2)  # step 0 is written when step 1 starts
        trial = create_trial(str(out), collection_wait_timeout=120)
        rule = Follow(trial, on_step=lambda step: hand_out(1))

        def follow():
            result["run"] = invoke_rule(rule)

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        t.join(timeout=180)
        assert not t.is_alive(), f"the rule did not end; it evaluated {rule.calls}"
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    assert "trainer done" in stdout
    run = result["run"]
    assert rule.calls == list(range(STEPS)) == run.evaluated  # each step once, in order
    assert run.ended == "no_more_data" and run.fired == [] and run.next_step == STEPS
    # step k was evaluated while it was the last step written: step k + 1 is written only when step
    # k + 2 starts, which waits for the rule (only the last steps may come together, at close)
    assert rule.written_then[: STEPS - 2] == list(range(STEPS - 2)), rule.written_then
    assert rule.written_then[STEPS - 2] in (STEPS - 2, STEPS - 1) and rule.written_then[-1] == STEPS - 1
    assert trial.steps() == list(range(STEPS))
