"""`smdebug.modes.TRAIN` etc.: the members of :class:`smdebug.core.modes.ModeKeys`."""

from smdebug.core.modes import ModeKeys

TRAIN = ModeKeys.TRAIN
EVAL = ModeKeys.EVAL
PREDICT = ModeKeys.PREDICT
GLOBAL = ModeKeys.GLOBAL

__all__ = ["ModeKeys", "TRAIN", "EVAL", "PREDICT", "GLOBAL"]
