"""Fixtures for the rule tests: trials written by real PyTorch runs (session-wide, small)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pytorch"))


@pytest.fixture(autouse=True)
def _clean_hook(monkeypatch):
    for k in ("SMDEBUG_CONFIG_FILE_PATH", "TRAINING_JOB_NAME", "AWS_REGION"):
        monkeypatch.delenv(k, raising=False)
    yield
    from smdebug.pytorch import del_hook

    del_hook()


@pytest.fixture(scope="session")
def pt_runs(tmp_path_factory):
    """Real PyTorch runs: {name: ptrun.Run}; 'a' and 'a2' are the same seed, 'b' another seed,
    'vanishing' a deep sigmoid net with tiny initial weights, 'sparse' saves every 10th step."""
    import ptrun

    root = tmp_path_factory.mktemp("pt_runs")
    return {
        "a": ptrun.train(root / "a", ptrun.mlp(0), steps=6),
        "a2": ptrun.train(root / "a2", ptrun.mlp(0), steps=6),
        "b": ptrun.train(root / "b", ptrun.mlp(1), steps=6),
        "vanishing": ptrun.train(root / "vanishing", ptrun.deep_sigmoid(0), steps=5),
        "sparse": ptrun.train(root / "sparse", ptrun.mlp(0), steps=100, save_interval=10),
    }
