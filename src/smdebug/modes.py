"""Training modes, as smdebug 1.0.34 numbers them on disk: a leaf module (imports nothing of
smdebug), so that the error tree and the codecs can use it. ``smdebug.modes.TRAIN`` etc. are
the members of :class:`ModeKeys`; ``smdebug.core.modes`` re-exports all of it."""

from __future__ import annotations

from enum import Enum

__all__ = ["ModeKeys", "TRAIN", "EVAL", "PREDICT", "GLOBAL"]


class ModeKeys(Enum):
    TRAIN = 1  # training/fitting mode
    EVAL = 2  # testing/evaluation mode
    PREDICT = 3  # prediction/inference mode
    GLOBAL = 4


TRAIN = ModeKeys.TRAIN
EVAL = ModeKeys.EVAL
PREDICT = ModeKeys.PREDICT
GLOBAL = ModeKeys.GLOBAL

ALLOWED_MODES = [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL]
ALLOWED_MODE_NAMES = [m.name for m in ALLOWED_MODES]
MODE_STEP_PLUGIN_NAME = "mode_step"
MODE_PLUGIN_NAME = "mode"


def str_to_mode_keys(mode_str: str) -> ModeKeys:
    """'train' / 'eval' / 'predict' / 'global' (any case) to a ModeKeys member."""
    try:
        return ModeKeys[str(mode_str).strip().upper()]
    except KeyError:
        raise ValueError(
            f"Invalid mode {mode_str!r}: expected one of train, eval, predict, global"
        ) from None
