"""``smdebug.core.collection``, a documented import path: the module ``smdebug.core.config.collection`` itself."""

import sys

from smdebug.core.config import collection as _module

sys.modules[__name__] = _module  # core_rooms: documented path
