"""``smdebug.core.reductions``, a documented import path: the module ``smdebug.core.tensors.reductions`` itself."""

import sys

from smdebug.core.tensors import reductions as _module

sys.modules[__name__] = _module  # core_rooms: documented path
