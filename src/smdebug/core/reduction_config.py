"""``smdebug.core.reduction_config``, a documented import path: the module ``smdebug.core.config.reduction_config`` itself."""

import sys

from smdebug.core.config import reduction_config as _module

sys.modules[__name__] = _module  # core_rooms: documented path
