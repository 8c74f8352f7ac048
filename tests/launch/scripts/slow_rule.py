"""A custom rule that takes ``seconds`` at every step (a slow rule); it creates ``marker`` when it
starts judging a step, so that a test knows the rule is busy."""

import time

from smdebug.rules import Rule


class Slow(Rule):
    def __init__(self, base_trial, action_str="", seconds="600", marker=""):
        super().__init__(base_trial, action_str=action_str)
        self.seconds = float(seconds)
        self.marker = marker

    def invoke_at_step(self, step):
        if self.marker:
            open(self.marker, "a").close()
        time.sleep(self.seconds)  # the rule's own slowness: what the launcher must not wait out
