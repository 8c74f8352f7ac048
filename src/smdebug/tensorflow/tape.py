"""Custom training loops: a wrapped ``tf.GradientTape`` and a wrapped optimizer.

- ``hook.wrap_tape(tape)``: each ``with tape:`` block starts a step (in the hook's mode; TRAIN
  when none was set); each ``tape.gradient`` call saves the loss, the weights it differentiates
  against (before the update) and their gradients.
- ``hook.wrap_optimizer(opt)``: after each eager ``opt.apply`` / ``opt.apply_gradients`` of a
  step that saves, the optimizer's own variables (``optimizer_variables``; after the update, as
  in ``fit``). Inside ``fit`` (a traced function) the wrapper does nothing: there the callback
  reads them at the end of the batch.

Both save nothing inside a ``tf.function`` (the values are symbolic), as 1.0.34. What they save
goes through the hook's ``_save`` as in ``fit``; each step and save runs under the hook's guard.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.core.engine.guard import guarded
from smdebug.exceptions import SMDebugTypeError
from smdebug.modes import ModeKeys
from smdebug.tensorflow import backends, names, stop
from smdebug.tensorflow.backends import to_numpy

__all__ = ["wrap_tape", "wrap_optimizer"]

_MARK = "_smdebug_tape_wrapped"


@guarded()
def _tape_step(hook: Any) -> None:
    """A ``with tape:`` block starts a step (TRAIN when the hook has no mode yet)."""
    if hook.mode == ModeKeys.GLOBAL:
        hook.set_mode(ModeKeys.TRAIN)
    hook._begin_step()


@guarded()
def _tape_record(hook: Any, target: Any, sources: Any, grads: Any) -> None:
    """After ``tape.gradient``: the loss (a one-element target), each weight differentiated
    against (before the update) and its gradient, on a step that saves."""
    import tensorflow as tf

    if not hook._due() or not hasattr(target, "numpy"):
        return
    if np.size(to_numpy(target)) == 1:
        hook._save("loss", _K.LOSSES, target)
    for v, g in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
        if g is None or not hasattr(v, "path"):
            continue
        wname = names.tape_weight_name(v)
        hook._save(wname, _K.BIASES if names.is_bias(wname) else _K.WEIGHTS, v)
        hook._save(names.gradient_name(v), _K.GRADIENTS, tf.convert_to_tensor(g))


@guarded()
def _optimizer_applied(hook: Any, optimizer: Any) -> None:
    """After an eager update outside ``fit``: the optimizer's variables, on a step that saves."""
    if hook._in_fit or not hook._due():
        return
    hook._save_watched(hook._optimizer_variables(optimizer))


def wrap_tape(hook, tape):
    if not backends.is_tensorflow():
        raise SMDebugTypeError(
            f"wrap_tape needs Keras' TensorFlow backend (a tf.GradientTape); Keras runs on "
            f"{backends.name()}: use model.fit with the hook as a callback"
        )
    import tensorflow as tf

    if not isinstance(tape, tf.GradientTape):
        raise SMDebugTypeError(f"wrap_tape expects a tf.GradientTape, got {type(tape).__name__}")
    push, gradient = tape._push_tape, tape.gradient

    def _push_tape():
        if not hook._tape_in_step and not hook._in_fit and tf.executing_eagerly():
            stop.stop_tape(hook)  # raises TrainingStopRequested before the step starts
        if not hook._tape_in_step:
            hook._tape_in_step = True
            _tape_step(hook)
        return push()

    def _gradient(target, sources, *args, **kwargs):
        grads = gradient(target, sources, *args, **kwargs)
        hook._tape_in_step = False
        _tape_record(hook, target, sources, grads)
        return grads

    tape._push_tape = _push_tape
    tape.gradient = _gradient
    return tape


def _eager() -> bool:
    """Whether an update just applied has real values (not inside a tf.function, a jax trace or a
    stateless scope)."""
    if backends.is_tensorflow():
        import tensorflow as tf

        return tf.executing_eagerly()
    from keras.src.backend.common.stateless_scope import in_stateless_scope

    return not in_stateless_scope()


def wrap_optimizer(hook, optimizer):
    """Have ``optimizer`` tell ``hook`` when it has applied an update eagerly; returns it."""
    apply = getattr(optimizer, "apply", None)
    if apply is None or not callable(apply) or not hasattr(optimizer, "variables"):
        raise SMDebugTypeError(f"wrap_optimizer expects a Keras optimizer, got {type(optimizer).__name__}")
    if getattr(optimizer, _MARK, None) is hook:
        return optimizer

    @functools.wraps(apply)
    def wrapped(*args, **kwargs):
        out = apply(*args, **kwargs)
        if _eager():
            _optimizer_applied(hook, optimizer)
        return out

    optimizer.apply = wrapped
    setattr(optimizer, _MARK, hook)
    return optimizer
