"""What differs between Keras 3's backends (``KERAS_BACKEND``: tensorflow, jax, torch) for the KerasHook.

The hook is written against Keras alone; only these few things depend on the backend:

- **values**: on TensorFlow the hook hands TF tensors to :class:`~smdebug.tensorflow.adapter.KerasAdapter`
  (read in place on the writer thread); on jax and torch it hands numpy arrays (:func:`to_numpy`,
  a view where the backend allows) to core's NumpyAdapter, which copies or reduces them at once,
  on the training thread (a jax array given to the next jitted step is donated, a torch weight is
  updated in place: nothing of theirs may be read later). TensorFlow is imported only on its own
  backend.
- **variables during fit on jax**: Keras' JAX trainer keeps the state in arrays returned by the
  jitted step and empties the variables meanwhile (reading one would give its *initializer*);
  :func:`sync_state` puts the state back into the variables (``model.jax_state_sync()``, the call
  Keras provides for callbacks), on saved steps only.
- **what leaves a compiled step** (``capture.py``): TF and torch values go out as extra outputs
  of the step; on jax through ``jax.debug.callback`` (layer outputs live inside ``jax.grad``'s
  trace, where no output can reach them), only in the instrumented function that runs on saved
  steps.
- **what a backend cannot give** (:func:`limits`): said once, in a warning, when the hook is made.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np

__all__ = [
    "name",
    "is_tensorflow",
    "to_numpy",
    "as_value",
    "make_adapter",
    "sync_state",
    "is_symbolic",
    "for_stash",
    "limits",
]


def name() -> str:
    """``tensorflow``, ``jax``, ``torch`` (or ``numpy``, on which nothing trains)."""
    return keras.backend.backend()


def is_tensorflow() -> bool:
    return name() == "tensorflow"


def _is_torch(value: Any) -> bool:
    return type(value).__module__.startswith("torch")


def to_numpy(value: Any) -> np.ndarray:
    """``value`` (a TF, jax or torch tensor, a ``keras.Variable``, a number) as a numpy array: a
    view of a CPU tensor's memory where the backend allows (jax, torch), else a copy (TF's
    ``.numpy()``). Callers that keep it past the step copy it (core's NumpyAdapter does)."""
    if isinstance(value, keras.Variable):
        value = value.value
    if isinstance(value, np.ndarray):
        return value
    if _is_torch(value):
        return value.detach().cpu().numpy()
    if hasattr(value, "numpy") and type(value).__module__.startswith("tensorflow"):
        value = value.numpy()
    return np.asarray(value)


def as_value(value: Any) -> Any:
    """What the hook hands its adapter: on TF a tensor read in place (``adapter.as_tensor``), on
    the other backends a numpy array."""
    if is_tensorflow():
        from smdebug.tensorflow.adapter import as_tensor

        return as_tensor(value)
    return to_numpy(value)


def make_adapter() -> Any:
    """The hook's tensor adapter for the backend Keras runs on."""
    if is_tensorflow():
        from smdebug.tensorflow.adapter import KerasAdapter

        return KerasAdapter()
    from smdebug.core.tensors.adapter import NumpyAdapter

    return NumpyAdapter()


def sync_state(model: Any) -> None:
    """On jax, inside ``fit``/``evaluate``/``predict``: write the step's state back into the
    model's variables (Keras' own ``jax_state_sync``), so that reading them gives this step's
    values. Elsewhere nothing to do."""
    sync = getattr(model, "jax_state_sync", None)
    if sync is not None and getattr(model, "_jax_state", None) and not getattr(model, "_jax_state_synced", True):
        sync()


def is_symbolic(value: Any) -> bool:
    """Whether ``value`` is a shape-only stand-in that Keras makes while it builds a model
    (``compute_output_spec``: a KerasTensor, a TF scratch-graph tensor, a torch "meta" tensor),
    which must never be captured as a step's value."""
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope

    if in_symbolic_scope() or isinstance(value, keras.KerasTensor):
        return True
    device = getattr(value, "device", None)
    return _is_torch(value) and getattr(device, "type", None) == "meta"


def for_stash(value: Any) -> Any:
    """A captured torch tensor, detached from autograd's graph and copied (the optimizer may
    update its storage before the hook reads it); TF and jax values as they are."""
    if _is_torch(value):
        return value.detach().clone()
    return value


def limits() -> list[str]:
    """What the hook cannot save on this backend (said once, in a warning)."""
    backend = name()
    out = []
    if backend == "jax":
        from keras.src.backend.config import is_nnx_enabled

        if is_nnx_enabled():
            out.append(
                "gradients and layer inputs/outputs inside fit (Keras' Flax NNX mode traces the class's "
                "train_step, not the model's)"
            )
    return out
