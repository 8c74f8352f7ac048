"""Values written as text (hook configuration JSON, rule parameters, environment variables),
parsed once for every layer above: booleans. (Mode names: :func:`smdebug.modes.parse_mode`.)"""

from __future__ import annotations

from typing import Any

__all__ = ["TRUE_STRINGS", "FALSE_STRINGS", "parse_bool"]

# SageMaker's rule parameters: "True"/"False" as documented, also "true"/"false"/"1"/"0"; the environment's
# SMDEBUG_PROPAGATE_ERRORS=1. Not "yes"/"on": a hook JSON that real smdebug refuses stays refused.
TRUE_STRINGS = frozenset({"true", "1"})
FALSE_STRINGS = frozenset({"false", "0"})


def parse_bool(value: Any) -> bool:
    """The one parser of booleans: ``True``/``False``; the ints (and floats) 1 and 0; the strings
    ``true``/``false`` (any case) and ``1``/``0``, with spaces around. Anything else (``""``,
    ``"yes"``, ``"maybe"``, ``2``, None) raises ValueError; never ``bool("False")``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in TRUE_STRINGS:
            return True
        if v in FALSE_STRINGS:
            return False
    raise ValueError(f"expected True or False, got {value!r}")
