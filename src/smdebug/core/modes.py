"""``smdebug.core.modes``: the documented path of :class:`ModeKeys`, defined in the leaf module
:mod:`smdebug.modes`."""

from smdebug.modes import (
    ALLOWED_MODE_NAMES,
    ALLOWED_MODES,
    MODE_PLUGIN_NAME,
    MODE_STEP_PLUGIN_NAME,
    ModeKeys,
    str_to_mode_keys,
)

__all__ = [
    "ModeKeys",
    "ALLOWED_MODES",
    "ALLOWED_MODE_NAMES",
    "str_to_mode_keys",
    "MODE_PLUGIN_NAME",
    "MODE_STEP_PLUGIN_NAME",
]
