"""Train the MLP and the CNN of runs.py with whatever ``smdebug`` is importable (smdebug 1.0.34
in .venv-mxnet-peer: `make mxnet-fixture`; ours in the tests) and dump what its create_trial
reads back: workers, steps per mode, tensor names, each collection's tensor names, each tensor's
steps and shape; and the collections file it wrote. usage: write_fixture.py OUT.json  (the trials go to a temporary folder)"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import runs  # noqa: E402

import smdebug.mxnet as smd  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

MODELS = {"mlp": (runs.mlp, False), "cnn": (runs.cnn, True)}
COLLECTIONS_FILE = "collections/000000000/worker_0_collections.json"
COLLECTIONS = ("weights", "biases", "gradients", "losses", "all", "default")


def write_trial(out_dir, model: str):
    build, images = MODELS[model]
    net, loss_fn = build()
    x, y = runs.digits(images=images)
    hook = smd.Hook(out_dir=str(out_dir), save_all=True, save_config=smd.SaveConfig(save_interval=2))
    runs.train(hook, net, loss_fn, x, y, "TTTTE", batch=16)
    hook.close()


def dump(out_dir) -> dict:
    t = create_trial(str(out_dir))
    modes = {m.name: t.steps(mode=m) for m in (smd.modes.TRAIN, smd.modes.EVAL)}
    tensors = {}
    for name in sorted(t.tensor_names()):
        tensor = t.tensor(name)
        steps = tensor.steps()
        tensors[name] = {"steps": steps, "shape": list(tensor.value(steps[0]).shape)}
    return {
        "workers": t.workers(),
        "steps": t.steps(),
        "mode_steps": modes,
        "collections": {c: sorted(t.tensor_names(collection=c)) for c in COLLECTIONS},
        "tensors": tensors,
        "collections_file": json.loads((Path(out_dir) / COLLECTIONS_FILE).read_text()),
    }


def main(out: str) -> None:
    logging.disable(logging.WARNING)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in MODELS:
            write_trial(Path(tmp) / model, model)
            result[model] = dump(Path(tmp) / model)
    text = json.dumps(result, indent=1, sort_keys=True)
    if out == "-":
        print(text)
    else:
        Path(out).write_text(text + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
