"""``smdebug.core.save_config``, a documented import path: the module ``smdebug.core.config.save_config`` itself."""

import sys

from smdebug.core.config import save_config as _module

sys.modules[__name__] = _module  # core_rooms: documented path
