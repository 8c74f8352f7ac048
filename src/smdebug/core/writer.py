"""``smdebug.core.writer``, a documented import path: the module ``smdebug.core.output.writer`` itself."""

import sys

from smdebug.core.output import writer as _module

sys.modules[__name__] = _module  # core_rooms: documented path
