"""``smdebug.core.reduction_config``, a documented import path: the module ``smdebug.core.config.reduction_config`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.config import reduction_config as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.config.reduction_config import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
