"""``smdebug.core.stop_request``, a documented import path: the module ``smdebug.core.engine.stop_request`` itself."""

import sys

from smdebug.core.engine import stop_request as _module

sys.modules[__name__] = _module  # core_rooms: documented path
