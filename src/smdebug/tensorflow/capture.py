"""Getting gradients and layer inputs/outputs out of Keras 3's compiled ``fit``/``evaluate``.

Keras 3 callbacks never see gradients or layer activations: they exist only inside the traced
train step. We build, next to the model's own train (test) function, an *instrumented* one whose
step also hands out what the wrapped ``optimizer.apply`` and layer ``call`` methods saw.
:class:`DualFunction` runs the instrumented function only on steps the hook will save and hands
the values to the hook, so progress bars, History and EarlyStopping are unchanged. Both functions
share the model's variables and optimizer. How the values leave the step depends on the backend:

- TensorFlow (``tf.function``, ``jit_compile`` on or off): as extra entries of the step's output
  dict, removed before Keras sees the logs;
- jax (a jitted pure step, ``(state, data) -> (logs, state)``): through ``jax.debug.callback``
  into :class:`HostValues` (layer outputs live inside ``jax.grad``'s trace, where no output can
  reach them); the callbacks exist only in the instrumented function;
- torch (eager): the step's values themselves, detached and copied, as extra output entries.

Values Keras makes while it builds a model (``compute_output_spec``, also inside a step that
builds a subclassed model) are never captured (:func:`backends.is_symbolic`).

Nothing here knows about the hook: ``wants_capture()`` and ``receive(dict)`` are the callbacks.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np

from smdebug.tensorflow import backends

__all__ = ["PREFIX", "Stash", "HostValues", "DualFunction", "install", "uninstall"]

PREFIX = "__smdebug__/"
_ALONE = object()  # a step function that returns its logs alone (TF, torch), not (logs, state) (jax)


class HostValues:
    """Values a jitted jax step sent out with ``jax.debug.callback`` (shared by all threads)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict = {}

    def put(self, key: str, value) -> None:
        with self._lock:
            self._values[key] = np.array(value, copy=True)

    def take(self) -> dict:
        """What the last step sent, once every callback of it has run."""
        import jax

        jax.effects_barrier()
        with self._lock:
            out, self._values = self._values, {}
        return out


class Stash(threading.local):
    """What the wrapped methods saw while an instrumented step ran or was traced (one per thread:
    MirroredStrategy traces each replica in its own thread; ``host`` is shared)."""

    def __init__(self, host: HostValues | None = None):
        self.active = False
        self.items: dict = {}
        self.seen: set = set()
        self.host = host if host is not None else HostValues()

    def put(self, name: str, value) -> None:
        if not self.active or backends.is_symbolic(value):
            return
        key = name
        i = 1
        while key in self.seen:  # a layer called twice in one step
            key = f"{name}_{i}"
            i += 1
        self.seen.add(key)
        if backends.name() == "jax":
            import jax

            jax.debug.callback(functools.partial(self.host.put, key), value)
        else:
            self.items[key] = backends.for_stash(value)


def _split(result):
    """A step function's result as (its logs dict or None, the rest)."""
    if isinstance(result, dict):
        return result, _ALONE
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], dict):
        return result[0], result[1]
    return None, None


def _join(logs, rest):
    return logs if rest is _ALONE else (logs, rest)


class DualFunction:
    """``model.train_function`` (or ``test_function``): the plain or the instrumented function."""

    _smdebug = True

    def __init__(
        self,
        plain,
        instrumented,
        wants_capture: Callable[[], bool],
        receive: Callable[[dict], None],
        host: HostValues | None = None,
    ):
        self.plain = plain
        self.instrumented = instrumented
        self.wants_capture = wants_capture
        self.receive = receive
        self.host = host

    def __call__(self, *args):
        if not self.wants_capture():
            return self.plain(*args)
        result = self.instrumented(*args)
        logs, rest = _split(result)
        extra: dict = {}
        if logs is not None:
            logs = dict(logs)
            extra = {k[len(PREFIX) :]: logs.pop(k) for k in [k for k in logs if k.startswith(PREFIX)]}
            result = _join(logs, rest)
        if self.host is not None:
            extra.update(self.host.take())
        self.receive(extra)
        return result


def _instrumented_step(step_fn, stash: Stash):
    @functools.wraps(step_fn)
    def step(*args):
        stash.items, stash.seen = {}, set()
        stash.active = True
        try:
            result = step_fn(*args)
        finally:
            stash.active = False
        captured, stash.items, stash.seen = stash.items, {}, set()
        logs, rest = _split(result)
        if logs is None or not captured:
            return result
        if backends.is_tensorflow():
            captured = _gather_replicas(captured)
        out = dict(logs)
        for k, v in captured.items():
            out[PREFIX + k] = v
        return _join(out, rest)

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
        if stash.active:
            # on jax, stateless_apply calls apply(grads): the variables are the optimizer's own
            variables = (
                trainable_variables
                if trainable_variables is not None
                else getattr(optimizer, "_trainable_variables", None)
            )
            for g, v in zip(grads, variables or ()):
                if g is not None:
                    stash.put(name_of(v), _dense(g))
        return orig(grads, trainable_variables)

    apply._smdebug = True
    apply._smdebug_orig = orig
    optimizer.apply = apply


def _dense(g):
    """A TF gradient as a dense tensor (an embedding's IndexedSlices too); others as they are."""
    if backends.is_tensorflow():
        import tensorflow as tf

        return tf.convert_to_tensor(g)
    return g


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


def install(
    model,
    stash: Stash,
    *,
    gradients: bool,
    layers: bool,
    grad_name: Callable,
    wants_capture: Callable[[str], bool],
    receive: Callable[[str, dict], None],
) -> None:
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
        plain, instrumented = _dual(model, kind, stash)
        mode = "TRAIN" if kind == "train" else "EVAL"
        setattr(
            model,
            attr,
            DualFunction(
                plain,
                instrumented,
                functools.partial(wants_capture, mode),
                functools.partial(receive, mode),
                host=stash.host if backends.name() == "jax" else None,
            ),
        )


def _dual(model, kind: str, stash: Stash) -> tuple:
    """The model's own ``<kind>_function`` and an instrumented one. TF and jax bind the step
    method when they make the function (an instance attribute ``train_step`` is traced into the
    second one); torch runs its function eagerly and looks the step up at each call, so there
    the instrumented function is the plain one run with the stash open."""
    attr, step_attr = f"{kind}_function", f"{kind}_step"
    make = getattr(model, f"make_{kind}_function")
    setattr(model, attr, None)
    make(force=True)
    plain = getattr(model, attr)
    if backends.name() == "torch":
        return plain, _instrumented_step(plain, stash)
    setattr(model, step_attr, _instrumented_step(getattr(model, step_attr), stash))
    try:
        make(force=True)
        instrumented = getattr(model, attr)
    finally:
        delattr(model, step_attr)  # the class's own step again
    return plain, instrumented


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
