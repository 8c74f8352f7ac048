"""``smdebug.core.locations``, a documented import path: the module ``smdebug.core.output.locations`` itself."""

import sys

from smdebug.core.output import locations as _module

sys.modules[__name__] = _module  # core_rooms: documented path
