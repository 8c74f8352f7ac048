"""smdebug.rules: pinned exports, 1.0.34's import paths, and a light import."""

import json
import subprocess
import sys


def test_rules_exports_are_pinned():
    import smdebug.rules as rules

    assert set(rules.__all__) == {
        "Rule",
        "invoke_rule",
        "RuleRun",
        "create_rule",
        "RequiredTensors",
        "RequiredTensorsForTrial",
        "Actions",
        "ActionSpec",
        "Firing",
        "parse_actions",
    }
    for name in rules.__all__:
        assert getattr(rules, name) is not None
    from smdebug.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial  # noqa: F401  (1.0.34 paths)
    from smdebug.rules.rule import Rule  # noqa: F401
    from smdebug.rules.rule_invoker import invoke_rule  # noqa: F401


def test_building_rules_with_local_actions_loads_no_framework_or_cloud_sdk():
    code = (
        "import sys, json\n"
        "from smdebug.rules import Rule, create_rule, parse_actions\n"
        "from smdebug.rules.builtin import RULE_MODULES\n"
        'parse_actions(\'[{"name": "StopTraining"}, {"name": "Log"}]\')\n'
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert not loaded & {"torch", "tensorflow", "xgboost", "mxnet", "boto3", "botocore", "s3fs", "fsspec"}
