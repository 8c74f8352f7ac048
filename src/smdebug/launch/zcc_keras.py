"""Zero-code-change attach for Keras 3, installed by the bootstrap right after ``import keras``
(``tf.keras`` loads it too).

``keras.Model.fit``, ``evaluate`` and ``predict`` get one KerasHook, made once from the job's
debughookconfig.json, as one more callback, unless the call already has an smdebug hook among its
callbacks or the script made its own hook. The hook stays open across calls and marks the end of
training when the process exits. One line on stderr says what was attached.

On Keras' torch backend every Keras layer is a ``torch.nn.Module``: PyTorch's own zero-code-change
(installed when Keras imported torch) would attach a second hook to the first layer that runs.
Keras' attach owns such a job: it tells PyTorch's to attach nothing in this process.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import keras

from smdebug.launch.zcc_common import Attach, marked, never_raises

__all__ = ["install"]


class _Attach(Attach):
    def callbacks_for(self, model: Any, callbacks: Any) -> list[Any] | None:
        import smdebug.tensorflow as smd

        if callbacks is not None and not isinstance(callbacks, (list, tuple)):
            return None  # fit's own call of evaluate for validation passes its CallbackList: already hooked
        _quiet_torch_attach()
        callbacks = list(callbacks or [])
        if any(isinstance(c, smd.KerasHook) for c in callbacks):
            return None
        if self.hook is None:
            if self.done:
                return None
            self.done = True
            if smd.get_hook() is not None:  # the script made its own hook
                return None
            hook = smd.get_hook(create_if_not_exists=True)
            if hook is None:
                return None
            self.attached(hook, f"{type(model).__name__} {model.name!r} (Keras fit/evaluate/predict)")
        return [*callbacks, self.hook]


def _quiet_torch_attach() -> None:
    """On the torch backend: PyTorch's zero-code-change attaches nothing (see the module's docstring)."""
    if keras.backend.backend() != "torch":
        return
    torch_state = getattr(sys.modules.get("smdebug.launch.zcc_torch"), "_installed", None)
    if torch_state is not None and getattr(torch_state, "hook", None) is None:
        torch_state.done = True  # its "nothing more to do in this process"


def _wrap(state: _Attach, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        callbacks = never_raises(
            "smdebug: zero-code-change attach to Keras failed: %s",
            lambda: state.callbacks_for(self, kwargs.get("callbacks")),
        )
        if callbacks is not None:
            kwargs["callbacks"] = callbacks
        return original(self, *args, **kwargs)

    return marked(call)


@functools.cache
def install() -> _Attach:
    """Wrap ``keras.Model``'s ``fit``, ``evaluate`` and ``predict`` (once per process)."""
    state = _Attach()
    _quiet_torch_attach()
    for name in ("fit", "evaluate", "predict"):
        setattr(keras.Model, name, _wrap(state, getattr(keras.Model, name)))
    return state
