"""Custom rules written for smdebug 1.0.34 (its Rule API, req_tensors included); this file must run
unchanged with 1.0.34 and with ours. Each rule records ``self.calls``: (step, result, detail)."""

import numpy as np

from smdebug.rules import Rule


class SimilarRuns(Rule):
    """Fires when a tensor differs between the base trial and the other trial at a step."""

    def __init__(self, base_trial, other_trial, include_regex=".*"):
        super().__init__(base_trial, action_str="", other_trials=[other_trial])
        self.include_regex = include_regex
        self.calls = []

    def set_required_tensors(self, step):
        for tname in self.base_trial.tensor_names(regex=self.include_regex):
            self.req_tensors.add(tname, steps=[step])
            self.req_tensors.add(tname, steps=[step], trial=self.other_trials[0])

    def invoke_at_step(self, step):
        differ = []
        for tname in sorted(self.req_tensors.get_names()):
            a = self.base_trial.tensor(tname).value(step)
            b = self.other_trials[0].tensor(tname).value(step)
            if not np.allclose(a, b):
                differ.append(tname)
        self.calls.append([step, bool(differ), differ])
        return bool(differ)


class SmallChange(Rule):
    """Fires when a tensor matching the regex changed less than ``threshold`` (relative L2) since
    the previous saved step; reads both steps through req_tensors."""

    def __init__(self, base_trial, regex=".*", threshold="0.01"):
        super().__init__(base_trial, action_str="")
        self.regex = regex
        self.threshold = float(threshold)
        self.calls = []

    def set_required_tensors(self, step):
        prev = [s for s in self.base_trial.steps() if s < step]
        self.req_tensors.add(self.regex, steps=[step] + prev[-1:], should_match_regex=True)

    def invoke_at_step(self, step):
        ratios = {}
        for t in self.req_tensors.get():
            steps = self.req_tensors.get_tensor_steps(t.name)
            if len(steps) < 2:
                continue
            now, before = t.value(steps[0]).astype(np.float64), t.value(steps[1]).astype(np.float64)
            ratios[t.name] = float(np.linalg.norm(now - before) / (np.linalg.norm(before) + 1e-12))
        fired = any(r < self.threshold for r in ratios.values())
        self.calls.append([step, fired, {k: round(v, 9) for k, v in sorted(ratios.items())}])
        return fired


class SeedVanishing(Rule):
    """The seed document's example rule as 1.0.34 can run it (its Rule requires action_str and its
    Trial has no ``tensors()``), recording the abs mean it compared."""

    def __init__(self, base_trial, threshold=0.0000001):
        super().__init__(base_trial, action_str="", other_trials=None)
        self.threshold = float(threshold)
        self.calls = []

    def invoke_at_step(self, step):
        for tensorname in self.base_trial.tensor_names(collection="gradients"):
            tensor = self.base_trial.tensor(tensorname)
            abs_mean = tensor.reduction_value(step, "mean", abs=True)
            self.calls.append([step, tensorname, round(np.asarray(abs_mean).item(), 9)])
            if abs_mean < self.threshold:
                return True
            else:
                return False
