"""smdebug.xgboost's public surface, and xgboost imported by nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import xgboost as xgb

import smdebug.xgboost as smd

SRC = Path(__file__).resolve().parents[2] / "src" / "smdebug"


def test_exports():
    assert set(smd.__all__) == {
        "Hook",
        "Collection",
        "CollectionManager",
        "CollectionKeys",
        "SaveConfig",
        "SaveConfigMode",
        "ReductionConfig",
        "modes",
        "create_trial",
        "get_hook",
        "set_hook",
        "del_hook",
    }
    assert issubclass(smd.Hook, xgb.callback.TrainingCallback)
    assert callable(smd.Hook.create_from_json_file)


def test_xgboost_is_imported_only_by_smdebug_xgboost():
    pattern = re.compile(r"^\s*(import xgboost|from xgboost)", re.M)
    # smdebug.launch's zero-code-change glue patches xgboost once the user's script imported it
    # (an import hook: tests/launch/test_zcc_xgboost.py); nothing else may import it
    allowed = {"launch/zcc_xgboost.py"}
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "xgboost" not in p.relative_to(SRC).parts and pattern.search(p.read_text())
    ]
    assert sorted(set(offenders) - allowed) == []
