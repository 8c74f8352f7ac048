"""`smdebug rules` (over saved tensors) lists only the debugger rules and sends a profiler rule to
`smdebug profile rules` with a one-line error."""

from __future__ import annotations

import pytest
from prof_rule_trials import Profile

from smdebug.cli.common import CliError
from smdebug.cli.rules import build_rules, rule_listing


def test_smdebug_rules_sends_profiler_rules_to_smdebug_profile_rules():
    with pytest.raises(CliError, match="smdebug profile rules PROFILE --rule StepOutlier"):
        build_rules(Profile([]), [["StepOutlier", {}]])
    listing = rule_listing()
    assert "VanishingGradient" in listing and "StepOutlier" not in listing and "LowGPUUtilization" not in listing
