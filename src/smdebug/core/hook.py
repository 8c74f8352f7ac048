"""``smdebug.core.hook``, a documented import path: the module ``smdebug.core.engine.hook`` itself."""

import sys

from smdebug.core.engine import hook as _module

sys.modules[__name__] = _module  # core_rooms: documented path
