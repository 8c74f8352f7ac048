"""The repository alone holds what its tests read (tests/golden/), and `make check`'s
framework-free run skips, with the reason, what needs a framework."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from smdtest import FIXTURES, ORACLE, RECIPES, REPO


def test_the_golden_trials_and_tools_are_inside_the_repo():
    for path in (FIXTURES, ORACLE, RECIPES):
        assert path.resolve().is_relative_to(REPO), f"{path} is outside the repository"
        assert path.exists(), path
    trials = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert trials == ["incomplete_job", "multi_worker_modes", "pytorch_mlp", "reductions_only"]
    for name in trials:
        expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
        assert expected["steps"], name
        assert list((FIXTURES / name / "index").rglob("*.json")), name
    assert "Known defects of 1.0.34" in (FIXTURES.parent / "README.md").read_text()


def test_framework_free_run_skips_a_module_that_imports_torch_and_says_why():
    # tests/reliability/test_rule_input.py imports torch at module level
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--framework-free",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "tests/reliability/test_rule_input.py",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    # the module is skipped at import, so pytest finds no test to run (5), and no error (2)
    assert proc.returncode == 5, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "needs torch: left out of the framework-free run (make check)" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("1 skipped"), proc.stdout[-500:]
