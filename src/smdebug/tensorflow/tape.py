"""Custom training loops: a wrapped ``tf.GradientTape`` and a wrapped optimizer.

- ``hook.wrap_tape(tape)``: each ``with tape:`` block starts a step (in the hook's mode; TRAIN
  when none was set); each ``tape.gradient`` call saves the loss, the weights it differentiates
  against (before the update) and their gradients.
- ``hook.wrap_optimizer(opt)``: after each eager ``opt.apply`` / ``opt.apply_gradients`` of a
  step that saves, the optimizer's own variables (``optimizer_variables``; after the update, as
  in ``fit``). Inside ``fit`` (a traced function) the wrapper does nothing: there the callback
  reads them at the end of the batch.

Both save nothing inside a ``tf.function`` (the values are symbolic), as 1.0.34.
"""

from __future__ import annotations

import functools

from smdebug.exceptions import SMDebugTypeError

__all__ = ["wrap_tape", "wrap_optimizer"]

_MARK = "_smdebug_tape_wrapped"


def wrap_tape(hook, tape):
    import tensorflow as tf

    if not isinstance(tape, tf.GradientTape):
        raise SMDebugTypeError(f"wrap_tape expects a tf.GradientTape, got {type(tape).__name__}")
    push, gradient = tape._push_tape, tape.gradient

    def _push_tape():
        if not hook._tape_in_step:
            hook._tape_in_step = True
            hook._tape_step()
        return push()

    def _gradient(target, sources, *args, **kwargs):
        grads = gradient(target, sources, *args, **kwargs)
        hook._tape_in_step = False
        hook._tape_record(target, sources, grads)
        return grads

    tape._push_tape = _push_tape
    tape.gradient = _gradient
    return tape


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
        import tensorflow as tf

        if tf.executing_eagerly():
            hook._optimizer_applied(optimizer)
        return out

    optimizer.apply = wrapped
    setattr(optimizer, _MARK, hook)
    return optimizer
