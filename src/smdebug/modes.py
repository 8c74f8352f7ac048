"""Training modes, as smdebug 1.0.34 numbers them on disk: a leaf module (imports nothing of
smdebug), so that the error tree and the codecs can use it. ``smdebug.modes.TRAIN`` etc. are
the members of :class:`ModeKeys`; ``smdebug.core.modes`` re-exports all of it."""

from __future__ import annotations

from enum import Enum

__all__ = ["ModeKeys", "TRAIN", "EVAL", "PREDICT", "GLOBAL", "parse_mode"]


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


def parse_mode(value: object) -> ModeKeys:
    """The one parser of mode names (rule parameters, the command line, save_config keys, ...).

    Accepted: a ModeKeys member; its name in any case with spaces around (``"TRAIN"``,
    ``"eval"``, ``" Predict "``), also qualified (``"modes.EVAL"``, ``"ModeKeys.GLOBAL"``); its
    number on disk (1-4, not a bool). Anything else raises ValueError naming the value.
    """
    if isinstance(value, ModeKeys):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return ModeKeys(value)
        except ValueError:
            pass
    elif isinstance(value, str):
        name = value.strip().upper().rsplit(".", 1)[-1]
        qualifier = value.strip().upper().rsplit(".", 1)[0] if "." in value else "MODES"
        if name in ModeKeys.__members__ and qualifier in ("MODES", "MODEKEYS", "SMDEBUG.MODES"):
            return ModeKeys[name]
    raise ValueError(f"expected a mode (TRAIN, EVAL, PREDICT or GLOBAL, in any case), got {value!r}")


def str_to_mode_keys(mode_str: str) -> ModeKeys:
    """'train' / 'eval' / 'predict' / 'global' (any case) to a ModeKeys member (:func:`parse_mode`)."""
    return parse_mode(mode_str)
