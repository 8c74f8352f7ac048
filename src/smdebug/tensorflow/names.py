"""Tensor names for Keras 3 variables, in smdebug 1.0.34's patterns.

Keras 3 names a variable by its path (``sequential/dense/kernel``), without the ``:0`` that
TensorFlow 1/Keras 2 variable names carried. We keep 1.0.34's patterns so that analysis code and
rule regexes written for it still match:

- weights and biases seen by the callback: ``<layer>/weights/<layer path>/<var>:0``
  (``dense/weights/dense/kernel:0``), where the path is relative to the model (the model's own
  name, ``sequential/`` or ``functional/``, is dropped);
- through a wrapped GradientTape: ``weights/<path>:0`` and ``gradients/<path>Grad``
  (``gradients/dense/kernelGrad``); gradients captured inside ``fit`` use the same name;
- optimizer variables: ``<optimizer path>:0`` (``adam/iteration:0``).
"""

from __future__ import annotations

import re

__all__ = ["relative_path", "callback_weight_name", "tape_weight_name", "gradient_name", "optimizer_variable_name"]

_BIAS = re.compile(r"^(?!gradient).*bias")


def relative_path(var, model_name: str | None = None) -> str:
    """``sequential/dense/kernel`` -> ``dense/kernel`` (the model's own prefix dropped).

    Without ``model_name`` (a variable seen by a GradientTape), a path of three components or
    more is taken to start with the model's name, which is dropped; ``dense/kernel`` (a layer's
    own variable, or a functional model's) stays as it is.
    """
    path = getattr(var, "path", None) or getattr(var, "name", "")
    path = path.split(":")[0]
    if model_name:
        if path.startswith(model_name + "/"):
            path = path[len(model_name) + 1 :]
    elif path.count("/") >= 2:
        path = path.split("/", 1)[1]
    return path


def callback_weight_name(layer_name: str, var, model_name: str | None = None) -> str:
    return f"{layer_name}/weights/{relative_path(var, model_name)}:0"


def tape_weight_name(var, model_name: str | None = None) -> str:
    return f"weights/{relative_path(var, model_name)}:0"


def gradient_name(var, model_name: str | None = None) -> str:
    return f"gradients/{relative_path(var, model_name)}Grad"


def optimizer_variable_name(var) -> str:
    return f"{relative_path(var)}:0"


def is_bias(name: str) -> bool:
    """1.0.34's rule: a name with ``bias`` (not a gradient) goes to biases, else to weights."""
    return bool(_BIAS.match(name))
