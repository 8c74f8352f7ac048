"""The profiler rule tests: their helpers (prof_rule_trials) on the path."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
