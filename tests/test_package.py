"""Package-level contracts: light imports, pinned public exports, documented import paths."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = {
    "torch",
    "tensorflow",
    "keras",
    "mxnet",
    "xgboost",
    "jax",
    "boto3",
    "botocore",
    "s3fs",
    "fsspec",
    "aiobotocore",
}


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
        "modes",
        "ModeKeys",
        "SaveConfig",
        "SaveConfigMode",
        "ReductionConfig",
        "CollectionKeys",
        "create_trial",
        "launch",
        "__version__",
    }
    for name in smdebug.__all__:
        assert getattr(smdebug, name) is not None
    assert set(trials.__all__) == {
        "create_trial",
        "consolidate",
        "Trial",
        "LocalTrial",
        "S3Trial",
        "Tensor",
        "ValueKey",
        "StepValue",
    }
    documented = {
        "TensorUnavailableForStep",
        "TensorUnavailable",
        "StepUnavailable",
        "StepNotYetAvailable",
        "NoMoreData",
        "RuleEvaluationConditionMet",
        "MissingCollectionFiles",
        "IndexReaderException",
        "ShapeUnavailableForStep",
        "InvalidWorker",
        "SMDebugError",
        "SMDebugValueError",
        "SMDebugTypeError",
        "SMDebugRuntimeError",
        "SMDebugNotImplementedError",
        "InsufficientInformationForRuleInvocation",
        "InvalidCollectionConfiguration",
        "NoMoreProfilerData",
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


FRAMEWORK_PACKAGES = {
    "smdebug.pytorch": "torch",
    "smdebug.tensorflow": "keras",
    "smdebug.xgboost": "xgboost",
    "smdebug.mxnet": "mxnet",
    "smdebug.jax": "flax",
}
SHARED_NAMES = {"CollectionKeys", "SaveConfig", "SaveConfigMode", "ReductionConfig", "modes", "create_trial"}


def test_each_framework_package_re_exports_the_shared_names():
    """``smd.SaveConfig``, ``smd.modes``, ``smd.create_trial``... from each framework package, as 1.0.34's,
    the very objects of smdebug.core and smdebug.trials; importing the packages leaves the one list
    they share (smdebug._public) as it was."""
    import importlib
    import importlib.util

    import smdebug._public as shared
    from smdebug import modes
    from smdebug.core.collection import CollectionKeys
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig, SaveConfigMode
    from smdebug.trials import create_trial

    assert set(shared.__all__) == SHARED_NAMES
    expected = {
        "CollectionKeys": CollectionKeys,
        "SaveConfig": SaveConfig,
        "SaveConfigMode": SaveConfigMode,
        "ReductionConfig": ReductionConfig,
        "modes": modes,
        "create_trial": create_trial,
    }
    imported = []
    for name, needs in FRAMEWORK_PACKAGES.items():
        spec = importlib.util.find_spec(needs)
        if spec is None or spec.origin is None:  # not installed (tests/mxnet is a namespace package)
            continue  # mxnet: its own virtualenv
        package = importlib.import_module(name)
        imported.append(name)
        assert SHARED_NAMES < set(package.__all__), name
        assert len(package.__all__) == len(set(package.__all__)), name
        for shared_name, obj in expected.items():
            assert getattr(package, shared_name) is obj, (name, shared_name)
        for own in ("Collection", "CollectionManager", "get_hook", "set_hook", "del_hook"):
            assert own in package.__all__ and callable(getattr(package, own)), (name, own)
    assert imported, "no framework installed"
    assert set(shared.__all__) == SHARED_NAMES and len(shared.__all__) == len(SHARED_NAMES)


def test_mypy_sees_the_shared_names_as_each_framework_packages_exports(tmp_path):
    """With ``--no-implicit-reexport`` (mypy --strict) a user's ``from smdebug.pytorch import SaveConfig``
    type-checks: the names are exported, not merely imported; a name the package only imports is not."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    lines = [f"from {name} import {', '.join(sorted(SHARED_NAMES))}" for name in FRAMEWORK_PACKAGES]
    lines += ["import smdebug.pytorch as smd", "smd.SaveConfig(save_interval=2)", "from smdebug.xgboost import bind"]
    script = tmp_path / "user_script.py"
    script.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", "--no-implicit-reexport"]
        + ["--cache-dir", str(tmp_path / "mypy-cache"), str(script)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert f"user_script.py:{len(lines)}:" in errors[0] and '"bind"' in errors[0], errors


def test_exception_messages_name_what_happened():
    from smdebug.core.modes import ModeKeys
    from smdebug.exceptions import NoMoreData, StepUnavailable, TensorUnavailableForStep

    assert str(StepUnavailable(5, ModeKeys.TRAIN)) == "Step 5 of mode TRAIN is not available as it was not saved"
    assert "Max step available is 9" in str(NoMoreData(12, ModeKeys.EVAL, 9))
    msg = str(TensorUnavailableForStep("w", 3, ModeKeys.GLOBAL, has_reductions=True))
    assert "w" in msg and "reductions" in msg


def test_the_wheel_is_this_package_not_aws_smdebug(tmp_path):
    """The distribution has a name of its own (AWS's 1.0.34 is "smdebug" on the public index): the
    wheel `pip wheel .` builds is smdebug_open-*.whl, and installing it gives `import smdebug` = this
    package, which `smdebug --version` names."""
    import os
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(root)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("*.whl")
    assert wheel.name.startswith("smdebug_open-"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        assert "\nName: smdebug-open\n" in z.read(meta).decode()
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    probe = (
        "import importlib.metadata as m, smdebug, smdebug.cli as c; "
        "print(smdebug.__file__); print(m.distribution('smdebug-open').version); print(c.version_line())"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(target)},
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    assert out[0].startswith(str(target))  # the installed wheel, not the checkout
    import smdebug

    assert out[1] == smdebug.__version__
    assert out[2].startswith(f"smdebug-open {smdebug.__version__} (import smdebug, from {target}")
