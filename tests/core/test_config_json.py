"""SaveConfig / ReductionConfig / Collection / CollectionManager JSON equals smdebug 1.0.34's."""

from __future__ import annotations

import json
import textwrap

import pytest

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.exceptions import SMDebugValueError
from smdtest import run_json

# the same construction code runs under both implementations
BUILD = textwrap.dedent(
    """
    import json
    import logging
    logging.disable(logging.CRITICAL)  # 1.0.34 logs to stdout
    from smdebug.core.collection import Collection
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.modes import ModeKeys
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.core.save_config import SaveConfig, SaveConfigMode

    def build():
        cm = CollectionManager()
        cm.add("default")
        cm.get("default").reduction_config = ReductionConfig(
            reductions=["min", "max"], abs_reductions=["mean"], norms=["l2"], abs_norms=["l1"],
            save_raw_tensor=True)
        cm.get("default").save_config = SaveConfig(save_interval=3, start_step=2, end_step=50, save_steps=[1, 7])
        c = Collection("gradients", include_regex=["^grad", "relu"], save_histogram=False)
        c.tensor_names = ["b", "a"]
        c.save_config = {ModeKeys.TRAIN: SaveConfigMode(save_interval=10), ModeKeys.EVAL: SaveConfigMode(save_steps=[0])}
        c.reduction_config = ReductionConfig(norms=["l1", "l2"], save_shape=True)
        cm.add(c)
        cm.add("losses")
        cm.set_num_workers(4)
        return cm

    if __name__ == "__main__":
        print(json.dumps(build().to_json_dict()))
    """
)


@pytest.fixture(scope="module")
def build_script(tmp_path_factory):
    p = tmp_path_factory.mktemp("cfg") / "build.py"
    p.write_text(BUILD)
    return p


def test_collections_json_equals_1_0_34(build_script, peer, ours_python):
    theirs = run_json(peer, build_script)
    ours = run_json(ours_python, build_script)
    assert ours == theirs
    assert theirs["collections"]["gradients"]["tensor_names"] == ["a", "b"]
    assert theirs["_meta"] == {"num_workers": 4}


def test_1_0_34_loads_our_collections_file(tmp_path, peer):
    ns: dict = {}
    exec(BUILD, ns)  # noqa: S102 - our own construction code
    cm = ns["build"]()
    cm.export(str(tmp_path), "worker_0_collections.json")
    check = tmp_path / "check.py"
    check.write_text(
        textwrap.dedent(
            f"""
        import json, logging
        logging.disable(logging.CRITICAL)
        from smdebug.core.collection_manager import CollectionManager
        cm = CollectionManager.load({str(tmp_path / "collections" / "000000000" / "worker_0_collections.json")!r})
        print(json.dumps(cm.to_json_dict()))
        """
        )
    )
    assert run_json(peer, check) == cm.to_json_dict()


def test_load_round_trip_and_equality(tmp_path):
    ns: dict = {}
    exec(BUILD, ns)  # noqa: S102
    cm = ns["build"]()
    again = CollectionManager.load_from_string(json.dumps(cm.to_json_dict()))
    assert again == cm and again.get_num_workers() == 4
    rc = again.get("default").reduction_config
    assert rc == ReductionConfig(
        reductions=["min", "max"], abs_reductions=["mean"], norms=["l2"], abs_norms=["l1"], save_raw_tensor=True
    )
    sc = again.get("gradients").save_config
    assert sc.get_save_config(ModeKeys.TRAIN).save_interval == 10
    assert sc.mode_save_configs[ModeKeys.PREDICT] is None


def test_save_config_schedule():
    sc = SaveConfigMode(save_interval=5, start_step=10, end_step=30, save_steps=[3])
    saved = [s for s in range(40) if sc.should_save_step(s)]
    assert saved == [3, 10, 15, 20, 25]
    assert SaveConfig().get_save_config(ModeKeys.TRAIN).save_interval == 500
    partial = SaveConfig(mode_save_configs={ModeKeys.TRAIN: SaveConfigMode(save_interval=2)})
    partial.merge_default_save_config(SaveConfig(save_interval=7))
    assert partial.get_save_config(ModeKeys.EVAL).save_interval == 7
    assert SaveConfig.parse({"TRAIN": {"save_interval": 4}}).get_save_config(ModeKeys.TRAIN).save_interval == 4


def test_bad_configs_raise_clear_errors():
    with pytest.raises(SMDebugValueError, match="median"):
        ReductionConfig(reductions=["median"])
    with pytest.raises(SMDebugValueError, match="save_interval"):
        SaveConfigMode(save_interval="x")
    with pytest.raises(SMDebugValueError, match="save_interval"):
        SaveConfigMode(save_interval=0)
    with pytest.raises(TypeError):
        Collection("c").tensor_names = "abc"


def test_reduction_config_from_flat_tokens():
    rc = ReductionConfig.from_dict({"reductions": "mean,abs_max,l2_norm,abs_l1_norm", "save_raw_tensor": "true"})
    assert (rc.reductions, rc.abs_reductions, rc.norms, rc.abs_norms) == (["mean"], ["max"], ["l2"], ["l1"])
    assert rc.save_raw_tensor is True
    assert rc.to_json_dict()["reductions"] == "mean,l2_norm,abs_max,abs_l1_norm"
