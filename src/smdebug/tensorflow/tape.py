"""Custom training loops: a wrapped ``tf.GradientTape`` and a wrapped optimizer.

- ``hook.wrap_tape(tape)``: each ``with tape:`` block starts a step (in the hook's mode; TRAIN
  when none was set); each ``tape.gradient`` call saves the loss, the weights it differentiates
  against (before the update) and their gradients.
- ``hook.wrap_optimizer(opt)``: after each eager ``opt.apply`` / ``opt.apply_gradients`` of a
  step that saves, the optimizer's own variables (``optimizer_variables``; after the update, as
  in ``fit``). Inside ``fit`` (a traced function) the wrapper does nothing: there the callback
  reads them at the end of the batch.

Both save nothing inside a ``tf.function`` (the values are symbolic), as 1.0.34. :class:`CustomLoop`
(one per hook) wraps them and calls the hook back: ``begin()`` when a step starts, ``gradient(target,
sources, grads)`` after each ``tape.gradient`` (the hook saves through :func:`record`), ``applied(opt)``
after an eager update. The wrappers are instance attributes of the tape (``_push_tape``, which
``with tape:`` calls, and ``gradient``) and of the optimizer (``apply``): the class and every
other instance are left as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.exceptions import SMDebugTypeError
from smdebug.tensorflow import backends, names
from smdebug.tensorflow.backends import to_numpy

__all__ = ["CustomLoop", "record"]

_MARK = "_smdebug_tape_wrapped"


def record(save: Callable[[str, str, Any], None], target: Any, sources: Any, grads: Any) -> None:
    """``save(name, collection, value)`` what a ``tape.gradient`` call saves: the loss (a
    one-element target), each weight differentiated against (before the update) and its gradient."""
    import tensorflow as tf

    if np.size(to_numpy(target)) == 1:
        save("loss", _K.LOSSES, target)
    for v, g in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
        if g is None or not hasattr(v, "path"):
            continue
        wname = names.tape_weight_name(v)
        save(wname, _K.BIASES if names.is_bias(wname) else _K.WEIGHTS, v)
        save(names.gradient_name(v), _K.GRADIENTS, tf.convert_to_tensor(g))


class CustomLoop:
    """A hook's wrapped tapes and optimizers, and whether a tape's step is open (a ``with tape:``
    block entered, its ``gradient`` not taken yet: the step of one ``with`` block, whichever of the
    hook's tapes it is)."""

    def __init__(
        self,
        begin: Callable[[], None],
        gradient: Callable[[Any, Any, Any], None],
        applied: Callable[[Any], None],
    ):
        self.begin = begin  # a step starts (may raise TrainingStopRequested before it does)
        self.gradient = gradient
        self.applied = applied
        self.in_step = False

    def wrap_tape(self, tape: Any) -> Any:
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
            if not self.in_step:
                self.begin()
                self.in_step = True
            return push()

        def _gradient(target, sources, *args, **kwargs):
            grads = gradient(target, sources, *args, **kwargs)
            self.in_step = False
            self.gradient(target, sources, grads)
            return grads

        tape._push_tape = _push_tape
        tape.gradient = _gradient
        return tape

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Have ``optimizer`` call ``applied(optimizer)`` after each update applied eagerly; returns it."""
        apply = getattr(optimizer, "apply", None)
        if apply is None or not callable(apply) or not hasattr(optimizer, "variables"):
            raise SMDebugTypeError(f"wrap_optimizer expects a Keras optimizer, got {type(optimizer).__name__}")
        if getattr(optimizer, _MARK, None) is self:
            return optimizer

        @functools.wraps(apply)
        def wrapped(*args, **kwargs):
            out = apply(*args, **kwargs)
            if _eager():
                self.applied(optimizer)
            return out

        optimizer.apply = wrapped
        setattr(optimizer, _MARK, self)
        return optimizer


def _eager() -> bool:
    """Whether an update just applied has real values (not inside a tf.function, a jax trace or a
    stateless scope)."""
    if backends.is_tensorflow():
        import tensorflow as tf

        return tf.executing_eagerly()
    from keras.src.backend.common.stateless_scope import in_stateless_scope

    return not in_stateless_scope()
