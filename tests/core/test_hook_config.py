"""SageMaker hook JSON (docs/format.md section 8): parsing, errors, and parity with smdebug 1.0.34."""

from __future__ import annotations

import json
import logging
import textwrap

import pytest

from smdebug.core.config import hook_config as hc
from smdebug.core.config.hook_config import (
    CONFIG_FILE_PATH_ENV,
    DEFAULT_CONFIG_PATH,
    CollectionSettings,
    HookSettings,
    config_file_path,
    is_sagemaker_job,
    load_hook_config,
    parse_hook_config,
)
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.exceptions import SMDebugValueError
from smdtest import run_json

# The example in 1.0.34's json_config.py docstring (its trailing comma removed), values as strings.
DOC_EXAMPLE = {
    "S3Path": "s3://bucket/prefix",
    "LocalPath": "/tmp/test_hook_from_json_config_full",
    "HookParameters": {
        "export_tensorboard": True,
        "tensorboard_dir": "/tmp/tensorboard",
        "save_all": False,
        "include_regex": "regexe1,regex2",
        "save_interval": 100,
        "save_steps": "1,2,3,4",
        "start_step": 1,
        "reductions": "min,max,mean,std,abs_variance,abs_sum,abs_l2_norm",
    },
    "CollectionConfigurations": [
        {
            "CollectionName": "collection_obj_name1",
            "CollectionParameters": {
                "include_regex": "regexe5*",
                "save_interval": 100,
                "save_steps": "1,2,3",
                "start_step": 1,
                "reductions": "min,abs_max,l1_norm,abs_l2_norm",
            },
        },
        {
            "CollectionName": "collection_obj_name2",
            "CollectionParameters": {
                "include_regex": "regexe6*",
                "train.save_interval": 100,
                "eval.save_interval": 1,
                "save_steps": "1,2,3",
                "start_step": 1,
                "reductions": "min,abs_max,l1_norm,abs_l2_norm",
            },
        },
    ],
}

# What SageMaker writes: every value a string, per-mode keys at both levels.
SAGEMAKER_STYLE = {
    "LocalPath": "/opt/ml/output/tensors",
    "HookParameters": {
        "save_interval": "50",
        "train.save_interval": "5",
        "eval.save_steps": "1, 2,3",
        "global.start_step": "3",
        "end_step": "1000",
        "predict.end_step": "20",
        "include_workers": "all",
        "save_all": "true",
        "export_tensorboard": "false",
    },
    "CollectionConfigurations": [
        {"CollectionName": "weights", "CollectionParameters": {"save_interval": "7", "save_histogram": "false"}},
        {"CollectionName": "gradients", "CollectionParameters": {"eval.save_interval": "2", "start_step": "4"}},
        {"CollectionName": "losses", "CollectionParameters": None},
        {"CollectionName": "biases"},
        {
            "CollectionName": "relu",
            "CollectionParameters": {
                "include_regex": "relu_.*, .*activation",
                "reductions": "max,abs_mean,l2_norm",
                "save_raw_tensor": True,
                "save_shape": True,
            },
        },
    ],
}

MINIMAL = {"LocalPath": "/tmp/out"}
NULLS = {"HookParameters": None, "CollectionConfigurations": None}
PARITY_CASES = {"doc_example": DOC_EXAMPLE, "sagemaker_style": SAGEMAKER_STYLE, "minimal": MINIMAL, "nulls": NULLS}


def _modes(sc: SaveConfig) -> dict:
    return sc.to_json_dict()


# ---------------------------------------------------------------- parsing


def test_doc_example():
    s = parse_hook_config(json.dumps(DOC_EXAMPLE))
    assert s.out_dir == "/tmp/test_hook_from_json_config_full"
    assert s.export_tensorboard is True and s.tensorboard_dir == "/tmp/tensorboard"
    assert s.save_all is False and s.dry_run is False and s.include_workers == "one"
    assert s.include_regex == ["regexe1", "regex2"]
    for mode in ModeKeys:
        assert s.save_config.get_save_config(mode) == SaveConfigMode(100, 1, None, [1, 2, 3, 4])
    assert s.reduction_config == ReductionConfig(
        reductions=["min", "max", "mean", "std"], abs_reductions=["variance", "sum"], abs_norms=["l2"]
    )
    assert s.include_collections == ["collection_obj_name1", "collection_obj_name2"]
    c1, c2 = s.collections
    assert c1.include_regex == ["regexe5*"] and c2.include_regex == ["regexe6*"]
    assert c1.reduction_config == ReductionConfig(
        reductions=["min"], abs_reductions=["max"], norms=["l1"], abs_norms=["l2"]
    )
    assert c1.save_histogram is None
    assert c2.save_config.get_save_config(ModeKeys.TRAIN) == SaveConfigMode(100, 1, None, [1, 2, 3])
    assert c2.save_config.get_save_config(ModeKeys.EVAL) == SaveConfigMode(1, 1, None, [1, 2, 3])
    # PREDICT/GLOBAL: no collection value, so the hook's save_interval (100)
    assert c2.save_config.get_save_config(ModeKeys.PREDICT).save_interval == 100


def test_bytes_and_str_and_dict_inputs_agree():
    a = parse_hook_config(json.dumps(SAGEMAKER_STYLE).encode())
    b = parse_hook_config(json.dumps(SAGEMAKER_STYLE))
    c = parse_hook_config(SAGEMAKER_STYLE)
    assert a == b == c


def test_per_mode_prefixes_apply_to_their_mode_only():
    s = parse_hook_config(SAGEMAKER_STYLE)
    got = {m.name: s.save_config.get_save_config(m).to_json_dict() for m in ModeKeys}
    assert got == {
        "TRAIN": {"save_interval": 5, "save_steps": [], "start_step": 0, "end_step": 1000},
        "EVAL": {"save_interval": 50, "save_steps": [1, 2, 3], "start_step": 0, "end_step": 1000},
        "PREDICT": {"save_interval": 50, "save_steps": [], "start_step": 0, "end_step": 20},
        "GLOBAL": {"save_interval": 50, "save_steps": [], "start_step": 3, "end_step": 1000},
    }
    assert s.include_workers == "all" and s.save_all is True and s.export_tensorboard is False


def test_collection_parameters_override_for_that_collection_only():
    s = parse_hook_config(SAGEMAKER_STYLE)
    by = {c.name: c for c in s.collections}
    w = by["weights"].save_config
    # a plain collection key beats the hook's plain and per-mode keys, per key
    assert [w.get_save_config(m).save_interval for m in ModeKeys] == [7, 7, 7, 7]
    assert w.get_save_config(ModeKeys.EVAL).save_steps == [1, 2, 3]
    assert w.get_save_config(ModeKeys.PREDICT).end_step == 20
    assert by["weights"].save_histogram is False
    g = by["gradients"].save_config
    assert [g.get_save_config(m).save_interval for m in ModeKeys] == [5, 2, 50, 50]
    assert [g.get_save_config(m).start_step for m in ModeKeys] == [4, 4, 4, 4]
    # no parameters: the hook's schedule
    assert by["losses"].save_config == s.save_config == by["biases"].save_config
    assert by["losses"].reduction_config is None and by["losses"].include_regex is None
    relu = by["relu"]
    assert relu.include_regex == ["relu_.*", ".*activation"]
    assert relu.reduction_config == ReductionConfig(
        reductions=["max"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=True, save_shape=True
    )
    assert s.reduction_config is None  # the hook's own is untouched
    assert s.include_collections == ["weights", "gradients", "losses", "biases", "relu"]


def test_defaults_when_absent():
    s = parse_hook_config(NULLS)
    assert s == HookSettings(out_dir="/opt/ml/output/tensors", save_config=SaveConfig())
    assert s.include_collections == [] and s.collections == []


def test_reduction_flags():
    s = parse_hook_config({"HookParameters": {"reductions": "mean", "save_raw_tensor": "true", "save_shape": "FALSE"}})
    assert s.reduction_config == ReductionConfig(reductions=["mean"], save_raw_tensor=True)
    # reductions given, save_raw_tensor not: raw tensors off, as in 1.0.34
    s = parse_hook_config({"HookParameters": {"reductions": "max"}})
    assert s.reduction_config.save_raw_tensor is False
    # flags alone (1.0.34 ignores them): applied on top of what would apply otherwise
    s = parse_hook_config(
        {
            "HookParameters": {"save_shape": "true"},
            "CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"save_raw_tensor": "false"}}],
        }
    )
    assert s.reduction_config == ReductionConfig(save_raw_tensor=True, save_shape=True)
    assert s.collections[0].reduction_config == ReductionConfig(save_raw_tensor=False, save_shape=True)
    s = parse_hook_config(
        {
            "HookParameters": {"reductions": "min", "save_raw_tensor": "true"},
            "CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"save_shape": "true"}}],
        }
    )
    assert s.collections[0].reduction_config == ReductionConfig(["min"], save_raw_tensor=True, save_shape=True)


def test_default_values_fill_unset_keys():
    doc = {"HookParameters": {"train.save_interval": "3"}, "CollectionConfigurations": [{"CollectionName": "c"}]}
    s = parse_hook_config(doc, default_values={"save_interval": 10})
    assert [s.save_config.get_save_config(m).save_interval for m in ModeKeys] == [3, 10, 10, 10]
    assert s.collections[0].save_config == s.save_config


def test_unknown_parameters_warn_once(caplog):
    doc = {
        "HookParameters": {"save_interval": "2", "bogus": "1", "train.reductions": "max", "weird.save_interval": "1"},
        "CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"colour": "red"}}],
    }
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        s = parse_hook_config(doc, "/cfg.json")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    msg = warnings[0].getMessage()
    for key in ("bogus", "train.reductions", "weird.save_interval", "colour", "/cfg.json"):
        assert key in msg
    assert s.save_config.get_save_config(ModeKeys.TRAIN).save_interval == 2
    assert s.reduction_config is None


def test_no_warning_for_known_parameters(caplog):
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        parse_hook_config(SAGEMAKER_STYLE)
        parse_hook_config(DOC_EXAMPLE)
        parse_hook_config({"HookParameters": {"dry_run": "true", "tensorboard_dir": "/tb"}})
    assert not caplog.records


def test_hook_kwargs():
    s = parse_hook_config(
        {"LocalPath": "/o", "HookParameters": {"dry_run": "true", "include_regex": "a,b", "reductions": "l1_norm"}}
    )
    kw = s.hook_kwargs()
    assert set(kw) == {
        "out_dir", "export_tensorboard", "tensorboard_dir", "dry_run", "reduction_config", "save_config",
        "include_regex", "include_collections", "save_all", "include_workers",
    }  # fmt: skip
    assert kw["out_dir"] == "/o" and kw["dry_run"] is True
    assert kw["include_regex"] == ["a", "b"]
    assert kw["reduction_config"] == ReductionConfig(norms=["l1"])
    assert kw["save_config"] == SaveConfig()
    assert kw["include_collections"] is None  # no CollectionConfigurations: the framework's defaults
    assert kw["save_all"] is False and kw["include_workers"] == "one" and kw["export_tensorboard"] is False
    kw = parse_hook_config(SAGEMAKER_STYLE).hook_kwargs()
    assert kw["include_collections"] == ["weights", "gradients", "losses", "biases", "relu"]
    assert kw["include_workers"] == "all" and kw["save_all"] is True
    manual = HookSettings(out_dir="/x", collections=[CollectionSettings("c")], include_collections=["c"])
    assert manual.hook_kwargs()["include_collections"] == ["c"]


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "params, key",
    [
        ({"save_interval": "abc"}, "save_interval"),
        ({"train.save_interval": "1.5"}, "train.save_interval"),
        ({"save_steps": "1,x,3"}, "save_steps"),
        ({"eval.start_step": "early"}, "eval.start_step"),
        ({"end_step": True}, "end_step"),
        ({"save_interval": "0"}, "save_interval"),
        ({"include_workers": "some"}, "include_workers"),
        ({"save_all": "yes"}, "save_all"),
        ({"export_tensorboard": "on"}, "export_tensorboard"),
        ({"dry_run": "maybe"}, "dry_run"),
        ({"reductions": "median"}, "median"),
        ({"reductions": "mean", "save_raw_tensor": "sure"}, "save_raw_tensor"),
        ({"save_shape": "nope"}, "save_shape"),
        ({"include_regex": 5}, "include_regex"),
        ({"tensorboard_dir": 3}, "tensorboard_dir"),
    ],
)
def test_bad_hook_values(params, key):
    with pytest.raises(SMDebugValueError) as ei:
        parse_hook_config({"HookParameters": params}, "/etc/cfg.json")
    assert key in str(ei.value) and "/etc/cfg.json" in str(ei.value)


@pytest.mark.parametrize(
    "params, key",
    [
        ({"save_interval": "ten"}, "save_interval"),
        ({"predict.save_steps": "a"}, "predict.save_steps"),
        ({"save_histogram": "often"}, "save_histogram"),
        ({"reductions": "abs_l3_norm"}, "l3"),
    ],
)
def test_bad_collection_values(params, key):
    doc = {"CollectionConfigurations": [{"CollectionName": "gradients", "CollectionParameters": params}]}
    with pytest.raises(SMDebugValueError) as ei:
        parse_hook_config(doc, "/etc/cfg.json")
    msg = str(ei.value)
    assert key in msg and "/etc/cfg.json" in msg and "gradients" in msg


@pytest.mark.parametrize(
    "doc",
    [
        "[1, 2]",
        '{"HookParameters": [1]}',
        '{"CollectionConfigurations": {"a": 1}}',
        '{"CollectionConfigurations": [{"CollectionParameters": {}}]}',
        '{"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": "x"}]}',
        '{"LocalPath": 7}',
    ],
)
def test_bad_structure(doc):
    with pytest.raises(SMDebugValueError, match="/c.json"):
        parse_hook_config(doc, "/c.json")


def test_malformed_json_file_names_the_file(tmp_path):
    p = tmp_path / "debughookconfig.json"
    p.write_text('{"LocalPath": "/x", "HookParameters": {')
    with pytest.raises(SMDebugValueError, match="debughookconfig.json.*not valid JSON"):
        load_hook_config(str(p))
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SMDebugValueError, match=str(p)):
        load_hook_config(str(p))


# ---------------------------------------------------------------- files and environment


@pytest.fixture
def clean_env(monkeypatch):
    for var in (CONFIG_FILE_PATH_ENV, "TRAINING_JOB_NAME", hc.TENSORBOARD_CONFIG_FILE_PATH_ENV):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_missing_explicit_path(tmp_path, clean_env):
    missing = tmp_path / "nope.json"
    with pytest.raises(SMDebugValueError, match="nope.json"):
        load_hook_config(str(missing))


def test_explicit_path(tmp_path, clean_env):
    p = tmp_path / "cfg.json"
    p.write_text(json.dumps(SAGEMAKER_STYLE))
    assert load_hook_config(str(p)) == parse_hook_config(SAGEMAKER_STYLE)


def test_env_variable_path(tmp_path, clean_env):
    p = tmp_path / "env.json"
    p.write_text(json.dumps(MINIMAL))
    clean_env.setenv(CONFIG_FILE_PATH_ENV, str(p))
    assert config_file_path() == str(p)
    assert load_hook_config().out_dir == "/tmp/out"
    # the variable names a missing file: nothing configured (1.0.34's get_hook returns None too)
    clean_env.setenv(CONFIG_FILE_PATH_ENV, str(tmp_path / "gone.json"))
    assert config_file_path() == str(tmp_path / "gone.json")
    assert load_hook_config() is None


def test_no_config_anywhere(clean_env, tmp_path):
    clean_env.setattr(hc, "DEFAULT_CONFIG_PATH", str(tmp_path / "absent.json"))
    assert config_file_path() is None
    assert load_hook_config() is None
    (tmp_path / "absent.json").write_text("{}")
    assert config_file_path() == str(tmp_path / "absent.json")
    assert load_hook_config().out_dir == "/opt/ml/output/tensors"
    assert DEFAULT_CONFIG_PATH == "/opt/ml/input/config/debughookconfig.json"


def test_sagemaker_tensorboard(tmp_path, clean_env):
    p = tmp_path / "cfg.json"
    p.write_text(json.dumps({"HookParameters": {"export_tensorboard": "true", "tensorboard_dir": "/mine"}}))
    assert not is_sagemaker_job()
    s = load_hook_config(str(p))
    assert (s.export_tensorboard, s.tensorboard_dir) == (True, "/mine")
    clean_env.setenv("TRAINING_JOB_NAME", "job")
    assert is_sagemaker_job()
    clean_env.setenv(hc.TENSORBOARD_CONFIG_FILE_PATH_ENV, str(tmp_path / "tb.json"))
    s = load_hook_config(str(p))  # on SageMaker, only SageMaker's TensorBoard config counts
    assert (s.export_tensorboard, s.tensorboard_dir) == (False, None)
    (tmp_path / "tb.json").write_text(json.dumps({"LocalPath": "/opt/ml/output/tensorboard"}))
    s = load_hook_config(str(p))
    assert (s.export_tensorboard, s.tensorboard_dir) == (True, "/opt/ml/output/tensorboard")


# ---------------------------------------------------------------- parity with smdebug 1.0.34

PEER_VIEW = textwrap.dedent(
    """
    import json, logging, sys
    logging.disable(logging.CRITICAL)  # 1.0.34 logs to stdout
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.json_config import (
        add_collections_to_manager, collect_hook_config_params, get_include_collections,
        get_json_config_as_dict)
    from smdebug.core.save_config import SaveConfig

    params = get_json_config_as_dict(sys.argv[1])
    defaults = json.loads(sys.argv[2])
    hp = collect_hook_config_params(params)
    rc = hp.get("reduction_config")
    view = {
        "out_dir": hp["out_dir"],
        "save_config": SaveConfig.from_dict(hp["save_config_modes"], defaults).to_json_dict(),
        "reduction_config": rc.to_json_dict() if rc else None,
        "include_regex": hp.get("include_regex"),
        "save_all": hp.get("save_all", False),
        "include_workers": hp.get("include_workers", "one"),
        "export_tensorboard": hp["export_tensorboard"],
        "tensorboard_dir": hp["tensorboard_dir"],
        "include_collections": get_include_collections(params),
        "collections": {},
    }
    cm = CollectionManager()
    add_collections_to_manager(cm, params, hp)
    for name in view["include_collections"] or []:
        c = cm.get(name)
        view["collections"][name] = {
            "save_config": c.save_config.to_json_dict(),
            "reduction_config": c.reduction_config.to_json_dict() if c.reduction_config else None,
            "include_regex": c.include_regex,
            "save_histogram": c.save_histogram,
        }
    print(json.dumps(view))
    """
)


def _our_view(s: HookSettings) -> dict:
    kw = s.hook_kwargs()
    return {
        "out_dir": s.out_dir,
        "save_config": _modes(s.save_config),
        "reduction_config": s.reduction_config.to_json_dict() if s.reduction_config else None,
        "include_regex": s.include_regex,
        "save_all": s.save_all,
        "include_workers": s.include_workers,
        "export_tensorboard": s.export_tensorboard,
        "tensorboard_dir": s.tensorboard_dir,
        "include_collections": kw["include_collections"],
        "collections": {
            c.name: {
                "save_config": _modes(c.save_config),
                "reduction_config": c.reduction_config.to_json_dict() if c.reduction_config else None,
                "include_regex": c.include_regex or [],
                "save_histogram": True if c.save_histogram is None else c.save_histogram,
            }
            for c in s.collections
        },
    }


@pytest.fixture(scope="module")
def peer_script(tmp_path_factory):
    p = tmp_path_factory.mktemp("hookcfg") / "peer_view.py"
    p.write_text(PEER_VIEW)
    return p


@pytest.mark.parametrize("case", sorted(PARITY_CASES))
def test_parity_with_1_0_34(case, peer, peer_script, tmp_path, clean_env):
    p = tmp_path / f"{case}.json"
    p.write_text(json.dumps(PARITY_CASES[case]))
    theirs = run_json(peer, peer_script, p, "{}")
    assert _our_view(load_hook_config(str(p))) == theirs


def test_parity_with_1_0_34_default_values(peer, peer_script, tmp_path, clean_env):
    """XGBoost's defaults (save_interval 10): the hook's schedule matches 1.0.34; its collections
    deliberately do not (1.0.34 gives them the generic default, 500)."""
    defaults = {"save_interval": 10, "start_step": 0, "end_step": None, "save_steps": []}
    doc = {"HookParameters": {"eval.save_interval": "4"}, "CollectionConfigurations": [{"CollectionName": "metrics"}]}
    p = tmp_path / "xgb.json"
    p.write_text(json.dumps(doc))
    theirs = run_json(peer, peer_script, p, json.dumps(defaults))
    ours = _our_view(load_hook_config(str(p), default_values=defaults))
    assert ours["save_config"] == theirs["save_config"]
    assert [v["save_interval"] for v in ours["save_config"].values()] == [10, 4, 10, 10]
    assert [v["save_interval"] for v in theirs["collections"]["metrics"]["save_config"].values()] == [500, 4, 500, 500]
    assert ours["collections"]["metrics"]["save_config"] == ours["save_config"]


def test_problems_are_collected_and_their_parts_left_out():
    problems: list[str] = []
    doc = {
        "HookParameters": {"save_interval": "ten", "include_regex": "a,(b", "save_all": "yes", "end_step": "9"},
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"save_histogram": "often"}},
            {"CollectionName": "mine"},
            {"CollectionName": "biases", "CollectionParameters": {"start_step": "3"}},
            {"CollectionParameters": {}},
        ],
    }
    s = parse_hook_config(doc, "/c.json", known_collections=frozenset({"weights", "biases"}), problems=problems)
    assert len(problems) == 6 and all("/c.json" in m for m in problems)
    assert [
        k
        for k in ("save_interval", "(b", "save_all", "save_histogram", "'mine'", "CollectionConfigurations[3]")
        if not any(k in m for m in problems)
    ] == []
    assert s.include_regex == ["a"] and s.save_all is False
    assert s.save_config.get_save_config(ModeKeys.TRAIN) == SaveConfigMode(end_step=9)
    assert [c.name for c in s.collections] == s.include_collections == ["biases"]
    assert s.collections[0].save_config.get_save_config(ModeKeys.EVAL) == SaveConfigMode(start_step=3, end_step=9)
    with pytest.raises(SMDebugValueError, match="save_interval='ten' in HookParameters of /c.json"):
        parse_hook_config(doc, "/c.json")
