"""Runs a rule from legacy_rules.py with invoke_rule and prints its calls as JSON; runs under
smdebug 1.0.34's interpreter and ours alike.

usage: invoke_script.py RULE BASE_TRIAL KWARGS_JSON   (a kwarg "other_trial" is a path, opened)
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import legacy_rules  # noqa: E402

from smdebug.exceptions import NoMoreData  # noqa: E402
from smdebug.rules import invoke_rule  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

name, base, kwargs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if "other_trial" in kwargs:
    kwargs["other_trial"] = create_trial(kwargs["other_trial"])
rule = getattr(legacy_rules, name)(create_trial(base), **kwargs)
try:
    invoke_rule(rule, start_step=0, end_step=None, raise_eval_cond=False)
except NoMoreData:  # 1.0.34 lets it out at the end of the job
    pass
print("RESULT " + json.dumps(rule.calls))
