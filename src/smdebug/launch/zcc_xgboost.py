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
import logging
import sys

__all__ = ["install"]

logger = logging.getLogger("smdebug")
_installed = None


class _Attach:
    def __init__(self):
        self.used = False

    def callbacks_for(self, params, dtrain, kwargs) -> list | None:
        """The callbacks with the hook added, or None to leave the call as it is."""
        import smdebug.xgboost as smd

        callbacks = list(kwargs.get("callbacks") or [])
        if self.used or any(isinstance(c, smd.Hook) for c in callbacks) or smd.get_hook() is not None:
            return None
        self.used = True
        hook = smd.get_hook(create_if_not_exists=True)
        if hook is None:
            return None
        hook.hyperparameters = dict(params.items() if isinstance(params, dict) else params or [])
        hook.train_data = dtrain
        others = [d for d, _name in (kwargs.get("evals") or []) if d is not dtrain]
        if others:
            hook.validation_data = others[0]
        self._fast_stop_checks(hook)
        sys.stderr.write(f"smdebug: attached to xgboost.train via zero-code-change; saving to {hook.out_dir}\n")
        return [*callbacks, hook]

    @staticmethod
    def _fast_stop_checks(hook) -> None:
        import os

        interval = os.environ.get("SMDEBUG_STOP_CHECK_INTERVAL")
        if interval and getattr(hook, "stop_watcher", None) is not None:
            hook.stop_watcher.interval = min(hook.stop_watcher.interval, float(interval))


def install():
    """Wrap ``xgboost.train`` where it is looked up (xgboost, xgboost.training, xgboost.sklearn)."""
    global _installed
    if _installed is not None:
        return _installed
    state = _installed = _Attach()
    import xgboost.sklearn
    import xgboost.training

    original = xgboost.training.train

    @functools.wraps(original)
    def train(params, dtrain, *args, **kwargs):
        try:
            callbacks = state.callbacks_for(params, dtrain, kwargs)
        except Exception as exc:  # never breaks training
            logger.error("smdebug: zero-code-change attach to xgboost.train failed: %s", exc)
            callbacks = None
        if callbacks is not None:
            kwargs["callbacks"] = callbacks
        return original(params, dtrain, *args, **kwargs)

    train.__smdebug_zcc__ = True
    for module in (xgboost, xgboost.training, xgboost.sklearn):
        if getattr(module, "train", None) is original:
            module.train = train
    return state
