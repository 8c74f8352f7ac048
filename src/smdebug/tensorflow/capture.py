"""Getting gradients and layer inputs/outputs out of Keras 3's compiled ``fit``/``evaluate``.

Keras 3 callbacks never see gradients or layer activations: they exist only inside the traced
train step. We build, next to the model's own train (test) function, an *instrumented* one whose
step also returns what the wrapped ``optimizer.apply`` and layer ``call`` methods saw, as extra
entries of its output dict (works with ``jit_compile`` on and off, since nothing leaves the graph
but outputs). :class:`DualFunction` runs the instrumented function only on steps the hook will
save and removes the extra entries before Keras sees the logs, so progress bars, History and
EarlyStopping are unchanged. Both functions share the model's variables and optimizer.

Nothing here knows about the hook: ``wants_capture()`` and ``receive(dict)`` are the callbacks.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

__all__ = ["PREFIX", "Stash", "DualFunction", "install", "uninstall"]

PREFIX = "__smdebug__/"


class Stash(threading.local):
    """What the wrapped methods saw while an instrumented step was traced (one per thread:
    MirroredStrategy traces each replica in its own thread)."""

    def __init__(self):
        self.active = False
        self.items: dict = {}

    def put(self, name: str, value) -> None:
        if self.active:
            key = name
            i = 1
            while key in self.items:  # a layer called twice in one step
                key = f"{name}_{i}"
                i += 1
            self.items[key] = value


class DualFunction:
    """``model.train_function`` (or ``test_function``): the plain or the instrumented function."""

    _smdebug = True

    def __init__(self, plain, instrumented, wants_capture: Callable[[], bool], receive: Callable[[dict], None]):
        self.plain = plain
        self.instrumented = instrumented
        self.wants_capture = wants_capture
        self.receive = receive

    def __call__(self, iterator):
        if not self.wants_capture():
            return self.plain(iterator)
        logs = self.instrumented(iterator)
        if not isinstance(logs, dict):
            return logs
        logs = dict(logs)
        extra = {k[len(PREFIX) :]: logs.pop(k) for k in [k for k in logs if k.startswith(PREFIX)]}
        self.receive(extra)
        return logs


def _instrumented_step(step_fn, stash: Stash, inputs_name: str | None):
    @functools.wraps(step_fn)
    def step(data):
        stash.items = {}
        stash.active = True
        try:
            logs = step_fn(data)
        finally:
            stash.active = False
        captured, stash.items = stash.items, {}
        if not isinstance(logs, dict):
            return logs
        captured = _gather_replicas(captured)
        out = dict(logs)
        for k, v in captured.items():
            out[PREFIX + k] = v
        return out

    return step


def replicas_in_sync() -> int:
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    return ctx.num_replicas_in_sync if ctx is not None else 1


def _gather_replicas(captured: dict) -> dict:
    """Under a distribution strategy each replica's values are stacked ``[R, ...]`` (the same
    stack in every replica, so Keras' reduction of the step outputs leaves it as it is); the
    hook splits them by replica. Needs equal shapes in every replica."""
    import tensorflow as tf

    ctx = tf.distribute.get_replica_context()
    if ctx is None or ctx.num_replicas_in_sync == 1:
        return captured
    return {k: ctx.all_gather(tf.expand_dims(v, 0), axis=0) for k, v in captured.items()}


def _wrap_apply(optimizer, stash: Stash, name_of: Callable) -> None:
    if getattr(optimizer.apply, "_smdebug", False):
        return
    orig = optimizer.apply

    @functools.wraps(orig)
    def apply(grads, trainable_variables=None):
        if stash.active and trainable_variables is not None:
            import tensorflow as tf

            for g, v in zip(grads, trainable_variables):
                if g is not None:
                    stash.put(name_of(v), tf.convert_to_tensor(g))
        return orig(grads, trainable_variables)

    apply._smdebug = True
    apply._smdebug_orig = orig
    optimizer.apply = apply


def _wrap_layer(layer, stash: Stash) -> None:
    if getattr(layer.call, "_smdebug", False):
        return
    orig = layer.call
    name = layer.name

    @functools.wraps(orig)
    def call(*args, **kwargs):
        out = orig(*args, **kwargs)
        if stash.active:
            _put_all(stash, f"{name}/inputs", args[0] if args else next(iter(kwargs.values()), None))
            _put_all(stash, f"{name}/outputs", out)
        return out

    call._smdebug = True
    call._smdebug_orig = orig
    layer.call = call


def _put_all(stash: Stash, name: str, value) -> None:
    """A tensor under ``name``; a list/tuple/dict of tensors as ``name_<i>`` (1.0.34's suffixes)."""
    if value is None:
        return
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if v is not None and hasattr(v, "shape"):
                stash.put(name if i == 0 else f"{name}_{i}", v)
        return
    if hasattr(value, "shape"):
        stash.put(name, value)


def install(model, stash: Stash, *, gradients: bool, layers: bool, grad_name: Callable,
            wants_capture: Callable[[str], bool], receive: Callable[[str, dict], None]) -> None:
    """Give ``model`` dual train and test functions (idempotent: a second fit reuses them)."""
    if gradients and getattr(model, "optimizer", None) is not None:
        _wrap_apply(model.optimizer, stash, grad_name)
    if layers:
        for layer in model._flatten_layers(include_self=False, recursive=True):
            _wrap_layer(layer, stash)
    for kind in ("train", "test"):
        attr = f"{kind}_function"
        current = getattr(model, attr, None)
        if getattr(current, "_smdebug", False):
            continue
        make = getattr(model, f"make_{kind}_function")
        step_attr = f"{kind}_step"
        setattr(model, attr, None)
        make(force=True)
        plain = getattr(model, attr)
        orig_step = getattr(model, step_attr)
        setattr(model, step_attr, _instrumented_step(orig_step, stash, None))
        try:
            make(force=True)
            instrumented = getattr(model, attr)
        finally:
            delattr(model, step_attr)  # the class's own step again
        mode = "TRAIN" if kind == "train" else "EVAL"
        setattr(model, attr, DualFunction(plain, instrumented, functools.partial(wants_capture, mode),
                                          functools.partial(receive, mode)))


def uninstall(model) -> None:
    """Give ``model`` back its plain functions and methods (the hook's close)."""
    for kind in ("train", "test"):
        fn = getattr(model, f"{kind}_function", None)
        if getattr(fn, "_smdebug", False):
            setattr(model, f"{kind}_function", fn.plain)
    opt = getattr(model, "optimizer", None)
    if opt is not None and getattr(opt.apply, "_smdebug", False):
        opt.apply = opt.apply._smdebug_orig
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if getattr(layer.call, "_smdebug", False):
            layer.call = layer.call._smdebug_orig
