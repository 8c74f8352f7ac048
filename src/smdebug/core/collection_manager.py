"""``smdebug.core.collection_manager``, a documented import path: the module ``smdebug.core.config.collection_manager`` itself."""

import sys

from smdebug.core.config import collection_manager as _module

sys.modules[__name__] = _module  # core_rooms: documented path
