"""A custom rule that raises at every step (a bug in the user's rule)."""

from smdebug.rules import Rule


class Broken(Rule):
    def __init__(self, base_trial, action_str="", threshold="1"):
        super().__init__(base_trial, action_str=action_str)
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        raise ZeroDivisionError(f"broken at step {step}")
