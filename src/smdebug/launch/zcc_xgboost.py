"""Zero-code-change attach for XGBoost, installed by the bootstrap right after ``import xgboost``.

``xgboost.train`` (which the scikit-learn estimators' ``fit`` calls too) gets the hook made from
the job's debughookconfig.json as one more callback, given what SageMaker's XGBoost container gave
it: the parameters as ``hyperparameters``, ``dtrain`` as ``train_data`` and the first other
``evals`` entry as ``validation_data``. Only the first training of the process is hooked (the hook
ends its trial when training ends); a call that already has an smdebug hook among its callbacks,
or a script that made its own hook, is left alone. One line on stderr says what was attached.
"""

from __future__ import annotations

import functools
from typing import Any

from smdebug.launch.zcc_common import Attach, marked, never_raises

__all__ = ["install"]


class _Attach(Attach):
    def callbacks_for(self, params: Any, dtrain: Any, kwargs: dict[str, Any]) -> list[Any] | None:
        """The callbacks with the hook added, or None to leave the call as it is."""
        import smdebug.xgboost as smd

        callbacks = list(kwargs.get("callbacks") or [])
        if self.done or any(isinstance(c, smd.Hook) for c in callbacks) or smd.get_hook() is not None:
            return None
        self.done = True  # only the first training of the process
        hook = smd.get_hook(create_if_not_exists=True)
        if hook is None:
            return None
        hook.hyperparameters = dict(params.items() if isinstance(params, dict) else params or [])
        hook.train_data = dtrain
        others = [d for d, _name in (kwargs.get("evals") or []) if d is not dtrain]
        if others:
            hook.validation_data = others[0]
        self.attached(hook, "xgboost.train")
        return [*callbacks, hook]


@functools.cache
def install() -> _Attach:
    """Wrap ``xgboost.train`` where it is looked up (xgboost, xgboost.training, xgboost.sklearn), once per process."""
    state = _Attach()
    import xgboost.sklearn
    import xgboost.training

    original = xgboost.training.train

    @functools.wraps(original)
    def train(params: Any, dtrain: Any, *args: Any, **kwargs: Any) -> Any:
        callbacks = never_raises(
            "smdebug: zero-code-change attach to xgboost.train failed: %s",
            lambda: state.callbacks_for(params, dtrain, kwargs),
        )
        if callbacks is not None:
            kwargs["callbacks"] = callbacks
        return original(params, dtrain, *args, **kwargs)

    marked(train)
    for module in (xgboost, xgboost.training, xgboost.sklearn):
        if getattr(module, "train", None) is original:
            module.train = train
    return state
