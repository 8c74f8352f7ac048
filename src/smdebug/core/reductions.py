"""``smdebug.core.reductions``, a documented import path: the module ``smdebug.core.tensors.reductions`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.tensors import reductions as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.tensors.reductions import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
