"""The non-finite watch, the wait for the rules' verdict and the launcher's save intervals, as units."""

from __future__ import annotations

import pytest

from smdebug.core.engine.nonfinite import NonFiniteWatch, VerdictWait, is_finite_number, steps_text
from smdebug.launch.schedule import RULE_INTERVAL, choose_intervals
from smdebug.launch.spec import RuleSpec


def test_watch_triggers_once_and_forces_a_window():
    w = NonFiniteWatch(after=3)
    assert not w.see("loss", True, 5)
    assert not w.see("loss", None, 6)  # not known yet (a device value read later)
    assert w.see("loss", False, 7)
    assert not w.see("other", False, 8)  # the first one is kept
    assert (w.first_step, w.first_name, w.pending_verdict) == (7, "loss", 7)
    assert [s for s in range(5, 13) if w.forcing(s)] == [7, 8, 9, 10]
    assert w.window() == "7-10"


def test_watch_read_late_forces_from_the_step_it_was_seen_at():
    w = NonFiniteWatch(after=1)
    assert w.see("loss", False, 7, seen_at=9)
    assert w.first_step == 7 and [s for s in range(12) if w.forcing(s)] == [9, 10]


def test_watch_switched_off(monkeypatch):
    monkeypatch.setenv("SMDEBUG_NONFINITE_STEPS", "-1")
    w = NonFiniteWatch()
    assert not w.on and not w.see("loss", False, 1) and not w.forcing(1)
    monkeypatch.setenv("SMDEBUG_NONFINITE_STEPS", "abc")
    assert NonFiniteWatch().after == 3


@pytest.mark.parametrize(
    ("value", "finite"),
    [
        (1.0, True),
        (float("nan"), False),
        (float("-inf"), False),
        ([1.0, float("inf")], False),
        ([1, 2], True),
        ("text", True),
    ],
)
def test_is_finite_number(value, finite):
    assert is_finite_number(value) is finite


def test_steps_text():
    assert steps_text([35, 0, 33, 34, 36, 40]) == "0, 33-36, 40"
    assert steps_text([]) == ""


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, dt):
        self.now += dt


def test_verdict_wait(tmp_path):
    path = tmp_path / "rules-judged"
    clock = _Clock()
    wait = VerdictWait(str(path), timeout=1.0, clock=clock, sleep=clock.sleep)
    assert wait.judged() == -1  # no file yet
    assert wait.wait(3, lambda: False) == "timeout" and clock.now >= 1.0
    path.write_text("5")
    assert wait.wait(3, lambda: False) == "judged"
    assert wait.wait(3, lambda: True) == "stopped"
    path.write_text("garbage")
    assert wait.judged() == -1
    assert VerdictWait(None).wait(3, lambda: False) == "no rules"


def _rule(name, **params):
    return RuleSpec(name, {"rule_to_invoke": name, **params})


def test_intervals_for_rules_and_scalars():
    colls = [
        {"CollectionName": "weights"},
        {"CollectionName": "losses"},
        {"CollectionName": "biases"},
        {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "500"}},
    ]
    notes = choose_intervals(colls, {"gradients"}, [_rule("ExplodingTensor", tensor_regex=".*")], {})
    got = {c["CollectionName"]: c.get("CollectionParameters", {}).get("save_interval") for c in colls}
    # a rule's own entry (SageMaker's 500) is not the user's choice; ExplodingTensor with a regex reads all
    assert got == {
        "weights": str(RULE_INTERVAL),
        "losses": "1",
        "biases": str(RULE_INTERVAL),
        "gradients": str(RULE_INTERVAL),
    }
    assert any(n.startswith("saving losses every step") for n in notes)
    assert any("weights every 10 steps (read by ExplodingTensor" in n for n in notes)


def test_intervals_keep_what_the_user_gave():
    colls = [
        {"CollectionName": "weights", "CollectionParameters": {"save_interval": "7"}},
        {"CollectionName": "losses", "CollectionParameters": {"train.save_steps": "1,2"}},
        {"CollectionName": "biases"},
    ]
    assert choose_intervals(colls, set(), [_rule("VanishingGradient")], {}) == []
    assert colls[0]["CollectionParameters"] == {"save_interval": "7"} and "CollectionParameters" not in colls[2]
    colls = [{"CollectionName": "weights"}]
    assert choose_intervals(colls, set(), [_rule("ExplodingTensor")], {"save_interval": "3"}) == []
    assert colls == [{"CollectionName": "weights"}]


def test_no_collection_named_saves_the_losses_every_step():
    colls: list = []
    notes = choose_intervals(colls, set(), [], {})
    assert colls == [{"CollectionName": "losses", "CollectionParameters": {"save_interval": "1"}}]
    assert len(notes) == 1
