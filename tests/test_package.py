"""Package-level contracts: light imports, pinned public exports, documented import paths."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = {"torch", "tensorflow", "keras", "mxnet", "xgboost", "jax", "boto3", "botocore", "s3fs", "fsspec", "aiobotocore"}


def test_imports_load_no_framework_and_no_cloud_sdk():
    code = (
        "import sys, json, smdebug, smdebug.trials, smdebug.rules, smdebug.analysis.utils, "
        "smdebug.core.writer, smdebug.exceptions\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "smdebug" in loaded
    assert not (loaded & HEAVY), loaded & HEAVY


def test_public_exports_are_pinned():
    import smdebug
    import smdebug.exceptions as ex
    import smdebug.trials as trials

    assert set(smdebug.__all__) == {
        "modes", "ModeKeys", "SaveConfig", "SaveConfigMode", "ReductionConfig", "CollectionKeys",
        "create_trial", "launch", "__version__",
    }
    for name in smdebug.__all__:
        assert getattr(smdebug, name) is not None
    assert set(trials.__all__) == {"create_trial", "consolidate", "Trial", "LocalTrial", "S3Trial", "Tensor",
                                  "ValueKey", "StepValue"}
    documented = {
        "TensorUnavailableForStep", "TensorUnavailable", "StepUnavailable", "StepNotYetAvailable",
        "NoMoreData", "RuleEvaluationConditionMet", "MissingCollectionFiles", "IndexReaderException",
        "ShapeUnavailableForStep", "InvalidWorker", "SMDebugError", "SMDebugValueError",
        "SMDebugTypeError", "SMDebugRuntimeError", "SMDebugNotImplementedError",
        "InsufficientInformationForRuleInvocation", "InvalidCollectionConfiguration", "NoMoreProfilerData",
    }
    assert documented <= set(ex.__all__)
    for name in ex.__all__:
        assert issubclass(getattr(ex, name), ex.SMDebugError)


def test_documented_import_paths():
    from smdebug import modes
    from smdebug.analysis.utils import no_refresh, refresh  # noqa: F401
    from smdebug.core.collection import CollectionKeys
    from smdebug.core.collection_manager import CollectionManager  # noqa: F401
    from smdebug.core.modes import ModeKeys
    from smdebug.core.tensor import StepState, Tensor
    from smdebug.core.writer import FileWriter  # noqa: F401
    from smdebug.rules import Rule, invoke_rule  # noqa: F401
    from smdebug.trials import create_trial  # noqa: F401
    from smdebug.trials.tensor import Tensor as T2

    assert modes.TRAIN is ModeKeys.TRAIN and modes.GLOBAL.value == 4
    assert [m.value for m in ModeKeys] == [1, 2, 3, 4]
    assert Tensor is T2
    assert {s.name for s in StepState} == {"UNAVAILABLE", "AVAILABLE", "NOT_YET_AVAILABLE"}
    assert CollectionKeys.GRADIENTS == "gradients"


def test_exception_messages_name_what_happened():
    from smdebug.core.modes import ModeKeys
    from smdebug.exceptions import NoMoreData, StepUnavailable, TensorUnavailableForStep

    assert str(StepUnavailable(5, ModeKeys.TRAIN)) == "Step 5 of mode TRAIN is not available as it was not saved"
    assert "Max step available is 9" in str(NoMoreData(12, ModeKeys.EVAL, 9))
    msg = str(TensorUnavailableForStep("w", 3, ModeKeys.GLOBAL, has_reductions=True))
    assert "w" in msg and "reductions" in msg
