"""Types: py.typed ships with the package, the documented API's annotations hold for a user's script
(typed_usage.py, checked by mypy), and tools/mypy_baseline.py keeps src/ within its baseline."""

from __future__ import annotations

import importlib.resources
import importlib.util
import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy depends on tomli before 3.11
    import tomli as tomllib

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _baseline_tool():
    spec = importlib.util.spec_from_file_location("mypy_baseline", ROOT / "tools" / "mypy_baseline.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["mypy_baseline"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _mypy(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty", *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_py_typed_ships_in_the_package():
    assert (importlib.resources.files("smdebug") / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["smdebug"]


def test_a_users_script_type_checks_and_a_wrong_annotation_fails(tmp_path):
    wrong = ROOT / "tests" / "docs" / "_wrong_usage.py"  # beside typed_usage.py: mypy's config applies
    wrong.write_text(
        "from typing import assert_type\n"
        "from smdebug.trials import create_trial\n"
        "t = create_trial('x').tensor('loss')\n"
        "assert_type(t.value(0), list[float])\n"
        "assert_type(t.steps(), list[str])\n"
        "create_trial('x').tensor(3)\n"
        "import smdebug.pytorch\n"
        "smdebug.pytorch.Hook(out_dir='x', save_interval=3)\n"
        "import smdebug.xgboost\n"
        "smdebug.xgboost.Hook(out_dir='x', hyperparameter={})\n"
        "smdebug.xgboost.Hook('x', train_data=None, profiler_config=None, include_workers=1)\n"
    )
    try:
        # typing.assert_type is 3.11's; the package itself is checked as 3.10 (tools/mypy_baseline.py)
        # its own cache: the baseline test's mypy may run beside it (pytest -n 2)
        proc = _mypy(
            "--python-version",
            "3.11",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "tests/docs/typed_usage.py",
            "tests/docs/_wrong_usage.py",
        )
    finally:
        wrong.unlink()
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert not [e for e in errors if "typed_usage.py" in e], proc.stdout + proc.stderr
    wrong_lines = sorted(int(e.split(":")[1]) for e in errors if "_wrong_usage.py" in e)
    assert wrong_lines == [4, 5, 6, 8, 10, 11], proc.stdout + proc.stderr


def test_the_baseline_tool_fails_on_new_errors_and_on_a_baseline_that_could_shrink():
    tool = _baseline_tool()
    strict = ["smdebug.trials", "smdebug.rules.builtin.*"]
    out = (
        "src/smdebug/storage/s3.py:10: error: Bad thing  [misc]\n"
        "src/smdebug/storage/s3.py:99: error: Bad thing  [misc]\n"
        "src/smdebug/storage/s3.py:12: note: a note\n"
    )
    baseline = ["src/smdebug/storage/s3.py: Bad thing  [misc]"] * 2
    assert tool.compare(out, baseline, strict).ok
    more = tool.compare(out + "src/smdebug/codec/wire.py:3: error: New  [misc]\n", baseline, strict)
    assert more.new == ["src/smdebug/codec/wire.py: New  [misc]"] and not more.ok
    fixed = tool.compare(out.splitlines()[0], baseline, strict)
    assert fixed.gone == ["src/smdebug/storage/s3.py: Bad thing  [misc]"] and not fixed.ok
    in_strict = tool.compare(
        "src/smdebug/rules/builtin/trees.py:1: error: X  [misc]\nsrc/smdebug/trials/__init__.py:2: error: Y  [misc]\n",
        [],
        strict,
    )
    assert len(in_strict.strict_errors) == 2 and not in_strict.ok
    assert tool.module_of("src/smdebug/trials/__init__.py") == "smdebug.trials"


def test_src_is_within_the_mypy_baseline_and_the_documented_modules_are_strict():
    tool = _baseline_tool()
    strict = tool.strict_modules()
    for module in (
        "smdebug",
        "smdebug.trials",
        "smdebug.trials.tensor",
        "smdebug.exceptions",
        "smdebug.core.save_config",
        "smdebug.analysis.utils",
    ):
        assert tool.is_strict(module, strict), module
    proc = subprocess.run([sys.executable, "tools/mypy_baseline.py"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


HOOKS = [
    ("smdebug.core.engine.hook", "BaseHook", None),
    ("smdebug.pytorch.hook", "Hook", "torch"),
    ("smdebug.tensorflow.keras", "KerasHook", "tensorflow"),
    ("smdebug.xgboost.hook", "Hook", "xgboost"),
    ("smdebug.jax.hook", "Hook", "jax"),
]


@pytest.mark.parametrize(("module", "cls", "framework"), HOOKS, ids=[f"{m}.{c}" for m, c, _ in HOOKS])
def test_a_hooks_options_are_declared_once(module, cls, framework):
    """A hook's ``__init__`` takes the fields of one options dataclass (``@hook_init``): what
    ``inspect.signature`` gives is those fields, every hook's (HookOptions) first, positional or
    keyword, then the hook's own, keyword-only; the class's source holds no other declaration of
    them (no ``TYPE_CHECKING`` stub, no hand-set ``__signature__``)."""
    import dataclasses
    import importlib
    import inspect

    from smdebug.core.config.hook_options import HookOptions

    if framework:
        pytest.importorskip(framework)
    hook = getattr(importlib.import_module(module), cls)
    options = hook.__init__.__hook_options__
    assert dataclasses.is_dataclass(options) and issubclass(options, HookOptions)
    runtime = list(inspect.signature(hook.__init__).parameters.values())
    assert runtime[0].name == "self"
    assert [(p.name, p.default) for p in runtime[1:]] == [(f.name, f.default) for f in dataclasses.fields(options)]
    common = [f.name for f in dataclasses.fields(HookOptions)]
    assert [p.name for p in runtime[1 : len(common) + 1]] == common
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in runtime[len(common) + 1 :])
    source = (ROOT / "src" / (module.replace(".", "/") + ".py")).read_text()
    assert "__signature__" not in source and "def __init__(self, out_dir" not in source
