"""The PyTorch hook writes what smdebug 1.0.34's hook writes, and 1.0.34 reads what it writes."""

from __future__ import annotations

import json
import sys

import pytest
import torch
import torch.nn as nn
from ptutil import flatten, load_recipes, make_hook, mlp, run

import smdebug.pytorch as smd
from smdtest import FIXTURES, ORACLE, run_json

EXPECTED = FIXTURES / "pytorch_mlp.expected.json"


def _rank(oracle_json, tensor):
    """The rank of a tensor, from its first value digest in an oracle dump."""
    for step in oracle_json["tensors"][tensor]["per_step"].values():
        for k, v in step.items():
            if k.startswith("value@") and isinstance(v, dict) and "shape" in v:
                return len(v["shape"])
    return None


def _known_defect(key, ours, theirs, theirs_json) -> bool:
    """Keys where 1.0.34 answers wrongly (fixtures/README.md)."""
    leaf = key[-1]
    if key[0].startswith("tensor_names_") and theirs == {"raises": "KeyError"}:
        return ours == []  # defect 4: tensor_names(mode=M) with no tensor in M
    if key[0] == "tensors" and leaf.startswith(("red_l1", "red_l2")):
        # defect 1: matrix norms (or an error) for reductions computed from a raw tensor of rank != 1
        return _rank(theirs_json, key[1]) != 1 and isinstance(ours, float)
    return False


def _differences(ours, theirs):
    fo, ft = flatten(ours), flatten(theirs)
    return {
        k: (fo.get(k, "<missing>"), ft.get(k, "<missing>"))
        for k in sorted(set(fo) | set(ft), key=str)
        if fo.get(k) != ft.get(k) and not _known_defect(k, fo.get(k), ft.get(k), theirs)
    }


def _fixture_recipe_run(path):
    """fixture_recipes.main()'s call for pytorch_mlp, without TensorBoard."""
    recipes = load_recipes()
    recipes.torch_run(
        str(path),
        "mlp",
        3,
        2,
        tb=False,
        reduction_config=smd.ReductionConfig(
            reductions=["mean", "max"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=True
        ),
    )


@pytest.fixture(scope="module")
def recipe_trial(tmp_path_factory):
    path = tmp_path_factory.mktemp("recipe") / "pytorch_mlp"
    _fixture_recipe_run(path)
    return path


def test_fixture_recipe_gives_the_same_trial_as_1_0_34(recipe_trial):
    theirs = json.loads(EXPECTED.read_text())
    ours = run_json(sys.executable, ORACLE, recipe_trial)
    for key in (
        "tensor_names",
        "collections",
        "modes",
        "steps",
        "workers",
        "steps_TRAIN",
        "steps_EVAL",
        "steps_PREDICT",
        "mode_of_step",
        "global_of",
        "tensor_names_TRAIN",
        "tensor_names_EVAL",
        "has_passed_step",
        "tensor_names_step0",
    ):
        assert ours[key] == theirs[key], key
    for c in theirs["collections"]:
        assert ours[f"tensor_names_coll_{c}"] == theirs[f"tensor_names_coll_{c}"], c
    assert ours["tensor_names_PREDICT"] == []
    # the raw values are bit-identical: same seed, same torch
    digests = 0
    for name, t in theirs["tensors"].items():
        assert ours["tensors"][name]["steps"] == t["steps"], name
        for step, entry in t["per_step"].items():
            assert ours["tensors"][name]["per_step"][step]["value@worker_0"] == entry["value@worker_0"], (name, step)
            assert ours["tensors"][name]["per_step"][step]["reductions@worker_0"] == entry["reductions@worker_0"], (
                name,
                step,
            )
            digests += 1
    assert digests == 4 * 9 + 4 * 6 + 9 + 9  # params x 9 steps, gradients x 6 TRAIN steps, loss, lr
    # and nothing else differs but 1.0.34's known defects
    assert _differences(ours, theirs) == {}


def test_fixture_recipe_writes_the_same_collections_file(recipe_trial):
    name = "collections/000000000/worker_0_collections.json"
    ours = json.loads((recipe_trial / name).read_text())
    theirs = json.loads((FIXTURES / "pytorch_mlp" / name).read_text())
    assert ours == theirs


def test_fixture_recipe_writes_the_same_files(recipe_trial):
    def files(root):
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "tensorboard" not in p.parts)

    # besides smdebug's layout, ours holds the consolidated index (under _smdebug/, which 1.0.34 never lists)
    ours = files(recipe_trial)
    extra = [f for f in ours if f.startswith("_smdebug/")]
    assert extra and all(f.startswith("_smdebug/index/") for f in extra)
    assert [f for f in ours if f not in extra] == files(FIXTURES / "pytorch_mlp")


def _rich_trial(path):
    """Modes, layer inputs/outputs (int64 labels too), reductions, scalars and tensors of our own."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    rc = smd.ReductionConfig(reductions=["mean", "max"], abs_reductions=["max"], norms=["l2"], save_raw_tensor=True)
    hook = make_hook(
        path,
        model,
        loss_fn,
        save_config=smd.SaveConfig(save_interval=1),
        save_all=True,
        include_collections=["weights", "biases", "gradients", "losses"],
        reduction_config=rc,
    )

    def extras(i, h):
        h.save_scalar("lr", 0.1 / (i + 1))
        h.save_tensor("mask", torch.tensor([True, i % 2 == 0, False]), "custom")
        h.save_tensor("half", torch.arange(4, dtype=torch.float16) / (i + 1), "custom")

    run(hook, model, "TTTEETP", loss_fn=loss_fn, step_fn=extras)
    hook.close()


def test_1_0_34_reads_our_hooks_trial(tmp_path, peer):
    path = tmp_path / "rich"
    _rich_trial(path)
    theirs = run_json(peer, ORACLE, path)
    ours = run_json(sys.executable, ORACLE, path)
    assert theirs["steps"] == list(range(7))
    assert theirs["workers"] == ["worker_0"]
    for key in (
        "tensor_names",
        "steps",
        "modes",
        "workers",
        "collections",
        "mode_of_step",
        "global_of",
        "steps_TRAIN",
        "steps_EVAL",
        "steps_PREDICT",
    ):
        assert ours[key] == theirs[key], key
    assert "gradient/Sequential_0.weight" in theirs["tensor_names"]
    assert "CrossEntropyLoss_input_1" in theirs["tensor_names"]
    for name, t in theirs["tensors"].items():
        for step, entry in t["per_step"].items():
            assert "raises" not in entry["value@worker_0"], (name, step, entry["value@worker_0"])
            assert ours["tensors"][name]["per_step"][step]["value@worker_0"] == entry["value@worker_0"], (name, step)
    assert _differences(ours, theirs) == {}
