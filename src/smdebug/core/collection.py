"""``smdebug.core.collection``, a documented import path: the module ``smdebug.core.config.collection`` itself."""

import sys
from typing import TYPE_CHECKING

from smdebug.core.config import collection as _module

if TYPE_CHECKING:  # what a type checker sees here: the moved module's names
    from smdebug.core.config.collection import *  # noqa: F403

sys.modules[__name__] = _module  # core_rooms: documented path
